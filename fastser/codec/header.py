"""Frame 0 on the way in: the frame list checked against Limits, and the msgpack body of the
header after its version byte. Everything here runs before msgpack sees a byte."""

from collections.abc import Sequence
from typing import Any, Final

from fastser.codec.wire import WIRE_VERSION
from fastser.errors import DeserializationError, chained
from fastser.frame_types import byte_view, bytes_of
from fastser.limits import Limits, check_frames

SMALL_HEADER_BYTES: Final = 4096


def frame_list_of(frames: object) -> list[Any]:
    """The frames as a list; DeserializationError unless they are a sequence (untrusted:
    checked, not assumed, to be one)."""
    if type(frames) is list:
        return frames
    if type(frames) is tuple or (isinstance(frames, Sequence) and
                                 not isinstance(frames, (bytes, bytearray, str))):
        return list(frames)
    raise DeserializationError(
        f"frames must be a list of bytes-like frames, not {type(frames).__qualname__}")


def header_body(frame_list: list[Any], limits: Limits) -> tuple[int, object]:
    """The size of frame 0 and its msgpack body (bytes, or a view of a large header), after
    checking every frame against `limits` and the version byte."""
    size = check_frames(frame_list, limits)
    header = frame_list[0]
    body: object
    if 0 < size <= SMALL_HEADER_BYTES:
        # A small copy costs less than the memoryviews that avoid it: a received header is
        # a memoryview, and byte_view() and a slice of it cost ~1.8k instructions (0.1x
        # the control-message loads floor of `bench.sh floors`). tobytes() copies in half
        # the time of bytes().
        data = bytes_of(header)
        version = data[0]
        body = data[1:]
    else:
        try:
            view = byte_view(header)
        except (TypeError, ValueError) as exc:  # a strided view of more than one dimension
            raise chained(DeserializationError(
                f"frame 0 is not a C-contiguous buffer: {exc}"), exc)
        version = view[0] if size else -1  # size: check_frames measured frame 0
        body = view[1:]
    if version != WIRE_VERSION:
        found = version if size else "nothing"
        raise DeserializationError(
            f"frame 0 is not a fastser header of wire version {WIRE_VERSION} "
            f"(first byte: {found})")
    return size, body
