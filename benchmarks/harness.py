"""The one timing harness of the benchmarks: batches timed with perf_counter, contestants
interleaved round by round, medians of per-round ratios (the machine is noisy: compare ratios).

In one process (floors.py): `time_rounds`. Across interpreters (suite.py, forms.py,
traffic/bench.py): this file run as a script is a worker, one per interpreter, driven by
`Worker` over a pipe; `measure` sets a workload up in each and `interleave` asks the workers
for one batch at a time. A mix of workloads (the recorded traffic) is `weighted` round by
round. The whole-run benchmarks (cluster.py, comm_receive.py) time one run each and share
`rotated` and `paired`.

Worker protocol, one JSON object per line (`python harness.py WORKLOADS.py`; the module has
WORKLOADS (name -> description), build(name, anchors) and check_roundtrip(name, built)):
  (on start)                                        -> {"compiled", "fastser", "python",
                                                        "versions", "workloads"}
  {"cmd": "setup", "workload", "anchors"}           -> {"fns": {contestant: [fn]}, "info"}
  {"cmd": "time", "workload", "contestant", "fn", "gc"} -> {"seconds": per call, "number"}
  {"cmd": "teardown", "workload"}                   -> {}
Any failure answers {"error": traceback}.
"""

import gc
import importlib
import json
import os
import statistics
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
TARGET_SECONDS = 0.1  # a batch: 50-200 ms, unless one call takes longer
# No workload calls BLAS, but OpenBLAS starts a spinning thread per core when numpy is
# imported: profiled, they took 7% of a worker's samples on a machine of two cores.
BLAS_SINGLE_THREAD = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
                      "MKL_NUM_THREADS": "1"}


def time_batch(fn: Callable[[], Any], number: int, collect: bool = False) -> float:
    """Seconds for `number` calls of fn. Garbage is collected first, outside the timing; the
    collector is off during the batch (as in timeit) unless `collect`: its full collections
    scan every live object, so the timing would depend on what else the process holds."""
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


def calibrate(fn: Callable[[], Any], collect: bool = False) -> int:
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


def time_rounds(fns: dict[str, Callable[[], Any]], rounds: int) -> dict[str, list[float]]:
    """In this process: seconds per call of each fn, one batch per round, the fns in
    `rotated` order; each batch's number of calls fixed by `calibrate` before the rounds."""
    numbers = {label: calibrate(fn) for label, fn in fns.items()}
    times: dict[str, list[float]] = {label: [] for label in fns}
    for index in range(rounds):
        for label in rotated([[label] for label in fns], index):
            times[label].append(time_batch(fns[label], numbers[label]) / numbers[label])
    return times


def paired(values: list[float], refs: list[float]) -> Optional[float]:
    """The median over rounds of value / reference, round k against round k: drifting load
    on the machine moves it less than a ratio of medians."""
    return statistics.median(v / r for v, r in zip(values, refs)) if refs and all(refs) else None


def rotated(units: list[list[str]], index: int) -> list[str]:
    """Round `index`'s order: the units rotated so that none always runs first, and the
    members of a unit (kept neighbours) swapped every other round."""
    shift = index % len(units)
    return [label for unit in units[shift:] + units[:shift]
            for label in (unit if index % 2 == 0 else unit[::-1])]


class Worker:
    """One worker subprocess (this file run as a script), spoken to in JSON lines."""

    def __init__(self, python: str, workloads: str, env: Optional[dict[str, str]] = None) -> None:
        self.python = python
        self.proc = subprocess.Popen(
            [python, os.path.abspath(__file__), workloads], cwd=HERE, text=True,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            env={**os.environ, **BLAS_SINGLE_THREAD, **(env or {})})
        self.hello = self.read()

    def read(self) -> dict[str, Any]:
        line = self.proc.stdout.readline()  # type: ignore[union-attr]
        if not line:
            raise RuntimeError(f"worker {self.python} exited ({self.proc.wait()})")
        answer: dict[str, Any] = json.loads(line)
        if "error" in answer:
            raise RuntimeError(f"worker {self.python} failed:\n{answer['error']}")
        return answer

    def ask(self, **request: Any) -> dict[str, Any]:
        self.proc.stdin.write(json.dumps(request) + "\n")  # type: ignore[union-attr]
        self.proc.stdin.flush()  # type: ignore[union-attr]
        return self.read()

    def close(self) -> None:
        self.proc.stdin.close()  # type: ignore[union-attr]
        self.proc.wait()


