"""Frames on a byte stream: a prelude of little-endian uint64s (count, then one length per
frame), then the frames. Knows nothing of messages; sits on limits and errors.

Rule: every count and length read from the wire is checked against Limits, and against the
bytes actually present, before it is used or anything is allocated for it.
"""

import array
import struct
import sys
from collections.abc import Callable, Sequence
from typing import Any, Final, Optional, TypedDict, Unpack, cast

from fastser.arguments import check_names, optional_option, too_many_positional, wrong_type
from fastser.errors import FrameError, chained
from fastser.frame_types import ALIGNED_FRAME_BYTES, FRAME_ALIGNMENT, Frame, byte_view, nbytes
from fastser.frames.placed import PLACED_MIN_BYTES, place as place_frame
from fastser.limits import DEFAULT_LIMITS, Limits

WORD: Final = 8  # bytes per uint64 in the prelude
COUNT: Final = struct.Struct("<Q")
# The I/O adapters join consecutive frames under this size into runs of about this size
# before writing them (a cheap copy that saves a send call or an iovec per frame, and a
# small TCP segment each). Larger frames are never copied.
COALESCE_BYTES: Final = 64 * 2**10
# A reader hands out a memoryview per frame (192 bytes with its list slot, CPython 3.11),
# while a frame may cost its sender no more than its 8-byte length: unchecked, a message of
# empty or one-byte frames would cost its reader ~25x its bytes (200 MiB for an 8 MiB prelude
# at the default Limits.max_frames). So a message may hold FREE_FRAMES frames, plus one per
# BYTES_PER_FRAME bytes of it (prelude included), and its views cost at most 192 / 64 = 3x
# its bytes plus ~192 KiB (the bound in docs/api.md). Refusing is the one remedy that works
# for frames of a byte or more, each of which needs a view of its own. Also weighed: one view
# shared by a message's empty frames would help them alone, and a receiver that releases
# one frame (a family's loads freeing its buffer) would release all of them; copies (a
# bytearray is 57 bytes or more) are not proportional either, and not memoryviews.
# fastser's own messages never come near the bound: payload frames under 64 KiB travel in
# the header; only a frame_split_size under ~64 bytes or a hand-made stream reaches it.
FREE_FRAMES: Final = 1024
BYTES_PER_FRAME: Final = 64
# What a reader writes between frames to start each at a multiple of FRAME_ALIGNMENT:
# ALIGNMENT_GAPS[n] is a gap of n bytes (made once, not per frame).
# The prelude's lengths are kept in an array of "Q" (8 bytes each, in the machine's order).
BIG_ENDIAN: Final = sys.byteorder == "big"
ALIGNMENT_GAPS: Final = tuple(bytes(size) for size in range(FRAME_ALIGNMENT))
# A frame count from here on has a non-zero byte in its upper half: a prelude of 32 GiB, which
# nothing sends; text, or any other protocol's first bytes, reads as such a count (b"GET / HT"
# as 6.1e18). Said before the Limits, unless the Limits allow such a count.
IMPLAUSIBLE_COUNT: Final = 2**32
# The most one span of a receive buffer that a FrameReader hands out holds (and so how far
# ahead of the bytes its pages may be populated): transports read at most this much a call.
READ_BYTES: Final = 2**20
# The most prelude bytes a FrameReader asks a transport for at a time (into a buffer of its
# own, then appended to the lengths): what a connection stalled inside a prelude costs.
PRELUDE_SPAN_BYTES: Final = 4096


def pack_frames_prelude(frames: Sequence[Frame]) -> bytes:
    """The prelude for `frames`: their count, then each length in bytes, as little-endian
    uint64s. Write it, then the frames, for a scatter-gather send without joining."""
    return prelude_of(frame_lengths(frames))


