"""Compiled vs pure fastser, side by side: each build runs in its own interpreter (two
builds cannot share one process), batches are interleaved, and medians are compared.

    python3 benchmarks/compare_builds.py COMPILED_PYTHON PURE_PYTHON [--rounds N]

Each PYTHON is an interpreter with one fastser build installed (scripts/test.sh leaves
them in .envs/compiled and .envs/pure). Prints µs per call and the compiled/pure ratio.
"""

import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any, Callable

HERE = os.path.dirname(os.path.abspath(__file__))
NAMES = ["extract_serialize(seed)", "dumps(5000 Serialize)", "loads(5000 Serialize)",
         "dumps+loads(5000 Serialize)", "dumps(small message)", "loads(small message)"]


def workloads() -> dict[str, Callable[[], Any]]:
    import functools
    import operator

    import fastser
    from fastser import Serialize

    seed = 11 * [10 * [2 * [5 * [b"x" * 3_000_000]]]]
    tasks = {f"inc-{i}": Serialize((operator.add, f"x-{i}", i)) if i % 2 else
             Serialize(functools.partial(operator.mul, i)) for i in range(5000)}
    graph = {"op": "update-graph", "tasks": tasks,
             "dependencies": {f"inc-{i}": [f"x-{i}"] for i in range(5000)},
             "keys": [f"inc-{i}" for i in range(5000)]}
    graph_frames = fastser.dumps(graph)
    small = {"op": "task-finished", "key": ("x-1234", 3), "status": "OK", "nbytes": 12345,
             "typename": "numpy.ndarray", "metadata": {}, "thread": 140_000,
             "startstops": [{"action": "compute", "start": 1.5, "stop": 2.5}],
             "worker": "tcp://127.0.0.1:40000"}
    small_frames = fastser.dumps(small)
    return {
        "extract_serialize(seed)": lambda: fastser.extract_serialize(seed),
        "dumps(5000 Serialize)": lambda: fastser.dumps(graph),
        "loads(5000 Serialize)": lambda: fastser.loads(graph_frames),
        "dumps+loads(5000 Serialize)": lambda: fastser.loads(fastser.dumps(graph)),
        "dumps(small message)": lambda: fastser.dumps(small),
        "loads(small message)": lambda: fastser.loads(small_frames),
    }


def worker() -> None:
    """Read workload names on stdin; answer with the seconds per call of one batch."""
    import fastser

    table = workloads()
    assert list(table) == NAMES
    print(json.dumps({"compiled": fastser.COMPILED}), flush=True)
    for line in sys.stdin:
        name = line.strip()
        fn = table[name]
        fn()
        number, elapsed = 1, 0.0
        while True:
            start = time.perf_counter()
            for _ in range(number):
                fn()
            elapsed = time.perf_counter() - start
            if elapsed > 0.05:
                break
            number *= 2
        print(json.dumps({"name": name, "seconds": elapsed / number}), flush=True)


def main() -> int:
    args = sys.argv[1:]
    rounds = 7
    if "--rounds" in args:
        at = args.index("--rounds")
        rounds = int(args[at + 1])
        del args[at:at + 2]
    if len(args) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    procs = []
    for python in args:
        proc = subprocess.Popen([os.path.abspath(python), os.path.abspath(__file__), "--worker"], text=True,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=HERE)
        procs.append(proc)
    flags = [json.loads(proc.stdout.readline())["compiled"] for proc in procs]  # type: ignore[union-attr]
    if flags != [True, False]:
        print(f"expected a compiled then a pure build, got COMPILED={flags}", file=sys.stderr)
        return 2
    names = NAMES
    samples: dict[str, list[list[float]]] = {name: [[], []] for name in names}
    for _ in range(rounds):
        for name in names:
            for index, proc in enumerate(procs):  # interleaved: compiled, pure, compiled ...
                proc.stdin.write(name + "\n")  # type: ignore[union-attr]
                proc.stdin.flush()  # type: ignore[union-attr]
                samples[name][index].append(json.loads(proc.stdout.readline())["seconds"])  # type: ignore[union-attr]
    for proc in procs:
        proc.stdin.close()  # type: ignore[union-attr]
        proc.wait()
    print(f"{'workload':<30} {'compiled µs':>12} {'pure µs':>12} {'compiled/pure':>14}")
    for name in names:
        compiled, pure = (statistics.median(s) * 1e6 for s in samples[name])
        print(f"{name:<30} {compiled:>12.1f} {pure:>12.1f} {compiled / pure:>14.2f}")
    print(f"(medians of {rounds} interleaved batches per build)")
    return 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--worker"]:
        worker()
    else:
        sys.exit(main())
