"""The one sans-I/O FrameReader, driven as the transports drive it: next_buffer() hands out
where the next bytes go, received(n) takes them. Fed whole, one byte at a time and in random
chunks it gives the same messages as feed(); it never hands out a span past a message's end;
it commits pages no further ahead than the bytes that came; and a prelude costs it about its
own size, whatever the lengths (measured in a subprocess)."""

import json
import random
import struct
import subprocess
import sys
from collections.abc import Callable, Iterator

import pytest
from hypothesis import given, settings, strategies as st
from strategies import examples

from fastser import FrameError, FrameReader, Limits, pack_frames
from fastser.frames.stream import PRELUDE_SPAN_BYTES, READ_BYTES

KiB64 = 2**16
MiB = 2**20
MESSAGES: list[list[bytes]] = [
    [], [b""], [b"abc"], [b"", b"", b""],
    [b"h" * 5, b"", b"a" * KiB64, b"b" * 3, b"", b"c" * 70_001],
    [b"x" * 1000, b"y", b""], [bytes(range(256)) * 300, b"tail"], [b"s"] * 40,
]


def drive(reader: FrameReader, stream: bytes, sizes: Iterator[int]) -> list[list[bytes]]:
    """Move `stream` into `reader` as a transport does, each read of at most the next of
    `sizes` bytes (and of the span handed out)."""
    messages: list[list[bytes]] = []
    pos = 0
    while pos < len(stream):
        span = reader.next_buffer()
        assert 0 < span.nbytes <= READ_BYTES and not span.readonly
        take = min(span.nbytes, next(sizes), len(stream) - pos)
        span[:take] = stream[pos:pos + take]
        pos += take
        frames = reader.received(take)
        if frames is not None:
            messages.append([bytes(frame) for frame in frames])
    return messages


def whole() -> Iterator[int]:
    return iter(lambda: 2**62, 0)


def byte_by_byte() -> Iterator[int]:
    return iter(lambda: 1, 0)


def random_chunks(seed: int) -> Iterator[int]:
    rng = random.Random(seed)
    return iter(lambda: rng.choice([1, 2, 7, 8, 9, 100, 4093, KiB64 + 1]), 0)


SIZES: list[Callable[[], Iterator[int]]] = [whole, byte_by_byte, lambda: random_chunks(5)]


@pytest.mark.parametrize("sizes", SIZES, ids=["whole", "byte by byte", "random chunks"])
def test_in_place_reading_gives_every_message(sizes: Callable[[], Iterator[int]]) -> None:
    stream = b"".join(pack_frames(frames) for frames in MESSAGES)
    assert drive(FrameReader(), stream, sizes()) == MESSAGES


