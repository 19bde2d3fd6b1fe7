"""Stream framing: round trips, zero-copy unpacking, hostile preludes refused before anything
is allocated, and a FrameReader that gives the same messages fed whole, byte by byte and in
random chunks."""

import array
import functools
import struct
from collections.abc import Callable, Iterator
from typing import cast

import pytest
from hypothesis import given, settings, strategies as st
from streams import mutated, peak_allocation
from strategies import examples, rounds

from fastser import (Frame, FrameError, FrameReader, Limits, pack_frames, pack_frames_prelude,
                     unpack_frames)
from fastser.frames.split import address_of
from fastser.frames.stream import frame_layout, frame_runs, frame_start, slice_frames

MiB = 2**20
KiB64 = 2**16  # frames of this size or more start aligned (_types.ALIGNED_FRAME_BYTES)
FRAME_LISTS: list[list[Frame]] = [
    [], [b""], [b"abc"], [b"", b"", b""], [b"\x00" * 1000, b"x", b""],
    [b"a", bytearray(b"bc"), memoryview(b"def")], [bytes(range(256)) * 300, b"tail"],
]
frame_lists = st.lists(st.binary(max_size=40), max_size=6)


def as_bytes(messages: list[list[memoryview]]) -> list[list[bytes]]:
    return [[bytes(frame) for frame in frames] for frames in messages]


def feed_in_pieces(reader: FrameReader, data: bytes, sizes: Iterator[int]) -> list[list[bytes]]:
    messages: list[list[bytes]] = []
    pos = 0
    while pos < len(data):
        size = next(sizes)
        messages.extend(as_bytes(reader.feed(data[pos:pos + size])))
        pos += size
    return messages


def whole(reader: FrameReader, data: bytes) -> list[list[bytes]]:
    return as_bytes(reader.feed(data))


def byte_by_byte(reader: FrameReader, data: bytes) -> list[list[bytes]]:
    return feed_in_pieces(reader, data, iter(lambda: 1, 0))


FEEDERS: list[Callable[[FrameReader, bytes], list[list[bytes]]]] = [whole, byte_by_byte]


def feed_raw_byte_by_byte(reader: FrameReader, data: bytes) -> list[list[memoryview]]:
    return [frames for i in range(len(data)) for frames in reader.feed(data[i:i + 1])]


@pytest.mark.parametrize("frames", FRAME_LISTS, ids=range(len(FRAME_LISTS)))
def test_round_trip(frames: list[Frame]) -> None:
    packed = pack_frames(frames)
    assert packed.startswith(pack_frames_prelude(frames))
    unpacked = unpack_frames(packed)
    assert [bytes(frame) for frame in unpacked] == [bytes(frame) for frame in frames]
    for view in unpacked:
        assert type(view) is memoryview and view.format == "B" and view.ndim == 1


def test_prelude_layout_is_little_endian_uint64() -> None:
    assert pack_frames_prelude([]) == b"\x00" * 8
    assert pack_frames_prelude([b"ab", b"", b"cde"]) == struct.pack("<4Q", 3, 2, 0, 3)
    assert pack_frames([b"ab", b"c"]) == struct.pack("<3Q", 2, 2, 1) + b"abc"


def test_memoryview_lengths_are_counted_in_bytes() -> None:
    doubles = memoryview(array.array("d", [1.0, 2.0, 3.0]))
    matrix = memoryview(bytearray(range(12))).cast("B", (3, 4))
    wide = memoryview(array.array("i", [7] * 5))
    frames: list[Frame] = [doubles, matrix, wide]
    assert pack_frames_prelude(frames) == struct.pack("<4Q", 3, 24, 12, 5 * wide.itemsize)
    unpacked = unpack_frames(pack_frames(frames))
    assert [bytes(frame) for frame in unpacked] == [frame.tobytes() for frame in
                                                    (doubles, matrix, wide)]


def released() -> memoryview:
    view = memoryview(b"gone")
    view.release()
    return view


