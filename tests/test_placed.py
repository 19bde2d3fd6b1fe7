"""Split pieces that a fastser reader handed out are joined by where it placed them (no
ctypes address), and only those: out of order, from two messages, or another object at a
placed view's id, they are not."""

import tracemalloc

import numpy as np

import fastser
from fastser.frames.placed import PLACED, PLACED_MIN_BYTES, join_placed, place
from fastser.frames.split import merge_frames
from fastser.frames.stream import slice_frames

MiB = 2**20


def received(msg: object, split: int) -> list[memoryview]:
    frames = fastser.dumps(msg, frame_split_size=split)
    [out] = fastser.FrameReader().feed(fastser.pack_frames(frames))
    return out


def test_a_readers_split_pieces_join_as_a_view_of_its_buffer() -> None:
    x = np.arange(3 * MiB // 8 + 13, dtype="f8")  # 4 pieces at 1 MiB, the last 104 bytes
    frames = received({"h": "odd" * 7, "x": fastser.Serialize(x)}, MiB)
    pieces: list[object] = list(frames[1:])
    assert [len(p) for p in frames[1:]] == [MiB, MiB, MiB, 104]
    joined = join_placed(pieces)
    assert joined is not None and joined.obj is frames[1].obj and not joined.readonly
    assert joined.tobytes() == x.tobytes()
    y = fastser.loads(frames)["x"]
    assert (y == x).all() and np.shares_memory(y, np.asarray(frames[1]))


def test_pieces_out_of_order_or_from_two_messages_are_copied() -> None:
    blob = bytes(range(256)) * (9 * MiB // 256)
    first = received({"b": blob}, 4 * MiB)
    second = received({"b": blob}, 4 * MiB)
    for pieces in ([first[2], first[1], first[3]], [first[1], second[2], first[3]]):
        assert join_placed(list(pieces)) is None
        merged = merge_frames(list(pieces))
        assert type(merged) is bytearray
        assert merged == b"".join(bytes(piece) for piece in pieces)
    assert join_placed([first[1], first[2]]) is not None  # a run of them, in order


def test_small_pieces_are_not_placed_and_still_join_in_place() -> None:
    x = np.arange(MiB // 8, dtype="f8")
    frames = received({"x": fastser.Serialize(x)}, 64 * 2**10)
    assert len(frames) == 1 + 16 and all(len(f) < PLACED_MIN_BYTES for f in frames)
    assert join_placed(list(frames[1:])) is None
    joined = merge_frames(list(frames[1:]))
    assert type(joined) is memoryview and joined.obj is frames[1].obj  # by ctypes
    assert np.shares_memory(fastser.loads(frames)["x"], np.asarray(frames[1]))


def test_a_placement_ends_with_the_view_it_placed() -> None:
    before = len(PLACED)
    frames = received({"b": b"q" * (5 * MiB)}, 2 * MiB)
    assert len(PLACED) == before + 3
    del frames  # no cycle: the entries go at once, without the garbage collector
    assert len(PLACED) == before


def test_released_frames_free_their_buffer_though_still_referenced() -> None:
    tracemalloc.start()
    try:
        frames = received({"b": b"q" * (8 * MiB)}, 2 * MiB)
        assert tracemalloc.get_traced_memory()[0] >= 8 * MiB
        for frame in frames:
            frame.release()
        assert tracemalloc.get_traced_memory()[0] < MiB  # the frame objects live on
        assert all(id(frame) in PLACED for frame in frames[1:])
    finally:
        tracemalloc.stop()


def test_another_object_at_a_placed_id_is_not_taken_for_it() -> None:
    buffer = memoryview(bytearray(100))
    placed, other = buffer[0:50], buffer[50:100]
    place(placed, 0, 50)
    # As if `other` had been allocated where a placed view died before its entry went.
    PLACED[id(other)] = PLACED.pop(id(placed))
    try:
        assert join_placed([other]) is None
    finally:
        del PLACED[id(other)]


def test_pieces_placed_in_a_read_only_buffer_join_read_only() -> None:
    data = b"header" + bytes(range(256)) * (3 * MiB // 256)
    frames = slice_frames(memoryview(data), [6, 2 * MiB, MiB], 0, False, True)
    joined = join_placed(list(frames[1:]))
    assert joined is not None and joined.obj is data and joined.readonly
    assert joined.tobytes() == data[6:]