def pack_frames(frames: Sequence[Frame]) -> bytes:
    """The prelude and all `frames` joined into one bytes object (this copies every frame);
    TypeError naming the first frame that is not bytes-like."""
    lengths = frame_lengths(frames)
    prelude = prelude_of(lengths)
    parts: list[Frame] = [prelude]
    parts.extend(frames)
    try:
        data = b"".join(parts)
    except (TypeError, ValueError) as exc:
        raise chained(not_a_frame(frames), exc)
    # An object with a buffer whose len() is not its size in bytes (a numpy array of wider
    # items) is joined whole while its len() went into the prelude: a stream that lies.
    # (A loop, not sum(): compiled, it adds native ints.)
    size = len(prelude)
    for length in lengths:
        size += length
    if len(data) != size:
        raise not_a_frame(frames)
    return data


def frame_lengths(frames: Sequence[Frame]) -> list[int]:
    # Frames are checked only when taking a length fails: no cost per frame.
    try:
        return [nbytes(frame) for frame in frames]
    except (TypeError, ValueError) as exc:
        raise chained(not_a_frame(frames), exc)


def prelude_of(lengths: list[int]) -> bytes:
    count = len(lengths)
    return struct.pack(f"<{count + 1}Q", count, *lengths)


def not_a_frame(frames: Sequence[object]) -> Exception:
    """The error naming the first of `frames` that is not a frame: no contiguous buffer, a
    released memoryview, or a len() that is not its size in bytes."""
    for index, frame in enumerate(frames):
        kind = type(frame).__qualname__
        try:
            view = memoryview(cast(Any, frame))
            length = nbytes(cast(Frame, frame))
        except ValueError:
            return ValueError(f"frame {index} is a released memoryview")
        except TypeError:
            return TypeError(f"frame {index} is of type {kind}, not a bytes-like frame "
                             f"(bytes, bytearray or memoryview)")
        if not view.c_contiguous:
            return TypeError(f"frame {index} ({kind}) is not C-contiguous")
        if view.nbytes != length:
            return TypeError(f"frame {index} ({kind}) holds {view.nbytes} bytes but its len() "
                             f"is {length}: pass memoryview(frame).cast(\"B\")")
    return TypeError("the frames had other sizes when joined than when measured: "
                     "an iterator, or frames changed meanwhile?")


def coalesce(prelude: bytes, frames: list[Frame]) -> list[memoryview]:
    """The prelude and non-empty frames as byte views, consecutive small ones joined into
    runs of about COALESCE_BYTES."""
    buffers: list[memoryview] = []
    run: list[Frame] = [prelude]
    run_bytes = len(prelude)
    for frame in frames:
        size = nbytes(frame)
        if size == 0:
            continue
        if size >= COALESCE_BYTES:
            if run:
                buffers.append(join_run(run))
                run = []
                run_bytes = 0
            buffers.append(byte_view(frame))  # zero-copy: a view of the caller's frame
            continue
        run.append(frame)
        run_bytes += size
        if run_bytes >= COALESCE_BYTES:
            buffers.append(join_run(run))
            run = []
            run_bytes = 0
    if run:
        buffers.append(join_run(run))
    return buffers


def join_run(run: list[Frame]) -> memoryview:
    if len(run) == 1:
        return byte_view(run[0])
    return memoryview(b"".join([byte_view(frame) for frame in run]))


def check_count(count: int, limits: Limits) -> int:
    """`count`, read from a prelude, if it is within `limits.max_frames`; else FrameError,
    which says first that the bytes are not a fastser stream when the count is implausible
    for any stream (IMPLAUSIBLE_COUNT), and names the limit otherwise."""
    if count > limits.max_frames:
        if count >= IMPLAUSIBLE_COUNT:
            raise FrameError(f"not a fastser stream: a message's first 8 bytes, "
                             f"{COUNT.pack(count)!r}, read as a frame count of {count} (a "
                             f"prelude of {WORD * count} bytes), which nothing sends: another "
                             f"protocol, or a stream that lost its place?")
        raise FrameError(f"prelude: frame count {count} exceeds "
                         f"Limits.max_frames={limits.max_frames}")
    return count


