"""The lab's client: runs in the client host's namespace, connected to one cluster, and
times the workloads that run.py asks for, one line of JSON each way.

    python client.py SCHEDULER_ADDRESS --workers N [--chunks 8] [--chunk-mb 8] [--tasks 2000]
        [--map-tasks 10000] [--shuffle-rows 2000000] [--tls-ca-file F --tls-cert F --tls-key F]

Requests on stdin: {"op": "prepare", "workload": W, "round": R} (make the data, collect
garbage everywhere: untimed), {"op": "run"} (time it), {"op": "seen"} (what fastser measured
in each worker: the rate of its link to each peer host, MB/s, and what compressing and
inflating a byte costs there, ns), {"op": "quit"}. Each answer is one
line on stdout starting with REPLY: {"ready": ...}, {"ok": true}, {"seconds": ...,
"payload_bytes": ...}, or {"error": traceback}.

Workloads (the first worker makes the data, the others read it, worker to worker):
  transfer-random  --chunks arrays of random float64 (incompressible), --chunk-mb each;
  transfer-small   the same size of int64 of values below 16 (compressible);
  shuffle          a P2P shuffle (dask.dataframe, method "p2p") of --shuffle-rows rows made
                   on the workers: an int64 key, a float column, a float column of few
                   distinct values, a string column of 12 values, a timestamp column;
                   persisted and waited for, then checked (row count and key sum).
  gather           client.gather of --tasks small results held on the workers (through
                   the scheduler, as a client outside the cluster gathers).
  map              client.map of --map-tasks tiny tasks, gathered (latency-bound).
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

import dask.config
import distributed
import distributed.security

REPLY = "@lab "
WORKLOADS = ("transfer-random", "transfer-small", "shuffle", "gather", "map")
SHUFFLE_PARTITIONS = 16
CITIES = ["Amsterdam", "Berlin", "Cairo", "Dakar", "Essen", "Faro", "Genoa", "Hanoi",
          "Izmir", "Jakarta", "Kyiv", "Lima"]
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


def make_partition(seed: int, rows: int) -> Any:
    """One partition of the shuffled dataframe: what a table of events looks like."""
    import numpy
    import pandas  # type: ignore[import-untyped]
    rng = numpy.random.default_rng(seed)
    return pandas.DataFrame({
        "key": rng.integers(0, 1_000_000, rows, dtype=numpy.int64),
        "value": rng.random(rows),
        "price": rng.choice(numpy.array([9.99, 19.99, 4.5, 100.0]), rows),
        "city": pandas.Categorical(rng.choice(CITIES, rows)).astype(str),
        "time": pandas.Timestamp("2026-01-01") + pandas.to_timedelta(
            rng.integers(0, 86_400 * 365, rows), unit="s"),
    })


def tiny(number: int) -> int:
    return number + 1


def fastser_seen() -> dict[str, Any]:
    """In a worker: the links fastser:// measured (MB/s per peer host) and its running
    compression costs (ns per byte compressed and inflated): why it compressed or not."""
    from fastser.frames import adaptive
    from fastser.transport import send_clock
    return {"links_mb_s": {host: round(link.bytes_per_second / 1e6, 1)
                           for host, link in send_clock._links.items() if link.samples},
            "cost_ns": {name: round(adaptive.cost_of(name) * 1e9, 2) for name in adaptive.costs
                        if name != "zlib"},
            "frame_scale": {name: round(adaptive.scale_of(name), 2) for name in adaptive.costs
                            if name != "zlib"}}


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
        self.made: list[Any] = []  # futures, cancelled after each run
        self.held: list[Any] = []  # collections, dropped after each run
        self.timed: Callable[[], int] = lambda: 0
        # Warms every connection the transfers use (worker to worker, both ways of asking).
        self.prepare("transfer-small", -1)
        self.run()

    def prepare(self, workload: str, round_: int) -> None:
        client = self.client
        if workload == "shuffle":
            self.prepare_shuffle(round_)
        elif workload == "map":
            def map_tiny() -> int:
                futures = client.map(tiny, range(self.args.map_tasks),
                                     key=[f"tiny-{round_}-{i}" for i in
                                          range(self.args.map_tasks)])
                total = sum(client.gather(futures))
                expected = self.args.map_tasks * (self.args.map_tasks + 1) // 2
                if total != expected:
                    raise AssertionError(f"map summed to {total}, not {expected}")
                return 0  # the futures, dropped, are released
            self.timed = map_tiny
        elif workload == "gather":
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

    def prepare_shuffle(self, round_: int) -> None:
        import dask.dataframe as dd
        client = self.client
        rows = self.args.shuffle_rows // SHUFFLE_PARTITIONS
        seeds = [round_ * 1000 + i for i in range(SHUFFLE_PARTITIONS)]
        from_map: Any = dd.from_map  # dask leaves it unannotated
        frame = from_map(make_partition, seeds, rows=rows)
        # Made and held on the workers before timing: only the shuffle is timed.
        source = client.persist(frame)
        wait(source, timeout=CONNECT_TIMEOUT)
        count, keys = client.compute([source.shape[0], source["key"].sum()], sync=True)
        # Collections are released by dropping them (run() does): cancelling a persisted
        # collection whose keys another shares trips the scheduler's `assert ts.who_wants`.
        self.held = [source]

        def shuffle() -> int:
            shuffled = client.persist(source.shuffle("key", shuffle_method="p2p"))
            wait(shuffled, timeout=CONNECT_TIMEOUT)
            got = client.compute([shuffled.shape[0], shuffled["key"].sum()], sync=True)
            if list(got) != [count, keys]:
                raise AssertionError(f"shuffled rows and key sum {got}, not {[count, keys]}")
            self.held.append(shuffled)
            return 0
        self.timed = shuffle

    def run(self) -> dict[str, Any]:
        start = time.perf_counter()
        payload = self.timed()
        seconds = time.perf_counter() - start
        if self.made:
            self.client.cancel(self.made)
            self.made = []
        self.held = []
        return {"seconds": seconds, "payload_bytes": payload}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scheduler")
    parser.add_argument("--workers", type=int, required=True)
    parser.add_argument("--chunks", type=int, default=8)
    parser.add_argument("--chunk-mb", type=int, default=8)
    parser.add_argument("--tasks", type=int, default=2000)
    parser.add_argument("--map-tasks", type=int, default=10_000)
    parser.add_argument("--shuffle-rows", type=int, default=2_000_000)
    parser.add_argument("--tls-ca-file")
    parser.add_argument("--tls-cert")
    parser.add_argument("--tls-key")
    args = parser.parse_args()
    security = None
    if args.tls_ca_file:
        make_security: Any = distributed.security.Security  # unannotated
        security = make_security(
            tls_ca_file=args.tls_ca_file, tls_client_cert=args.tls_cert,
            tls_client_key=args.tls_key, require_encryption=True)
    client = Client(args.scheduler, timeout=CONNECT_TIMEOUT, security=security)
    try:
        client.wait_for_workers(args.workers, timeout=CONNECT_TIMEOUT)
        workloads = Workloads(client, args)
        info = client.scheduler_info()["workers"]
        import fastser
        reply({"ready": True, "workers": sorted(info),
               "fastser": "compiled" if fastser.COMPILED else "pure",
               "compression": distributed.protocol.compression.get_compression_settings(
                   "distributed.comm.compression"),
               "fastser_compression": str(dask.config.get(
                   "distributed.comm.fastser.compression", default="adaptive"))})
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
                elif request["op"] == "seen":
                    reply({"seen": {address.rsplit(":", 1)[0].split("//")[-1]: seen for
                                    address, seen in client.run(fastser_seen).items()}})
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
