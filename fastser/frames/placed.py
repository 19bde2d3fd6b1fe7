"""Where fastser's readers placed the large frames they handed out, so that loads can tell
that the pieces of a split frame lie end to end in one buffer without asking ctypes (a
memoryview shows no address). Sits on buffers.

Strategy: a reader that slices frames out of a buffer of its own places each frame of
PLACED_MIN_BYTES or more, and each frame that follows a placed one without a gap (the
last piece of a split frame may be small), in PLACED: keyed by the id of the memoryview it
handed out, with a weak reference to that very view (an id that another object reuses is
never taken for it) and where the frame lies in the buffer the view exports (`view.obj`).
An entry holds no buffer: the pieces' own `.obj` is joined, so a frame released, or dead,
keeps nothing alive. Proving two pieces adjacent this way costs two dict lookups, against
one ctypes address per piece plus one for their buffer (`bench.sh floors`, arrays loads,
times both joins).
"""

import weakref
from typing import Final, Optional, cast

from fastser.frame_types import byte_view

# Smaller pieces (frame_split_size under 1 MiB) are joined by their ctypes addresses: a
# placement costs ~0.3 µs per frame, which must stay small beside receiving the frame.
PLACED_MIN_BYTES: Final = 2**20


class Forget:
    """A placed view's weakref callback: drops its entry when the view dies. It holds the
    key alone (the entry holds its weakref, which holds it: no cycle)."""

    def __init__(self, key: int) -> None:
        self.key = key

    def __call__(self, ref: object) -> None:
        PLACED.pop(self.key, None)


# id(view) -> (weakref to the view, start, stop, id of the buffer it exports, read-only)
PLACED: Final[dict[int, tuple["weakref.ref[memoryview]", int, int, int, bool]]] = {}


def place(frame: memoryview, start: int, stop: int) -> None:
    """Record that `frame`, a reader's 1-d byte view, spans bytes `start` to `stop` of the
    buffer it exports (`frame.obj`, from its first byte). The buffer's id and the view's
    read-only flag are read here, once, rather than by each join (an attribute of a
    memoryview is a generic lookup for compiled code: ~0.16k instructions)."""
    key = id(frame)
    PLACED[key] = (weakref.ref(frame, Forget(key)), start, stop, id(frame.obj),
                   frame.readonly)


def join_placed(pieces: list[object]) -> Optional[memoryview]:
    """A view spanning `pieces` when a reader placed each of them, in this order, end to end
    in one buffer; None otherwise. Buffers are told apart by id: each piece, alive, keeps
    its buffer alive, so no two of their buffers share an id."""
    first: object = None
    owner = start = end = 0
    readonly = False
    for piece in pieces:
        entry = PLACED.get(id(piece))
        if entry is None or entry[0]() is not piece:
            return None  # not placed: the id is another object's, or was never placed
        if first is None:
            first = piece
            owner = entry[3]
            start = entry[1]
        elif entry[3] != owner or entry[1] != end:
            return None
        end = entry[2]
        readonly = readonly or entry[4]
    if first is None:
        return None
    # The weakref's own target: a reader's memoryview, whose buffer is the one placed.
    joined = byte_view(cast(memoryview, first).obj)[start:end]
    return joined.toreadonly() if readonly and not joined.readonly else joined
