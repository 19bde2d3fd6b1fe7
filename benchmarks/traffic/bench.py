"""fastser on real Dask traffic: every message kind of the corpus (corpus/corpus.json, made
by capture.py and synthesize.py), dumps and loads of fastser compiled and pure as its
fastser:// comm calls them, beside distributed.protocol as its tcp:// comm calls them,
pickle protocol 5 and msgspec (where the message is plain msgpack); then the whole recorded
mix, each kind weighted by how many messages of it the cluster sent, and per workload of the
capture the codec time of the messages it sent (a ceiling on what a faster codec saves of
its wall time in benchmarks/cluster.py).

    python benchmarks/traffic/bench.py --compiled PY1 --pure PY2 [--rounds N] [--only K1,K2]
                                       [--corpus PATH] [--json]

PY1 and PY2 are interpreters with fastser installed compiled and pure, each with the bench
extra (`bash scripts/bench.sh traffic` builds both). Timing is benchmarks/harness.py's, as
suite.py drives it: one worker process per build, batches of ~0.1 s interleaved round by
round, medians of times and of per-round ratios. Rerun it against any build, or any corpus,
to compare.
"""

import argparse
import json
import os
import statistics
import sys
from typing import Any, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import harness  # noqa: E402
import shapes  # noqa: E402
import suite  # noqa: E402

WORKLOADS_MODULE = os.path.join(HERE, "corpus_workloads.py")
ANCHORS = ["distributed", "pickle5", "msgspec"]
SHOWN = [suite.COMPILED, suite.PURE, "pickle5", "msgspec"]


def fmt_x(value: Optional[float]) -> str:
    return "-" if value is None else f"{value:.2f}x"


def mix_rounds(results: dict[str, Any], label: str, weights: dict[str, float]
               ) -> Optional[list[float]]:
    """`label`'s dumps + loads per round over the kinds, each kind times its weight; None
    unless `label` was timed on every kind."""
    if not results or any(label not in r["samples_us"] for r in results.values()):
        return None
    return harness.weighted({name: harness.both_ways(r["samples_us"][label])
                             for name, r in results.items()}, weights)


def mix_totals(results: dict[str, Any], kinds: dict[str, Any]) -> dict[str, Any]:
    """Per contestant with every kind: the recorded mix's time per round (each kind's
    dumps + loads, times its message count), its median, and the median per-round ratio
    to distributed."""
    counts = {name: kinds[name]["messages"] for name in results}
    per_round = {label: rounds for label in [suite.COMPILED, suite.PURE, "distributed", "pickle5"]
                 if (rounds := mix_rounds(results, label, counts))}
    reference = per_round.get("distributed")
    return {label: {"seconds": statistics.median(rounds) / 1e6,
                    "vs_distributed": harness.paired(rounds, reference) if reference else None}
            for label, rounds in per_round.items()}


def workload_totals(results: dict[str, Any], kinds: dict[str, Any]) -> dict[str, Any]:
    """Per workload of the capture: its recorded messages (of the kinds measured) and their
    bytes, each kind's at its mean size, and the median over rounds of the time distributed
    and fastser compiled spend encoding and decoding them (each kind's dumps + loads, times
    the messages of it the workload sent): the most a comm's codec can save of one run."""
    out: dict[str, Any] = {}
    for name in results:
        entry = kinds[name]
        for workload, count in entry["workloads"].items():
            row = out.setdefault(workload, {"messages": 0, "bytes": 0.0})
            row["messages"] += count
            row["bytes"] += count * entry["bytes"] / entry["messages"]
    for workload, row in out.items():
        counts = {name: kinds[name]["workloads"].get(workload, 0) for name in results}
        row["seconds"] = {label: statistics.median(rounds) / 1e6
                          for label in ("distributed", suite.COMPILED)
                          if (rounds := mix_rounds(results, label, counts))}
    return out


