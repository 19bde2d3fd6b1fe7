"""Large frames split into views on the way out, and their pieces joined again on the way in.
Sits on buffers, frames.address and frames.placed.

Strategy: splitting never copies (the pieces are memoryviews of the caller's frame), and
joining does not copy either when the pieces lie end to end in one buffer — as they do when
they come from one receive buffer (fastser.sock, FrameReader, unpack_frames) or straight
from split_frames in the same process. The join then returns a view of that buffer; only
pieces scattered over several buffers are copied into a new bytearray. A fastser reader's
pieces are known adjacent from where it placed them (frames.placed); others by their addresses.
"""

import ctypes
from typing import Final, Optional, cast

from fastser.frame_types import FRAME_ALIGNMENT, Frame, MEMORYVIEW, byte_view, nbytes
from fastser.frames.address import buffer_address
from fastser.frames.placed import join_placed

def split_frames(frame: Frame, split_size: int) -> list[Frame]:
    """Pieces of at most `split_size` bytes, as views of `frame` (no copy). Each but the
    last is a multiple of FRAME_ALIGNMENT bytes (unless split_size is less), so a reader
    that aligns every frame lays the pieces end to end, and joins them without a copy."""
    view = byte_view(frame)
    total = view.nbytes
    piece = split_size - split_size % FRAME_ALIGNMENT or split_size
    return [view[start:start + piece] for start in range(0, total, piece)]


def merge_frames(pieces: list[Frame]) -> Frame:
    """The pieces of one split frame as one frame: a view when they are adjacent in one
    buffer (zero-copy, aliasing it), else a new writeable bytearray (a single piece is
    returned as it is)."""
    if len(pieces) == 1:
        return pieces[0]
    joined = join_adjacent(pieces)
    if joined is not None:
        return joined
    merged = bytearray(sum(nbytes(piece) for piece in pieces))
    view = memoryview(merged)
    offset = 0
    for piece in pieces:
        size = nbytes(piece)
        view[offset:offset + size] = byte_view(piece)
        offset += size
    return merged


def join_adjacent(pieces: list[Frame]) -> Optional[memoryview]:
    """A view spanning `pieces` when they are memoryviews of one buffer that follow one
    another in it without a gap; None otherwise."""
    placed = join_placed(cast(list[object], pieces))
    if placed is not None:
        return placed  # a fastser reader's frames: no address needed
    first = pieces[0]
    if type(first) is not MEMORYVIEW or first.obj is None:
        return None
    owner = first.obj
    try:
        whole = byte_view(owner)
    except (TypeError, ValueError, BufferError):
        return None  # the owner has no C-contiguous buffer of its own
    base = address_of(whole)
    expected = address_of(first)
    if base is None or expected is None:
        return None
    start = expected - base
    expected += first.nbytes
    readonly = first.readonly
    for piece in pieces[1:]:
        if type(piece) is not MEMORYVIEW or piece.obj is not owner:
            return None
        if address_of(piece) != expected:
            return None
        expected += piece.nbytes
        readonly = readonly or piece.readonly
    end = expected - base
    if start < 0 or end > whole.nbytes:
        return None
    # A fresh export of the owner may be writeable where the caller's views were not: the
    # join must not hand out write access the caller did not.
    return whole[start:end].toreadonly() if readonly else whole[start:end]


# Bound here, in compiled code: a call into the interpreted frames.address.buffer_address costs
# more than the ctypes lookup itself, and a join takes one address per piece plus one.
CHAR_FROM_BUFFER: Final = ctypes.c_char.from_buffer
ADDRESS_OF: Final = ctypes.addressof


def address_of(view: memoryview) -> Optional[int]:
    """Where `view`'s memory starts; None when it is not C-contiguous."""
    if not view.readonly:  # ctypes maps writeable buffers only
        try:
            return ADDRESS_OF(CHAR_FROM_BUFFER(view))
        except (TypeError, ValueError, BufferError):
            pass  # empty or not C-contiguous: the general path decides
    return buffer_address(view)
