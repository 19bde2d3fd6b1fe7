"""fastser's benchmark suite: fastser compiled and pure against distributed, pickle, msgspec
and a bare-msgpack floor, on six messages a task scheduler sends, with the speed targets.

    python benchmarks/suite.py --compiled PY1 --pure PY2 [--json] [--rounds N]
                               [--only control-message,update-graph] [--fastser-only] [--gc]

PY1 and PY2 are the interpreters of two environments with fastser installed compiled and
pure (`bash scripts/bench.sh` builds them). Timing is harness.py's: a worker per interpreter,
the compiled one timing the anchors and fastser compiled, the pure one fastser pure; this
process asks for one batch at a time. --fastser-only leaves the anchors out: the two builds
alone. See benchmarks/README.md for what each workload and contestant is.
"""

import argparse
import json
import os
import platform
import re
import statistics
import sys
import time
from typing import Any, Optional

import harness
from harness import Worker, paired

HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOADS_MODULE = os.path.join(HERE, "suite_workloads.py")
COMPILED, PURE = "fastser-compiled", "fastser-pure"
# Row order of the report, and the order of a round before rotation.
ROWS = ["floor", "msgspec", "pickle5", "pickle5/task", "distributed", COMPILED, PURE]
REFERENCES = ["floor", "distributed", "pickle5", PURE]  # ratios are given against these
# Short names of the workloads (README.md and docs/benchmarks.md use them); --only takes both.
OLD_NAMES = {"W1": "control-message", "W2": "batch-of-1000", "W3": "arrays",
             "W4": "update-graph", "W5": "raw-bytes", "W6": "extract-serialize"}


def only_names(only: str) -> list[str]:
    """The names --only gives (here, and in forms.py and traffic/bench.py): split at commas
    outside braces (a traffic kind is named like reply{data,status}), W1-W6 read as the
    workloads they name."""
    names = [name.strip() for name in re.split(r",(?![^{]*\})", only) if name.strip()]
    return [OLD_NAMES.get(name.upper(), name) for name in names]


def measure(workers: dict[str, Worker], workload: str, rounds: int, collect: bool,
            anchors: bool = True) -> dict[str, Any]:
    """Time every contestant of `workload` for `rounds` interleaved rounds (harness.measure):
    the anchors in the compiled worker, fastser compiled and pure kept neighbours."""
    builds = {COMPILED: workers["compiled"], PURE: workers["pure"]}
    samples, numbers, info = harness.measure(builds, workload, rounds,
                                             COMPILED if anchors else "", collect)
    medians = {label: {fn: statistics.median(values) for fn, values in per_fn.items()}
               for label, per_fn in samples.items()}
    return {"description": workers["compiled"].hello["workloads"][workload],
            "medians_us": medians, "samples_us": samples, "calls_per_batch": numbers,
            "ratios": ratios(samples),
            "info": {"compiled worker": info[COMPILED], "pure worker": info[PURE]}}


def ratios(samples: dict[str, dict[str, list[float]]]) -> dict[str, dict[str, Optional[float]]]:
    """Per contestant: "fn/ref" = the median of its per-round ratios to each reference."""
    out: dict[str, dict[str, Optional[float]]] = {}
    for label, per_fn in samples.items():
        out[label] = {}
        for fn, values in per_fn.items():
            for ref in REFERENCES:
                if ref != label and fn in samples.get(ref, {}):
                    name = "pure" if ref == PURE else ref
                    out[label][f"{fn}/{name}"] = paired(values, samples[ref][fn])
    return out


# --- targets ------------------------------------------------------------------------

def targets(results: dict[str, Any]) -> list[dict[str, Any]]:
    """The speed targets, each with its measured value and PASS/MISS (SKIP when its
    workload or reference was not run)."""
    out: list[dict[str, Any]] = []

    def check(workload: str, what: str, value: Optional[float], limit: float,
              stretch: Optional[float] = None, unit: str = "x") -> None:
        status = "SKIP" if value is None else "PASS" if value <= limit else "MISS"
        item: dict[str, Any] = {"workload": workload, "what": what, "measured": value,
                                "limit": limit, "unit": unit, "status": status}
        if stretch is not None:
            item["stretch"] = stretch
            item["stretch_status"] = ("SKIP" if value is None else
                                      "PASS" if value <= stretch else "MISS")
        out.append(item)

    def vs(workload: str, fn: str, ref: str) -> Optional[float]:
        entry = results.get(workload)
        return None if entry is None else entry["ratios"].get(COMPILED, {}).get(f"{fn}/{ref}")

    for workload in ("control-message", "batch-of-1000"):
        check(workload, "dumps / floor dumps", vs(workload, "dumps", "floor"), 1.0)
        check(workload, "loads / floor loads", vs(workload, "loads", "floor"), 1.3, 1.15)
    check("arrays", "dumps / floor dumps", vs("arrays", "dumps", "floor"), 8.0)
    check("arrays", "loads / floor loads", vs("arrays", "loads", "floor"), 6.0)
    frames = results.get("arrays", {}).get("info", {}).get("compiled worker", {}).get("frames", {})
    copies = frames.get("fastser", {})
    for fn in ("dumps", "loads"):
        copied = copies.get(f"{fn} copied bytes")
        check("arrays", f"{fn}: payload bytes copied",
              copied if isinstance(copied, int) else None, 0, unit="bytes")
    for fn in ("dumps", "loads"):
        check("update-graph", f"{fn} / pickle5 {fn} (whole message)",
              vs("update-graph", fn, "pickle5"), 1.5, 1.0)
    check("update-graph", "fixed dumps cost per payload beyond pickling it",
          fixed_costs(results).get("dumps"), 2.0, unit="µs")
    check("raw-bytes", "dumps / floor dumps", vs("raw-bytes", "dumps", "floor"), 5.0)
    check("raw-bytes", "loads / distributed loads", vs("raw-bytes", "loads", "distributed"), 1.0)
    check("extract-serialize", "compiled / pure", vs("extract-serialize", "extract", "pure"),
          0.33)
    return out


