"""FrameReader.feed on framed streams of a few shapes: µs per message, median of 41 reads.

    PY benchmarks/frame_reader.py

Run it with two interpreters (two fastser builds, e.g. before and after a change to
_framing.py) to compare them; the machine is noisy, so run each a few times, alternating.
The shapes: W5's frames (a header, then 100 payload frames of 64 KiB), many tiny frames
(which lie end to end in the reader's buffer), and frames of 64 KiB or more that each
follow an odd-sized frame (each then starts after an alignment gap).
"""

import statistics
import time

import fastser

KiB = 1024
STREAMS = {
    "W5: header + 100 x 64 KiB": [b"h" * 340] + [b"x" * (64 * KiB)] * 100,
    "10,000 x 100 B": [b"y" * 100] * 10_000,
    "200 x 65,537 B": [b"z" * (64 * KiB + 1)] * 200,
}


def main() -> None:
    for name, frames in STREAMS.items():
        data = fastser.pack_frames(frames)
        fastser.FrameReader().feed(data)
        times = []
        for _ in range(41):
            start = time.perf_counter()
            fastser.FrameReader().feed(data)
            times.append(time.perf_counter() - start)
        print(f"{name:28s} {statistics.median(times) * 1e6:10.1f} µs")


if __name__ == "__main__":
    main()
