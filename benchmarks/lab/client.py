"""The lab's client: runs in the client host's namespace, connected to one cluster, and
times the workloads that run.py asks for, one line of JSON each way.

    python client.py SCHEDULER_ADDRESS --workers N [--chunks 8] [--chunk-mb 8] [--tasks 2000]

Requests on stdin: {"op": "prepare", "workload": W, "round": R} (make the data, collect
garbage everywhere: untimed), {"op": "run"} (time it), {"op": "quit"}. Each answer is one
line on stdout starting with REPLY: {"ready": ...}, {"ok": true}, {"seconds": ...,
"payload_bytes": ...}, or {"error": traceback}.

Workloads (the first worker makes the data, the others read it, worker to worker):
  transfer-random  --chunks arrays of random float64 (incompressible), --chunk-mb each;
  transfer-small   the same size of int64 of values below 16 (compressible);
  gather           client.gather of --tasks small results held on the workers (through
                   the scheduler, as a client outside the cluster gathers).
"""

import argparse
import gc
import json
import operator
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any

import distributed

REPLY = "@lab "
WORKLOADS = ("transfer-random", "transfer-small", "gather")
CONNECT_TIMEOUT = 120.0  # seconds, for the scheduler and the workers to be there
# distributed leaves Client unannotated: handled as Any (mypy --strict).
Client: Any = distributed.Client
wait: Any = distributed.wait


def make_random(seed: int, items: int) -> Any:
    import numpy
    return numpy.random.default_rng(seed).random(items)


def make_small(seed: int, items: int) -> Any:
    import numpy
    return numpy.random.default_rng(seed).integers(0, 16, items, dtype=numpy.int64)


def first_item(array: Any) -> float:
    return float(array[0])


def reply(message: dict[str, Any]) -> None:
    sys.stdout.write(REPLY + json.dumps(message) + "\n")
    sys.stdout.flush()


class Workloads:
    def __init__(self, client: Any, args: argparse.Namespace) -> None:
        self.client = client
        self.args = args
        workers = sorted(client.scheduler_info()["workers"])
        self.sender, self.receivers = workers[:1], workers[1:]
        self.items = args.chunk_mb * 1_000_000 // 8  # 8-byte items: chunk_mb MB
        self.kept = client.map(operator.neg, range(args.tasks))
        client.gather(self.kept)  # in memory before timing
        self.made: list[Any] = []
        self.timed: Callable[[], int] = lambda: 0
        # Warms every connection the transfers use (worker to worker, both ways of asking).
        self.prepare("transfer-small", -1)
        self.run()

    def prepare(self, workload: str, round_: int) -> None:
        client = self.client
        if workload == "gather":
            def gather() -> int:
                client.gather(self.kept)
                return 0
            self.timed = gather
        else:
            make = make_random if workload == "transfer-random" else make_small
            chunks = self.args.chunks
            seeds = [round_ * 1000 + i + 1_000_000 for i in range(chunks)]
            self.made = client.map(make, seeds, [self.items] * chunks, workers=self.sender,
                                   key=[f"{workload}-{round_}-{i}" for i in range(chunks)])
            wait(self.made, timeout=CONNECT_TIMEOUT)

            def transfer() -> int:
                read = client.map(first_item, self.made, workers=self.receivers,
                                  key=[f"read-{workload}-{round_}-{i}" for i in range(chunks)])
                client.gather(read)
                self.made += read
                return int(chunks * self.items * 8)
            self.timed = transfer
        gc.collect()
        client.run(gc.collect)

    def run(self) -> dict[str, Any]:
        start = time.perf_counter()
        payload = self.timed()
        seconds = time.perf_counter() - start
        if self.made:
            self.client.cancel(self.made)
            self.made = []
        return {"seconds": seconds, "payload_bytes": payload}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scheduler")
    parser.add_argument("--workers", type=int, required=True)
    parser.add_argument("--chunks", type=int, default=8)
    parser.add_argument("--chunk-mb", type=int, default=8)
    parser.add_argument("--tasks", type=int, default=2000)
    args = parser.parse_args()
    client = Client(args.scheduler, timeout=CONNECT_TIMEOUT)
    try:
        client.wait_for_workers(args.workers, timeout=CONNECT_TIMEOUT)
        workloads = Workloads(client, args)
        info = client.scheduler_info()["workers"]
        import fastser
        reply({"ready": True, "workers": sorted(info),
               "fastser": "compiled" if fastser.COMPILED else "pure",
               "compression": distributed.protocol.compression.get_compression_settings(
                   "distributed.comm.compression")})
        for line in sys.stdin:
            request = json.loads(line)
            try:
                if request["op"] == "quit":
                    break
                if request["op"] == "prepare":
                    workloads.prepare(request["workload"], request["round"])
                    reply({"ok": True})
                elif request["op"] == "run":
                    reply(workloads.run())
                else:
                    reply({"error": f"unknown request {request!r}"})
            except Exception:
                reply({"error": traceback.format_exc()})
    finally:
        client.close()


if __name__ == "__main__":
    try:
        main()
    except Exception:
        reply({"error": traceback.format_exc()})
        raise
