"""Hand-made headers for hostile-input and format tests, and the decoded header of frames."""

from typing import Any

import msgpack

from fastser.codec.wire import WIRE_VERSION


def body(frames: list[Any]) -> Any:
    return msgpack.unpackb(bytes(frames[0])[1:], raw=False, strict_map_key=False)


def header_of(obj: Any) -> list[Any]:
    """frames of a hand-made header holding `obj` (hostile input)."""
    return [bytes([WIRE_VERSION]) + msgpack.packb(obj, use_bin_type=True)]


def mark(code: int) -> msgpack.ExtType:
    return msgpack.ExtType(code, b"")
