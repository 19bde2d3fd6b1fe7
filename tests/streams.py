"""Helpers shared by the stream tests (test_sock, test_aio, test_framing): messages, cut
and hostile streams, and how to see where received memory lives and what was allocated."""

import random
import struct
import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from fastser import Encoder, Serialize, dumps, pack_frames

MiB = 2**20
BIG_ITEMS = 200 * MiB // 8  # float64 items of the 200 MiB array
SMALL_ITEMS = MiB // 8


def owner_of(array: "npt.NDArray[Any]") -> object:
    """The object whose memory `array` views (through numpy bases and a memoryview)."""
    base: object = array
    while isinstance(base, np.ndarray):
        base = base.base
    assert isinstance(base, memoryview)
    return base.obj


def peak_allocation(action: Callable[[], Any]) -> int:
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        action()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def rss_bytes(field: str = "VmRSS") -> int:
    """This process's resident set size, or another size of /proc/self/status: its peak
    with field="VmHWM", the address space's size and peak with "VmSize" and "VmPeak"
    (Linux)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def peak_rss_growth(action: Callable[[], Any]) -> int:
    """How far this process's resident set grew above its size before `action`, at its
    peak while `action` ran (Linux 4.0+, which lets a process reset its peak)."""
    with open("/proc/self/clear_refs", "w") as refs:
        refs.write("5")  # VmHWM := VmRSS
    before = rss_bytes()
    action()
    return rss_bytes("VmHWM") - before


def small_message(i: int) -> Any:
    msg: dict[str, Any] = {"op": "task-finished", "i": i, "key": (f"x-{i}", i % 7),
                           "tags": {i, -i}, "big": 2**70 + i, "raw": b"r" * (i % 13)}
    if i % 50 == 0:  # now and then a payload large enough to travel as its own frame
        msg["payload"] = bytes([i % 256]) * 100_000
    return msg


def compressed_messages() -> list[tuple[Encoder, Any]]:
    """Messages, each with the encoder to send it with: every compression in turn, and none."""
    text = b"mixed compression over one stream " * 20_000
    out: list[tuple[Encoder, Any]] = []
    for i, name in enumerate([None, "lz4", "zstd", "zlib", "auto"] * 3):
        msg = {"i": i, "s": Serialize(text), "raw": text + bytes([i]), "arr": np.arange(50_000.0)}
        out.append((Encoder(compression=name), msg))
    return out


def check_compressed(received: Any, i: int) -> None:
    text = b"mixed compression over one stream " * 20_000
    assert received["i"] == i and received["s"] == text and received["raw"] == text + bytes([i])
    assert np.array_equal(received["arr"], np.arange(50_000.0))


# A message cut at each of these byte offsets, and what the error must say.
CUT_MESSAGE = pack_frames(dumps({"x": b"p" * 100_000}))
PRELUDE_BYTES = 8 * 3  # count, header length, payload length
HEADER_BYTES = len(CUT_MESSAGE) - PRELUDE_BYTES - 100_000
CUTS = [
    (3, "inside the prelude: 3 of the 8 bytes of the frame count"),
    (12, "inside the prelude: 12 of 24 bytes"),
    (PRELUDE_BYTES + 1, "inside the header frame .*: 1 of the"),
    (PRELUDE_BYTES + HEADER_BYTES + 50_000, "inside payload frame 1 of 2: "),
]

# Preludes beyond the default Limits, and what the error must say.
HOSTILE = [
    (struct.pack("<Q", 2**31), "frame count 2147483648 exceeds Limits.max_frames=1048576"),
    (b"HTTP/1.1 200 OK", "^not a fastser stream: .*b'HTTP/1.1'"),
    (struct.pack("<QQ", 1, 2**62), "frame 0 of 1 .*max_frame_bytes=1073741824"),
    (struct.pack("<6Q", 5, *[2**30] * 5), "max_message_bytes=4294967296"),
    # Frames too small to pay for their views (frames.stream.check_views).
    (struct.pack("<Q", 2000) + bytes(8 * 2000), "2000 frames in a message of 16008 bytes, "
     "more than the 1274 it may hold"),
]


def mutated(rng: random.Random, good: bytes) -> bytearray:
    """`good` with one to four mutations: a byte flipped, or a uint64 (often a hostile
    length) inserted."""
    data = bytearray(good)
    for _ in range(rng.randint(1, 4)):
        pos = rng.randrange(len(data))
        if rng.random() < 0.6:
            data[pos] = rng.randrange(256)
        else:
            data[pos:pos] = struct.pack("<Q", rng.choice(
                [0, 1, 2**20, 2**30, 2**31, 2**32, 2**40, 2**62, rng.getrandbits(64)]))
    return data


def stream_to_mutate() -> bytes:
    """Three messages in a row (a tuple, a set, a big int, out-of-band bytes), for the
    adapters' mutation tests."""
    return b"".join(pack_frames(dumps(msg)) for msg in (
        small_message(1), {"k": ("t", {1}), "b": b"q" * 70_000}, [1.5, None, 2**70]))


def check_large_arrays(msg: Any, sent: int) -> None:
    """The 1 MiB and 200 MiB arrays of the adapters' large transfer arrived whole (a few
    slices and a sum: cheap)."""
    assert msg["tag"] == "two arrays"
    assert sent > 201 * MiB
    for array, items in ((msg["small"], SMALL_ITEMS), (msg["big"], BIG_ITEMS)):
        assert array.dtype == np.float64 and array.shape == (items,)
        for start in (0, items // 3, items - 1000):
            assert np.array_equal(array[start:start + 1000],
                                  np.arange(start, start + 1000, dtype=np.float64))
        assert array.sum() == items * (items - 1) / 2
        assert array.flags.aligned and array.ctypes.data % 16 == 0


# An odd-sized out-of-band payload, so that what follows it starts at an odd offset in the
# stream; and a split size whose pieces would be odd too, were it not rounded down.
ODD_BYTES = 65_537
ODD_SPLIT_SIZE = 100_003


def misaligning_message() -> tuple[Encoder, Any]:
    """A message whose arrays the stream carries at odd offsets (after odd-sized frames), one
    of them split into pieces: the readers must still hand every array over aligned."""
    msg = {"odd": b"o" * ODD_BYTES, "f8": Serialize(np.arange(20_000, dtype=np.float64)),
           "odd2": bytearray(b"p" * (ODD_BYTES + 2)),
           "c16": Serialize(np.arange(50_000, dtype=np.complex128)),
           "i4": Serialize(np.arange(33_333, dtype=np.int32))}
    return Encoder(frame_split_size=ODD_SPLIT_SIZE), msg


def check_aligned(received: Any) -> None:
    """The arrays of misaligning_message arrived equal, aligned to 16 bytes in memory."""
    for key, dtype, items in (("f8", np.float64, 20_000), ("c16", np.complex128, 50_000),
                              ("i4", np.int32, 33_333)):
        array = received[key]
        assert np.array_equal(array, np.arange(items, dtype=dtype))
        assert array.flags.aligned and array.ctypes.data % 16 == 0, key
    assert received["odd"] == b"o" * ODD_BYTES
    assert received["odd2"] == bytearray(b"p" * (ODD_BYTES + 2))
