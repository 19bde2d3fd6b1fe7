"""A Dask cluster over tcp:// against the same over fastser://, interleaved in one process.

    python benchmarks/cluster.py [--rounds 5] [--tasks 2000] [--scale 0.5] [--only a,b] [--json]

Two LocalClusters (2 worker processes of 1 thread each, scheduler and client in this
process) run side by side; each round times, on one then the other (the order alternates):
  gather  client.gather of N small results already in memory (via the scheduler: the
          default for a client outside the cluster);
  map     client.map of N trivial tasks with fresh keys, and the gather of their results:
          submission, scheduling, execution and the return trip, per task;
  transfer 40 array chunks of 8 MB made on one worker, each read by a task on the other
          (worker-to-worker get_data, as x + x.T and shuffles move data);
  push    client.scatter(hash=False) of 100 arrays of 1 MiB, alone: the transfer of the
          scatter workload below, without its hashing and tasks (one message of 100 MiB to
          the scheduler, which forwards the payloads to the workers, ~50 MiB each);
  and the whole computation of each real workload of traffic/dask_workloads.py (array
  reduction, x + x.T with a rechunk, groupby-aggregate, P2P and task shuffles, a map of
  10,000 tasks then gather, a scatter of 100 arrays), at --scale (array sides and rows).
The report gives the median time of each, and the median over rounds of the per-round ratio
tcp:// / fastser:// (above 1: fastser:// faster). Needs the dask extra and
dask[array,dataframe]; uses the fastser that `import fastser` finds, and says which build.
"""

import argparse
import json
import operator
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import distributed

import fastser

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "traffic"))
import dask_workloads  # noqa: E402

SCHEMES = ("tcp://", "fastser://")
# distributed leaves Client and LocalCluster unannotated: handled as Any here (mypy --strict
# refuses calls of untyped functions from typed code).
Client: Any = distributed.Client
LocalCluster: Any = distributed.LocalCluster


def time_gather(client: Any, futures: list[Any]) -> float:
    start = time.perf_counter()
    client.gather(futures)
    return time.perf_counter() - start


def time_map(client: Any, tasks: int, round_: int) -> float:
    start = time.perf_counter()
    # Fresh arguments every round: fresh keys, so every task really runs.
    futures = client.map(operator.add, range(tasks), [round_] * tasks)
    client.gather(futures)
    elapsed = time.perf_counter() - start
    client.cancel(futures)
    return elapsed


CHUNK_ITEMS = 1_000_000  # float64: 8 MB, a Dask array chunk of 1,000 x 1,000
TRANSFERS = 40


def chunk(i: int) -> Any:
    import numpy
    return numpy.full(CHUNK_ITEMS, float(i))


def first_item(array: Any) -> float:
    return float(array[0])


def time_transfer(client: Any, round_: int) -> float:
    """TRANSFERS chunks made on one worker and read by a task on the other: each crosses
    worker to worker once (get_data), the traffic of x + x.T and of shuffles."""
    workers = sorted(client.scheduler_info()["workers"])
    made = client.map(chunk, range(TRANSFERS), workers=workers[:1],
                      key=[f"chunk-{round_}-{i}" for i in range(TRANSFERS)])
    distributed.wait(made)
    start = time.perf_counter()
    read = client.map(first_item, made, workers=workers[1:],
                      key=[f"first-{round_}-{i}" for i in range(TRANSFERS)])
    client.gather(read)
    elapsed = time.perf_counter() - start
    client.cancel(made + read)
    return elapsed


PUSHED = 100  # arrays of 1 MiB


def time_push(client: Any, round_: int) -> float:
    import numpy
    arrays = [numpy.full(2**17, float(round_ * PUSHED + i)) for i in range(PUSHED)]
    start = time.perf_counter()
    futures = client.scatter(arrays, hash=False)
    elapsed = time.perf_counter() - start
    client.cancel(futures)
    return elapsed


def time_workload(workload: Callable[[Any, float], Any], client: Any, scale: float) -> float:
    start = time.perf_counter()
    workload(client, scale)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--tasks", type=int, default=2000)
    parser.add_argument("--scale", type=float, default=0.5)
    parser.add_argument("--only", default="", help="comma-separated: gather, map, transfer, "
                        "push, or workloads of traffic/dask_workloads.py")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    clusters = {scheme: LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                     protocol=scheme, host="127.0.0.1",
                                     dashboard_address=":0")
                for scheme in SCHEMES}
    clients = {scheme: Client(cluster) for scheme, cluster in clusters.items()}
    runs: dict[str, Callable[[str, int], float]] = {
        "gather": lambda scheme, round_: time_gather(clients[scheme], kept[scheme]),
        "map": lambda scheme, round_: time_map(clients[scheme], args.tasks, round_),
        "transfer": lambda scheme, round_: time_transfer(clients[scheme], round_),
        "push": lambda scheme, round_: time_push(clients[scheme], round_),
    }
    for name, workload in dask_workloads.WORKLOADS.items():
        runs[name] = (lambda workload: lambda scheme, round_: time_workload(
            workload, clients[scheme], args.scale))(workload)
    chosen = [name for name in runs if not args.only or name in args.only.split(",")]
    try:
        kept = {scheme: client.map(operator.neg, range(args.tasks))
                for scheme, client in clients.items()}
        for scheme, client in clients.items():
            client.gather(kept[scheme])  # in memory before timing; warms every connection
            time_map(client, args.tasks, -1)
        times: dict[str, dict[str, list[float]]] = {
            what: {scheme: [] for scheme in SCHEMES} for what in chosen}
        for round_ in range(args.rounds):
            order = SCHEMES if round_ % 2 == 0 else SCHEMES[::-1]
            for what in chosen:
                for scheme in order:
                    times[what][scheme].append(runs[what](scheme, round_))
    finally:
        for client in clients.values():
            client.close()
        for cluster in clusters.values():
            cluster.close()

    report: dict[str, Any] = {"fastser_compiled": fastser.COMPILED, "tasks": args.tasks,
                              "rounds": args.rounds, "times": times}
    for what, by_scheme in times.items():
        tcp, fast = by_scheme["tcp://"], by_scheme["fastser://"]
        report[what] = {
            "tcp_median_s": statistics.median(tcp),
            "fastser_median_s": statistics.median(fast),
            "ratio_tcp_over_fastser": statistics.median(t / f for t, f in zip(tcp, fast)),
            "noise_tcp": max(tcp) / min(tcp), "noise_fastser": max(fast) / min(fast),
        }
    if args.json:
        print(json.dumps(report, indent=1))
        return
    print(f"fastser {'compiled' if fastser.COMPILED else 'pure'}; {args.tasks} tasks for "
          f"gather and map; workloads at scale {args.scale}; {args.rounds} rounds, interleaved")
    print(f"{'':18s} {'tcp://':>10s} {'fastser://':>10s} {'tcp/fastser':>11s}   noise tcp/fastser")
    for what in chosen:
        row = report[what]
        print(f"{what:18s} {row['tcp_median_s']:9.3f}s {row['fastser_median_s']:9.3f}s "
              f"{row['ratio_tcp_over_fastser']:10.2f}x   {row['noise_tcp']:.2f}/"
              f"{row['noise_fastser']:.2f}")


if __name__ == "__main__":
    main()
