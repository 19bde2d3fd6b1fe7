"""Vocabulary shared by every layer: what a frame and a header are."""

from typing import Any, TypeAlias, Union, cast

# A frame is any contiguous bytes-like object that fastser hands to a socket or receives
# from one. Payload frames may alias the caller's memory (zero-copy).
Frame: TypeAlias = Union[bytes, bytearray, memoryview]

# A header describes how the frames of one serialized object are to be read back.
# It must be encodable by msgpack (str keys; str/int/float/bool/None/bytes/list/dict values).
Header: TypeAlias = dict[str, Any]


def nbytes(frame: Frame) -> int:
    """The size of a frame in bytes (len() of a memoryview counts items, not bytes)."""
    return len(frame) if type(frame) is not memoryview else frame.nbytes


def byte_view(frame: object) -> memoryview:
    """A 1-d unsigned-byte view of the memory of `frame`, or of any object with a
    C-contiguous buffer (no copy); TypeError, ValueError or BufferError otherwise."""
    view = memoryview(cast(Any, frame))  # any buffer; memoryview() says which is not one
    return view if view.format == "B" and view.ndim == 1 else view.cast("B")
