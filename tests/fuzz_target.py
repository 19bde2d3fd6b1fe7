"""The fuzz target: one input of untrusted bytes into every reader that meets a peer's bytes.

Shared by the coverage-guided fuzzer (tests/fuzz_main.py, `bash scripts/fuzz.sh`) and
by tests/test_fuzz_corpus.py, which replays the committed corpus against both builds. The
first byte of an input picks the chunk size for FrameReader; the rest is read three ways: as a
pack_frames stream (whole with unpack_frames, in chunks with FrameReader), and as one header
frame given straight to the decoders (so the fuzzer need not learn the prelude to reach them).
Every message found is decoded by a safe Decoder and by a forwarding one. The promise
(docs/guide/safety.md, SAFE_DESERIALIZERS): FrameError / DeserializationError, nothing else.
"""

from typing import Any

from fastser import (SAFE_DESERIALIZERS, Decoder, DeserializationError, FrameReader, Limits,
                     unpack_frames)

# Smaller than the defaults so that one input cannot keep the fuzzer busy inflating a
# compressed frame of a gigabyte; the checks are the same code with other numbers.
LIMITS = Limits(max_frames=4096, max_frame_bytes=2**22, max_message_bytes=2**24,
                max_header_bytes=2**20, max_depth=64)
DECODERS = (Decoder(deserializers=SAFE_DESERIALIZERS, limits=LIMITS),
            Decoder(deserialize=False, limits=LIMITS))


def decode(frames: list[Any]) -> None:
    for decoder in DECODERS:
        try:
            decoder.loads(frames)
        except DeserializationError:  # FrameError is one too
            pass


def read_stream(data: bytes, chunk: int) -> None:
    try:
        decode(unpack_frames(data, limits=LIMITS))
    except DeserializationError:
        pass
    reader = FrameReader(LIMITS)
    try:
        for start in range(0, len(data), chunk):
            for frames in reader.feed(data[start:start + chunk]):
                decode(list(frames))
    except DeserializationError:
        pass


def fuzz_one(data: bytes) -> None:
    """Raise only if fastser broke its promise on `data`."""
    if not data:
        return
    body = data[1:]
    read_stream(body, 1 + data[0] % 61)
    decode([body])
