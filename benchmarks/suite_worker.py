"""The timing worker of benchmarks/suite.py: one process per interpreter, driven over a pipe.

    python benchmarks/suite_worker.py [WORKLOADS.py]   (started by suite.py or
                                                        traffic/bench.py, not by hand)

WORKLOADS.py (default: suite_workloads.py) is the module that builds the workloads: its
WORKLOADS (name -> description), build(name, anchors) and check_roundtrip(name, built).

Protocol, one JSON object per line on stdin, one answer per line on stdout:
  (on start)                        -> {"compiled", "fastser", "python", "versions", "workloads"}
  {"cmd": "setup", "workload", "anchors"}     -> {"fns": {contestant: [fn, ...]}, "info"}
  {"cmd": "time", "workload", "contestant", "fn", "gc"} -> {"seconds": per call, "number"}
  {"cmd": "teardown", "workload"}             -> {}
Any failure answers {"error": traceback}. The batch is timed here with time.perf_counter;
its number of calls is chosen on the first request for a (workload, contestant, fn) so that
a batch takes about TARGET_SECONDS, and kept for later rounds. Garbage is collected before
every batch, outside the timing. During the batch the collector is off, as in timeit, unless
"gc" is true: its full collections scan every live object of the process, and the compiled
worker holds all the anchors' messages while the pure one holds fastser's only, so with it on
the timings would depend on what else the worker holds.
"""

import gc
import importlib
import json
import os
import sys
import time
import traceback
from typing import Any, Callable

TARGET_SECONDS = 0.1  # a batch: 50-200 ms, unless one call takes longer


def time_batch(fn: Callable[[], Any], number: int, collect: bool = False) -> float:
    gc.collect()
    if not collect:
        gc.disable()
    try:
        start = time.perf_counter()
        for _ in range(number):
            fn()
        return time.perf_counter() - start
    finally:
        gc.enable()


def calibrate(fn: Callable[[], Any], collect: bool) -> int:
    """Calls per batch: run once to warm up, then grow until a batch takes ~TARGET_SECONDS."""
    once = time_batch(fn, 1, collect)
    if once >= TARGET_SECONDS / 2:
        return 1
    number = max(1, int(TARGET_SECONDS / max(once, 1e-7)))
    while True:
        elapsed = time_batch(fn, number, collect)
        if elapsed >= TARGET_SECONDS / 2 or number >= 10**7:
            break
        number *= 2
    return max(1, round(number * TARGET_SECONDS / elapsed))


def workloads_module() -> Any:
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(
        os.path.abspath(__file__)), "suite_workloads.py")
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    return importlib.import_module(os.path.splitext(os.path.basename(path))[0])


def main() -> None:
    import fastser

    suite_workloads = workloads_module()

    versions = {}
    for name in ("msgpack", "msgspec", "numpy", "distributed"):
        try:
            versions[name] = __import__(name).__version__
        except Exception:  # an anchor's absence is reported, not fatal
            versions[name] = None
    answer({"compiled": fastser.COMPILED, "fastser": fastser.__file__,
            "python": sys.version.split()[0], "versions": versions,
            "workloads": suite_workloads.WORKLOADS})
    built: dict[str, Any] = {}
    numbers: dict[tuple[str, str, str], int] = {}
    for line in sys.stdin:
        try:
            request = json.loads(line)
            cmd = request["cmd"]
            workload = request.get("workload", "")
            if cmd == "setup":
                built[workload] = suite_workloads.build(workload, request["anchors"])
                problem = suite_workloads.check_roundtrip(workload, built[workload])
                if problem:
                    raise RuntimeError(f"{workload}: {problem}")
                gc.collect()
                answer({"fns": {name: list(fns) for name, fns in built[workload].fns.items()},
                        "info": built[workload].info})
            elif cmd == "time":
                key = (workload, request["contestant"], request["fn"])
                fn = built[workload].fns[key[1]][key[2]]
                collect = bool(request.get("gc", False))
                if key not in numbers:
                    numbers[key] = calibrate(fn, collect)
                number = numbers[key]
                answer({"seconds": time_batch(fn, number, collect) / number, "number": number})
            elif cmd == "teardown":
                built.pop(workload, None)
                gc.collect()
                answer({})
            else:
                raise ValueError(f"unknown command {cmd!r}")
        except Exception:  # sent to the parent, which stops the run
            answer({"error": traceback.format_exc()})


def answer(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
