"""Makes the traffic corpus from capture.py's records: the message kinds that together make
up at least 95 % of the messages and at least 95 % of the bytes (and any other of at least
0.5 % of either), each with its shares and one representative shape (the message of
median size of its kind).

    python benchmarks/traffic/synthesize.py [RECORDS] [--out corpus/corpus.json]

The corpus holds shapes only (shapes.py): sizes and structure, no data and no pickles, so it
is small, kept in the repository, and builds the same messages on any Python.
"""

import argparse
import collections
import glob
import json
import os
import statistics
import tempfile
from typing import Any

import shapes

COVERAGE = 0.95
NOTABLE = 0.005


def load(records: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    lines = []
    for path in sorted(glob.glob(os.path.join(records, "*.jsonl"))):
        with open(path) as f:
            lines.extend(json.loads(line) for line in f)
    with open(os.path.join(records, "workloads.json")) as f:
        meta = json.load(f)
    return lines, meta


def receiver(line: dict[str, Any], scheduler: str) -> str:
    """Who decodes the message: the scheduler keeps payloads (deserialize=False)."""
    if line.get("peer") == scheduler:
        return "scheduler"
    return "worker-or-client"


def workload_of(line: dict[str, Any], windows: list[dict[str, Any]]) -> str:
    for window in windows:
        if window["start"] <= line["time"] <= window["stop"] + 1.0:
            return window["workload"]
    return "cluster"  # start-up, shut-down, heartbeats between workloads


def chosen_kinds(counts: collections.Counter[str], sizes: collections.Counter[str]) -> list[str]:
    """The fewest kinds, most frequent and largest first, covering COVERAGE of both; then
    any other kind of at least NOTABLE of either (update-graph is one, at ~1 % of bytes)."""
    chosen: list[str] = []
    for weights in (counts, sizes):
        total = sum(weights.values())
        covered = sum(weights[k] for k in chosen)
        for name, weight in weights.most_common():
            if covered >= COVERAGE * total:
                break
            if name not in chosen:
                chosen.append(name)
                covered += weight
    for weights in (counts, sizes):
        total = sum(weights.values())
        chosen += [name for name, weight in weights.most_common()
                   if weight >= NOTABLE * total and name not in chosen]
    return chosen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("records", nargs="?",
                        default=os.path.join(tempfile.gettempdir(), "fastser-traffic"))
    parser.add_argument("--out", default=shapes.CORPUS)
    args = parser.parse_args()
    lines, meta = load(args.records)
    lines = [line for line in lines if line["kind"] != "unrecorded" and "shape" in line]
    scheduler = meta["roles"]["scheduler"]
    by_kind: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
    for line in lines:
        by_kind[line["kind"]].append(line)
    counts = collections.Counter({k: len(v) for k, v in by_kind.items()})
    sizes = collections.Counter({k: sum(line["bytes"] for line in v) for k, v in by_kind.items()})
    total_messages, total_bytes = sum(counts.values()), sum(sizes.values())
    kinds = []
    for name in chosen_kinds(counts, sizes):
        group = sorted(by_kind[name], key=lambda line: line["bytes"])
        median = group[len(group) // 2]
        receivers = collections.Counter(receiver(line, scheduler) for line in group)
        workloads = collections.Counter(workload_of(line, meta["windows"]) for line in group)
        kinds.append({
            "kind": name, "messages": counts[name], "bytes": sizes[name],
            "message_share": counts[name] / total_messages,
            "byte_share": sizes[name] / total_bytes,
            "median_bytes": statistics.median(line["bytes"] for line in group),
            "receiver": receivers.most_common(1)[0][0],
            "receivers": dict(receivers), "workloads": dict(workloads.most_common()),
            "representative_bytes": median["bytes"], "shape": median["shape"],
        })
    corpus = {
        "about": "Message kinds of a Dask LocalCluster (scheduler + 2 worker processes) "
                 "over fastser://, recorded by benchmarks/traffic/capture.py and made into "
                 "this corpus by synthesize.py; shapes only (benchmarks/traffic/shapes.py).",
        "scale": meta["scale"], "workloads": [w["workload"] for w in meta["windows"]],
        "messages": total_messages, "bytes": total_bytes,
        "coverage": {"messages": sum(k["messages"] for k in kinds) / total_messages,
                     "bytes": sum(k["bytes"] for k in kinds) / total_bytes},
        "kinds": kinds,
    }
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(corpus, f, indent=None, separators=(",", ":"))
        f.write("\n")
    print(f"{len(kinds)} kinds of {len(counts)}, covering {corpus['coverage']['messages']:.1%} "
          f"of {total_messages:,} messages and {corpus['coverage']['bytes']:.1%} of "
          f"{total_bytes:,} bytes -> {args.out} ({os.path.getsize(args.out):,} bytes)")
    for k in kinds:
        print(f"  {k['kind']:40s} {k['message_share']:7.2%} of messages {k['byte_share']:7.2%} "
              f"of bytes  to {k['receiver']}")


if __name__ == "__main__":
    main()
