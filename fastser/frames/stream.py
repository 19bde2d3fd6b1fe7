"""Frames on a byte stream: a prelude of little-endian uint64s (count, then one length per
frame), then the frames. Knows nothing of messages; sits on limits and errors.

Rule: every count and length read from the wire is checked against Limits, and against the
bytes actually present, before it is used or anything is allocated for it.
"""

import struct
from collections.abc import Sequence
from typing import Final, Optional

from fastser.arguments import check_optional
from fastser.buffers import ALIGNED_FRAME_BYTES, FRAME_ALIGNMENT, Frame, byte_view, nbytes
from fastser.errors import FrameError
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
ALIGNMENT_GAPS: Final = tuple(bytes(size) for size in range(FRAME_ALIGNMENT))


def pack_frames_prelude(frames: Sequence[Frame]) -> bytes:
    """The prelude for `frames`: their count, then each length in bytes, as little-endian
    uint64s. Write it, then the frames, for a scatter-gather send without joining."""
    lengths = [nbytes(frame) for frame in frames]
    count = len(lengths)
    return struct.pack(f"<{count + 1}Q", count, *lengths)


def pack_frames(frames: Sequence[Frame]) -> bytes:
    """The prelude and all `frames` joined into one bytes object (this copies every frame)."""
    parts: list[Frame] = [pack_frames_prelude(frames)]
    parts.extend(frames)
    return b"".join(parts)


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
    """`count`, read from a prelude, if it is within `limits.max_frames`; else FrameError."""
    if count > limits.max_frames:
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


def prelude_lengths(field: Frame, offset: int, count: int,
                    limits: Limits) -> tuple[tuple[int, ...], int]:
    """The `count` frame lengths a prelude lists from `offset` of `field` (little-endian
    uint64s, which the caller has read: a hostile count was checked, check_count, before
    it asked for them), and their total, checked against `limits` (check_lengths)."""
    lengths: tuple[int, ...] = struct.unpack_from(f"<{count}Q", field, offset) if count else ()
    return lengths, check_lengths(lengths, limits)


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


def slice_runs(received: list[bytes], lengths: Sequence[int]) -> list[Frame]:
    """The frames, from `received`: one bytes object per run of frame_runs, in order (for a
    reader that cannot read into a buffer of its own). A run holds the next non-empty frames
    end to end, exactly. A frame that is a whole run is that bytes object itself, so a bytes
    value received in it is not copied again; the others are views of their run."""
    frames: list[Frame] = []
    run = -1
    pos = size = 0  # in the current run
    view = memoryview(b"")
    placed = False  # whether the frame before was placed (in this run)
    for length in lengths:
        if not length:
            frames.append(memoryview(b""))  # its own: a receiver may release it
            placed = False
            continue
        if pos == size:  # the run is used up: the frame starts the next one
            run += 1
            data = received[run]
            pos, size = 0, len(data)
            if size == length:
                frames.append(data)
                pos = size
                placed = False
                continue
            view = memoryview(data)
            placed = False
        frame = view[pos:pos + length]
        frames.append(frame)
        placed = length >= PLACED_MIN_BYTES or placed
        if placed:  # a split frame's pieces share a run: loads joins them by their place
            place_frame(frame, pos, pos + length)
        pos += length
    return frames


def unpack_frames(buf: Frame, *, limits: Optional[Limits] = None) -> list[memoryview]:
    """The frames of the one message in `buf`, as 1-d memoryviews of format "B".

    Parameters: `buf`, bytes, a bytearray or a C-contiguous memoryview of any format;
    `limits` (default DEFAULT_LIMITS).
    Returns: views into `buf` (no copy): they alias its memory and are writeable when it is.
    Raises: FrameError unless `buf` holds exactly one complete message within `limits`.
    """
    check_optional(limits, Limits, "limits")
    limits = DEFAULT_LIMITS if limits is None else limits
    view = byte_view(buf)
    size = view.nbytes
    if size < WORD:
        raise FrameError(f"truncated prelude: {size} bytes, the frame count alone needs {WORD}")
    count = check_count(COUNT.unpack_from(view, 0)[0], limits)
    # The lengths must be present before they are read: a hostile count cannot make us
    # build a tuple larger than the buffer.
    start = WORD + WORD * count
    if start > size:
        raise FrameError(f"truncated prelude: {count} frame lengths end at byte {start}, "
                         f"the buffer holds {size}")
    lengths, total = prelude_lengths(view, WORD, count, limits)
    if start + total != size:
        what = "truncated message" if start + total > size else "trailing bytes after message"
        raise FrameError(f"{what}: the prelude announces {count} frames of {total} bytes "
                         f"from byte {start}, the buffer holds {size - start} after the prelude")
    return slice_frames(view, lengths, start=start)


