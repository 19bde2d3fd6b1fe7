"""python -m fastser inspect: what a stream written with pack_frames holds, read with the
safe decoder (nothing is unpickled or deserialized; payloads are described, not opened).

Rule: whatever the input, the result is a description (status 0) or one line on stderr
(status 2), never a traceback. A description is written as it is made, piece by piece, so
that a header of millions of small values costs little more than decoding it.
"""

import io
import os
import stat
import struct
import sys
from typing import Any, BinaryIO, Final, Optional, TextIO

from fastser.codec.decoder import Decoder
from fastser.codec.wire import WIRE_VERSION
from fastser.errors import FastserError
from fastser.families.serialize import SAFE_DESERIALIZERS
from fastser.frames.stream import COUNT, WORD, FrameReader
from fastser.headers import HEADER_COMPRESSION, HEADER_SERIALIZER, HEADER_TYPE
from fastser.limits import DEFAULT_LIMITS
from fastser.wrappers import Pickled, Serialized

CHUNK: Final = 1 << 20
SHOWN_BYTES: Final = 32  # bytes values longer than this are shown by size only
# Containers nested deeper are shown by type and size: the description recurses once per
# level, and hostile input may nest deeper than the recursion limit (a kept payload's header).
SHOWN_DEPTH: Final = 100
# Larger ints are shown by size: Python refuses to print an int of more than 4,300 digits
# (sys.get_int_max_str_digits), and where that is lifted, printing one takes quadratic time.
SHOWN_INT_BITS: Final = 10_000
BATCH: Final = 4096  # pieces of a description joined per write
# The first bytes of the input are kept to say why it is not a fastser stream: its first
# prelude, when that fits (a message of up to 8,191 frames).
HEAD_BYTES: Final = 64 * 2**10
ERROR_CHARS: Final = 1000  # an error line is cut after this many characters