def report(corpus: dict[str, Any], results: dict[str, Any], totals: dict[str, Any],
           workloads: dict[str, Any]) -> str:
    kinds = {entry["kind"]: entry for entry in corpus["kinds"]}
    lines = [f"corpus: {len(kinds)} kinds, {corpus['coverage']['messages']:.1%} of "
             f"{corpus['messages']:,} messages and {corpus['coverage']['bytes']:.1%} of "
             f"{corpus['bytes']:,} bytes recorded (capture scale {corpus['scale']})",
             "ratios: time / distributed's time (dumps, loads), medians of per-round ratios",
             ""]
    head = (f"{'kind':32s} {'msgs':>6s} {'bytes':>6s} {'to':>5s} {'dist d µs':>9s} "
            f"{'dist l µs':>9s}" + "".join(f" {label[:12]:>13s}" for label in SHOWN))
    lines += [head, "-" * len(head)]
    for name, result in results.items():
        entry = kinds[name]
        medians = result["medians_us"].get("distributed", {})
        row = (f"{name[:32]:32s} {entry['message_share']:6.1%} {entry['byte_share']:6.1%} "
               f"{'sched' if entry['receiver'] == 'scheduler' else 'other':>5s} "
               f"{suite.fmt_us(medians.get('dumps')):>9s} {suite.fmt_us(medians.get('loads')):>9s}")
        for label in SHOWN:
            r = result["ratios"].get(label, {})
            pair = f"{fmt_x(r.get('dumps/distributed'))}/{fmt_x(r.get('loads/distributed'))}"
            row += f" {pair:>13s}"
        lines.append(row)
    lines += ["", "the recorded mix (every kind x its message count, dumps + loads):"]
    for label, total in totals.items():
        lines.append(f"  {label:18s} {total['seconds'] * 1e3:9.1f} ms   "
                     f"{fmt_x(total['vs_distributed'])} distributed")
    lines += ["", "per workload, its recorded messages' dumps + loads (what fastser:// can save of "
              "a run is at most the difference; both comms copy the same bytes):",
              f"  {'workload':20s} {'msgs':>7s} {'MB':>7s} {'distributed ms':>15s} "
              f"{'fastser ms':>11s} {'saved ms':>9s}"]
    for workload, row in workloads.items():
        seconds = row["seconds"]
        dist, fast = seconds.get("distributed"), seconds.get(suite.COMPILED)
        cells = [f"{value * 1e3:.1f}" if value is not None else "-" for value in (dist, fast)]
        saved = f"{(dist - fast) * 1e3:.1f}" if dist is not None and fast is not None else "-"
        lines.append(f"  {workload:20s} {row['messages']:7d} {row['bytes'] / 1e6:7.1f} "
                     f"{cells[0]:>15s} {cells[1]:>11s} {saved:>9s}")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--compiled", required=True)
    parser.add_argument("--pure", required=True)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--only", default="")
    parser.add_argument("--corpus", default=shapes.CORPUS)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    os.environ["FASTSER_TRAFFIC_CORPUS"] = os.path.abspath(args.corpus)
    corpus = shapes.load_corpus(args.corpus)
    kinds = {entry["kind"]: entry for entry in corpus["kinds"]}
    only = suite.only_names(args.only)
    chosen = [k for k in kinds if not only or k in only]
    workers = {"compiled": harness.Worker(os.path.abspath(args.compiled), WORKLOADS_MODULE),
               "pure": harness.Worker(os.path.abspath(args.pure), WORKLOADS_MODULE)}
    if not workers["compiled"].hello["compiled"] or workers["pure"].hello["compiled"]:
        raise SystemExit("--compiled must run compiled fastser and --pure pure fastser")
    try:
        results = {}
        for name in chosen:
            print(f"... {name}", file=sys.stderr, flush=True)
            results[name] = suite.measure(workers, name, args.rounds, False)
    finally:
        for worker in workers.values():
            worker.close()
    totals = mix_totals(results, kinds)
    workloads = workload_totals(results, kinds)
    if args.json:
        print(json.dumps({"results": results, "totals": totals, "workloads": workloads},
                         indent=1, default=str))
    else:
        print(report(corpus, results, totals, workloads))
    return 0


if __name__ == "__main__":
    sys.exit(main())
