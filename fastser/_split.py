"""Splitting payload frames into views, and joining them again. Sits below the codec.

Splitting never copies: the pieces are memoryviews of the caller's frame.
"""

from ._types import Frame, nbytes


def split_frame(frame: Frame, split_size: int) -> list[Frame]:
    """Pieces of at most `split_size` bytes, as views of `frame` (no copy)."""
    view = memoryview(frame)
    if view.format != "B" or view.ndim != 1:
        view = view.cast("B")
    total = view.nbytes
    return [view[start:start + split_size] for start in range(0, total, split_size)]


def merge_frames(pieces: list[Frame]) -> Frame:
    """Join the pieces of one split frame into one writeable buffer (a single piece is
    returned as it is)."""
    if len(pieces) == 1:
        return pieces[0]
    merged = bytearray(sum(nbytes(piece) for piece in pieces))
    view = memoryview(merged)
    offset = 0
    for piece in pieces:
        size = nbytes(piece)
        view[offset:offset + size] = piece if type(piece) is not memoryview else piece.cast("B")
        offset += size
    return merged