class Text:
    """The pieces of a description, written to `out` in batches as they are made."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.parts: list[str] = []

    def add(self, part: str) -> None:
        self.parts.append(part)
        if len(self.parts) >= BATCH:
            self.flush()

    def flush(self) -> None:
        self.out.write("".join(self.parts))
        self.parts.clear()


class MessageEnds:
    """Where each message of the stream ends, counted from its prelude, so that the reader
    is fed at most one message end at a time: a FrameReader that completes messages and
    then fails in the same feed raises without returning them, and the error would name
    the wrong message. Whatever a prelude says, only integers are kept: the reader, fed
    the same bytes, checks them against its Limits."""

    def __init__(self) -> None:
        self.field = b""  # the part of a prelude field received so far
        self.reading_count = True
        self.lengths_left = 0  # length fields of the current message still to come
        self.bytes_left = 0  # and its frame bytes, counted as its lengths are read

    def split(self, chunk: bytes) -> list[memoryview]:
        """`chunk` in pieces, each but the last ending where a message ends."""
        view = memoryview(chunk)
        pieces: list[memoryview] = []
        start = pos = 0
        end = len(chunk)
        while pos < end:
            if not (self.reading_count or self.lengths_left):  # frame bytes
                take = min(self.bytes_left, end - pos)
                self.bytes_left -= take
                pos += take
            elif self.reading_count or self.field or end - pos < WORD:  # one prelude field
                take = min(WORD - len(self.field), end - pos)
                self.field += chunk[pos:pos + take]
                pos += take
                if len(self.field) < WORD:
                    break
                number: int = COUNT.unpack_from(self.field, 0)[0]
                self.field = b""
                if self.reading_count:
                    self.reading_count = False
                    self.lengths_left = number
                else:
                    self.lengths_left -= 1
                    self.bytes_left += number
            else:  # whole length fields, in one go
                fields = min(self.lengths_left, (end - pos) // WORD)
                lengths: tuple[int, ...] = struct.unpack_from(f"<{fields}Q", chunk, pos)
                self.bytes_left += sum(lengths)
                self.lengths_left -= fields
                pos += WORD * fields
            if not (self.reading_count or self.lengths_left or self.bytes_left):
                pieces.append(view[start:pos])  # the message ends here
                start = pos
                self.reading_count = True
        if start < end:
            pieces.append(view[start:end])
        return pieces


def describe(value: Any, depth: int = SHOWN_DEPTH) -> str:
    """A message as readable text: payloads, long bytes-likes, huge ints and containers
    nested deeper than `depth` summarised."""
    buffer = io.StringIO()
    text = Text(buffer)
    write_value(value, text, depth)
    text.flush()
    return buffer.getvalue()


def write_value(value: Any, text: Text, depth: int) -> None:
    """Add the description of `value` to `text` (describe's, without building it whole)."""
    kind = type(value)
    if isinstance(value, (Serialized, Pickled)):
        write_payload(value, text, depth)
    elif kind in (dict, list, tuple, set, frozenset):
        if depth <= 0:
            text.add(f"<{kind.__name__} of {len(value):,} item{'' if len(value) == 1 else 's'}>")
        elif kind is dict:
            text.add("{")
            for index, (key, item) in enumerate(value.items()):
                if index:
                    text.add(", ")
                write_value(key, text, depth - 1)
                text.add(": ")
                write_value(item, text, depth - 1)
            text.add("}")
        elif kind is list or kind is tuple:
            text.add("[" if kind is list else "(")
            for index, item in enumerate(value):
                if index:
                    text.add(", ")
                write_value(item, text, depth - 1)
            text.add("]" if kind is list else ",)" if len(value) == 1 else ")")
        else:  # sorted, so that a set reads the same on every run
            inner = ", ".join(sorted(describe(item, depth - 1) for item in value))
            text.add(f"{kind.__name__}({{{inner}}})")
    elif kind in (bytes, bytearray, memoryview) and memoryview(value).nbytes > SHOWN_BYTES:
        text.add(f"<{kind.__name__} {memoryview(value).nbytes} B>")
    elif kind is memoryview:  # its repr is its address, which says nothing
        text.add(f"memoryview({value.tobytes()!r})")
    elif kind is int and value.bit_length() > SHOWN_INT_BITS:
        text.add(f"<int of {value.bit_length():,} bits>")
    else:
        text.add(repr(value))


def write_payload(value: Any, text: Text, depth: int) -> None:
    header = value.header
    sizes = [memoryview(frame).nbytes for frame in value.frames]
    text.add(f"<{type(value).__name__} serializer=")
    write_value(header.get(HEADER_SERIALIZER), text, depth - 1)
    if HEADER_TYPE in header:
        text.add(" type=")
        write_value(header[HEADER_TYPE], text, depth - 1)
    if header.get(HEADER_COMPRESSION) is not None:
        text.add(" compression=")
        write_value(header[HEADER_COMPRESSION], text, depth - 1)
    text.add(f" frames={sizes}>")


def fail(message: str) -> int:
    """Say on stderr, in one line, why the input cannot be inspected; the exit status 2."""
    line = " ".join(message.splitlines())
    if len(line) > ERROR_CHARS:
        line = line[:ERROR_CHARS] + " ..."
    print(f"error: {line}", file=sys.stderr)
    return 2


def size_of(stream: BinaryIO) -> Optional[int]:
    """The size of `stream` in bytes if it is a regular file, else None (a pipe, a tty)."""
    try:
        status = os.fstat(stream.fileno())
    except (OSError, ValueError, AttributeError):  # io.UnsupportedOperation is both
        return None
    return status.st_size if stat.S_ISREG(status.st_mode) else None


def announced(head: bytes) -> str:
    """What the first prelude in `head` announces, as far as `head` holds it."""
    count: int = COUNT.unpack_from(head, 0)[0]
    prelude = WORD * (count + 1)
    if prelude > len(head):
        return f"its first 8 bytes {head[:WORD]!r}, read as a frame count, announce " \
               f"{count:,} frames, whose lengths alone take {prelude:,} bytes"
    total = announced_bytes(head, count)
    return f"its prelude announces {count:,} frames of {total:,} bytes in all, " \
           f"{prelude + total:,} bytes with the prelude"


def foreign(head: bytes, size: Optional[int]) -> bool:
    """Whether the first prelude in `head` is implausible for an input of `size` bytes
    (None: unknown): more frames than any reader accepts, or more bytes than the input."""
    count: int = COUNT.unpack_from(head, 0)[0]
    if count > DEFAULT_LIMITS.max_frames:
        return True
    if size is None:
        return False
    prelude = WORD * (count + 1)
    if prelude > size:
        return True
    if prelude > len(head):
        return False
    return prelude + announced_bytes(head, count) > size


def announced_bytes(head: bytes, count: int) -> int:
    """The total of the `count` frame lengths after the frame count in `head`."""
    total = 0
    for index in range(count):
        length: int = COUNT.unpack_from(head, WORD * (index + 1))[0]
        total += length
    return total


def frame_error(count: int, head: bytes, size: Optional[int], exc: Exception) -> str:
    """Why the stream's framing failed in message `count`."""
    if count == 0 and str(exc).startswith("not a fastser stream"):  # the reader said so
        return str(exc) if size is None else f"{exc} (the input holds {size:,} bytes)"
    if count == 0 and len(head) >= WORD and foreign(head, size):
        holds = "" if size is None else f", and the input holds {size:,}"
        return f"not a fastser stream: {announced(head)}{holds} ({exc})"
    return f"message {count} is not a valid fastser message: {exc}"


def message_error(count: int, frames: list[memoryview], exc: Exception) -> str:
    """Why message `count`, framed as `frames`, could not be decoded."""
    if count == 0 and (not frames or not frames[0].nbytes or frames[0][0] != WIRE_VERSION):
        return f"not a fastser stream: {exc}"
    return f"message {count} is not a valid fastser message: {exc}"


def truncated(count: int, head: bytes, received: int) -> str:
    """Why the stream ended inside message `count`, after `received` bytes."""
    if count == 0 and received < WORD:
        return f"not a fastser stream: it holds {received} bytes, fewer than the {WORD} " \
               "of a frame count"
    if count == 0:
        return f"the stream is truncated inside message 0: {announced(head)}, and the " \
               f"input ends after {received:,} bytes"
    return f"the stream is truncated inside message {count}: the input ends after " \
           f"{received:,} bytes"


def inspect_stream(stream: BinaryIO, out: TextIO, size: Optional[int] = None,
                   name: str = "the input") -> int:
    """Print every message of `stream` to `out` (of `size` bytes if known, called `name` in
    errors); returns the exit status: 0, or 2 after one line on stderr for a bad stream."""
    reader = FrameReader()
    ends = MessageEnds()
    decoder = Decoder(deserialize=False, deserializers=SAFE_DESERIALIZERS)
    count = 0
    head = b""
    received = 0
    while True:
        try:
            chunk = stream.read(CHUNK)
        except OSError as exc:
            return fail(f"cannot read {name}: {exc.strerror or exc}")
        if not chunk:
            break
        if len(head) < HEAD_BYTES:
            head += chunk[:HEAD_BYTES - len(head)]
        received += len(chunk)
        for piece in ends.split(chunk):
            try:
                messages = reader.feed(piece)
            except FastserError as exc:
                return fail(frame_error(count, head, size, exc))
            status = describe_messages(messages, decoder, count, out)
            if status:
                return status
            count += len(messages)
    if reader.pending:
        return fail(truncated(count, head, received))
    if count == 0:
        return fail("not a fastser stream: no message in it")
    print(f"{count} message{'s' if count != 1 else ''}", file=out)
    return 0


def describe_messages(messages: list[list[memoryview]], decoder: Decoder, count: int,
                      out: TextIO) -> int:
    """Print `messages`, the first of which is message `count`, to `out`; the exit status:
    0, or 2 after one line on stderr for a message that cannot be decoded."""
    for frames in messages:
        try:
            msg = decoder.loads(frames)
            sizes = [frame.nbytes for frame in frames]
            print(f"message {count}: {len(frames)} frames {sizes}, "
                  f"wire version {frames[0][0]}", file=out)
            text = Text(out)
            text.add("  ")
            write_value(msg, text, SHOWN_DEPTH)
            text.add("\n")
            text.flush()
        except FastserError as exc:
            return fail(message_error(count, frames, exc))
        except OSError:
            raise  # the output failed, not the input: for the caller
        except Exception as exc:  # a bug here must still end in one line, not a traceback
            return fail(f"cannot describe message {count}: {type(exc).__name__}: {exc}")
        count += 1
    return 0


def main(path: str) -> int:
    """Inspect the file at `path`, or standard input for "-"; the exit status."""
    if path == "-":
        stdin = getattr(sys.stdin, "buffer", None)
        if stdin is None:
            return fail("cannot read standard input: it is closed or not a byte stream")
        return inspect_stream(stdin, sys.stdout, size_of(stdin), "standard input")
    try:
        stream = open(path, "rb")
    except (OSError, ValueError) as exc:  # ValueError: a NUL in the path
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        return fail(f"cannot read {path}: {reason}")
    with stream:
        return inspect_stream(stream, sys.stdout, size_of(stream), path)
