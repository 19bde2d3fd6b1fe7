"""A Dask cluster over tcp:// against the same over fastser://, interleaved in one process.

    python benchmarks/cluster.py [--rounds 7] [--tasks 2000] [--json]

Two LocalClusters (2 worker processes of 1 thread each, scheduler and client in this
process) run side by side; each round times, on one then the other (the order alternates):
  gather  client.gather of N small results already in memory (via the scheduler: the
          default for a client outside the cluster);
  map     client.map of N trivial tasks with fresh keys, and the gather of their results:
          submission, scheduling, execution and the return trip, per task.
The report gives the median time of each, and the median over rounds of the per-round ratio
tcp:// / fastser:// (above 1: fastser:// faster). Targets (issue 7): gather >= 2x, map no
worse than tcp:// within noise. Needs the dask extra; uses the fastser that `import fastser`
finds, and says which build it is.
"""

import argparse
import json
import operator
import statistics
import time
from typing import Any

import distributed

import fastser

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--tasks", type=int, default=2000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    clusters = {scheme: LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                     protocol=scheme, host="127.0.0.1",
                                     dashboard_address=":0")
                for scheme in SCHEMES}
    clients = {scheme: Client(cluster) for scheme, cluster in clusters.items()}
    try:
        kept = {scheme: client.map(operator.neg, range(args.tasks))
                for scheme, client in clients.items()}
        for scheme, client in clients.items():
            client.gather(kept[scheme])  # in memory before timing; warms every connection
            time_map(client, args.tasks, -1)
        times: dict[str, dict[str, list[float]]] = {
            what: {scheme: [] for scheme in SCHEMES} for what in ("gather", "map")}
        for round_ in range(args.rounds):
            order = SCHEMES if round_ % 2 == 0 else SCHEMES[::-1]
            for scheme in order:
                times["gather"][scheme].append(time_gather(clients[scheme], kept[scheme]))
            for scheme in order:
                times["map"][scheme].append(time_map(clients[scheme], args.tasks, round_))
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
    print(f"fastser {'compiled' if fastser.COMPILED else 'pure'}; {args.tasks} tasks; "
          f"{args.rounds} rounds, interleaved")
    for what in ("gather", "map"):
        row = report[what]
        per_task = f"  ({row['fastser_median_s'] / args.tasks * 1e6:.0f} vs " \
                   f"{row['tcp_median_s'] / args.tasks * 1e6:.0f} us per task)"
        print(f"{what:7} tcp:// {row['tcp_median_s'] * 1e3:8.1f} ms   fastser:// "
              f"{row['fastser_median_s'] * 1e3:8.1f} ms   tcp/fastser "
              f"{row['ratio_tcp_over_fastser']:.2f}x{per_task}   noise "
              f"{row['noise_tcp']:.2f}/{row['noise_fastser']:.2f}")
    print("targets: gather >= 2x:", report["gather"]["ratio_tcp_over_fastser"] >= 2,
          "| map no worse:", report["map"]["ratio_tcp_over_fastser"] >= 0.95)


if __name__ == "__main__":
    main()
