"""The types a serialized object is made of, shared by every layer: Frame (a bytes-like a
socket sends or receives) and Header (a family's description of its frames), and what every
layer needs of a frame: its size, its bytes, a byte view of it, and where it is aligned."""

from typing import Any, Final, TypeAlias, Union, cast


# A frame is any contiguous bytes-like object that fastser hands to a socket or receives
# from one. Payload frames may alias the caller's memory (zero-copy).
Frame: TypeAlias = Union[bytes, bytearray, memoryview]

# A header describes how the frames of one serialized object are to be read back.
# It must be encodable by msgpack (str keys; str/int/float/bool/None/bytes/list/dict values).
Header: TypeAlias = dict[str, Any]

# Compiled code looks the name `memoryview` up in the builtins module at each use (a dict
# lookup, ~100 instructions); a Final name is a C static. Frame checks on hot paths use this.
MEMORYVIEW: Final = memoryview
# The unbound method: compiled code would look `tobytes` up on each view by name.
TOBYTES: Final = memoryview.tobytes

# fastser's readers start every frame of ALIGNED_FRAME_BYTES or more at a multiple of
# FRAME_ALIGNMENT bytes of their receive buffer (the encoder splits large frames into pieces
# of such multiples, so they stay adjacent). Why: a numpy array viewing a frame at an odd
# offset is flagged unaligned, and numpy runs on it 3x (sum) to 100x (matmul, which copies
# it for BLAS) slower. 16 is the alignment of numpy's widest dtypes and what malloc and mmap
# give the buffer itself. The threshold is where fastser's encoder starts sending payloads
# out of band (smaller ones travel inside the header): every array frame it writes is
# aligned, unless frame_split_size is under 64 KiB (the pieces then lie end to end from
# wherever the first starts). Smaller frames lie end to end: a frame after a gap is read
# with a call of its own, and aligning from 1 KiB on made FrameReader read 2,000 frames of
# 1,030 bytes 2.2x slower.
FRAME_ALIGNMENT: Final = 16
# Bytes-likes of at least this size leave the header frame and travel as their own frames.
OUT_OF_BAND_BYTES: Final = 65536
ALIGNED_FRAME_BYTES: Final = OUT_OF_BAND_BYTES


def bytes_of(frame: Frame) -> bytes:
    """A frame's bytes as a bytes object: the frame itself if it is one, else a copy.
    memoryview.tobytes() copies 64 KiB ~15% faster than bytes(view) (CPython 3.11)."""
    if type(frame) is bytes:
        return frame
    if type(frame) is MEMORYVIEW:
        return TOBYTES(frame)
    return bytes(frame)


def nbytes(frame: Frame) -> int:
    """The size of a frame in bytes (len() of a memoryview counts items, not bytes)."""
    return len(frame) if type(frame) is not MEMORYVIEW else frame.nbytes


def byte_view(frame: object) -> memoryview:
    """A 1-d unsigned-byte view of the memory of `frame`, or of any object with a
    C-contiguous buffer (no copy); TypeError, ValueError or BufferError otherwise."""
    kind = type(frame)
    view = MEMORYVIEW(cast(Any, frame))  # any buffer; memoryview() says which is not one
    if kind is bytes or kind is bytearray:
        return view  # already bytes: skip two attribute lookups
    return view if view.format == "B" and view.ndim == 1 else view.cast("B")
