"""Sampled compression of payload frames, transparent and bounded decompression."""

import os
import random
import tracemalloc
import zlib
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import fastser
from fastser import Decoder, DeserializationError, Encoder, Limits, Serialize, Serialized
from fastser.frames import compression as _compression
from fastser.frames.compression import (available_compressions, check_compression, compress,
                                        decompress, maybe_compress)

NAMES = ["lz4", "zstd", "zlib"]
COMPRESSIBLE = b"fastser frames " * 70_000  # ~1 MB
RANDOM = os.urandom(200_000)


@pytest.fixture
def without_lz4() -> Iterator[None]:
    saved = dict(_compression._modules)
    _compression._modules["lz4"] = None
    try:
        yield
    finally:
        _compression._modules.clear()
        _compression._modules.update(saved)


def test_the_test_environment_has_every_compressor() -> None:
    if os.environ.get("FASTSER_EXPECT") is None:
        pytest.skip("the test extra installs lz4 and zstandard; scripts/test.sh uses it")
    assert available_compressions() == NAMES


def test_check_compression_resolves_names() -> None:
    assert check_compression(None) is None
    assert check_compression("auto") == available_compressions()[0]
    for name in available_compressions():
        assert check_compression(name) == name
    with pytest.raises(ValueError, match="unknown compression 'snappy'"):
        check_compression("snappy")
    with pytest.raises(ValueError, match="unknown compression"):
        Encoder(compression="gzip")


def test_auto_falls_back_and_a_missing_package_is_a_value_error(without_lz4: None) -> None:
    assert check_compression("auto") in ("zstd", None)
    with pytest.raises(ValueError, match=r"pip install 'fastser\[lz4\]'"):
        fastser.dumps(b"x", compression="lz4")


@pytest.mark.parametrize("name", NAMES)
def test_maybe_compress_keeps_only_what_saves_30_percent(name: str) -> None:
    assert maybe_compress(b"a" * 9_999, name) == (None, b"a" * 9_999)  # too small to try
    assert maybe_compress(RANDOM, name)[0] is None  # the sample does not shrink
    used, frame = maybe_compress(COMPRESSIBLE, name)
    assert used == name and len(frame) < 0.7 * len(COMPRESSIBLE)
    assert bytes(decompress(name, frame, len(COMPRESSIBLE))) == COMPRESSIBLE


def crossing(name: str, size: int, make: Any) -> tuple[bytes, bytes]:
    """Two frames of `size` bytes made by make(r) with r random bytes: the one with the most
    random bytes whose compressed sample or frame (`size` > 20,000: the sample decides)
    still saves 30 %, and the next, which no longer does."""
    whole = size <= 2 * _compression.SAMPLE_PIECES * _compression.SAMPLE_PIECE_BYTES

    def saving(frame: bytes) -> float:
        probe = frame if whole else _compression.sample(memoryview(frame))
        return 1 - len(compress(name, probe)) / len(probe)

    low, high = 0, size  # saving(make(low)) >= 30 %, saving(make(high)) < 30 %
    while high - low > 1:
        middle = (low + high) // 2
        if saving(make(middle)) >= 0.3:
            low = middle
        else:
            high = middle
    below, above = make(low), make(high)
    # Both within a percentage point of the bound: a threshold moved by more is caught.
    assert 0.3 <= saving(below) < 0.31 and 0.29 < saving(above) < 0.3, (
        saving(below), saving(above))
    return below, above


def noise(count: int, seed: int) -> bytes:
    return random.Random(seed).randbytes(count)


@pytest.mark.parametrize("name", NAMES)
def test_frames_from_10000_bytes_are_compressed(name: str) -> None:
    assert maybe_compress(b"a" * 9_999, name) == (None, b"a" * 9_999)
    used, frame = maybe_compress(b"a" * 10_000, name)
    assert used == name and bytes(decompress(name, frame, 10_000)) == b"a" * 10_000


@pytest.mark.parametrize("name", NAMES)
def test_a_frame_is_kept_compressed_from_a_30_percent_saving(name: str) -> None:
    # 15,000 bytes: the whole frame is compressed, no sample.
    below, above = crossing(name, 15_000, lambda r: noise(r, 1) + bytes(15_000 - r))
    used, frame = maybe_compress(below, name)
    assert used == name and bytes(decompress(name, frame, len(below))) == below
    assert maybe_compress(above, name) == (None, above)