class FrameReader:
    # Docstring in api.CLASS_DOCS: mypyc drops class docstrings
    # (https://github.com/mypyc/mypyc/issues/437).

    def __init__(self, limits: Optional[Limits] = None) -> None:
        check_optional(limits, Limits, "limits")
        self.limits: Limits = DEFAULT_LIMITS if limits is None else limits
        self.head = bytearray()  # the part of a prelude field received so far
        self.count = -1  # frame count of the current message, -1 until it is known
        self.lengths: tuple[int, ...] = ()
        self.gaps = False  # whether body has gaps that align frames (frame_layout)
        # The run whose bytes come next: frames `frame` to `last` - 1, which follow one
        # another without a gap from `start` to `stop` in body (appended in one go).
        self.frame = 0
        self.last = 0
        self.start = 0
        self.stop = 0
        # None until the prelude is complete; grown as bytes arrive, never ahead of them.
        self.body: Optional[bytearray] = None
        self.error: Optional[str] = None

    @property
    def pending(self) -> bool:
        """True when bytes of a message that is not yet complete have been received: a
        stream that ends now ends inside a message."""
        return self.body is not None or self.count >= 0 or len(self.head) > 0

    def feed(self, data: Frame) -> list[list[memoryview]]:
        """Take the next bytes of the stream (of any length, even empty).

        Returns: the frames of every message these bytes complete, oldest first; each frame
        a writeable 1-d memoryview of format "B" into a buffer owned by that message (a
        frame of 64 KiB or more starting at a multiple of 16 bytes in it).
        Raises: FrameError on a prelude beyond the reader's Limits or with more frames than
        its message's bytes pay views for (check_views), or if it raised before.
        """
        view = byte_view(data)
        if self.error is not None:
            raise FrameError(f"FrameReader failed earlier and cannot resume: {self.error}")
        try:
            return self.consume(view)
        except FrameError as exc:
            self.error = str(exc)
            raise

    def consume(self, view: memoryview) -> list[list[memoryview]]:
        messages: list[list[memoryview]] = []
        pos = 0
        end = view.nbytes
        while True:
            body = self.body
            if body is None:
                if pos == end:
                    break
                pos = self.read_prelude(view, pos, end)
                body = self.body
                if body is None:
                    break  # the prelude continues in the next bytes
            pos = self.fill(body, view, pos, end)
            if self.frame < len(self.lengths):
                break  # the frames continue in the next bytes
            # Complete (a message without frame bytes completes with its prelude).
            messages.append(slice_frames(memoryview(body), self.lengths, 0, self.gaps, True))
            self.count = -1
            self.body = None
        return messages

    def fill(self, body: bytearray, view: memoryview, pos: int, end: int) -> int:
        """Append the stream's bytes from `pos` to `body`, each run of frames from its
        aligned offset on (one append per run, not per frame), until the message or the
        bytes end; returns the position reached."""
        while self.frame < len(self.lengths):
            stop = self.stop
            if len(body) < stop:
                if pos == end:
                    break
                start = self.start
                if len(body) < start:
                    body += ALIGNMENT_GAPS[start - len(body)]
                take = min(stop - len(body), end - pos)
                body += view[pos:pos + take]
                pos += take
                if len(body) < stop:
                    break
            self.next_run(self.last)
        return pos

    def next_run(self, frame: int) -> None:
        """Make `frame`, with the frames after it that follow it without a gap, the run
        whose bytes come next (the run before it ended at self.stop)."""
        lengths = self.lengths
        self.frame = frame
        if frame < len(lengths):
            start = frame_start(self.stop, lengths[frame])
            stop = start + lengths[frame]
            last = frame + 1
            while last < len(lengths) and frame_start(stop, lengths[last]) == stop:
                stop += lengths[last]
                last += 1
            self.start = start
            self.stop = stop
            self.last = last

    def read_prelude(self, view: memoryview, pos: int, end: int) -> int:
        if self.count < 0:
            field, pos = self.gather(view, pos, end, WORD)
            if field is None:
                return pos
            self.count = check_count(COUNT.unpack_from(field, 0)[0], self.limits)
        raw: Frame = b""
        if self.count > 0:
            field, pos = self.gather(view, pos, end, WORD * self.count)
            if field is None:
                return pos
            raw = field
        self.lengths = prelude_lengths(raw, 0, self.count, self.limits)[0]
        self.gaps, size = frame_layout(self.lengths)
        if self.gaps:
            self.stop = 0
            self.next_run(0)
        else:  # the frames lie end to end: one run
            self.frame = 0
            self.last = len(self.lengths)
            self.start = 0
            self.stop = size
        self.body = bytearray()
        return pos

    def gather(self, view: memoryview, pos: int, end: int,
               need: int) -> tuple[Optional[memoryview], int]:
        """A prelude field of `need` bytes and the position after it, or None and `end`
        while it is incomplete (its start is then kept in `head`)."""
        head = self.head
        if not head and end - pos >= need:
            return view[pos:pos + need], pos + need  # all here: read in place, no copy
        take = min(need - len(head), end - pos)
        head += view[pos:pos + take]
        if len(head) < need:
            return None, end
        self.head = bytearray()  # the view below keeps the completed field alive
        return memoryview(head), pos + take
