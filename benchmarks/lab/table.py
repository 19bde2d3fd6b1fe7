"""The lab's table, as docs/dask.md shows it, from the rows that run.py --json wrote.

    python benchmarks/lab/table.py FILE [FILE ...] [--tls]

A row per profile and workload, a column per variant. Each cell: the median time, in
brackets the median per-round ratio to tcp (`/tls` too with --tls, for the TLS variants),
then on shaped links the share of the link's rate that its busiest direction carried, and
the share of the machine's cores the lab's processes took (`cpu`, where the run measured
it). Where files hold the same profile and workload, the later file's rows are taken; the
last column names the file each row came from.
"""

import argparse
import json
import os
from typing import Any

from netlab import PROFILES
from run import BASE, DEFAULT_VARIANTS, WORKLOADS

TLS_VARIANTS = ("tcp", "fastser", *BASE)


def cell(row: dict[str, Any], tls: bool) -> str:
    text = f"{row['median_s']:.3f} s"
    ratios = []
    if row["variant"] != "tcp" and row.get("ratio_to_tcp") is not None:
        ratios.append(f"{row['ratio_to_tcp']:.2f}")
    if tls and row.get("base") == "tls" and row["variant"] != "tls" \
            and row.get("ratio_to_base") is not None:
        ratios.append(f"/tls {row['ratio_to_base']:.2f}")
    if ratios:
        text += f" ({'; '.join(ratios)})"
    if row.get("link_fraction") is not None:
        text += f", {row['link_fraction']:.2f}"
    if row.get("cpu_fraction") is not None:
        text += f", cpu {row['cpu_fraction']:.2f}"
    return text


def table(files: list[str], tls: bool) -> str:
    variants = TLS_VARIANTS if tls else DEFAULT_VARIANTS
    taken: dict[tuple[str, str], tuple[str, dict[str, dict[str, Any]]]] = {}
    for name in files:
        with open(name) as file:
            rows = json.load(file)
        found: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
        for row in rows:
            found.setdefault((row["profile"], row["workload"]), {})[row["variant"]] = row
        for key, by_variant in found.items():
            taken[key] = (os.path.basename(name), by_variant)
    lines = ["| profile | workload | " + " | ".join(variants) + " | rows |",
             "| --- | --- | " + " | ".join("---" for _ in variants) + " | --- |"]
    for profile in PROFILES:
        for workload in WORKLOADS:
            if (profile, workload) not in taken:
                continue
            source, by_variant = taken[(profile, workload)]
            cells = [cell(by_variant[variant], tls) if variant in by_variant else ""
                     for variant in variants]
            lines.append(f"| `{profile}` | {workload} | " + " | ".join(cells)
                         + f" | {source} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", metavar="FILE")
    parser.add_argument("--tls", action="store_true", help="the TLS variants' columns")
    args = parser.parse_args()
    print(table(args.files, args.tls))


if __name__ == "__main__":
    main()
