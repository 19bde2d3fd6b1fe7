"""No leaks and no races: payload buffers are released when results are dropped, memory
stays flat over many round trips, and shared Encoder/Decoder instances give identical
results across threads. The extended suite (FASTSER_EXTENDED=1) runs the long versions."""

import gc
import sys
import threading
from typing import Any

import numpy as np
import pytest
from strategies import EXTENDED, rounds
from streams import rss_bytes

import fastser
from fastser import Decoder, Encoder, Serialize, ToPickle


def mixed_message(i: int, payload: bytearray, array: "np.ndarray[Any, Any]") -> Any:
    return {"op": "mixed", "i": i, "key": ("x", i), "tags": {1, 2}, "big": 2**70 + i,
            "raw": payload, "arr": Serialize(array), "fn": ToPickle(len),
            "nested": [{"a": (1.5, None)}, b"small", bytearray(b"ba")]}


def test_payload_buffers_are_released_when_results_are_dropped() -> None:
    payload = bytearray(b"p" * 100_000)
    array = np.arange(20_000, dtype=np.float64)
    before = (sys.getrefcount(payload), sys.getrefcount(array))
    for i in range(200):
        frames = fastser.dumps(mixed_message(i, payload, array))
        out = fastser.loads(frames)
        kept = fastser.loads(frames, deserialize=False)
        forwarded = fastser.loads(fastser.dumps(kept))
        assert out["raw"] == payload and np.array_equal(forwarded["arr"], array)
        del frames, out, kept, forwarded
    gc.collect()
    assert (sys.getrefcount(payload), sys.getrefcount(array)) == before


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
def test_memory_stays_flat_over_many_round_trips() -> None:
    payload = bytearray(b"p" * 70_000)
    array = np.arange(1_000, dtype=np.float64)
    total = rounds(20_000, 1_000_000)
    checkpoints: list[tuple[int, int]] = []
    for i in range(total):
        fastser.loads(fastser.dumps(mixed_message(i, payload, array)))
        if i % (total // 10) == 0 and i:
            gc.collect()
            checkpoints.append((i, rss_bytes()))
    # Slope over the second half, after allocator warm-up: bytes per round trip.
    (i0, r0), (i1, r1) = checkpoints[len(checkpoints) // 2], checkpoints[-1]
    slope = (r1 - r0) / (i1 - i0)
    if EXTENDED:
        print(f"\nRSS slope over {i1 - i0} round trips: {slope:.4f} bytes per round trip "
              f"({r0 / 2**20:.1f} -> {r1 / 2**20:.1f} MiB)")
    assert slope < 1.0  # a leak of one small object per round trip is ~50 bytes


def test_shared_encoder_and_decoder_across_eight_threads() -> None:
    encoder = Encoder()
    decoder = Decoder()
    per_thread = rounds(500, 10_000)
    expected = [fastser.pack_frames(fastser.dumps(message(i))) for i in range(50)]
    failures: list[BaseException] = []
    start = threading.Barrier(8)

    def work(seed: int) -> None:
        try:
            start.wait()
            for n in range(per_thread):
                i = (seed * 7 + n) % 50
                frames = encoder.dumps(message(i))
                assert fastser.pack_frames(frames) == expected[i]
                assert decoder.loads(frames) == message(i)
        except BaseException as exc:  # collected and re-raised in the main thread
            failures.append(exc)

    threads = [threading.Thread(target=work, args=(seed,)) for seed in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failures:
        raise failures[0]


def message(i: int) -> Any:
    return {"i": i, "key": (f"k-{i}", i), "data": bytes([i]) * (70_000 if i % 10 == 0 else 10),
            "nested": [[i, {"x": i * 1.5}]] * 3}
