"""A Dask cluster over tcp:// against the same over fastser://, interleaved in one process.

    python benchmarks/cluster.py [--rounds 5] [--clusters 1] [--tasks 2000] [--scale 0.5]
                                 [--only a,b] [--schemes tcp://,fastser://] [--json]
                                 [--no-settle]

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
Each timed run starts from quiet processes (settle). The report gives the median time of
each, and the median over rounds of the per-round ratio tcp:// / fastser:// (above 1:
fastser:// faster). With --clusters K, K fresh pairs of clusters run one after the other, and
the report adds each pair's median ratio: a pair of clusters has a bias of its own, which
more rounds on one pair do not average out; which cluster starts first alternates from
pair to pair. `--schemes tcp://,tcp://` measures that bias: pairs of tcp:// clusters alike
came out 0.98x-1.18x apart on push and 1.02x-1.08x on scatter, pairs of fastser:// ones
0.97x-1.03x and 0.98x-1.01x (3 pairs each, 21 rounds).
Needs the dask extra and dask[array,dataframe]; uses the fastser that `import fastser`
finds, and says which build.
"""

import argparse
import gc
import json
import operator
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import distributed
import psutil  # a dependency of distributed

import fastser

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "traffic")]
import dask_workloads  # noqa: E402
from harness import paired, rotated  # noqa: E402

SCHEMES = ("tcp://", "fastser://")  # --schemes: the default pair
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


# Before each timed run, every process of both clusters (and this one, which runs their
# schedulers) is collected and then left until it is quiet: less than QUIET_SHARE of one core
# per process over QUIET_WINDOW seconds, summed, or QUIET_TIMEOUT at most (idle, the two
# clusters' heartbeats take ~12 % of a core on average, in bursts). Why: on 2 cores, what one
# cluster still does after its run (releasing a shuffle's keys, a collection of its graph)
# slowed whichever run came next, on either scheme (scatter after the shuffles: 0.4 s or
# 0.6 s, bimodal).
QUIET_SHARE = 0.01
QUIET_WINDOW = 0.2
QUIET_TIMEOUT = 10.0


def cpu_seconds(processes: list[psutil.Process]) -> float:
    return sum(sum(process.cpu_times()[:2]) for process in processes)


def settle(clients: list[Any], processes: list[psutil.Process]) -> bool:
    """Collect garbage everywhere, then wait until `processes` are quiet; False if they
    were still busy at QUIET_TIMEOUT."""
    gc.collect()
    for client in clients:
        client.run(gc.collect)
    deadline = time.perf_counter() + QUIET_TIMEOUT
    while True:
        before = cpu_seconds(processes)
        time.sleep(QUIET_WINDOW)
        if cpu_seconds(processes) - before < QUIET_SHARE * len(processes) * QUIET_WINDOW:
            return True
        if time.perf_counter() > deadline:
            return False


def time_workload(workload: Callable[[Any, float], Any], client: Any, scale: float) -> float:
    start = time.perf_counter()
    workload(client, scale)
    return time.perf_counter() - start


def time_clusters(args: argparse.Namespace, names: list[str],
                  swap: bool) -> tuple[dict[str, dict[str, list[float]]], int]:
    """One pair of fresh clusters, of the schemes of --schemes, and its --rounds: the times
    of each chosen run on each cluster (by its name in `names`), and how many runs started
    before their processes were quiet. `swap`: the second cluster is started first."""
    started = list(zip(names, args.schemes))
    clusters = {name: LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                   protocol=scheme, host="127.0.0.1", dashboard_address=":0")
                for name, scheme in (started[::-1] if swap else started)}
    clients = {scheme: Client(cluster) for scheme, cluster in clusters.items()}
    runs: dict[str, Callable[[str, int], float]] = {
        "gather": lambda scheme, round_: time_gather(clients[scheme], kept[scheme]),
        "map": lambda scheme, round_: time_map(clients[scheme], args.tasks, round_),
        "transfer": lambda scheme, round_: time_transfer(clients[scheme], round_),
        "push": lambda scheme, round_: time_push(clients[scheme], round_),
    }
    for name, workload in dask_workloads.WORKLOADS.items():
        runs[name] = (lambda bound: lambda scheme, round_: time_workload(
            bound, clients[scheme], args.scale))(workload)
    chosen = [name for name in runs if not args.only or name in args.only.split(",")]
    try:
        kept = {scheme: client.map(operator.neg, range(args.tasks))
                for scheme, client in clients.items()}
        for scheme, client in clients.items():
            client.gather(kept[scheme])  # in memory before timing; warms every connection
            time_map(client, args.tasks, -1)
        processes = [psutil.Process()] + [psutil.Process(pid) for client in clients.values()
                                          for pid in client.run(os.getpid).values()]
        busy = 0
        times: dict[str, dict[str, list[float]]] = {
            what: {name: [] for name in names} for what in chosen}
        for round_ in range(args.rounds):
            for what in chosen:
                for scheme in rotated([[name] for name in names], round_):
                    if not args.no_settle and not settle(list(clients.values()), processes):
                        busy += 1
                    times[what][scheme].append(runs[what](scheme, round_))
    finally:
        for client in clients.values():
            client.close()
        for cluster in clusters.values():
            cluster.close()
    return times, busy


