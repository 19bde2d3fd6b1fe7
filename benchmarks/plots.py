"""The benchmark plots of the documentation site, as SVG (matplotlib: the `plots` extra).

    python benchmarks/plots.py --published docs/data/published.json --out docs/img
    python benchmarks/plots.py --suite SUITE.json --traffic TRAFFIC.json --out DIR

--published draws the figures that docs/dask.md and README.md publish (typed into a JSON file
with the command that measured them): docs/img/cluster.svg and docs/img/codec.svg.
--suite takes the --json output of benchmarks/suite.py and draws suite.svg (fastser compiled
and pure, distributed, pickle 5 and msgspec against the bare-msgpack floor, per workload);
--traffic takes the --json output of benchmarks/traffic/bench.py and draws traffic.svg (each
contestant's time over distributed's, per message kind of the corpus, and on the whole mix).
Nothing is measured here: run the benchmarks first.
"""

import argparse
import json
import os
import sys
from typing import Any, Optional

import matplotlib

matplotlib.use("svg")
import matplotlib.pyplot as plt  # noqa: E402  (after choosing the backend)

# Deterministic SVG: no date in the metadata, fixed ids, text as text (smaller, searchable).
plt.rcParams.update({"svg.hashsalt": "fastser", "svg.fonttype": "none", "font.size": 9})
METADATA = {"Date": None, "Creator": "benchmarks/plots.py"}
FASTSER, OTHER, PURE = "#2a6f97", "#c9705b", "#8fb8d0"


def save(fig: Any, out: str, name: str) -> str:
    path = os.path.join(out, name)
    fig.tight_layout()
    fig.savefig(path, format="svg", metadata=METADATA)
    plt.close(fig)
    return path


def cluster(data: dict[str, Any], out: str) -> str:
    """tcp:// over fastser:// per workload: a bar for all rounds, a dot per pair of clusters."""
    rows = data["rows"][::-1]
    fig, ax = plt.subplots(figsize=(7, 0.33 * len(rows) + 1.2))
    ys = range(len(rows))
    ax.barh(ys, [r[1] for r in rows], color=FASTSER, height=0.6, label="all rounds")
    for y, row in zip(ys, rows):
        ax.plot(row[2], [y] * len(row[2]), "o", color=OTHER, markersize=3.5,
                label="each pair of clusters" if y == 0 else None)
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_yticks(list(ys), [r[0] for r in rows])
    ax.set_xlabel("tcp:// time / fastser:// time (higher: fastser:// faster)")
    ax.set_title("Dask LocalCluster, tcp:// against fastser://")
    ax.legend(loc="lower right", frameon=False)
    return save(fig, out, "cluster.svg")


def codec(data: dict[str, Any], out: str) -> str:
    """fastser and distributed.protocol against the same floor, per workload (log scale)."""
    rows = data["rows"][::-1]
    fig, ax = plt.subplots(figsize=(7, 0.5 * len(rows) + 1.6))
    ys = range(len(rows))
    ax.barh([y + 0.18 for y in ys], [r["fastser"] for r in rows], height=0.36,
            color=FASTSER, label="fastser (compiled)")
    ax.barh([y - 0.18 for y in ys], [r["distributed"] for r in rows], height=0.36,
            color=OTHER, label="distributed.protocol")
    for y, row in zip(ys, rows):
        for dy, value in ((0.18, row["fastser"]), (-0.18, row["distributed"])):
            ax.text(value * 1.05, y + dy, f"{value:g}×", va="center", fontsize=8)
    ax.set_xscale("log")
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_yticks(list(ys), [f"{r['workload']}\n(against {r['reference']})" for r in rows])
    ax.set_xlim(0.8, 3 * max(max(r["fastser"], r["distributed"]) for r in rows))
    ax.set_xlabel("time / the reference's time (lower is better; log scale)")
    ax.set_title("The codec alone: fastser and distributed.protocol")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=2, frameon=False)
    return save(fig, out, "codec.svg")


def suite(data: dict[str, Any], out: str) -> str:
    """benchmarks/suite.py --json: each contestant's dumps and loads over the floor."""
    labels = ["fastser-compiled", "fastser-pure", "distributed", "pickle5", "msgspec"]
    colors = [FASTSER, PURE, OTHER, "#999999", "#cccccc"]
    bars: list[tuple[str, dict[str, Optional[float]]]] = []
    for workload, result in data["workloads"].items():
        for fn in ("dumps", "loads"):
            ratios = {label: result["ratios"].get(label, {}).get(f"{fn}/floor")
                      for label in labels}
            if any(value for value in ratios.values()):
                bars.append((f"{workload} {fn}", ratios))
    fig, ax = plt.subplots(figsize=(7, 0.55 * len(bars) + 1.2))
    height = 0.8 / len(labels)
    for index, (label, color) in enumerate(zip(labels, colors)):
        ys = [y + 0.4 - height * (index + 0.5) for y in range(len(bars))]
        values = [ratios[label] or 0.0 for _, ratios in bars]
        ax.barh(ys, values, height=height, color=color, label=label)
    ax.set_xscale("log")
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_yticks(range(len(bars)), [name for name, _ in bars])
    ax.invert_yaxis()
    ax.set_xlabel("time / bare msgpack of the message without its payloads (log scale)")
    ax.set_title(f"benchmarks/suite.py ({data['meta'].get('started', '')})")
    ax.legend(loc="lower right", frameon=False, fontsize=7)
    return save(fig, out, "suite.svg")


def traffic(data: dict[str, Any], out: str) -> str:
    """benchmarks/traffic/bench.py --json: dumps + loads over distributed's, per kind."""
    kinds = list(data["results"])
    fig, ax = plt.subplots(figsize=(7, 0.3 * len(kinds) + 1.6))
    for offset, (fn, color) in enumerate((("dumps", FASTSER), ("loads", PURE))):
        values = [data["results"][kind]["ratios"].get("fastser-compiled", {})
                  .get(f"{fn}/distributed") or 0.0 for kind in kinds]
        ax.barh([y + 0.2 - 0.4 * offset for y in range(len(kinds))], values, height=0.4,
                color=color, label=f"fastser compiled, {fn}")
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_yticks(range(len(kinds)), kinds)
    ax.invert_yaxis()
    mix = data["totals"].get("fastser-compiled", {}).get("vs_distributed")
    ax.set_xlabel("time / distributed.protocol's time (lower is better)")
    ax.set_title("Recorded Dask traffic, per message kind"
                 + (f" (the whole mix: {mix:.2f}×)" if mix else ""))
    ax.legend(loc="lower right", frameon=False)
    return save(fig, out, "traffic.svg")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--published", help="docs/data/published.json")
    parser.add_argument("--suite", help="the --json output of benchmarks/suite.py")
    parser.add_argument("--traffic", help="the --json output of benchmarks/traffic/bench.py")
    parser.add_argument("--out", default=os.path.join("docs", "img"))
    args = parser.parse_args()
    if not (args.published or args.suite or args.traffic):
        parser.error("give --published, --suite or --traffic")
    os.makedirs(args.out, exist_ok=True)
    written = []
    if args.published:
        with open(args.published, encoding="utf-8") as f:
            published = json.load(f)
        written += [cluster(published["cluster"], args.out), codec(published["codec"], args.out)]
    if args.suite:
        with open(args.suite, encoding="utf-8") as f:
            written.append(suite(json.load(f), args.out))
    if args.traffic:
        with open(args.traffic, encoding="utf-8") as f:
            written.append(traffic(json.load(f), args.out))
    print("\n".join(written))
    return 0


if __name__ == "__main__":
    sys.exit(main())