def check_lengths(lengths: Sequence[int], limits: Limits) -> int:
    """The total of frame `lengths` read from a prelude, if every one is within
    `limits.max_frame_bytes`, the total within `limits.max_message_bytes` and the message
    large enough to pay for its frames' views (check_views); else FrameError."""
    # max() and sum() run in C; the offending index is looked for only when failing.
    if lengths and max(lengths) > limits.max_frame_bytes:
        index, length = next((index, length) for index, length in enumerate(lengths)
                             if length > limits.max_frame_bytes)
        raise FrameError(f"prelude: frame {index} of {len(lengths)} has length {length}, "
                         f"exceeding Limits.max_frame_bytes={limits.max_frame_bytes}")
    total: int = sum(lengths)
    if total > limits.max_message_bytes:
        raise FrameError(f"prelude: {len(lengths)} frames total {total} bytes, exceeding "
                         f"Limits.max_message_bytes={limits.max_message_bytes}")
    check_views(len(lengths), total)
    return total


def check_views(count: int, total: int) -> None:
    """FrameError unless a message of `count` frames holding `total` bytes has at most
    FREE_FRAMES frames, plus one per BYTES_PER_FRAME bytes of the message, prelude included:
    what bounds the views a reader makes by the bytes it is given."""
    if count <= FREE_FRAMES:
        return
    size = WORD * (count + 1) + total
    allowed = FREE_FRAMES + size // BYTES_PER_FRAME
    if count > allowed:
        raise FrameError(f"prelude: {count} frames in a message of {size} bytes, more than "
                         f"the {allowed} it may hold ({FREE_FRAMES}, plus one per "
                         f"{BYTES_PER_FRAME} bytes): each frame costs its reader a view of "
                         f"~190 bytes")


def frame_holding(lengths: Sequence[int], offset: int) -> str:
    """Names the frame holding byte `offset` after the prelude, for errors about a stream
    cut short: the header frame or a payload frame."""
    end = 0
    for index, length in enumerate(lengths):
        end += length
        if offset < end:
            if index == 0:
                return f"the header frame (frame 0 of {len(lengths)})"
            return f"payload frame {index} of {len(lengths)}"
    return "the frames"


def frame_start(end: int, length: int) -> int:
    """Where a frame of `length` bytes starts in a receive buffer whose frames so far end at
    `end`: at the next multiple of FRAME_ALIGNMENT if it is ALIGNED_FRAME_BYTES or more
    (a gap of less than FRAME_ALIGNMENT bytes), else right at `end`. The one rule of every
    reader's layout: nothing stores a frame's offset, each recomputes it from the lengths."""
    if length >= ALIGNED_FRAME_BYTES:
        return end + -end % FRAME_ALIGNMENT
    return end


def frame_layout(lengths: Sequence[int]) -> tuple[bool, int]:
    """Whether a receive buffer laid out by frame_start has gaps, and its size."""
    gaps = False
    end = 0
    for length in lengths:
        start = frame_start(end, length)
        if start != end:
            gaps = True
        end = start + length
    return gaps, end


def frame_runs(lengths: Sequence[int]) -> list[tuple[int, int]]:
    """The (start, stop) spans of a receive buffer laid out by frame_start that frames fill
    without a gap between them: a reader fills each with one read (or a few)."""
    runs: list[tuple[int, int]] = []
    end = 0
    for length in lengths:
        start = frame_start(end, length)
        end = start + length
        if not length:
            continue
        if runs and runs[-1][1] == start:
            runs[-1] = (runs[-1][0], end)
        else:
            runs.append((start, end))
    return runs