@pytest.mark.parametrize("frame, error, text", [
    (5, TypeError, "frame 1 is of type int, not a bytes-like frame"),
    (None, TypeError, "frame 1 is of type NoneType, not a bytes-like frame"),
    (released(), ValueError, "frame 1 is a released memoryview"),
], ids=["int", "None", "released"])
def test_a_frame_without_a_size_is_named_by_both_writers(frame: object, error: type,
                                                          text: str) -> None:
    for write in (pack_frames, pack_frames_prelude):
        with pytest.raises(error, match=f"^{text}") as info:
            write(cast(list[Frame], [b"header", frame]))
        assert type(info.value) is error and info.value.__cause__ is not None


@pytest.mark.parametrize("frame, text", [
    ("text", r"frame 1 is of type str, not a bytes-like frame"),
    (memoryview(b"abcdef")[::2], r"frame 1 \(memoryview\) is not C-contiguous"),
    # The prelude would say 2 (its len()), the join write 8 bytes: a stream that lies.
    (array.array("i", [1, 2]), r"frame 1 \(array\) holds 8 bytes but its len\(\) is 2"),
], ids=["str", "strided", "wide-items"])
def test_pack_frames_refuses_what_it_cannot_write_as_its_prelude_says(frame: object,
                                                                      text: str) -> None:
    with pytest.raises(TypeError, match=f"^{text}"):
        pack_frames(cast(list[Frame], [b"header", frame]))
    # The prelude alone takes len() as the size, unchecked (streams.md says so).
    assert len(pack_frames_prelude(cast(list[Frame], [b"header", frame]))) == 24


def test_pack_frames_refuses_an_iterator_it_would_write_without_its_frames() -> None:
    with pytest.raises(TypeError, match="an iterator"):
        pack_frames(cast(list[Frame], iter([b"a", b"b"])))


def test_unpack_is_zero_copy() -> None:
    buf = bytearray(pack_frames([b"hello", b"", b"world"]))
    frames = unpack_frames(buf)
    assert all(frame.obj is buf for frame in frames)
    frames[2][0:1] = b"W"  # writes land in the caller's buffer
    assert buf.endswith(b"World")
    readonly = pack_frames([b"hello"])
    assert unpack_frames(readonly)[0].obj is readonly and unpack_frames(readonly)[0].readonly


def test_unpack_accepts_views_of_any_format() -> None:
    packed = pack_frames([b"12345678", b"abcdefgh"])
    bufs: list[Frame] = [bytearray(packed), memoryview(packed), memoryview(packed).cast("Q"),
                         memoryview(array.array("B", packed))]
    for buf in bufs:
        assert [bytes(frame) for frame in unpack_frames(buf)] == [b"12345678", b"abcdefgh"]


def test_truncated_buffers_raise() -> None:
    packed = pack_frames([b"abc", b"", b"defg"])
    for cut in range(len(packed)):
        with pytest.raises(FrameError):
            unpack_frames(packed[:cut])
    with pytest.raises(FrameError, match="truncated prelude"):
        unpack_frames(packed[:20])
    with pytest.raises(FrameError, match="truncated message"):
        unpack_frames(packed[:-1])


def test_trailing_bytes_raise() -> None:
    for extra in (b"\x00", pack_frames([b"second message"])):
        with pytest.raises(FrameError, match="trailing bytes"):
            unpack_frames(pack_frames([b"abc"]) + extra)


HOSTILE = [
    (struct.pack("<Q", 2**20 + 1), "prelude: frame count 1048577 exceeds .*max_frames=1048576"),
    (struct.pack("<Q", 2**32 - 1), "frame count 4294967295 exceeds .*max_frames=1048576"),
    # Not a fastser stream at all: said before the Limits.
    (struct.pack("<Q", 2**32), "^not a fastser stream: .* frame count of 4294967296"),
    (struct.pack("<Q", 2**64 - 1), "^not a fastser stream: .*18446744073709551615"),
    (b"GET / HTTP/1.1\r\n", "^not a fastser stream: a message's first 8 bytes, b'GET / HT'"),
    (struct.pack("<QQ", 1, 2**62), "frame 0 of 1 .*max_frame_bytes=1073741824"),
    (struct.pack("<4Q", 3, 5, 2**30 + 1, 2**62), "frame 1 of 3 .*max_frame_bytes"),
    (struct.pack("<6Q", 5, *[2**30] * 5), "max_message_bytes=4294967296"),
    (struct.pack("<Q", 2000) + bytes(8 * 2000), "2000 frames in a message of 16008 bytes"),
]