def interleave(where: dict[str, tuple[Worker, str, list[str]]], units: list[list[str]],
               workload: str, rounds: int, collect: bool = False
               ) -> tuple[dict[str, dict[str, list[float]]], dict[str, dict[str, int]]]:
    """Per label, µs per call of each of its fns, one batch per round. `where`: label ->
    (its worker, the worker's name for the contestant, its fns). In a round, each fn is
    timed for every label back to back in `rotated` order, so batch k of each label is
    taken within a second or so of batch k of the others."""
    fns = list(dict.fromkeys(fn for _, _, names in where.values() for fn in names))
    samples: dict[str, dict[str, list[float]]] = {
        label: {fn: [] for fn in where[label][2]} for label in where}
    numbers: dict[str, dict[str, int]] = {label: {} for label in where}
    for index in range(rounds):
        order = rotated(units, index)
        for fn in fns:
            for label in order:
                worker, name, names = where[label]
                if fn in names:
                    reply = worker.ask(cmd="time", workload=workload, contestant=name, fn=fn,
                                       gc=collect)
                    samples[label][fn].append(reply["seconds"] * 1e6)
                    numbers[label][fn] = reply["number"]
    return samples, numbers


def measure(builds: dict[str, Worker], workload: str, rounds: int, anchors: str = "",
            collect: bool = False, neighbours: bool = True
            ) -> tuple[dict[str, dict[str, list[float]]], dict[str, dict[str, int]],
                       dict[str, Any]]:
    """`workload` set up in every worker, timed for `rounds` interleaved rounds, torn down:
    fastser in each worker of `builds`, labelled by its build, and the anchors in the worker
    of build `anchors` (none if ""), labelled by name. Returns `interleave`'s samples and
    calls per batch, and each build's set-up info. Each anchor is a unit of the rotation;
    the builds are one unit, kept neighbours, when `neighbours`, else one each."""
    where: dict[str, tuple[Worker, str, list[str]]] = {}
    info: dict[str, Any] = {}
    for label, worker in builds.items():
        setup = worker.ask(cmd="setup", workload=workload, anchors=label == anchors)
        info[label] = setup["info"]
        for name, fns in setup["fns"].items():
            where[label if name == "fastser" else name] = (worker, name, fns)
    units = [[label] for label in where if label not in builds]
    units += [list(builds)] if neighbours else [[label] for label in builds]
    samples, numbers = interleave(where, units, workload, rounds, collect)
    for worker in builds.values():
        worker.ask(cmd="teardown", workload=workload)
    return samples, numbers, info


def both_ways(by_fn: dict[str, list[float]]) -> list[float]:
    """Round by round, dumps + loads."""
    return [dump + load for dump, load in zip(by_fn["dumps"], by_fn["loads"])]


def weighted(per_workload: dict[str, list[float]], weights: dict[str, float]) -> list[float]:
    """Round by round, the sum of each workload's sample times its weight: a mix of
    workloads (the recorded traffic, each kind by its message count) timed round k
    against round k, as `paired` compares them."""
    names = list(per_workload)
    return [sum(weights[name] * value for name, value in zip(names, values))
            for values in zip(*(per_workload[name] for name in names))]


# --- the worker ---------------------------------------------------------------------

def serve(workloads: Any) -> None:
    """Answer the parent's requests; a batch's number of calls is fixed on the first
    request for its (workload, contestant, fn) and kept for later rounds."""
    import fastser

    versions = {}
    for name in ("msgpack", "msgspec", "numpy", "distributed"):
        try:
            versions[name] = __import__(name).__version__
        except Exception:  # an anchor's absence is reported, not fatal
            versions[name] = None
    answer({"compiled": fastser.COMPILED, "fastser": fastser.__file__,
            "python": sys.version.split()[0], "versions": versions,
            "workloads": workloads.WORKLOADS})
    built: dict[str, Any] = {}
    numbers: dict[tuple[str, str, str], int] = {}
    for line in sys.stdin:
        try:
            request = json.loads(line)
            cmd, workload = request["cmd"], request.get("workload", "")
            if cmd == "setup":
                built[workload] = workloads.build(workload, request["anchors"])
                problem = workloads.check_roundtrip(workload, built[workload])
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
    path = os.path.abspath(sys.argv[1])
    sys.path[:0] = [os.path.dirname(path), HERE]
    serve(importlib.import_module(os.path.splitext(os.path.basename(path))[0]))
