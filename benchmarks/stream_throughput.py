"""Loopback throughput of fastser.sock against a plain socket, for one large numpy payload.

    python benchmarks/stream_throughput.py [--size-mib 200] [--repeat 7] [--json]

Each run sends the payload from a thread and receives it in the main thread over one TCP
connection on 127.0.0.1: fastser with send_msg(arr) / recv_msg (encode, prelude, sendmsg;
receive into one fresh buffer, decode to a zero-copy array), plain with
sock.sendall(payload bytes) / recv_into a buffer allocated and touched once before the runs
(an upper bound: no encoding, no fresh pages), and plain-fresh, the same into a new private
anonymous mmap each run (what fastser's receive buffer is: it shows the cost of fresh pages
alone).
Runs are interleaved (fastser, plain, plain-fresh, fastser, ...); throughput ratios are
medians of per-round ratios (harness.paired).
Receive memory is measured in separate runs first: the tracemalloc peak (Python and numpy
allocations; an mmap is not traced) and the growth of resident memory (VmRSS,
and the peak VmHWM after resetting it through /proc/self/clear_refs where Linux allows it);
fastser's
resident growth includes its receive buffer, i.e. the payload itself. Uses the fastser that
`import fastser` finds (else this checkout's source tree); the output says which build.
"""

import argparse
import json
import os
import socket
import statistics
import sys
import threading
import time
import tracemalloc
from collections.abc import Callable
from typing import Any, Optional

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import paired  # noqa: E402

try:
    import fastser
except ModuleNotFoundError:  # not installed: use the source tree this script belongs to
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import fastser
from fastser import Encoder
from fastser.sock import recv_msg, send_msg
from fastser.transport.receive_buffer import anonymous_memory

MiB = 2**20


def proc_status() -> dict[str, int]:
    """VmRSS and VmHWM in bytes, from /proc/self/status (empty where there is none)."""
    values: dict[str, int] = {}
    try:
        with open("/proc/self/status") as status:
            for line in status:
                key, _, value = line.partition(":")
                if key in ("VmRSS", "VmHWM"):
                    values[key] = int(value.split()[0]) * 1024
    except OSError:
        pass
    return values


def reset_peak_rss() -> bool:
    """Reset VmHWM to the current RSS (Linux 4.0+); False where that is not possible."""
    try:
        with open("/proc/self/clear_refs", "w") as refs:
            refs.write("5")
        return True
    except OSError:
        return False


def loopback() -> tuple[socket.socket, socket.socket]:
    with socket.create_server(("127.0.0.1", 0)) as listener:
        sender = socket.create_connection(listener.getsockname())
        receiver, _ = listener.accept()
    return sender, receiver


def in_thread(action: Callable[[], Any]) -> threading.Thread:
    thread = threading.Thread(target=action, daemon=True)
    thread.start()
    return thread