@settings(max_examples=examples(100), deadline=None)
@given(messages=st.lists(st.lists(st.sampled_from([0, 1, 7, KiB64 - 1, KiB64, KiB64 + 7]).map(
    lambda size: bytes(range(256)) * (size // 256) + b"x" * (size % 256)), max_size=5),
    min_size=1, max_size=3), seed=st.integers(0, 2**32))
def test_in_place_and_fed_readers_agree_in_random_chunks(messages: list[list[bytes]],
                                                          seed: int) -> None:
    stream = b"".join(pack_frames(frames) for frames in messages)
    assert drive(FrameReader(), stream, random_chunks(seed)) == messages
    fed = FrameReader()
    rng = random.Random(seed)
    got: list[list[bytes]] = []
    pos = 0
    while pos < len(stream):
        size = rng.randint(1, 9000)
        got.extend([bytes(frame) for frame in frames]
                   for frames in fed.feed(stream[pos:pos + size]))
        pos += size
    assert got == messages and not fed.pending


def test_spans_end_with_the_message() -> None:
    # A transport may read all a span holds: the next message's bytes never land in this one.
    reader = FrameReader()
    packed = pack_frames([b"abc", b"de"])
    assert reader.next_buffer().nbytes == 8  # the count
    assert drive(reader, packed[:8], whole()) == []
    assert reader.next_buffer().nbytes == 16  # the two lengths
    assert drive(reader, packed[8:24], whole()) == []
    assert reader.next_buffer().nbytes == 5  # both small frames in one span
    assert drive(reader, packed[24:] + pack_frames([b"f"]), whole()) == [[b"abc", b"de"], [b"f"]]
    assert not reader.pending and reader.next_buffer().nbytes == 8


def test_large_frames_have_spans_of_their_own_of_at_most_read_bytes() -> None:
    lengths = [10, 3 * MiB + 5, KiB64, 7]
    reader = FrameReader()
    drive(reader, struct.pack("<5Q", 4, *lengths), whole())
    spans = []
    while True:
        span = reader.next_buffer()
        spans.append(span.nbytes)
        if reader.received(span.nbytes) is not None:
            break
    assert spans == [10, MiB, MiB, MiB, 5, KiB64, 7]


def test_a_long_prelude_is_read_in_bounded_spans() -> None:
    reader = FrameReader()
    frames = [b"x" * 64] * 3000
    drive(reader, pack_frames(frames)[:8], whole())
    assert reader.next_buffer().nbytes == PRELUDE_SPAN_BYTES


def test_where_a_cut_stream_ends() -> None:
    packed = pack_frames([b"h" * 10, b"p" * 100])
    for cut, where in [(0, "the prelude: 0 of the 8 bytes of the frame count received"),
                       (3, "the prelude: 3 of the 8 bytes of the frame count received"),
                       (12, r"the prelude: 12 of 24 bytes received \(2 frame lengths"),
                       (25, r"the header frame \(frame 0 of 2\): 1 of the 110 frame bytes"),
                       (40, "payload frame 1 of 2: 16 of the 110 frame bytes")]:
        for sizes in SIZES:
            reader = FrameReader()
            drive(reader, packed[:cut], sizes())
            assert reader.pending == (cut > 0)
            assert __import__("re").fullmatch(where + ".*", reader.where()), reader.where()


def test_it_stays_failed_and_says_why() -> None:
    reader = FrameReader(Limits(max_frames=1))
    drive(reader, pack_frames([b"a"]), whole())
    span = reader.next_buffer()
    span[:8] = struct.pack("<Q", 2)
    with pytest.raises(FrameError, match="max_frames=1"):
        reader.received(8)
    for call in (reader.next_buffer, lambda: reader.received(1), lambda: reader.feed(b"")):
        with pytest.raises(FrameError, match="failed earlier.*max_frames=1"):
            call()


def test_garbage_is_not_a_fastser_stream_but_a_large_count_is_over_the_limit() -> None:
    for data, error in [(b"GET / HTTP/1.1\r\n\r\n", r"^not a fastser stream: .*b'GET / HT'"),
                        (struct.pack("<Q", 2**32), r"^not a fastser stream"),
                        (struct.pack("<Q", 2**32 - 1), r"^prelude: frame count 4294967295 "
                         r"exceeds Limits.max_frames=1048576")]:
        with pytest.raises(FrameError, match=error):
            drive(FrameReader(), data, whole())
    # Limits that allow such counts are obeyed: the count is then only too large for the bytes.
    reader = FrameReader(Limits(max_frames=2**40))
    drive(reader, struct.pack("<Q", 2**33), whole())
    assert reader.pending


class Recorder:
    """An allocate and a populate that record what a reader asks of them."""

    def __init__(self) -> None:
        self.allocated: list[int] = []
        self.populated: list[tuple[int, int]] = []

    def allocate(self, size: int) -> memoryview:
        self.allocated.append(size)
        return memoryview(bytearray(size))

    def populate(self, view: memoryview, start: int, stop: int) -> None:
        self.populated.append((start, stop))


def test_pages_are_populated_no_further_ahead_than_the_bytes_received() -> None:
    # Bound: pages committed ahead of the bytes by at most as many as came (and READ_BYTES):
    # a prelude announcing gigabytes, then silence, costs nothing; nothing populated twice.
    recorder = Recorder()
    reader = FrameReader()
    reader.allocate = recorder.allocate
    reader.populate = recorder.populate
    size = 5 * MiB + 3
    drive(reader, struct.pack("<3Q", 2, 100, size), whole())
    assert recorder.allocated == []  # not before frame bytes are to be read
    span = reader.next_buffer()
    assert recorder.allocated == [size + 112] and recorder.populated == []
    received = 0
    for take in [60, 40, 1000, MiB, 7, MiB, MiB, MiB, MiB]:
        span = reader.next_buffer()
        # The bytes lie within the first 112 + received bytes (the header, a gap, the
        # frame's start): pages are populated at most `received` bytes beyond.
        furthest = max((stop for _, stop in recorder.populated), default=0)
        assert furthest <= 112 + 2 * received, (furthest, received)
        take = min(take, span.nbytes)
        received += take
        assert reader.received(take) is None
    spans = sorted(recorder.populated)
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))  # never twice


WORST_PRELUDE = """
import json, struct, sys, tracemalloc
from fastser import FrameReader
count = 2**20  # Limits.max_frames
# Distinct lengths above 256 (no small int is shared), their total within max_message_bytes.
prelude = struct.pack(f"<{count + 1}Q", count, *[3000 + i % 1000 for i in range(count)])
def whole(reader): reader.feed(prelude)
def chunks(reader):
    for pos in range(0, len(prelude), 4093):
        reader.feed(prelude[pos:pos + 4093])
def in_place(reader):
    pos = 0
    while pos < len(prelude):
        span = reader.next_buffer()
        take = min(span.nbytes, len(prelude) - pos)
        span[:take] = prelude[pos:pos + take]
        pos += take
        reader.received(take)
peaks = {}
for name, feed in [("whole", whole), ("chunks", chunks), ("in place", in_place)]:
    reader = FrameReader()
    tracemalloc.start()
    feed(reader)
    peaks[name] = tracemalloc.get_traced_memory()[1] / len(prelude)
    tracemalloc.stop()
    assert reader.pending
    del reader
print(json.dumps(peaks))
"""
# What a prelude may cost its reader: its lengths, 8 bytes each, in an array grown as they
# arrive (at most 1/16 more), and a few fixed buffers.
PRELUDE_FACTOR = 1.2


def test_the_worst_prelude_costs_about_its_size() -> None:
    out = subprocess.run([sys.executable, "-c", WORST_PRELUDE], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    peaks = json.loads(out.stdout)
    assert all(peak <= PRELUDE_FACTOR for peak in peaks.values()), peaks
