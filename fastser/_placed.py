"""Where fastser's readers placed the large frames they handed out, so that loads can tell
that the pieces of a split frame lie end to end in one buffer without asking ctypes (a
memoryview shows no address). Sits on nothing.

Strategy: a reader that slices frames out of a buffer of its own places each frame of
PLACED_MIN_BYTES or more, and each frame that follows a placed one without a gap (the
last piece of a split frame may be small), in PLACED: keyed by the id of the memoryview it
handed out, with a weak reference to that very view (an id that another object reuses is
never taken for it), the reader's view of the whole buffer, and the frame's start in it.
An entry leaves PLACED when its view dies, so it keeps nothing alive that the view did
not. Proving two pieces adjacent this way costs two dict lookups, against one ctypes
address per piece plus one for their buffer (~0.3 µs each: 1.4x W3's msgpack floor).
"""

import weakref
from typing import Final, Optional

# Smaller pieces (frame_split_size under 1 MiB) are joined by their ctypes addresses: a
# placement costs ~0.3 µs per frame, which must stay small beside receiving the frame.
PLACED_MIN_BYTES: Final = 2**20


class Forget:
    """A placed view's weakref callback: drops its entry when the view dies. It holds the
    key alone: holding the entry would make a cycle that only the garbage collector frees,
    keeping the buffer alive until it runs."""

    def __init__(self, key: int) -> None:
        self.key = key

    def __call__(self, ref: object) -> None:
        PLACED.pop(self.key, None)


PLACED: Final[dict[int, tuple["weakref.ref[memoryview]", memoryview, int, int]]] = {}


def place(frame: memoryview, buffer: memoryview, start: int, stop: int) -> None:
    """Record that `frame`, a reader's slice of `buffer`, spans bytes `start` to `stop` of
    it."""
    key = id(frame)
    PLACED[key] = (weakref.ref(frame, Forget(key)), buffer, start, stop)


def join_placed(pieces: list[object]) -> Optional[memoryview]:
    """A view spanning `pieces` when a reader placed each of them, in this order, end to end
    in one buffer; None otherwise."""
    buffer: Optional[memoryview] = None
    start = end = 0
    for piece in pieces:
        entry = PLACED.get(id(piece))
        if entry is None or entry[0]() is not piece:
            return None  # not placed: the id is another object's, or was never placed
        if buffer is None:
            buffer = entry[1]
            start = entry[2]
        elif entry[1] is not buffer or entry[2] != end:
            return None
        end = entry[3]
    return None if buffer is None else buffer[start:end]
