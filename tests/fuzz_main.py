#!/usr/bin/env python3
"""Coverage-guided fuzzing of tests/fuzz_target.py with atheris: run by scripts/fuzz.sh, which
builds the compiled fastser instrumented for libFuzzer. Arguments are libFuzzer's.

`python tests/fuzz_main.py --seeds DIR` writes the seed inputs (the conformance corpus's
frames and a few encoded messages) instead of fuzzing.
"""

import pathlib
import sys

import atheris

# The interpreted modules are instrumented here, the compiled ones by clang at build time.
with atheris.instrument_imports(include=["fastser", "fuzz_target"]):
    from fuzz_target import fuzz_one

import fastser
from fastser import Serialize, ToPickle

HERE = pathlib.Path(__file__).resolve().parent
MAX_LEN = 8192  # scripts/fuzz.sh passes the same -max_len


def write_seeds(directory: pathlib.Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    import numpy as np  # the fuzz extra installs it: short numpy records

    # Already pack_frames streams: every construct of the format, and every refusal.
    seeds = [path.read_bytes() for path in sorted((HERE / "conformance" / "frames").glob("*.bin"))]
    read_only = np.arange(3, dtype=">i2")
    read_only.flags.writeable = False
    for msg in ({"op": "x", "t": (1, (2, 3)), "s": {1, 2}, "big": 2**80, "k": {(1, 2): [1.5]}},
                {"p": ToPickle(5), "z": Serialize(b"q" * 10), "b": bytearray(b"ab")},
                [b"x" * 70_000, Serialize(b"y" * 20_000)],
                {"c": Serialize(np.arange(6).reshape(2, 3)), "r": (Serialize(read_only),),
                 "f": [Serialize(np.asfortranarray(np.ones((2, 2), dtype="<f4")))]}):
        for compression in (None, "zlib"):
            seeds.append(fastser.pack_frames(fastser.dumps(msg, compression=compression)))
    # Small inputs run hundreds of times faster, and every path is reachable with them: the
    # 64 KiB threshold for raw frames is the encoder's choice, the decoder takes any size.
    seeds = [seed for seed in seeds if len(seed) <= MAX_LEN]
    for index, seed in enumerate(seeds):
        (directory / f"seed-{index:02d}").write_bytes(bytes([index]) + seed)


def main() -> None:
    if sys.argv[1:2] == ["--seeds"]:
        write_seeds(pathlib.Path(sys.argv[2]))
        return
    atheris.Setup(sys.argv, fuzz_one)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