@pytest.mark.parametrize("name", NAMES)
def test_the_sample_decides_from_a_30_percent_saving(name: str) -> None:
    # 100,000 bytes, zeros but where the five sample pieces start: the whole frame would
    # shrink by far more than 30 %, so the sample alone can refuse it.
    size = 100_000
    step = size // _compression.SAMPLE_PIECES

    def make(r: int) -> bytes:
        frame = bytearray(size)
        for i in range(_compression.SAMPLE_PIECES):
            frame[i * step:i * step + r] = noise(r, i)
        return bytes(frame)

    below, above = crossing(name, size, lambda r: make(r // _compression.SAMPLE_PIECES))
    assert maybe_compress(below, name)[0] == name
    assert maybe_compress(above, name) == (None, above)
    assert len(compress(name, above)) < 0.7 * size  # the whole frame alone would have passed


@pytest.mark.parametrize("name", NAMES)
def test_serialize_payloads_roundtrip_compressed(name: str) -> None:
    x = np.zeros(500_000)
    x[::7] = 1.5
    msg = {"x": Serialize(x), "b": Serialize(COMPRESSIBLE), "r": Serialize(RANDOM),
           "small": Serialize(b"s" * 100)}
    frames = fastser.dumps(msg, compression=name)
    assert sum(memoryview(f).nbytes for f in frames) < x.nbytes / 2
    out = fastser.loads(frames)
    assert (out["x"] == x).all() and out["b"] == COMPRESSIBLE and out["r"] == RANDOM
    assert out["small"] == b"s" * 100
    kept = fastser.loads(frames, deserialize=False)
    assert kept["x"].header["compression"] == [name]
    assert "compression" not in kept["r"].header  # incompressible: left as it is
    assert "compression" not in kept["small"].header  # under 10,000 bytes
    assert (fastser.deserialize(kept["x"].header, kept["x"].frames) == x).all()


@pytest.mark.parametrize("name", NAMES)
def test_a_decompressed_array_is_writeable_without_a_second_copy(name: str) -> None:
    x = np.zeros(300_000)
    y = fastser.loads(fastser.dumps(Serialize(x), compression=name))
    assert y.flags.writeable and (y == x).all()
    owner = buffer_owner(y)
    # The array is a view of the decompressor's own output buffer.
    assert type(owner) is bytearray and len(owner) == x.nbytes


@pytest.mark.parametrize("name", NAMES)
def test_raw_bytes_likes_are_compressed_too(name: str) -> None:
    msg = {"b": COMPRESSIBLE, "a": bytearray(COMPRESSIBLE), "m": memoryview(COMPRESSIBLE),
           "r": RANDOM}
    frames = fastser.dumps(msg, compression=name)
    assert sum(memoryview(f).nbytes for f in frames) < len(COMPRESSIBLE)
    out = fastser.loads(frames)
    assert type(out["b"]) is bytes and out["b"] == COMPRESSIBLE
    assert type(out["a"]) is bytearray and out["a"] == COMPRESSIBLE
    assert type(out["m"]) is memoryview and out["m"].tobytes() == COMPRESSIBLE
    assert out["r"] == RANDOM


def test_forwarding_a_compressed_serialized_reproduces_the_frames() -> None:
    for name in available_compressions():
        frames = fastser.dumps({"x": Serialize(COMPRESSIBLE), "y": [1, 2]}, compression=name)
        kept = fastser.loads(frames, deserialize=False)
        assert isinstance(kept["x"], Serialized)
        again = fastser.dumps(kept, compression=name)
        assert [bytes(f) for f in again] == [bytes(f) for f in frames]
        # Forwarded as it is, never compressed again, whatever the encoder's setting.
        assert fastser.loads(fastser.dumps(kept), deserialize=False)["x"].frames == kept["x"].frames


def test_compression_and_splitting_together() -> None:
    rng = np.random.default_rng(1)
    words = rng.integers(0, 256, (1000, 8), dtype=np.uint8)
    payload = words[rng.integers(0, 1000, 1_250_000)].tobytes()  # 10 MB, compresses to 15-40 %
    for name in available_compressions():
        frames = Encoder(compression=name, frame_split_size=100_000).dumps(
            {"s": Serialize(payload), "b": payload})
        assert len(frames) > 3
        out = fastser.loads(frames)
        assert out["s"] == payload and out["b"] == payload


@pytest.mark.parametrize("name", NAMES)
def test_decompression_is_bounded_by_max_frame_bytes(name: str) -> None:
    zeros = b"\0" * 5_000_000
    limits = Limits(max_frame_bytes=1_000_000)
    for msg in ({"s": Serialize(zeros)}, {"b": zeros}):
        frames = fastser.dumps(msg, compression=name)
        assert all(memoryview(f).nbytes < 1_000_000 for f in frames)
        tracemalloc.start()
        try:
            with pytest.raises(DeserializationError, match="max_frame_bytes=1000000"):
                fastser.loads(frames, limits=limits)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < 3_000_000  # never the 5 MB the payload would inflate to


@pytest.mark.parametrize("name", NAMES)
def test_corrupt_compressed_payloads_raise_deserialization_error(name: str) -> None:
    frame = compress(name, COMPRESSIBLE)
    for bad in (frame[:len(frame) // 2], frame[:2], b"\xff" * 40, frame + b"junk"):
        with pytest.raises(DeserializationError):
            decompress(name, bad, 10**7)


def test_hostile_compression_fields_raise_deserialization_error(without_lz4: None) -> None:
    payload = compress("zlib", COMPRESSIBLE)
    for compression in (["snappy"], [None, "zlib"], "zlib", [1]):
        with pytest.raises(DeserializationError):
            fastser.deserialize({"serializer": "dispatch", "type": "bytes",
                                 "compression": compression}, [payload])
    with pytest.raises(DeserializationError, match="not installed here"):
        decompress("lz4", b"\0\0\0\0", 100)


def test_zstd_without_a_stated_size_is_refused() -> None:
    if "zstd" not in available_compressions():
        pytest.skip("zstandard is not installed")
    import zstandard
    unsized = zstandard.ZstdCompressor(write_content_size=False).compressobj()
    data = unsized.compress(COMPRESSIBLE) + unsized.flush()
    with pytest.raises(DeserializationError, match="does not state"):
        decompress("zstd", data, 10**7)


def test_zlib_stream_is_inflated_in_bounded_steps() -> None:
    bomb = zlib.compress(b"\0" * 50_000_000, 9)
    tracemalloc.start()
    try:
        with pytest.raises(DeserializationError, match="exceeding"):
            decompress("zlib", bomb, 2_000_000)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 10_000_000


def test_decoder_with_safe_deserializers_reads_compressed_bytes(without_lz4: None) -> None:
    frames = fastser.dumps({"b": Serialize(COMPRESSIBLE), "raw": COMPRESSIBLE},
                           compression="zlib")
    out: Any = Decoder(deserializers=fastser.SAFE_DESERIALIZERS).loads(frames)
    assert out == {"b": COMPRESSIBLE, "raw": COMPRESSIBLE}


@pytest.mark.parametrize("name", NAMES)
def test_decompression_is_bounded_per_message_too(name: str) -> None:
    zeros = b"\0" * 1_500_000
    limits = Limits(max_frame_bytes=2_000_000, max_message_bytes=4_000_000)
    for wrap in (Serialize, lambda data: data):
        one = fastser.dumps({"a": wrap(zeros)}, compression=name)
        assert fastser.loads(one, limits=limits)["a"] == zeros
        three = fastser.dumps([wrap(zeros), wrap(zeros), wrap(zeros)], compression=name)
        assert sum(memoryview(f).nbytes for f in three) < 100_000
        with pytest.raises(DeserializationError, match="left of Limits.max_message_bytes"):
            fastser.loads(three, limits=limits)
    # Forwarding does not decompress Serialize payloads, so it is not bounded by them.
    three = fastser.dumps([Serialize(zeros)] * 3, compression=name)
    assert len(fastser.loads(three, deserialize=False, limits=limits)) == 3


def buffer_owner(array: Any) -> Any:
    """The object whose memory a numpy array decoded from a frame lives in."""
    owner = array
    while isinstance(owner, np.ndarray) and owner.base is not None:
        owner = owner.base
    if isinstance(owner, memoryview):
        owner = owner.obj
    return owner
