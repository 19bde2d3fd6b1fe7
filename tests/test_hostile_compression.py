"""Hostile compressed frames: a stated size is an upper bound, never an allocation, and
inflating costs time linear in the bytes. Memory is measured in a fresh subprocess (peak
resident growth and tracemalloc's peak), time as a ratio to zlib.decompress of the same
frame; round trips cross every boundary where a buffer starts, grows or a slice ends."""

import json
import os
import struct
import subprocess
import sys
import time
import zlib
from collections.abc import Callable
from typing import Any

import pytest
from test_compression import buffer_owner

import fastser
from fastser import DeserializationError
from fastser.frames.compression import (INFLATE_SLICE, INFLATE_STEP, LZ4_MAX_RATIO, ZSTD_STEP,
                                        available_compressions, compressor_module, decompress,
                                        zstd_first_bytes)

MiB = 2**20
GiB = 2**30
NAMES = ["lz4", "zstd", "zlib"]


def needs(name: str) -> None:
    if name not in available_compressions():
        pytest.skip(f"{name} is not installed")


def zstd_claiming(size: int) -> bytes:
    """36 bytes of a zstd frame that states `size` bytes and ends after 23 of them: magic,
    a descriptor with a 4-byte content size and a 1 MiB window, one raw block (not the last)."""
    return (b"\x28\xb5\x2f\xfd\x80\x50" + struct.pack("<I", size) + (23 << 3).to_bytes(3, "little")
            + b"z" * 23)


def lz4_claiming(size: int) -> bytes:
    """A size prefix stating `size` bytes, then a 32-byte block of literals."""
    return struct.pack("<i", size) + b"\xf0\x10" + b"l" * 30


