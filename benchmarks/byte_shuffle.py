"""Does a byte shuffle (blosc2) earn its place beside lz4 and zstd for numeric arrays?

    python benchmarks/byte_shuffle.py [--mb 8] [--rounds 5]

Needs numpy, lz4, zstandard and blosc2 (none of them fastser's dependencies). For arrays of
the kinds the network lab moves, it times each compressor on one thread (a Dask worker's
share of a 2-core machine): the ratio r, and c and d, the nanoseconds a byte takes to
compress and to inflate (medians of --rounds). Then it prints, with fastser's model of a
link (frames.adaptive), the nanoseconds a byte takes to arrive, S * (c + d + r / L) / S,
against 1 / L sent as it is, on links of 100 Mbit/s, 1 Gbit/s and 10 Gbit/s.
"""

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import blosc2
import lz4.block
import numpy
import zstandard

LINKS = {"100 Mbit": 12.5e6, "1 Gbit": 125e6, "10 Gbit": 1.25e9}


def arrays(items: int) -> dict[str, Any]:
    rng = numpy.random.default_rng(7)
    seconds = rng.integers(0, 86_400 * 365, items) + 1_767_225_600
    return {
        "int64 below 16": rng.integers(0, 16, items, dtype=numpy.int64),
        "int64 keys below 1e6": rng.integers(0, 1_000_000, items, dtype=numpy.int64),
        "float64, 4 values": rng.choice(numpy.array([9.99, 19.99, 4.5, 100.0]), items),
        "timestamps (s)": numpy.sort(seconds).astype("datetime64[s]").astype("int64"),
        "random float64": rng.random(items),
    }


def codecs() -> dict[str, tuple[Callable[[Any], bytes], Callable[[bytes], Any]]]:
    blosc2.set_nthreads(1)
    compressor = zstandard.ZstdCompressor()
    decompressor = zstandard.ZstdDecompressor()

    def shuffled(codec: Any, level: int) -> Callable[[Any], bytes]:
        return lambda data: blosc2.compress2(data, typesize=8, clevel=level, codec=codec,
                                             filters=[blosc2.Filter.SHUFFLE])
    return {
        "lz4": (lambda data: lz4.block.compress(data, store_size=True), lz4.block.decompress),
        "zstd 3": (compressor.compress, decompressor.decompress),
        "blosc2 shuffle+lz4": (shuffled(blosc2.Codec.LZ4, 5), blosc2.decompress2),
        "blosc2 shuffle+zstd 1": (shuffled(blosc2.Codec.ZSTD, 1), blosc2.decompress2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=8, help="MB per array")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    print(f"{'array':22s} {'codec':22s} {'r':>6s} {'c ns/B':>7s} {'d ns/B':>7s}  "
          + "  ".join(f"{name + ' ns/B':>15s}" for name in LINKS))
    for kind, array in arrays(args.mb * 1_000_000 // 8).items():
        data = array.tobytes()
        for name, (compress, inflate) in codecs().items():
            squeezed, spent, undone = b"", [], []
            for _ in range(args.rounds):
                start = time.perf_counter()
                squeezed = compress(data)
                spent.append(time.perf_counter() - start)
                start = time.perf_counter()
                inflate(squeezed)
                undone.append(time.perf_counter() - start)
            ratio = len(squeezed) / len(data)
            c = statistics.median(spent) / len(data)
            d = statistics.median(undone) / len(data)
            cells = []
            for rate in LINKS.values():
                plain, packed = 1 / rate, c + d + ratio / rate
                cells.append(f"{packed * 1e9:6.2f} ({plain * 1e9:5.2f})")
            print(f"{kind:22s} {name:22s} {ratio:6.3f} {c * 1e9:7.2f} {d * 1e9:7.2f}  "
                  + "  ".join(f"{cell:>15s}" for cell in cells))


if __name__ == "__main__":
    main()