def slice_frames(view: memoryview, lengths: Sequence[int], start: int = 0,
                 gaps: bool = False, place: bool = False) -> list[memoryview]:
    """The frames as slices of `view` from `start` on: laid out by frame_start when `gaps`
    (frame_layout's), else end to end. `place`: `view` is a reader's own buffer (a view of
    all of it), whose large frames are placed (frames.placed) so that loads joins split
    pieces by their place."""
    # Zero-copy: every frame is a slice of `view`, so it aliases the memory under it.
    frames: list[memoryview] = []
    placed = False  # whether the frame before was placed
    for length in lengths:
        end_before = start  # where the frame before ended
        if gaps:
            start = frame_start(start, length)
        frame = view[start:start + length]
        frames.append(frame)
        if place:
            placed = length >= PLACED_MIN_BYTES or (placed and start == end_before)
            if placed:
                place_frame(frame, start, start + length)
        start += length
    return frames


def unpack_frames(buf: Frame, *, limits: Optional[Limits] = None) -> list[memoryview]:
    """The frames of the one message in `buf`, as 1-d memoryviews of format "B".

    Parameters: `buf`, bytes, a bytearray or a C-contiguous memoryview of any format;
    `limits` (default DEFAULT_LIMITS).
    Returns: views into `buf` (no copy): they alias its memory and are writeable when it is.
    Raises: FrameError unless `buf` holds exactly one complete message within `limits`.
    """
    reader = reader_for(limits)
    view = byte_view(buf)
    size = view.nbytes
    # The reader parses and checks the prelude in place (the lengths, once present, are
    # copied into 8 bytes each, nothing per frame until the views).
    start = reader.take_prelude(view, 0, size)
    if not reader.framing:
        if reader.count < 0:
            raise FrameError(f"truncated prelude: {size} bytes, the frame count alone needs "
                             f"{WORD}")
        raise FrameError(f"truncated prelude: {reader.count} frame lengths end at byte "
                         f"{WORD + WORD * reader.count}, the buffer holds {size}")
    total = reader.total
    if start + total != size:
        what = "truncated message" if start + total > size else "trailing bytes after message"
        raise FrameError(f"{what}: the prelude announces {reader.count} frames of {total} "
                         f"bytes from byte {start}, the buffer holds {size - start} after "
                         f"the prelude")
    return slice_frames(view, reader.lengths, start=start)


def grown_buffer(size: int) -> memoryview:
    """A FrameReader's buffer when nothing else is asked for: a bytearray (zeroed, so its
    memory is committed as it is made: transports pass their own, see FrameReader)."""
    return memoryview(bytearray(size))


def populate_nothing(view: memoryview, start: int, stop: int) -> None:
    """A FrameReader's page population when nothing else is asked for: none."""


def new_lengths() -> "array.array[int]":
    """An empty array of a prelude's frame lengths: 8 bytes each (a tuple of ints costs 40)."""
    return array.array("Q")


def reader_for(limits: Optional[Limits]) -> "FrameReader":
    """A FrameReader for `limits`, which the caller has checked, without FrameReader()'s
    argument handling (a tuple and a dict a call): the readers make one per message."""
    reader = FrameReader()
    if limits is not None:
        reader.limits = limits
    return reader


class ReaderOptions(TypedDict, total=False):
    """FrameReader's keyword, as the type checker sees it."""
    limits: Optional[Limits]


READER_OPTIONS: Final = frozenset({"limits"})