def cluster_names(schemes: list[str]) -> list[str]:
    """Each cluster's name: its scheme, the second marked when both have the same (a
    calibration: what two clusters alike differ by)."""
    first, second = schemes
    return [first, second if second != first else f"{second} (2nd)"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--clusters", type=int, default=1,
                        help="pairs of fresh clusters, one after the other, each for --rounds")
    parser.add_argument("--tasks", type=int, default=2000)
    parser.add_argument("--scale", type=float, default=0.5)
    parser.add_argument("--only", default="", help="comma-separated: gather, map, transfer, "
                        "push, or workloads of traffic/dask_workloads.py")
    parser.add_argument("--schemes", default=",".join(SCHEMES),
                        type=lambda text: text.split(","),
                        help="the two clusters' schemes (ratios are first / second); the "
                        "same one twice shows what two clusters alike differ by")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--no-settle", action="store_true",
                        help="time each run right after the one before (see settle)")
    args = parser.parse_args()
    if len(args.schemes) != 2:
        parser.error("--schemes takes two schemes")
    names = cluster_names(args.schemes)
    first, second = names

    pairs = []
    busy = 0
    for pair in range(args.clusters):
        # Which cluster starts first alternates too: in 3 of 5 pairs of tcp:// clusters
        # alike, the first started was the slower by 1.11x-1.18x on push.
        times, timed_out = time_clusters(args, names, pair % 2 == 1)
        pairs.append(times)
        busy += timed_out
    chosen = list(pairs[0])
    report: dict[str, Any] = {"fastser_compiled": fastser.COMPILED, "tasks": args.tasks,
                              "rounds": args.rounds, "clusters": args.clusters,
                              "first": first, "second": second,
                              "settled": not args.no_settle, "busy": busy,
                              "times": pairs[0] if args.clusters == 1 else pairs}
    for what in chosen:
        one = [t for times in pairs for t in times[what][first]]
        other = [t for times in pairs for t in times[what][second]]
        report[what] = {
            "first_median_s": statistics.median(one),
            "second_median_s": statistics.median(other),
            # Over every round of every pair of clusters.
            "ratio_first_over_second": paired(one, other),
            "ratio_per_clusters": [paired(times[what][first], times[what][second])
                                   for times in pairs],
            "noise_first": max(one) / min(one), "noise_second": max(other) / min(other),
        }
    if args.json:
        print(json.dumps(report, indent=1))
        return
    print(f"fastser {'compiled' if fastser.COMPILED else 'pure'}; {args.tasks} tasks for "
          f"gather and map; workloads at scale {args.scale}; {args.rounds} rounds, interleaved"
          + (f", on each of {args.clusters} pairs of fresh clusters" if args.clusters > 1
             else "")
          + ("" if args.no_settle else f"; each from quiet processes ({busy} timed out)"))
    ratio = ("1st/2nd" if args.schemes[0] == args.schemes[1]
             else f"{first.removesuffix('://')}/{second.removesuffix('://')}")
    print(f"{'':18s} {first:>10s} {second:>10s} {ratio:>11s}   noise"
          + ("   per pair of clusters" if args.clusters > 1 else ""))
    for what in chosen:
        row = report[what]
        print(f"{what:18s} {row['first_median_s']:9.3f}s {row['second_median_s']:9.3f}s "
              f"{row['ratio_first_over_second']:10.2f}x   {row['noise_first']:.2f}/"
              f"{row['noise_second']:.2f}"
              + ("   " + " ".join(f"{pair:.2f}" for pair in row["ratio_per_clusters"])
                 if args.clusters > 1 else ""))


if __name__ == "__main__":
    main()
