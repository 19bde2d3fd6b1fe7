"""Builds of fastser side by side, on the traffic corpus and on the suite's control-message,
batch-of-1000, arrays and raw-bytes: what a wire special form gains, measured as
(dumps + loads) time of each build against the first.

    python benchmarks/forms.py --python PY --build with=DIR1 --build without=DIR2 [--rounds N]
                               [--only KIND1,batch-of-1000]   (update-graph only when named)

PY has the bench extra installed; each DIR holds one fastser build installed there with
`pip install --no-deps --target DIR` (`bash scripts/bench.sh forms REV1 REV2 ...` builds one
per git revision and runs this), and a worker per build imports fastser from it. Timing is
harness.py's: batches of ~0.1 s, builds interleaved round by round in rotated order,
medians of per-round ratios. Each corpus kind is decoded as its receiver decodes it
(corpus_workloads.py); the last line weighs the kinds by their message counts, as the
cluster sent them.
"""

import argparse
import os
import statistics
import sys
from typing import Any, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "traffic")]

import harness  # noqa: E402
import shapes  # noqa: E402
from suite import only_names  # noqa: E402

TRAFFIC = os.path.join(HERE, "traffic", "corpus_workloads.py")
SYNTHETIC = os.path.join(HERE, "suite_workloads.py")
SYNTHETIC_KINDS = ["control-message", "batch-of-1000", "arrays", "raw-bytes"]


def start(python: str, path: str, workloads: str) -> harness.Worker:
    """A worker whose fastser is the one installed in `path`."""
    path = os.path.abspath(path)
    worker = harness.Worker(python, workloads, env={"PYTHONPATH": path})
    if not worker.hello["fastser"].startswith(path):
        raise SystemExit(f"{path}: the worker imported {worker.hello['fastser']}")
    return worker


def measure(workers: dict[str, harness.Worker], workload: str, rounds: int) -> dict[str, Any]:
    """Per build, the per-round dumps + loads time (µs) of fastser on `workload`; every
    build a unit of the rotation of its own."""
    samples, _, _ = harness.measure(workers, workload, rounds, neighbours=False)
    return {label: harness.both_ways(by_fn) for label, by_fn in samples.items()}


def report(results: dict[str, dict[str, list[float]]], shares: dict[str, float],
           labels: list[str]) -> str:
    base = labels[0]
    head = (f"{'workload':34s} {'msgs':>6s} {base[:12] + ' µs':>15s}"
            + "".join(f" {label[:14]:>15s}" for label in labels[1:]))
    lines = [f"(dumps + loads) time per message; ratios: build / {base}, medians of "
             "per-round ratios", head, "-" * len(head)]
    for name, totals in results.items():
        share = f"{shares[name]:6.1%}" if name in shares else f"{'-':>6s}"
        row = f"{name[:34]:34s} {share} {statistics.median(totals[base]):15.2f}"
        for label in labels[1:]:
            row += f" {fmt(harness.paired(totals[label], totals[base])):>15s}"
        lines.append(row)
    mix = weighted(results, shares, labels)
    if mix:
        row = f"{'recorded mix (µs per message)':34s} {'':6s} {mix[base][0]:15.2f}"
        for label in labels[1:]:
            row += f" {fmt(mix[label][1]):>15s}"
        lines.append(row)
    return "\n".join(lines)


def weighted(results: dict[str, dict[str, list[float]]], shares: dict[str, float],
             labels: list[str]) -> dict[str, tuple[float, Optional[float]]]:
    """Per build: the corpus mix's mean time per message (each kind's time x its share of
    the messages) and its median per-round ratio to the first build."""
    kinds = [name for name in results if name in shares]
    if not kinds:
        return {}
    per_round = {label: harness.weighted({k: results[k][label] for k in kinds}, shares)
                 for label in labels}
    return {label: (statistics.median(per_round[label]),
                    harness.paired(per_round[label], per_round[labels[0]]))
            for label in labels}


def fmt(value: Optional[float]) -> str:
    return "-" if value is None else f"{value:.3f}x"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", required=True)
    parser.add_argument("--build", action="append", required=True, metavar="LABEL=DIR")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--only", default="")
    args = parser.parse_args()
    builds = dict(spec.split("=", 1) for spec in args.build)
    only = set(only_names(args.only))
    shares = {entry["kind"]: entry["message_share"] for entry in shapes.load_corpus()["kinds"]}
    results: dict[str, dict[str, list[float]]] = {}
    synthetic = SYNTHETIC_KINDS + ["update-graph"] * ("update-graph" in only)
    for module, names in ((TRAFFIC, list(shares)), (SYNTHETIC, synthetic)):
        chosen = [name for name in names if not only or name in only]
        if not chosen:
            continue
        workers = {label: start(os.path.abspath(args.python), path, module)
                   for label, path in builds.items()}
        try:
            for name in chosen:
                print(f"... {name}", file=sys.stderr, flush=True)
                results[name] = measure(workers, name, args.rounds)
        finally:
            for worker in workers.values():
                worker.close()
    print(report(results, shares, list(builds)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
