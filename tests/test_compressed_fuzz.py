"""Structure-aware fuzzing of compressed payload frames: genuine lz4, zstd and zlib frames of
runs, text and noise, their bytes and stated sizes mutated, decoded in a message by a safe
and a forwarding Decoder and by decompress itself. The promise: a DeserializationError or a
value, never another exception, and allocation bounded by the Limits, whatever the frame
claims. The extended suite (FASTSER_EXTENDED=1) runs 20,000 examples per compression."""

import functools
import struct
import tracemalloc
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import examples
from test_hostile_compression import compressible

import fastser
from fastser import SAFE_DESERIALIZERS, Decoder, DeserializationError, Limits, Serialize
from fastser.frames.compression import available_compressions, compress, decompress

MiB = 2**20
# Frames far above what the contents decompress to, so that a claim believed shows.
LIMITS = Limits(max_frame_bytes=64 * MiB, max_message_bytes=256 * MiB)
DECODERS = (Decoder(deserializers=SAFE_DESERIALIZERS, limits=LIMITS),
            Decoder(deserialize=False, limits=LIMITS))
# The most one compressed byte can become: lz4 a match length byte (255), deflate a
# 258-byte match in under two bits (1032), zstd a 128 KiB block in a 4-byte RLE block.
MAX_RATIO = {"lz4": 255, "zlib": 1032, "zstd": 2**15}

contents = st.one_of(
    st.binary(max_size=3000),
    # Runs: the highest ratios, past zstd's first buffer and lz4's 255 per byte.
    st.tuples(st.integers(0, 3 * MiB), st.integers(0, 255)).map(
        lambda drawn: bytes([drawn[1]]) * drawn[0]),
    st.tuples(st.binary(min_size=1, max_size=40), st.integers(1, 30_000)).map(
        lambda drawn: drawn[0] * drawn[1]),
)

# (kind, where as a fraction of the frame, value): flip a byte, cut, insert, or restate.
mutations = st.lists(st.tuples(
    st.sampled_from(["set", "cut", "insert", "state"]),
    st.floats(0, 1, exclude_max=True),
    st.integers(-(2**31), 2**31 - 1)), max_size=4)


@functools.cache
def template(name: str, raw: bool) -> list[Any]:
    """A message whose one compressed payload frame travels out of band, to be replaced."""
    msg = {"s": compressible() if raw else Serialize(compressible())}
    frames = fastser.dumps(msg, compression=name)
    assert len(frames) == 2
    return frames


def zstd_restated(frame: bytes, size: int) -> bytes:
    """`frame` stating `size` bytes in an 8-byte content size (where any size fits), with a
    window as large as the size it stated before."""
    if len(frame) < 6 or frame[:4] != b"\x28\xb5\x2f\xfd":
        return frame
    descriptor = frame[4]
    single_segment = descriptor >> 5 & 1
    at = 5 + (1 - single_segment)
    dict_id = frame[at:at + (0, 1, 2, 4)[descriptor & 3]]
    at += len(dict_id)
    width = (single_segment, 2, 4, 8)[descriptor >> 6]
    stated = int.from_bytes(frame[at:at + width], "little") + (256 if width == 2 else 0)
    window = frame[5] if not single_segment else min(31, max(0, stated.bit_length() - 9)) << 3
    # Content size in 8 bytes, no single segment; the checksum and dictionary flags kept.
    header = bytes([0xC0 | descriptor & 0x07, window]) + dict_id + size.to_bytes(8, "little")
    return frame[:4] + header + frame[at + width:]


def restated(name: str, frame: bytes, value: int) -> bytes:
    """`frame` with its stated size replaced by one drawn from `value` (lz4's prefix, or
    zstd's content size); zlib states none."""
    if name == "lz4" and len(frame) >= 4:
        return struct.pack("<i", value) + frame[4:]
    if name == "zstd":
        return zstd_restated(frame, abs(value) % (2 * LIMITS.max_frame_bytes))
    return frame


def mutate(name: str, frame: bytes, edits: list[tuple[str, float, int]]) -> bytes:
    for kind, where, value in edits:
        at = int(where * len(frame))
        if kind == "set" and frame:
            frame = frame[:at] + bytes([value & 255]) + frame[at + 1:]
        elif kind == "cut":
            frame = frame[:at]
        elif kind == "insert":
            frame = frame[:at] + bytes([value & 255]) * (1 + (value >> 8) % 64) + frame[at:]
        elif kind == "state":
            frame = restated(name, frame, value)
    return frame


def traced_peak(action: Any) -> int:
    tracemalloc.start()
    try:
        action()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def check_promise(name: str, frame: bytes, content: bytes) -> None:
    """Only fastser's errors, and memory for what the frame can hold, whatever it claims: the
    output a frame this long can make (or the genuine content) three times over (a raw
    bytes frame is copied out of its writeable buffer), and change."""
    most = min(LIMITS.max_frame_bytes, max(len(content), MAX_RATIO[name] * len(frame)))

    messages = []
    for raw in (False, True):
        frames = list(template(name, raw))
        frames[1] = frame
        messages.append(frames)

    def decode_all() -> None:
        for frames in messages:
            for decoder in DECODERS:
                try:
                    decoder.loads(frames)
                except DeserializationError:
                    pass
        for writeable in (True, False):
            try:
                out = decompress(name, frame, LIMITS.max_frame_bytes, writeable)
            except DeserializationError:
                continue
            assert memoryview(out).nbytes <= LIMITS.max_frame_bytes
    assert traced_peak(decode_all) < 3 * most + 2 * MiB


@pytest.mark.parametrize("name", ["lz4", "zstd", "zlib"])
def test_mutated_compressed_frames_break_no_promise(name: str) -> None:
    if name not in available_compressions():
        pytest.skip(f"{name} is not installed")

    @settings(max_examples=examples(150), deadline=None)
    @given(contents, mutations)
    def prop(content: bytes, edits: list[tuple[str, float, int]]) -> None:
        check_promise(name, mutate(name, compress(name, content), edits), content)

    prop()

