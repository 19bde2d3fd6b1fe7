"""python -m fastser inspect: what a stream written with pack_frames holds, read with the
safe decoder (nothing is unpickled or deserialized; payloads are described, not opened).
"""

import sys
from typing import Any, BinaryIO, TextIO

from fastser.codec.decoder import Decoder
from fastser.errors import FastserError
from fastser.families.serialize import SAFE_DESERIALIZERS
from fastser.frames.stream import FrameReader
from fastser.headers import HEADER_COMPRESSION, HEADER_SERIALIZER, HEADER_TYPE
from fastser.wrappers import Pickled, Serialized

CHUNK = 1 << 20
SHOWN_BYTES = 32  # bytes values longer than this are shown by size only


def describe(value: Any) -> str:
    """A message as readable text: payloads and long bytes-likes summarised."""
    if isinstance(value, (Serialized, Pickled)):
        header = value.header
        sizes = [memoryview(frame).nbytes for frame in value.frames]
        parts = [f"serializer={header.get(HEADER_SERIALIZER)!r}"]
        if HEADER_TYPE in header:
            parts.append(f"type={header[HEADER_TYPE]!r}")
        if header.get(HEADER_COMPRESSION) is not None:
            parts.append(f"compression={header[HEADER_COMPRESSION]!r}")
        parts.append(f"frames={sizes}")
        return f"<{type(value).__name__} {' '.join(parts)}>"
    if type(value) is dict:
        return "{" + ", ".join(f"{describe(k)}: {describe(v)}" for k, v in value.items()) + "}"
    if type(value) is list:
        return "[" + ", ".join(describe(item) for item in value) + "]"
    if type(value) is tuple:
        inner = ", ".join(describe(item) for item in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if type(value) in (set, frozenset):
        inner = ", ".join(sorted(describe(item) for item in value))
        return f"{type(value).__name__}({{{inner}}})"
    if type(value) in (bytes, bytearray, memoryview):
        size = memoryview(value).nbytes
        if size > SHOWN_BYTES:
            return f"<{type(value).__name__} {size} B>"
    return repr(value)


def inspect_stream(stream: BinaryIO, out: TextIO) -> int:
    """Print every message of `stream`; returns the exit status (2 for a bad stream)."""
    reader = FrameReader()
    decoder = Decoder(deserialize=False, deserializers=SAFE_DESERIALIZERS)
    count = 0
    try:
        while True:
            chunk = stream.read(CHUNK)
            if not chunk:
                break
            for frames in reader.feed(chunk):
                sizes = [frame.nbytes for frame in frames]
                version = frames[0][0] if sizes[0] else None
                print(f"message {count}: {len(frames)} frames {sizes}, "
                      f"wire version {version}", file=out)
                print(f"  {describe(decoder.loads(frames))}", file=out)
                count += 1
    except FastserError as exc:
        print(f"error: message {count} is not a valid fastser message: {exc}", file=sys.stderr)
        return 2
    if reader.pending:
        print(f"error: the stream is truncated inside message {count}", file=sys.stderr)
        return 2
    if count == 0:
        print("error: not a fastser stream: no message in it", file=sys.stderr)
        return 2
    print(f"{count} message{'s' if count != 1 else ''}", file=out)
    return 0


def main(path: str) -> int:
    if path == "-":
        return inspect_stream(sys.stdin.buffer, sys.stdout)
    try:
        with open(path, "rb") as stream:
            return inspect_stream(stream, sys.stdout)
    except OSError as exc:
        print(f"error: cannot read {path}: {exc.strerror or exc}", file=sys.stderr)
        return 2
