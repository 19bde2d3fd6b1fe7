"""Instruction counts per call under callgrind: deterministic where wall-clock time on a noisy
machine is not. For each workload, runs this script under `valgrind --tool=callgrind` with
0 and N calls and prints the difference per call, and fastser's ratio to its floor.

    python benchmarks/instructions.py [--python PY] [--only W1,W2,W4,"W3 loads"]

PY is an interpreter with fastser installed (compiled, to measure the compiled build) and
msgpack; valgrind must be on PATH. A workload run directly: `PY benchmarks/instructions.py
--run NAME N`.
"""

import argparse
import functools
import operator
import re
import subprocess
import sys
from typing import Any, Callable

# (workload, fastser side, floor side, calls per run)
PAIRS = {
    "W1": ("W1 dumps", "W1 packb", 2000), "W1 loads": ("W1 loads", "W1 unpackb", 2000),
    "W2": ("W2 dumps", "W2 packb", 20), "W2 loads": ("W2 loads", "W2 unpackb", 20),
    "W4": ("W4 dumps per task", "W4 pickle.dumps per task", 5),
    "W4 loads": ("W4 loads per task", "W4 pickle.loads per task", 5),
    # The suite's own messages and received frames (these need the [bench] extra).
    "W3 loads": ("suite W3 fastser loads", "suite W3 floor loads", 200),
    "W5 loads": ("suite W5 fastser loads", "suite W5 distributed loads", 20),
}


def control_message(i: int) -> dict[str, Any]:
    # The same message as benchmarks/suite_workloads.control_message (no numpy import here).
    return {"op": "task-finished", "key": (f"inc-{i:08x}", i % 97), "status": "OK",
            "nbytes": 80_000 + i, "type": "numpy.ndarray", "typename": "numpy.ndarray",
            "metadata": {"shape": [100, 100], "dtype": "float64"},
            "thread": 140_229_857_920_768,
            "startstops": [{"action": "transfer", "start": 1_700_000_000.125 + i,
                            "stop": 1_700_000_000.25 + i, "source": "tcp://10.0.0.2:40001"},
                           {"action": "compute", "start": 1_700_000_000.5 + i,
                            "stop": 1_700_000_001.0 + i}],
            "worker": "tcp://10.0.0.1:40000", "stimulus_id": f"compute-task-{i}-1700000000.0"}


def workload(name: str) -> tuple[Callable[[], Any], int]:
    """The call to repeat, and how many items one call handles (to report per item)."""
    import msgpack

    import fastser
    if name.startswith("suite "):
        # "suite W3 fastser loads": a timed function of benchmarks/suite_workloads.py.
        import suite_workloads
        _, key, contestant, kind = name.split()
        built = suite_workloads.build(key, anchors=True)
        return built.fns[contestant][kind], 1
    if name.startswith("W1"):
        msg: Any = control_message(7)
    elif name.startswith("W2"):
        msg = [control_message(i) for i in range(1000)]
    else:
        # As in the suite's W4 (its target): half call tuples, half functools.partial, each
        # its own Serialize payload, against one pickle of the whole graph (protocol 5).
        import pickle
        tasks = {f"inc-{i}": functools.partial(operator.mul, i) if i % 2
                 else (operator.add, f"x-{i}", i) for i in range(1000)}
        whole = {"tasks": tasks}
        graph = {"tasks": {key: fastser.Serialize(task) for key, task in tasks.items()}}
        frames = fastser.dumps(graph)
        pickled = pickle.dumps(whole, protocol=5)
        calls = {"W4 dumps per task": lambda: fastser.dumps(graph),
                 "W4 loads per task": lambda: fastser.loads(frames),
                 "W4 pickle.dumps per task": lambda: pickle.dumps(whole, protocol=5),
                 "W4 pickle.loads per task": lambda: pickle.loads(pickled)}
        return calls[name], 1000
    frames = fastser.dumps(msg)
    packed = msgpack.packb(msg, use_bin_type=True)
    calls: dict[str, Callable[[], Any]] = {
        "dumps": lambda: fastser.dumps(msg),
        "loads": lambda: fastser.loads(frames),
        "packb": lambda: msgpack.packb(msg, use_bin_type=True),
        "unpackb": lambda: msgpack.unpackb(packed, raw=False, use_list=False,
                                           strict_map_key=False),
    }
    return calls[name.split()[1]], 1


def count(python: str, name: str, calls: int) -> int:
    # Only what runs inside sorted() is counted: the calls are made from its key function
    # (see --run), so a workload's set-up, which varies from run to run by more than the
    # floor's calls cost (W3 builds a 100 MiB array), stays out of the count.
    done = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                           "--collect-atstart=no", "--toggle-collect=builtin_sorted",
                           python, __file__, "--run", name, str(calls)],
                          capture_output=True, text=True, check=True)
    found = re.search(r"Collected : (\d+)", done.stderr)
    if found is None:
        raise RuntimeError(f"no callgrind total for {name}:\n{done.stderr}")
    return int(found.group(1))


def per_call(python: str, name: str, calls: int) -> float:
    items = 1000 if name.startswith("W4") else 1  # W4 reports per task
    return (count(python, name, calls) - count(python, name, 0)) / calls / items


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--only", default=",".join(PAIRS))
    parser.add_argument("--run", nargs=2, metavar=("NAME", "N"))
    args = parser.parse_args()
    if args.run:
        call, _ = workload(args.run[0])
        call()  # warm: imports, lazy registrations

        def counted(_: int) -> int:
            call()
            return 0

        sorted(range(int(args.run[1])), key=counted)  # the counted part
        return
    print(f"instructions per call (per task for W4), {args.python}")
    for key in args.only.split(","):
        ours, floor, calls = PAIRS[key]
        a, b = per_call(args.python, ours, calls), per_call(args.python, floor, calls)
        print(f"{ours:28s} {a:14,.0f}   {floor:28s} {b:14,.0f}   ratio {a / b:.2f}")


if __name__ == "__main__":
    main()