def zlib_bomb(size: int) -> bytes:
    """A zlib stream of `size` zero bytes, made a MiB at a time (about size / 1000 bytes)."""
    deflater = zlib.compressobj(9)
    block = bytes(MiB)
    parts = [deflater.compress(block) for _ in range(size // MiB)]
    return b"".join(parts) + deflater.flush()


# The child: each hostile frame decoded four ways, each inside its own measurement.
CHILD = r'''
import json, sys, tracemalloc
import numpy as np
import fastser
from fastser import Decoder, DeserializationError, Limits, SAFE_DESERIALIZERS, Serialize
from fastser.frames.compression import decompress

expected_source, name, max_bytes = sys.argv[1], sys.argv[2], int(sys.argv[3])
assert fastser.__file__ == expected_source, (fastser.__file__, expected_source)
frame = sys.stdin.buffer.read()

def status(field):
    with open("/proc/self/status") as lines:
        for line in lines:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024

# A payload that compresses to an out-of-band frame, which the hostile one then replaces.
rng = np.random.default_rng(1)
payload = ((np.arange(300_000) // 3).astype("<i4").tobytes()
           + rng.integers(0, 4, 200_000, dtype=np.uint8).tobytes())
limits = Limits(max_frame_bytes=max_bytes)
safe = Decoder(deserializers=SAFE_DESERIALIZERS, limits=limits)
messages = {}
for label, msg in (("serialize", {"s": Serialize(payload)}), ("raw_bytes", {"s": payload})):
    frames = fastser.dumps(msg, compression=name)
    assert len(frames) == 2, [len(f) for f in frames]
    frames[1] = frame
    messages[label] = frames

actions = {
    "decompress writeable": lambda: decompress(name, frame, max_bytes, True),
    "decompress read-only": lambda: decompress(name, frame, max_bytes, False),
    "loads Serialize": lambda: safe.loads(messages["serialize"]),
    "loads raw bytes": lambda: safe.loads(messages["raw_bytes"]),
}
out = {}
for label, action in actions.items():
    with open("/proc/self/clear_refs", "w") as refs:
        refs.write("5")  # VmHWM := VmRSS
    before = status("VmRSS")
    tracemalloc.start()
    try:
        action()
        raised = None
    except DeserializationError as exc:
        raised = str(exc)
    except BaseException as exc:
        raised = f"NOT A FASTSER ERROR: {type(exc).__name__}: {exc}"
    traced = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    out[label] = {"rss": status("VmHWM") - before, "traced": traced, "raised": raised}
print(json.dumps(out))
'''


def decode_in_child(name: str, frame: bytes, max_bytes: int) -> dict[str, Any]:
    run = subprocess.run([sys.executable, "-c", CHILD, fastser.__file__, name, str(max_bytes)],
                         input=frame, capture_output=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:].decode()
    result: dict[str, Any] = json.loads(run.stdout)
    return result


needs_proc = pytest.mark.skipif(not os.path.exists("/proc/self/clear_refs"),
                                reason="peak RSS needs Linux's /proc/self/clear_refs")


@needs_proc
@pytest.mark.parametrize(("name", "make", "max_bytes", "error"), [
    ("zstd", lambda: zstd_claiming(GiB), GiB, "zstd payload ends after 23 of its 1073741824"),
    ("lz4", lambda: lz4_claiming(GiB), GiB, "more than its 32 compressed bytes can hold"),
    ("zlib", lambda: zlib_bomb(128 * MiB), 4 * MiB, "exceeding Limits.max_frame_bytes=4194304"),
], ids=["zstd-claims-1GiB", "lz4-claims-1GiB", "zlib-128MiB-bomb"])
def test_a_hostile_frame_costs_memory_for_the_bytes_it_holds_not_what_it_claims(
        name: str, make: Callable[[], bytes], max_bytes: int, error: str) -> None:
    needs(name)
    frame = make()
    assert len(frame) < 300_000
    for label, seen in decode_in_child(name, frame, max_bytes).items():
        assert seen["raised"] is not None and error in seen["raised"], (label, seen)
        # Before any data is checked, nothing near the claim is allocated (tracemalloc sees
        # buffers that were never touched) or made resident.
        assert seen["traced"] < 10 * MiB, (label, seen)
        assert seen["rss"] < 64 * MiB, (label, seen)


def compressible() -> bytes:
    """1.4 MB that every compression keeps, and that compresses to an out-of-band frame."""
    import numpy as np
    rng = np.random.default_rng(1)
    return ((np.arange(300_000) // 3).astype("<i4").tobytes()
            + rng.integers(0, 4, 200_000, dtype=np.uint8).tobytes())


def best_time(action: Callable[[], Any], repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return min(times)


def test_inflating_a_stored_zlib_frame_is_linear() -> None:
    # A stored frame is the worst case for inflating in steps: every step that stops on
    # its output bound leaves all the input it has not read yet to be copied again.
    data = os.urandom(64 * MiB)
    frame = zlib.compress(data, 0)
    assert bytes(decompress("zlib", frame, len(data))) == data
    control = best_time(lambda: zlib.decompress(frame))
    ours = best_time(lambda: decompress("zlib", frame, len(data)))
    assert ours < 4 * control, (ours, control)
    frames = fastser.dumps({"b": compressible()}, compression="zlib")
    assert len(frames) == 2 and len(frames[1]) < len(compressible())
    frames[1] = frame
    safe = fastser.Decoder(deserializers=fastser.SAFE_DESERIALIZERS)
    assert safe.loads(frames)["b"] == data
    through_loads = best_time(lambda: safe.loads(frames))
    assert through_loads < 4 * control, (through_loads, control)


def zstd_frame(data: bytes) -> bytes:
    import zstandard
    frame: bytes = zstandard.ZstdCompressor().compress(data)
    return frame


def with_stated_size(frame: bytes, size: int) -> bytes:
    """A zstd frame with the content size in its header replaced by `size` (same width)."""
    descriptor = frame[4]
    single_segment = descriptor >> 5 & 1
    at = 5 + (0 if single_segment else 1) + (0, 1, 2, 4)[descriptor & 3]
    width = (single_segment, 2, 4, 8)[descriptor >> 6]
    stored = size - 256 if width == 2 else size
    assert width and 0 <= stored < 256**width
    return frame[:at] + stored.to_bytes(width, "little") + frame[at + width:]


def zstd_sized(prefix: bytes, target: Callable[[int, int], int]) -> bytes:
    """`prefix` followed by zero bytes, as many as make its length equal target(length,
    compressed length): found by iterating, since the compressed length barely moves."""
    length = len(prefix) + MiB
    for _ in range(50):
        compressed = len(zstd_frame(prefix + bytes(length - len(prefix))))
        wanted = target(length, compressed)
        if wanted == length:
            return prefix + bytes(length - len(prefix))
        length = wanted
    raise AssertionError("no fixed point")


@pytest.mark.parametrize("prefix", [b"", os.urandom(300_000)], ids=["zeros", "random-start"])
@pytest.mark.parametrize("writeable", [True, False])
def test_zstd_round_trips_across_the_first_buffer_and_the_pieces_after_it(prefix: bytes,
                                                                 writeable: bool) -> None:
    needs("zstd")
    exact = zstd_sized(prefix, zstd_first_bytes)  # the first buffer is exactly the frame
    frame = zstd_frame(exact)
    assert zstd_first_bytes(len(exact), len(frame)) == len(exact)
    cases = [exact, exact[:-1], exact + b"\0"]
    # Beyond the first buffer, output is appended a piece at a time: one piece exactly.
    stepped = zstd_sized(prefix, lambda n, c: zstd_first_bytes(n, c) + ZSTD_STEP)
    assert len(stepped) == zstd_first_bytes(len(stepped), len(zstd_frame(stepped))) + ZSTD_STEP
    cases += [stepped, stepped + b"\0", stepped[:-1], bytes(5 * MiB + 3)]
    for data in cases:
        frame = zstd_frame(data)
        out = decompress("zstd", frame, len(data), writeable)
        assert out == data and (not writeable or type(out) is bytearray)
        with pytest.raises(DeserializationError, match="exceeding"):
            decompress("zstd", frame, len(data) - 1, writeable)
        # A stated size that lies either way is caught, wherever the buffer stands.
        for stated in (len(data) - 1, len(data) + 1, 2 * len(data), 300 * len(data)):
            with pytest.raises(DeserializationError):
                decompress("zstd", with_stated_size(frame, stated), 10**9, writeable)
    # A frame followed by more bytes, in either case.
    frame = zstd_frame(exact)
    with pytest.raises(DeserializationError):
        decompress("zstd", frame + frame, 10**9, writeable)


def test_a_zstd_array_that_outgrows_its_first_buffer_keeps_zero_copy() -> None:
    needs("zstd")
    import numpy as np
    x = np.zeros(1_000_000)
    x[::1000] = 1.0
    frames = fastser.dumps(fastser.Serialize(x), compression="zstd")
    stated = x.nbytes
    assert zstd_first_bytes(stated, len(frames[-1])) < stated  # it had to grow
    y = fastser.loads(frames)
    assert (y == x).all() and y.flags.writeable
    owner = buffer_owner(y)
    assert type(owner) is bytearray and len(owner) == x.nbytes


def lz4_near_max_ratio(length_bytes: int) -> tuple[bytes, bytes]:
    """A block as close to 255 bytes per byte as the format allows, with its output: one
    literal, one match of offset 1 whose length takes `length_bytes` bytes, five literals."""
    block = (b"\x1fa" + (1).to_bytes(2, "little") + b"\xff" * (length_bytes - 1) + b"\xfe"
             + b"\x50aaaaa")
    data = b"a" * (1 + 4 + 15 + 255 * (length_bytes - 1) + 254 + 5)
    return block, data


@pytest.mark.parametrize("writeable", [True, False])
def test_lz4_stated_size_is_refused_beyond_what_the_block_can_hold(writeable: bool) -> None:
    needs("lz4")
    block, data = lz4_near_max_ratio(100_000)
    frame = struct.pack("<i", len(data)) + block
    assert len(data) > 254.9 * len(block)  # what the format allows, the bound lets through
    assert decompress("lz4", frame, len(data), writeable) == data
    # At the bound the decompressor is asked (and finds the lie); one past it, it is not.
    at_bound = struct.pack("<i", LZ4_MAX_RATIO * len(block)) + block
    with pytest.raises(DeserializationError, match="corrupt lz4 payload"):
        decompress("lz4", at_bound, GiB, writeable)
    beyond = struct.pack("<i", LZ4_MAX_RATIO * len(block) + 1) + block
    with pytest.raises(DeserializationError, match="can hold"):
        decompress("lz4", beyond, GiB, writeable)
    with pytest.raises(DeserializationError, match="can hold"):
        decompress("lz4", struct.pack("<i", 1), GiB, writeable)  # no block at all


@pytest.mark.parametrize("writeable", [True, False])
def test_lz4_round_trips_and_lies_are_caught(writeable: bool) -> None:
    needs("lz4")
    lz4_block: Any = compressor_module("lz4")  # lz4 ships no type information
    for data in (b"", b"x", bytes(MiB), bytes(5 * MiB + 1), os.urandom(MiB + 1)):
        frame = lz4_block.compress(data, store_size=True)
        assert decompress("lz4", frame, len(data), writeable) == data
        for stated in (len(data) - 1, len(data) + 1):
            if stated >= 0:
                with pytest.raises(DeserializationError):
                    decompress("lz4", struct.pack("<i", stated) + frame[4:], GiB, writeable)


def stored_frame_of_length(length: int) -> bytes:
    """A stored zlib frame exactly `length` bytes long."""
    for size in range(length - 5 * (length // 65535 + 1) - 6, length):
        frame = zlib.compress(b"s" * size, 0)
        if len(frame) == length:
            return frame
    raise AssertionError(length)


def test_zlib_round_trips_across_slice_and_step_boundaries() -> None:
    datas = [zlib.decompress(stored_frame_of_length(n))
             for n in (INFLATE_SLICE - 1, INFLATE_SLICE, INFLATE_SLICE + 1, 3 * INFLATE_SLICE)]
    datas += [b"\0" * n for n in (INFLATE_STEP - 1, INFLATE_STEP, INFLATE_STEP + 1,
                                  2 * INFLATE_STEP, 9 * INFLATE_STEP + 7)]
    datas += [b"s" * n for n in (INFLATE_STEP - 1, INFLATE_STEP, INFLATE_STEP + 1)]
    datas += [b"", os.urandom(3 * INFLATE_SLICE + 5)]
    for data in datas:
        for level in (0, 1, 9):
            frame = zlib.compress(data, level)
            assert decompress("zlib", frame, len(data)) == data
            if data:
                with pytest.raises(DeserializationError, match="exceeding"):
                    decompress("zlib", frame, len(data) - 1)
            with pytest.raises(DeserializationError, match="truncated"):
                decompress("zlib", frame[:-1], 10**9)
            with pytest.raises(DeserializationError, match="trailing"):
                decompress("zlib", frame + b"x", 10**9)


def test_zlib_trailing_bytes_and_truncation_at_a_slice_boundary() -> None:
    frame = stored_frame_of_length(INFLATE_SLICE)
    # The frame ends exactly where a slice does: trailing bytes are all in later slices.
    for junk in (b"x", b"x" * (2 * INFLATE_SLICE)):
        with pytest.raises(DeserializationError, match="trailing"):
            decompress("zlib", frame + junk, 10**9)
    longer = stored_frame_of_length(INFLATE_SLICE + 1)
    with pytest.raises(DeserializationError, match="truncated"):
        decompress("zlib", longer[:INFLATE_SLICE], 10**9)
    assert len(decompress("zlib", longer, 10**9)) == len(zlib.decompress(longer))