@pytest.mark.parametrize("prelude, error", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_preludes_are_refused_without_allocating(prelude: bytes, error: str) -> None:
    with pytest.raises(FrameError, match=error):
        unpack_frames(prelude + b"\x00" * 64)

    def refuse(feed: Callable[[FrameReader, bytes], list[list[bytes]]]) -> None:
        with pytest.raises(FrameError, match=error):
            feed(FrameReader(), prelude + b"\x00" * 64)

    for feed in FEEDERS:
        assert peak_allocation(functools.partial(refuse, feed)) < MiB


def test_count_beyond_the_buffer_is_refused_without_allocating() -> None:
    prelude = struct.pack("<Q", 2**20)  # within max_frames, but the lengths are missing
    with pytest.raises(FrameError, match="truncated prelude: 1048576 frame lengths"):
        unpack_frames(prelude + b"\x00" * 64)
    assert peak_allocation(lambda: pytest.raises(FrameError, unpack_frames, prelude)) < MiB


def test_custom_limits_are_applied() -> None:
    limits = Limits(max_frames=2, max_frame_bytes=10, max_message_bytes=15)
    for frames, error in (([b"a", b"b", b"c"], r"Limits.max_frames=2"),
                          ([b"a", b"x" * 11], r"frame 1 of 2 .*Limits.max_frame_bytes=10"),
                          ([b"x" * 8, b"y" * 8], r"16 bytes.*Limits.max_message_bytes=15")):
        packed = pack_frames(frames)
        with pytest.raises(FrameError, match=error):
            unpack_frames(packed, limits=limits)
        with pytest.raises(FrameError, match=error):
            FrameReader(limits).feed(packed)
    assert len(unpack_frames(pack_frames([b"x" * 10, b"y" * 5]), limits=limits)) == 2


@pytest.mark.parametrize("feed", FEEDERS)
def test_reader_gives_every_message(feed: Callable[[FrameReader, bytes], list[list[bytes]]],
                                    ) -> None:
    expected = [[bytes(frame) for frame in frames] for frames in FRAME_LISTS]
    stream = b"".join(pack_frames(frames) for frames in FRAME_LISTS)
    assert feed(FrameReader(), stream) == expected


@settings(max_examples=examples(200), deadline=None)
@given(messages=st.lists(frame_lists, min_size=1, max_size=5), data=st.data())
def test_reader_in_random_chunks(messages: list[list[bytes]], data: st.DataObject) -> None:
    stream = b"".join(pack_frames(frames) for frames in messages)
    sizes = iter(lambda: data.draw(st.integers(min_value=1, max_value=64)), -1)
    reader = FrameReader()
    assert feed_in_pieces(reader, stream, sizes) == messages
    assert whole(FrameReader(), stream) == messages == byte_by_byte(FrameReader(), stream)
    assert not reader.pending


def test_several_messages_in_one_chunk_and_empty_feeds() -> None:
    reader = FrameReader()
    assert reader.feed(b"") == []
    stream = pack_frames([b"one"]) + pack_frames([]) + pack_frames([b"two", b"2"])
    assert as_bytes(reader.feed(stream)) == [[b"one"], [], [b"two", b"2"]]
    assert reader.feed(bytearray()) == []


def test_reader_frames_are_writeable_and_share_one_buffer_per_message() -> None:
    stream = pack_frames([b"abc", b"", b"defg"]) + pack_frames([b"xy"])
    for first, second in (FrameReader().feed(stream),
                          feed_raw_byte_by_byte(FrameReader(), stream)):
        owner = first[0].obj
        assert type(owner) is bytearray and bytes(owner) == b"abcdefg"  # small: end to end
        assert all(frame.obj is owner and not frame.readonly for frame in first)
        assert second[0].obj is not owner
        first[2][0:1] = b"D"  # writeable, and the write lands in the message's buffer
        assert bytes(owner) == b"abcDefg"


def test_frame_layout_aligns_every_frame_and_runs_join_what_follows_without_a_gap() -> None:
    # Frames of 64 KiB or more start at a multiple of 16; smaller ones where the last ended.
    lengths = [3, 0, KiB64, 5, 0, 0, KiB64 + 76, 1]
    assert [frame_start(end, length) for end, length in
            [(3, KiB64), (3, KiB64 - 1), (16, KiB64), (21 + KiB64, 0)]] == [16, 3, 16, 21 + KiB64]
    assert frame_layout(lengths) == (True, 109 + 2 * KiB64)
    assert frame_runs(lengths) == [(0, 3), (16, 21 + KiB64), (32 + KiB64, 109 + 2 * KiB64)]
    buffer = memoryview(bytearray(109 + 2 * KiB64))
    base = address_of(buffer)
    frames = slice_frames(buffer, lengths, 0, True)
    assert [frame.nbytes for frame in frames] == lengths
    assert [cast(int, address_of(frame)) - cast(int, base) for frame in frames if frame.nbytes] \
        == [0, 16, 16 + KiB64, 32 + KiB64, 108 + 2 * KiB64]
    # Without a gap to leave, the frames lie end to end.
    assert frame_layout([]) == (False, 0) and frame_runs([]) == []
    assert frame_layout([KiB64, 3, 0, 5]) == (False, KiB64 + 8)
    assert frame_runs([KiB64, 3, 0, 5]) == [(0, KiB64 + 8)]


@settings(max_examples=examples(200), deadline=None)
@given(lengths=st.lists(st.sampled_from([0, 1, 15, 16, 17, KiB64 - 1, KiB64, KiB64 + 1,
                                         2 * KiB64]), max_size=12))
def test_frame_layout_properties(lengths: list[int]) -> None:
    gaps, size = frame_layout(lengths)
    offsets, end = [], 0
    for length in lengths:
        offset = frame_start(end, length)
        if length >= KiB64:
            assert end <= offset < end + 16 and offset % 16 == 0
        else:
            assert offset == end
        offsets.append(offset)
        end = offset + length
    assert size == end and size - sum(lengths) <= 15 * len(lengths)
    assert gaps == (size != sum(lengths))
    covered = [(offset, offset + length) for offset, length in zip(offsets, lengths) if length]
    runs = frame_runs(lengths)
    assert [span for start, stop in runs for span in covered if start <= span[0] < stop] == covered
    assert all(first[1] < second[0] for first, second in zip(runs, runs[1:]))


@settings(max_examples=examples(100), deadline=None)
@given(messages=st.lists(st.lists(st.sampled_from([0, 1, 7, KiB64 - 1, KiB64, KiB64 + 7]).map(
    lambda size: bytes(range(256)) * (size // 256) + b"x" * (size % 256)), max_size=4),
    min_size=1, max_size=3), data=st.data())
def test_reader_starts_every_frame_of_64_kib_at_a_multiple_of_16(
        messages: list[list[bytes]], data: st.DataObject) -> None:
    stream = b"".join(pack_frames(frames) for frames in messages)
    reader = FrameReader()
    received: list[list[memoryview]] = []
    pos = 0
    while pos < len(stream):
        size = data.draw(st.integers(min_value=1, max_value=70_000))
        received.extend(reader.feed(stream[pos:pos + size]))
        pos += size
    assert as_bytes(received) == messages
    for frames in received:
        base = address_of(memoryview(frames[0].obj)) if frames else 0
        for frame in frames:
            if frame.nbytes >= KiB64:
                address = address_of(frame)
                assert address is not None and base is not None
                assert (address - base) % 16 == 0


def test_reader_copies_the_fed_bytes() -> None:
    chunk = bytearray(pack_frames([b"abc"]))
    [[frame]] = FrameReader().feed(chunk)
    chunk[-3:] = b"zzz"
    assert bytes(frame) == b"abc"


def test_reader_accepts_views_of_any_format() -> None:
    packed = pack_frames([b"12345678"])
    chunks: list[Frame] = [memoryview(packed).cast("Q"), memoryview(array.array("B", packed)),
                           bytearray(packed)]
    for data in chunks:
        assert as_bytes(FrameReader().feed(data)) == [[b"12345678"]]


def test_reader_stays_failed() -> None:
    reader = FrameReader(Limits(max_frames=1))
    with pytest.raises(FrameError, match="max_frames=1"):
        reader.feed(pack_frames([b"a"]) + pack_frames([b"b", b"c"]))
    for data in (pack_frames([b"fine"]), b"", b"\x00"):
        with pytest.raises(FrameError, match="failed earlier.*max_frames=1"):
            reader.feed(data)


def test_valid_huge_prelude_reserves_nothing_until_the_bytes_arrive() -> None:
    reader = FrameReader()
    prelude = struct.pack("<4Q", 3, 2**30, 2**30, 2**30)  # within the default Limits
    assert peak_allocation(lambda: reader.feed(prelude)) < MiB
    assert reader.pending
    assert peak_allocation(lambda: reader.feed(b"\x00" * 1000)) < MiB


def test_a_prelude_of_many_frames_that_need_gaps_holds_no_more_than_its_lengths() -> None:
    # No offset is stored per frame: a prelude of 200,001 lengths, whose one large frame
    # needs a gap, holds about its own size (the lengths tuple: small ints are shared). The
    # large frame is large enough to pay for the empty ones' views (check_views).
    prelude = pack_frames_prelude([b"x", bytes(16 * MiB)] + [b""] * 199_999)
    reader = FrameReader()
    assert peak_allocation(lambda: reader.feed(prelude)) < 1.2 * len(prelude)
    assert reader.pending


def test_pending() -> None:
    reader = FrameReader()
    packed = pack_frames([b"abc", b"de"])
    assert not reader.pending
    for cut in range(1, len(packed)):  # inside the count, the lengths and the body
        reader.feed(packed[cut - 1:cut])
        assert reader.pending
    assert as_bytes(reader.feed(packed[-1:])) == [[b"abc", b"de"]]
    assert not reader.pending
    assert as_bytes(reader.feed(pack_frames([]))) == [[]]
    assert not reader.pending
    assert as_bytes(reader.feed(pack_frames([b"x"]) + packed[:9])) == [[b"x"]]
    assert reader.pending


def test_mutated_streams_give_frame_errors_or_messages_in_bounded_memory() -> None:
    import random

    rng = random.Random(99)
    good = b"".join(pack_frames(frames) for frames in (
        [b"header", b"x" * 1000], [b"h2"], [b"h3", b"", b"y" * 70_000, b"z" * 10]))
    tried = 0

    def mutate_and_read() -> None:
        nonlocal tried
        for _ in range(rounds(2_000, 100_000)):
            data = mutated(rng, good)
            tried += 1
            reader = FrameReader()
            try:
                for start in range(0, len(data), 4096):
                    for message in reader.feed(data[start:start + 4096]):
                        assert all(type(frame) is memoryview for frame in message)
            except FrameError:
                pass
            try:
                unpack_frames(bytes(data))
            except FrameError:
                pass

    # A mutated length cannot make either reserve memory for bytes that are not there. What
    # they do allocate is one memoryview object (~190 bytes) per frame, and a frame can be
    # as small as its 8-byte length field: a message may have 1,024 frames however small
    # (more only when its bytes pay for their views: check_views), ~200 KiB of views, about
    # 3x this stream, for each message a mutation makes, hence this bound, not 1x.
    assert peak_allocation(mutate_and_read) < 40 * len(good)
    assert tried >= 2_000



# What a reader may allocate for one message: at most READ_FACTOR times
# the bytes it was given, plus READ_SLACK. A frame needs a memoryview of its own (192 bytes
# with its list slot) but may cost its sender no more than its 8-byte length: no small
# factor holds unless a reader refuses a message whose frames are too small, on average, to
# pay for their views (frames.stream.BYTES_PER_FRAME, 64). Then the views cost at most
# 192 / 64 = 3 times the bytes, the tuple of lengths 1/8, and a FrameReader's copy of the
# bytes once more: 4.1 measured, 5 with a margin. READ_SLACK: the FREE_FRAMES (1,024)
# frames any message may have, at 192 bytes each, and small fixed costs.
READ_FACTOR = 5
READ_SLACK = 256 * 2**10
TINY_FRAMES = 2**17  # enough that a view per frame shows, yet a few seconds in the pure build


def reading_actions(data: bytes) -> dict[str, Callable[[], list[list[memoryview]]]]:
    """Every way to read the messages in `data`: unpack_frames, and a FrameReader fed whole,
    in 64 KiB chunks and in odd 4,093-byte ones (byte by byte would take minutes here; the
    small framing tests above are fed byte by byte)."""
    def chunked(size: int) -> Callable[[], list[list[memoryview]]]:
        def feed() -> list[list[memoryview]]:
            reader = FrameReader()
            return [frames for pos in range(0, len(data), size)
                    for frames in reader.feed(data[pos:pos + size])]
        return feed
    return {"unpack_frames": lambda: [unpack_frames(data)],
            "FrameReader whole": lambda: FrameReader().feed(data),
            "FrameReader in 64 KiB chunks": chunked(2**16),
            "FrameReader in 4,093-byte chunks": chunked(4093)}


def peak_reading(action: Callable[[], list[list[memoryview]]]) -> int:
    """The peak allocation of `action`, whether it reads a message or refuses it."""
    def read() -> None:
        try:
            action()
        except FrameError:
            pass
    return peak_allocation(read)


@pytest.mark.parametrize("length", [0, 1])
def test_a_message_of_many_tiny_frames_costs_its_reader_a_few_times_its_bytes(
        length: int) -> None:
    data = pack_frames([b"x" * length] * TINY_FRAMES)
    for name, action in reading_actions(data).items():
        peak = peak_reading(action)
        assert peak <= READ_FACTOR * len(data) + READ_SLACK, \
            f"{name}: {peak} bytes allocated for {len(data)} given ({peak / len(data):.1f}x)"


@pytest.mark.parametrize("length", [0, 1])
def test_a_message_of_many_tiny_frames_is_refused(length: int) -> None:
    data = pack_frames([b"x" * length] * TINY_FRAMES)
    error = (f"prelude: {TINY_FRAMES} frames in a message of {len(data)} bytes, more than "
             f"the {1024 + len(data) // 64} it may hold \\(1024, plus one per 64 bytes\\)")
    for action in reading_actions(data).values():
        with pytest.raises(FrameError, match=error):
            action()
    with pytest.raises(FrameError, match="max_frames=1000"):  # Limits come first
        unpack_frames(data, limits=Limits(max_frames=1000))


def message_at_the_bound(count: int, length: int, short: int = 0) -> bytes:
    """`count` frames of `length` bytes and one frame that pays for their views: a message
    with as many frames as its bytes allow (check_views), or `short` bytes too few."""
    frames = count + 1
    size = 64 * (frames - 1024)  # the bytes that allow `frames` frames
    filler = size - 8 * (frames + 1) - count * length - short
    return pack_frames([b"x" * length] * count + [b"f" * filler])


@pytest.mark.parametrize("length", [0, 1])
def test_a_message_of_as_many_tiny_frames_as_allowed_costs_a_few_times_its_bytes(
        length: int) -> None:
    count = 2**15
    data = message_at_the_bound(count, length)
    for name, action in reading_actions(data).items():
        assert [len(frames) for frames in action()] == [count + 1], name
        peak = peak_reading(action)
        assert peak <= READ_FACTOR * len(data) + READ_SLACK, \
            f"{name}: {peak} bytes allocated for {len(data)} given ({peak / len(data):.1f}x)"
    with pytest.raises(FrameError, match=f"{count + 1} frames in a message"):
        unpack_frames(message_at_the_bound(count, length, short=1))


def test_up_to_1024_frames_are_read_whatever_their_size() -> None:
    # FREE_FRAMES: a message of up to 1,024 frames is never refused for their size.
    for frames in ([b""] * 1024, [b"x"] * 1024, [b""] * 1000 + [b"x"] * 24):
        data = pack_frames(frames)
        assert [bytes(frame) for frame in unpack_frames(data)] == frames
        assert whole(FrameReader(), data) == [frames]