def fixed_costs(results: dict[str, Any]) -> dict[str, Optional[float]]:
    """µs per task of fastser compiled's update-graph minus one pickle.dumps/loads per task:
    the median over rounds of the difference of batch k and batch k."""
    entry = results.get("update-graph")
    if entry is None:
        return {}
    samples, tasks = entry["samples_us"], entry["info"]["compiled worker"]["tasks"]
    out: dict[str, Optional[float]] = {}
    for fn in ("dumps", "loads"):
        fast = samples.get(COMPILED, {}).get(fn, [])
        per_task = samples.get("pickle5/task", {}).get(fn, [])
        out[fn] = (statistics.median((f - p) / tasks for f, p in zip(fast, per_task))
                   if fast and per_task else None)
    return out


# --- report -------------------------------------------------------------------------

def fmt_us(value: Optional[float]) -> str:
    if value is None:
        return "-"
    return f"{value:,.0f}" if value >= 1000 else f"{value:.1f}" if value >= 10 else f"{value:.2f}"


def fmt_x(value: Optional[float]) -> str:
    if value is None:
        return "-"
    return f"{value:,.0f}x" if value >= 100 else f"{value:.1f}x" if value >= 10 else f"{value:.2f}x"


def report(meta: dict[str, Any], results: dict[str, Any], checks: list[dict[str, Any]]) -> str:
    lines = [f"fastser benchmark suite: medians of {meta['rounds']} interleaved batches "
             f"(~50-200 ms each) per contestant; µs per call; ratios are medians of per-round "
             f"ratios; garbage collector {'on' if meta['gc_during_batches'] else 'off'} "
             f"during batches",
             f"compiled: {meta['workers']['compiled']['python_path']}   "
             f"pure: {meta['workers']['pure']['python_path']}   python "
             f"{meta['workers']['compiled']['python']}   {meta['machine']}",
             "versions: " + ", ".join(f"{k} {v}" for k, v in
                                      meta["workers"]["compiled"]["versions"].items()), ""]
    head = (f"{'contestant':<17} {'dumps µs':>10} {'loads µs':>10} {'dumps/floor':>12} "
            f"{'loads/floor':>12} {'dumps/dist':>11} {'loads/dist':>11}")
    for workload, entry in results.items():
        lines += [f"{workload}  {entry['description']}", head]
        medians, rel = entry["medians_us"], entry["ratios"]
        for label in ROWS:
            if label not in medians:
                continue
            per_fn, r = medians[label], rel[label]
            first = "extract" if "extract" in per_fn else "dumps"
            lines.append(
                f"{label:<17} {fmt_us(per_fn.get(first)):>10} {fmt_us(per_fn.get('loads')):>10} "
                f"{fmt_x(r.get(first + '/floor')):>12} {fmt_x(r.get('loads/floor')):>12} "
                f"{fmt_x(r.get(first + '/distributed')):>11} "
                f"{fmt_x(r.get('loads/distributed')):>11}")
        c = rel.get(COMPILED, {})
        first = "extract" if workload == "extract-serialize" else "dumps"
        lines.append(f"{'compiled/pure':<17} {fmt_x(c.get(first + '/pure')):>10} "
                     f"{fmt_x(c.get('loads/pure')):>10}")
        if first == "extract":
            lines.append("  (the dumps column is extract_serialize)")
        lines += notes(workload, entry)
        lines.append("")
    fixed = fixed_costs(results)
    if fixed.get("dumps") is not None:
        lines.append(f"update-graph's fixed cost per payload beyond pickling it (fastser compiled "
                     f"minus one pickle per task, per task): dumps {fixed['dumps']:.2f} µs, "
                     f"loads {fixed['loads']:.2f} µs")
        lines.append("")
    lines.append("TARGETS")
    for item in checks:
        value = item["measured"]
        shown = ("-" if value is None else f"{value:,.0f} bytes" if item["unit"] == "bytes"
                 else f"{value:.2f} µs" if item["unit"] == "µs" else f"{value:.2f}x")
        limit = (f"{item['limit']:g} bytes" if item["unit"] == "bytes" else
                 f"{item['limit']:.2f} µs" if item["unit"] == "µs" else f"{item['limit']:.2f}x")
        line = (f"  {item['status']:<4}  {item['workload']:<17} {item['what']:<47} {shown:>12}"
                f"  <= {limit}")
        if "stretch" in item:
            line += f"  (stretch {item['stretch']:.2f}x: {item['stretch_status']})"
        lines.append(line)
    return "\n".join(lines)