class Bench:
    def __init__(self, size: int, split_size: int) -> None:
        self.array = np.arange(size // 8, dtype=np.float64)
        self.payload = self.array.data.cast("B")
        self.encoder = Encoder(frame_split_size=split_size)
        self.sender, self.receiver = loopback()
        self.plain_buffer = bytearray(self.payload.nbytes)  # allocated and touched once
        self.plain_view = memoryview(self.plain_buffer)

    def fastser_run(self) -> Any:
        thread = in_thread(lambda: send_msg(self.sender, self.array, self.encoder))
        received = recv_msg(self.receiver)
        thread.join()
        return received

    def plain_run(self) -> Any:
        return self.plain_into(self.plain_view)

    def plain_fresh_run(self) -> Any:
        return self.plain_into(memoryview(anonymous_memory(self.payload.nbytes)))

    def plain_into(self, view: memoryview) -> memoryview:
        thread = in_thread(lambda: self.sender.sendall(self.payload))
        size, got = self.payload.nbytes, 0
        while got < size:
            received = self.receiver.recv_into(view[got:])
            if not received:
                raise EOFError("the sender stopped early")
            got += received
        thread.join()
        return view

    def timed(self, run: Callable[[], Any]) -> float:
        start = time.perf_counter()
        result = run()
        elapsed = time.perf_counter() - start
        del result  # the next run must not hold two received payloads
        return elapsed

    def memory(self, run: Callable[[], Any]) -> dict[str, Optional[int]]:
        """Extra memory while receiving once: tracemalloc peak, RSS and peak-RSS growth."""
        can_reset = reset_peak_rss()
        before = proc_status()
        tracemalloc.start()
        try:
            result = run()
            traced_peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        after = proc_status()
        del result

        def delta(key: str) -> Optional[int]:
            return after[key] - before[key] if key in after and key in before else None

        return {"tracemalloc_peak": traced_peak, "rss_delta": delta("VmRSS"),
                "peak_rss_delta": delta("VmHWM") if can_reset else None}

    def check(self) -> None:
        received = self.fastser_run()
        if not (received.shape == self.array.shape and received[-1] == self.array[-1]
                and received.sum() == self.array.sum()):
            raise AssertionError("fastser received a different array")
        for run in (self.plain_run, self.plain_fresh_run):
            if run()[-8:] != self.payload[-8:]:
                raise AssertionError("a plain run received different bytes")

    def close(self) -> None:
        self.sender.close()
        self.receiver.close()


def mib(value: Optional[int]) -> str:
    return "n/a" if value is None else f"{value / MiB:.1f} MiB"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size-mib", type=int, default=200, help="payload size (MiB)")
    parser.add_argument("--split-mib", type=int, default=64,
                        help="Encoder frame_split_size (MiB)")
    parser.add_argument("--repeat", type=int, default=7, help="timed runs of each kind")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()

    bench = Bench(args.size_mib * MiB, args.split_mib * MiB)
    try:
        bench.check()  # also warms up both paths
        runs = {"fastser": bench.fastser_run, "plain": bench.plain_run,
                "plain-fresh": bench.plain_fresh_run}
        memory = {name: bench.memory(run) for name, run in runs.items()}
        samples: dict[str, list[float]] = {name: [] for name in runs}
        for _ in range(args.repeat):  # interleaved
            for name, run in runs.items():
                samples[name].append(bench.timed(run))
    finally:
        bench.close()

    size = bench.payload.nbytes
    medians = {name: statistics.median(times) for name, times in samples.items()}
    rates = {name: size / seconds / 1e6 for name, seconds in medians.items()}
    result = {
        "fastser": {"file": fastser.__file__, "compiled": fastser.COMPILED},
        "python": sys.version.split()[0],
        "payload_bytes": size,
        "frame_split_size": args.split_mib * MiB,
        "repeat": args.repeat,
        "seconds": samples,
        "median_seconds": medians,
        "mb_per_s": rates,
        "ratio_fastser_to_plain": paired(samples["plain"], samples["fastser"]),
        "ratio_fastser_to_plain_fresh": paired(samples["plain-fresh"], samples["fastser"]),
        "receive_memory": memory,
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"fastser {'compiled' if fastser.COMPILED else 'pure'} from {fastser.__file__}, "
          f"Python {result['python']}")
    print(f"payload {size / MiB:.0f} MiB float64, frame_split_size {args.split_mib} MiB, "
          f"medians of {args.repeat} interleaved runs each")
    print(f"{'':<12} {'MB/s':>9} {'median s':>9} {'tracemalloc peak':>17} "
          f"{'RSS growth':>11} {'peak RSS growth':>16}")
    for name in samples:
        mem = memory[name]
        print(f"{name:<12} {rates[name]:>9.0f} {medians[name]:>9.3f} "
              f"{mib(mem['tracemalloc_peak']):>17} {mib(mem['rss_delta']):>11} "
              f"{mib(mem['peak_rss_delta']):>16}")
    print(f"fastser/plain throughput: {result['ratio_fastser_to_plain']:.2f}; "
          f"fastser/plain-fresh: {result['ratio_fastser_to_plain_fresh']:.2f}")
    print("(RSS growth of fastser and plain-fresh is their receive buffer, i.e. the payload; "
          "plain reuses a buffer allocated before the runs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
