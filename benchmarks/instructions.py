"""Instruction counts per call under callgrind: deterministic where wall-clock time on a noisy
machine is not. Each pair runs one of the suite's timed functions (suite_workloads.py, on the
frames its receiver gets) under `valgrind --tool=callgrind` with 0 and N calls, and prints
the difference per call and fastser's ratio to its reference.

    python benchmarks/instructions.py [--python PY] [--only control-message,"arrays loads"]

PY is an interpreter with fastser installed (compiled, to measure the compiled build) and
the bench extra; valgrind must be on PATH. raw-bytes copies count an instruction per byte:
read raw-bytes in time. One function alone: `PY benchmarks/instructions.py --run WORKLOAD
CONTESTANT FN N`.
"""

import argparse
import os
import re
import subprocess
import sys

# pair -> (workload, fn, fastser's reference, calls per run)
PAIRS = {
    "control-message": ("control-message", "dumps", "floor", 2000),
    "control-message loads": ("control-message", "loads", "floor", 2000),
    "batch-of-1000": ("batch-of-1000", "dumps", "floor", 20),
    "batch-of-1000 loads": ("batch-of-1000", "loads", "floor", 20),
    "update-graph": ("update-graph", "dumps", "pickle5", 2),  # per task, both
    "update-graph loads": ("update-graph", "loads", "pickle5", 2),
    "arrays loads": ("arrays", "loads", "floor", 200),
    "raw-bytes loads": ("raw-bytes", "loads", "distributed", 20),
}


def count(python: str, what: list[str], calls: int) -> int:
    # Only what runs inside sorted() is counted: the calls are made from its key function
    # (see --run), so a workload's set-up, which varies from run to run by more than the
    # floor's calls cost (arrays builds a 100 MiB array), stays out of the count.
    done = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                           "--collect-atstart=no", "--toggle-collect=builtin_sorted",
                           python, __file__, "--run", *what, str(calls)],
                          capture_output=True, text=True, check=True)
    found = re.search(r"Collected : (\d+)", done.stderr)
    if found is None:
        raise RuntimeError(f"no callgrind total for {what}:\n{done.stderr}")
    return int(found.group(1))


def per_call(python: str, what: list[str], calls: int, items: int) -> float:
    return (count(python, what, calls) - count(python, what, 0)) / calls / items


def run(workload: str, contestant: str, fn: str, calls: int) -> None:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import suite_workloads

    if contestant == "pickle5":  # built alone: the other anchors' set-up is slow under valgrind
        if workload != "update-graph":
            raise SystemExit("pickle5 is counted on update-graph only")
        msg = suite_workloads.convert(suite_workloads.update_graph(), lambda data: data)
        frames = suite_workloads.received_one_buffer(suite_workloads.pickle_dumps(msg))
        call = {"dumps": lambda: suite_workloads.pickle_dumps(msg),
                "loads": lambda: suite_workloads.pickle_loads(frames)}[fn]
    else:
        call = suite_workloads.build(workload, contestant != "fastser").fns[contestant][fn]
    call()  # warm: imports, lazy registrations

    def counted(_: int) -> int:
        call()
        return 0

    sorted(range(calls), key=counted)  # the counted part


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--only", default=",".join(PAIRS), help=f"of {', '.join(PAIRS)}")
    parser.add_argument("--run", nargs=4, metavar=("WORKLOAD", "CONTESTANT", "FN", "N"))
    args = parser.parse_args()
    if args.run:
        workload, contestant, fn, calls = args.run
        run(workload, contestant, fn, int(calls))
        return
    print(f"instructions per call (per task for update-graph), {args.python}")
    for key in args.only.split(","):
        workload, fn, reference, calls = PAIRS[key]
        items = 5000 if workload == "update-graph" else 1  # suite_workloads.N_TASKS
        a = per_call(args.python, [workload, "fastser", fn], calls, items)
        b = per_call(args.python, [workload, reference, fn], calls, items)
        print(f"{key:24s} fastser {a:14,.0f}   {reference:12s} {b:14,.0f}   ratio {a / b:.2f}")


if __name__ == "__main__":
    main()