class FrameReader:
    # Docstring in api.CLASS_DOCS: mypyc drops class docstrings
    # (https://github.com/mypyc/mypyc/issues/437).
    #
    # Strategy: the one parser of framed streams, sans-I/O (as h11's). Bytes reach it two
    # ways, and every reader of the package drives it: `feed(data)` copies them in (the
    # public API, unpack_frames for its prelude), while transports read in place:
    # next_buffer() hands out the span of the reader's own buffers where the stream's next
    # bytes go, the transport reads into it (recv_into, read_into) and says how many
    # arrived with received(n). It owns what a peer controls: the prelude's parsing, the
    # Limits and check_views, where each frame lands (frame_start's layout, placed frames)
    # and when memory is committed for it.
    #
    # Bounds, for a stream of R bytes received so far (what any peer can make it hold):
    # - the prelude: its lengths in an array of 8 bytes each (grown as they arrive: at most
    #   1/16 more), a partial field of under 8 bytes, and PRELUDE_SPAN_BYTES to read into;
    # - the frames: feed grows a bytearray with the bytes (at most 1/8 more); in place, the
    #   message's buffer is allocated only when its first frame bytes are to be read, by the
    #   transport's `allocate` (transport.receive_buffer: numpy.empty's memory or an
    #   anonymous mmap, neither written until the bytes come), and `populate` commits its
    #   pages ahead of a read by at most the frame bytes already received, and READ_BYTES.
    # So committed memory is at most about 2 R plus a constant (a page, or the 2 MiB huge
    # page numpy.empty asks for from 4 MiB on), whatever the prelude announces; a stalled
    # connection costs no more than its prelude. The frames' views, made when the message
    # is complete, cost at most 3 R (check_views).

    # limits, by position or by name, as *args and **options: mypyc would word a mistake its
    # own way, naming neither FrameReader nor limits (fastser/arguments.py, "Positional
    # arguments"). The type checker sees each with its type, but not that at most one
    # positional is taken: FrameReader(None, None) is refused at run time only.
    def __init__(self, *args: Optional[Limits], **options: Unpack[ReaderOptions]) -> None:
        given: tuple[object, ...] = args  # mypyc: read unchecked, so that the words are ours
        limits: object = None
        if given:
            if len(given) > 1:
                raise too_many_positional("FrameReader", 0, 1, len(given))
            limits = given[0]
        if options:
            check_names("FrameReader", options, READER_OPTIONS)
            if given:
                raise TypeError("FrameReader() got multiple values for argument 'limits'")
            # Read as an object (options's type would make mypyc check it in its own words).
            limits = optional_option("FrameReader", options, "limits", Limits)
        if limits is None:
            self.limits: Limits = DEFAULT_LIMITS
        elif isinstance(limits, Limits):
            self.limits = limits
        else:
            raise wrong_type("FrameReader", "limits", "Limits or None", limits)
        # In-place reading: how a message's buffer is made and its pages committed (set by
        # the transports; see the bounds above).
        self.allocate: Callable[[int], memoryview] = grown_buffer
        self.populate: Callable[[memoryview, int, int], None] = populate_nothing
        self.head = bytearray()  # the start of a prelude field (under 8 bytes)
        self.scratch = bytearray()  # where a transport reads prelude bytes into
        self.count = -1  # frame count of the current message, -1 until it is known
        self.lengths = new_lengths()  # its frame lengths so far
        self.framing = False  # True once the prelude is complete, until the message is
        self.total = 0  # bytes of its frames
        self.gaps = False  # whether its buffer has gaps that align frames (frame_layout)
        self.size = 0  # bytes of its buffer (frame_layout)
        # Where the next frame bytes go: frame `index`, which ends at `end` of the buffer,
        # from `pos`; the span handed out next ends at `span_stop` (0: not yet chosen).
        self.index = 0
        self.end = 0
        self.pos = 0
        self.span_stop = 0
        self.received_frames = 0  # frame bytes of the message received
        self.populated = 0  # the buffer's pages are committed up to here
        self.body: Optional[bytearray] = None  # feed's buffer, grown with the bytes
        self.view: Optional[memoryview] = None  # the in-place buffer, once allocated
        self.error: Optional[str] = None

    @property
    def pending(self) -> bool:
        """True when bytes of a message that is not yet complete have been received: a
        stream that ends now ends inside a message."""
        return self.framing or self.count >= 0 or len(self.head) > 0

    def feed(self, data: Frame) -> list[list[memoryview]]:
        """Take the next bytes of the stream (of any length, even empty).

        Returns: the frames of every message these bytes complete, oldest first; each frame
        a writeable 1-d memoryview of format "B" into a buffer owned by that message (a
        frame of 64 KiB or more starting at a multiple of 16 bytes in it).
        Raises: FrameError on a prelude beyond the reader's Limits or with more frames than
        its message's bytes pay views for (check_views), or if it raised before.
        """
        view = byte_view(data)
        self.check_usable()
        try:
            return self.consume(view)
        except FrameError as exc:
            self.error = str(exc)
            raise

    def check_usable(self) -> None:
        if self.error is not None:
            raise FrameError(f"FrameReader failed earlier and cannot resume: {self.error}")

    def consume(self, view: memoryview) -> list[list[memoryview]]:
        messages: list[list[memoryview]] = []
        pos = 0
        end = view.nbytes
        while True:
            if not self.framing:
                if pos == end:
                    break
                pos = self.take_prelude(view, pos, end)
                if not self.framing:
                    break  # the prelude continues in the next bytes
            while self.index < self.count and pos < end:
                if self.view is not None:  # a transport read this message in place so far
                    span = self.next_span()
                    take = min(span.nbytes, end - pos)
                    span[:take] = view[pos:pos + take]
                else:
                    body = self.body
                    if body is None:
                        body = self.body = bytearray()
                    start = self.pos
                    if len(body) < start:
                        body += ALIGNMENT_GAPS[start - len(body)]
                    take = min(self.span_end() - start, end - pos)
                    body += view[pos:pos + take]
                self.advance(take)
                pos += take
            if self.index < self.count:
                break  # the frames continue in the next bytes
            messages.append(self.complete())
        return messages

    def next_buffer(self) -> memoryview:
        """Where the stream's next bytes go: a writeable span of the reader's buffers (of
        at most READ_BYTES, never past the current message), for a transport to read into
        in place; then it calls received() with how many bytes it wrote there. Raises
        FrameError if the reader failed before."""
        self.check_usable()
        if not self.framing:
            need = WORD - len(self.head) if self.count < 0 else \
                WORD * (self.count - len(self.lengths)) - len(self.head)
            size = min(need, PRELUDE_SPAN_BYTES)
            if len(self.scratch) < size:
                self.scratch = bytearray(size)
            return memoryview(self.scratch)[:size]
        if self.body is not None:
            raise ValueError("FrameReader: a message begun by feed() continues by feed()")
        return self.next_span()

    def received(self, count: int) -> Optional[list[memoryview]]:
        """Take the `count` bytes a transport wrote at the start of the span next_buffer()
        handed out. Returns the message's frames (as feed does) if they complete it, else
        None. Raises FrameError as feed does."""
        self.check_usable()
        try:
            if not self.framing:
                self.take_prelude(memoryview(self.scratch), 0, count)
            else:
                self.advance(count)
            if self.framing and self.index >= self.count:
                return self.complete()
            return None
        except FrameError as exc:
            self.error = str(exc)
            raise

    def where(self) -> str:
        """Where in a message the bytes received so far end, for errors about a stream cut
        short there."""
        if not self.framing:
            if self.count < 0:
                return (f"the prelude: {len(self.head)} of the {WORD} bytes of the frame count "
                        f"received")
            got = WORD * (1 + len(self.lengths)) + len(self.head)
            return (f"the prelude: {got} of {WORD * (self.count + 1)} bytes received "
                    f"({self.count} frame lengths announced)")
        got = self.received_frames
        return f"{frame_holding(self.lengths, got)}: {got} of the {self.total} frame bytes received"

    def take_prelude(self, view: memoryview, pos: int, end: int) -> int:
        """Read prelude bytes from `pos` of `view` (up to `end`); returns the position
        reached: the prelude's end if it is complete there (then `framing`), else `end`."""
        if self.count < 0:
            head = self.head
            take = min(WORD - len(head), end - pos)
            if not head and take == WORD:
                count = COUNT.unpack_from(view, pos)[0]  # all here: read in place
            else:
                head += view[pos:pos + take]
                if len(head) < WORD:
                    return end
                count = COUNT.unpack_from(head, 0)[0]
                self.head = bytearray()
            pos += take
            self.count = check_count(count, self.limits)
        lengths = self.lengths
        missing = self.count - len(lengths)
        head = self.head
        if head and missing:  # a length begun in earlier bytes
            take = min(WORD - len(head), end - pos)
            head += view[pos:pos + take]
            pos += take
            if len(head) < WORD:
                return pos
            lengths.frombytes(head)
            self.head = bytearray()
            missing -= 1
        words = min(missing, (end - pos) // WORD)
        if words:
            lengths.frombytes(view[pos:pos + WORD * words])
            pos += WORD * words
            missing -= words
        if missing:
            self.head += view[pos:end]  # under WORD bytes
            return end
        self.start_frames()
        return pos

    def start_frames(self) -> None:
        """The prelude is complete: check it, and make its first frame the next."""
        lengths = self.lengths
        if BIG_ENDIAN:
            lengths.byteswap()  # the prelude is little-endian
        self.total = check_lengths(lengths, self.limits)
        self.gaps, self.size = frame_layout(lengths)
        self.framing = True
        self.received_frames = self.pos = self.populated = self.span_stop = 0
        self.index = -1
        self.end = 0
        self.next_frame()

    def next_frame(self) -> None:
        """Move to the next frame that has bytes still to come (past empty frames)."""
        lengths = self.lengths
        count = self.count
        index = self.index + 1
        end = self.end
        while index < count:
            length = lengths[index]
            start = frame_start(end, length)
            end = start + length
            if length:
                if start > self.pos:  # an alignment gap: never written
                    self.pos = start
                break
            index += 1
        self.index = index
        self.end = end

    def span_end(self) -> int:
        """Where the span that starts at `pos` ends: at the end of its frame when that is
        ALIGNED_FRAME_BYTES or more (tornado fills a read per frame faster; see
        fastser.dask), else after the small frames that follow it without a gap; at most
        READ_BYTES on. Chosen once per span: a stream that trickles in byte by byte does
        not rescan its frames."""
        if self.span_stop > self.pos:
            return self.span_stop
        lengths = self.lengths
        limit = self.pos + READ_BYTES
        stop = self.end
        if lengths[self.index] < ALIGNED_FRAME_BYTES:
            index = self.index + 1
            while stop < limit and index < self.count and \
                    lengths[index] < ALIGNED_FRAME_BYTES:
                stop += lengths[index]
                index += 1
        stop = min(stop, limit)
        self.span_stop = stop
        return stop

    def next_span(self) -> memoryview:
        """The span of the in-place buffer that the next frame bytes go to, allocated and
        its pages committed as the bounds in the Strategy allow."""
        view = self.view
        if view is None:
            view = self.view = self.allocate(self.size)
        start = self.pos
        stop = self.span_end()
        # Committed ahead of the bytes by at most as many as arrived: a prelude announcing
        # gigabytes, then silence, commits nothing.
        ahead = min(stop, start + self.received_frames)
        if ahead > self.populated:
            self.populate(view, max(start, self.populated), ahead)
            self.populated = ahead
        return view[start:stop]

    def advance(self, count: int) -> None:
        """`count` more frame bytes arrived, at `pos` on."""
        self.received_frames += count
        pos = self.pos + count
        self.pos = pos
        while self.index < self.count and pos >= self.end:
            self.next_frame()
            pos = self.pos

    def complete(self) -> list[memoryview]:
        """The current message's frames (its bytes have all arrived); the next begins."""
        view = self.view
        if view is None:
            body = self.body
            view = memoryview(body if body is not None else bytearray())
        # Zero-copy: the frames are slices of the message's own buffer.
        frames = slice_frames(view, self.lengths, 0, self.gaps, True)
        self.count = -1
        self.lengths = new_lengths()
        self.framing = False
        self.body = None
        self.view = None
        return frames