def notes(workload: str, entry: dict[str, Any]) -> list[str]:
    """Frame counts, copied payload bytes and skipped anchors, from the workers' set-up."""
    out = []
    info_c, info_p = entry["info"]["compiled worker"], entry["info"]["pure worker"]
    frames = dict(info_c.get("frames", {}))
    if "fastser" in frames:
        frames[COMPILED] = frames.pop("fastser")
    if "fastser" in info_p.get("frames", {}):
        frames[PURE] = info_p["frames"]["fastser"]
    if frames:
        out.append("  frames sent: " + ", ".join(
            f"{label} {frames[label]['frames']:,} ({frames[label]['bytes']:,} B)"
            for label in ROWS if label in frames))
        copied = [label for label in ROWS if "dumps copied bytes" in frames.get(label, {})]
        if copied:
            out.append("  payload bytes copied (dumps / loads): " + ", ".join(
                f"{label} {frames[label]['dumps copied bytes']:,} / "
                f"{frames[label]['loads copied bytes']:,}" for label in copied))
    spreads = [(max(values) / min(values), label, fn)
               for label, per_fn in entry["samples_us"].items()
               for fn, values in per_fn.items() if min(values) > 0]
    if spreads:
        worst = max(spreads)
        out.append(f"  noise: slowest/fastest batch of a contestant up to {worst[0]:.2f}x "
                   f"({worst[1]} {worst[2]}), median over contestants "
                   f"{statistics.median(s[0] for s in spreads):.2f}x")
    if isinstance(info_c.get("distributed"), str):
        out.append(f"  {info_c['distributed']}")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--compiled", required=True, help="python with fastser compiled")
    parser.add_argument("--pure", required=True, help="python with fastser pure")
    parser.add_argument("--json", action="store_true", help="print a JSON dict instead")
    parser.add_argument("--rounds", type=int, default=7, help="batches per contestant and fn")
    parser.add_argument("--gc", action="store_true",
                        help="keep the garbage collector on during batches (default: off)")
    parser.add_argument("--only", default="", help="workloads to run, e.g. control-message,"
                        "arrays (W1-W6, their old names, too; default: all)")
    parser.add_argument("--fastser-only", action="store_true",
                        help="fastser compiled against pure, no anchors")
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be >= 1")

    workers = {"compiled": Worker(args.compiled, WORKLOADS_MODULE),
               "pure": Worker(args.pure, WORKLOADS_MODULE)}
    try:
        known = workers["compiled"].hello["workloads"]  # suite_workloads.WORKLOADS
        chosen = only_names(args.only) or list(known)
        unknown = [w for w in chosen if w not in known]
        if unknown:
            print(f"unknown workloads {unknown}; known: {', '.join(known)}", file=sys.stderr)
            return 2
        for kind, expected in (("compiled", True), ("pure", False)):
            if workers[kind].hello["compiled"] is not expected:
                print(f"--{kind} {getattr(args, kind)} loads fastser with COMPILED="
                      f"{workers[kind].hello['compiled']} ({workers[kind].hello['fastser']})",
                      file=sys.stderr)
                return 2
        meta = {"rounds": args.rounds, "workloads": chosen, "gc_during_batches": args.gc,
                "machine": f"{platform.machine()}, {os.cpu_count()} cpus, {platform.system()}",
                "started": time.strftime("%Y-%m-%d %H:%M:%S"),
                "workers": {kind: {**w.hello, "python_path": getattr(args, kind)}
                            for kind, w in workers.items()}}
        results: dict[str, Any] = {}
        for workload in chosen:
            start = time.perf_counter()
            results[workload] = measure(workers, workload, args.rounds, args.gc,
                                        not args.fastser_only)
            print(f"{workload} done in {time.perf_counter() - start:.0f} s", file=sys.stderr)
    finally:
        for worker in workers.values():
            worker.close()
    checks = targets(results)
    if args.json:
        print(json.dumps({"meta": meta, "workloads": results, "targets": checks,
                          "fixed_cost_us_per_payload": fixed_costs(results)}, indent=1))
    else:
        print(report(meta, results, checks))
    return 0


if __name__ == "__main__":
    sys.exit(main())
