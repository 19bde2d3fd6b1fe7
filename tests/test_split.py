"""Splitting payload frames into views, and joining them without a copy when they are
adjacent in one buffer."""

from typing import Any

import numpy as np
import pytest

import fastser
from fastser.codec.encoder import MIN_SPLIT_SIZE
from fastser.frame_types import Frame
from fastser.frames.split import address_of, join_adjacent, merge_frames, split_frames


def pieces_of(buffer: Any, sizes: list[int]) -> list[Frame]:
    view = memoryview(buffer)
    out: list[Frame] = []
    offset = 0
    for size in sizes:
        out.append(view[offset:offset + size])
        offset += size
    return out


def test_split_frames_are_views_covering_the_frame() -> None:
    data = bytearray(range(256)) * 40
    # At most 1000 bytes each, a multiple of 16 (FRAME_ALIGNMENT) but the last: readers
    # that align every frame then lay the pieces end to end.
    for split_size, sizes in ((1000, [992] * 10 + [320]), (1024, [1024] * 10), (10, [10] * 1024)):
        pieces = split_frames(data, split_size)
        assert [len(p) for p in pieces] == sizes
        assert all(type(p) is memoryview and p.obj is data for p in pieces)
        assert b"".join(pieces) == data


def test_adjacent_pieces_of_one_buffer_join_as_a_view() -> None:
    for buffer in (bytearray(b"abcdefghij" * 100), b"0123456789" * 100):
        pieces = pieces_of(buffer, [300, 300, 400])
        joined = merge_frames(pieces)
        assert type(joined) is memoryview and joined.obj is buffer
        assert joined.tobytes() == bytes(buffer)
        assert joined.readonly is (type(buffer) is bytes)


def test_a_run_inside_a_larger_buffer_joins_in_place() -> None:
    buffer = bytearray(range(200))
    pieces = pieces_of(buffer, [10, 50, 60, 80])[1:3]  # bytes 10..120
    joined = merge_frames(pieces)
    assert type(joined) is memoryview and joined.tobytes() == bytes(range(10, 120))
    joined[0] = 255
    assert buffer[10] == 255  # a view of the buffer, not a copy


def test_pieces_with_a_gap_or_out_of_order_or_from_two_buffers_are_copied() -> None:
    buffer = bytearray(range(100))
    view = memoryview(buffer)
    other = bytearray(b"z" * 10)
    cases: list[list[Frame]] = [
        [view[0:10], view[11:20]],  # a gap
        [view[10:20], view[0:10]],  # out of order
        [view[0:10], memoryview(other)],  # two buffers
        [bytes(view[0:10]), view[10:20]],  # not views
        [view[0:10], view[10:20:2]],  # strided
    ]
    for pieces in cases:
        assert join_adjacent(pieces) is None
        merged = merge_frames(pieces)
        assert type(merged) is bytearray
        assert merged == b"".join(bytes(p) for p in pieces)


def test_a_single_piece_is_returned_as_it_is() -> None:
    piece = memoryview(b"abc")
    assert merge_frames([piece]) is piece


def test_loads_of_split_frames_in_one_process_copies_nothing() -> None:
    x = np.arange(1_000_000, dtype="f8")
    frames = fastser.dumps({"x": fastser.Serialize(x)}, frame_split_size=2**20)
    assert len(frames) == 1 + 8
    y = fastser.loads(frames)["x"]
    assert np.shares_memory(x, y) and (y == x).all()


def test_split_frames_through_a_packed_stream_join_without_a_copy() -> None:
    x = np.arange(1_000_000, dtype="f8")
    frames = fastser.dumps({"x": fastser.Serialize(x), "b": b"q" * 3_000_000},
                           frame_split_size=2**20)
    stream = bytearray(fastser.pack_frames(frames))
    received = fastser.unpack_frames(stream)
    out = fastser.loads(received)
    y = out["x"]
    assert (y == x).all() and y.flags.writeable
    assert np.shares_memory(y, np.frombuffer(stream, dtype=np.uint8))
    assert out["b"] == b"q" * 3_000_000


def test_address_of_writeable_read_only_empty_and_strided_views() -> None:
    # Writeable views take ctypes' direct path, the others the general one: both must agree
    # on where a slice starts, and a strided view has no single start.
    for buffer in (bytearray(range(100)), bytes(range(100))):
        view = memoryview(buffer)
        base = address_of(view)
        assert base is not None
        assert address_of(view[10:40]) == base + 10
        assert address_of(view[40:40]) == base + 40  # empty: the general path
        assert address_of(view[0:20:2]) is None
    empty_run = pieces_of(bytearray(range(30)), [10, 0, 20])
    joined = merge_frames(empty_run)
    assert type(joined) is memoryview and joined.tobytes() == bytes(range(30))


def test_joining_read_only_pieces_gives_no_write_access() -> None:
    # The pieces are read-only views of a bytearray: the joined view must be read-only too,
    # though a fresh export of the bytearray would be writeable.
    buffer = bytearray(range(100))
    pieces: list[Frame] = [memoryview(p).toreadonly() for p in pieces_of(buffer, [30, 70])]
    joined = merge_frames(pieces)
    assert type(joined) is memoryview and joined.readonly and joined.tobytes() == bytes(buffer)
    mixed = pieces_of(buffer, [30, 70])
    mixed[1] = memoryview(mixed[1]).toreadonly()
    assert memoryview(merge_frames(mixed)).readonly
    assert not memoryview(merge_frames(pieces_of(buffer, [30, 70]))).readonly


# A message of many small pieces: enough that the readers' view bound (one frame per 64
# bytes, beyond the first 1024 frames) binds, rather than its allowance of free frames.
MANY_PIECES_BYTES = 4 * 2**20


def test_split_size_at_the_floor_makes_messages_fastsers_readers_accept() -> None:
    msg = {"b": b"q" * MANY_PIECES_BYTES}
    frames = fastser.dumps(msg, frame_split_size=MIN_SPLIT_SIZE)
    assert len(frames) > MANY_PIECES_BYTES // 64  # every piece of the floor's size
    stream = fastser.pack_frames(frames)
    assert fastser.loads(fastser.unpack_frames(stream)) == msg
    reader = fastser.FrameReader()
    received = reader.feed(stream)
    assert len(received) == 1 and fastser.loads(received[0]) == msg


def test_split_size_one_below_the_floor_is_refused() -> None:
    for make in (lambda size: fastser.dumps(1, frame_split_size=size),
                 lambda size: fastser.Encoder(frame_split_size=size)):
        make(MIN_SPLIT_SIZE)
        with pytest.raises(ValueError, match=f"at least {MIN_SPLIT_SIZE} bytes"):
            make(MIN_SPLIT_SIZE - 1)
    # Why: the pieces that size would cut (48 bytes, a multiple of 16) make a stream that
    # the readers refuse.
    pieces = split_frames(b"q" * MANY_PIECES_BYTES, MIN_SPLIT_SIZE - 1)
    assert len(pieces[0]) == 48
    stream = fastser.pack_frames([b"header", *pieces])
    with pytest.raises(fastser.FrameError, match="more than the"):
        fastser.unpack_frames(stream)
    with pytest.raises(fastser.FrameError, match="more than the"):
        fastser.FrameReader().feed(stream)
