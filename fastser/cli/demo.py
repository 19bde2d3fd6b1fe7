"""The README's main job: round-trip a realistic message and say what happened."""

import operator
import statistics
import time
from typing import Any

from fastser import COMPILED, Serialize, ToPickle, __version__, dumps, loads


def array_or_bytes() -> Any:
    """A numpy array, or where numpy is not installed (it is an extra) a bytearray."""
    try:
        import numpy as np
    except ImportError:
        return bytearray(range(256)) * 3125
    return np.arange(100_000, dtype="f8").reshape(250, 400)


def realistic_message() -> dict[str, Any]:
    return {
        "op": "compute-task",
        "key": ("inc-5f1c", 3),
        "priority": (0, 1, 2**70),
        "who_has": {("x", 0): ["tcp://10.0.0.1:8786"], ("x", 1): ["tcp://10.0.0.2:8786"]},
        "nbytes": {"x-0": 800_000, "x-1": 1_024},
        "data": Serialize(array_or_bytes()),
        "raw": b"\x00" * 200_000,
        "run_spec": ToPickle((operator.add, 1, 2)),
        "annotations": {"retries": 2, "resources": {"GPU": 1}},
    }


def describe(frames: list[Any]) -> str:
    lines = []
    for index, frame in enumerate(frames):
        role = "header (msgpack)" if index == 0 else "payload"
        size = memoryview(frame).nbytes
        lines.append(f"  frame {index}: {size:>9,} bytes  {type(frame).__name__:<10} {role}")
    return "\n".join(lines)


def same_payload(received: Any, sent: Any) -> bool:
    if type(sent) is bytearray:
        return bool(received == sent)
    import numpy as np
    return bool(np.array_equal(received, sent))


def aliases(frame: Any, data: Any) -> bool:
    """Whether the payload frame is the caller's memory (not a copy of it)."""
    if type(data) is bytearray:
        return frame is data or (type(frame) is memoryview and frame.obj is data)
    import numpy as np
    return bool(np.shares_memory(np.frombuffer(frame, dtype=np.uint8), data))


def shown(value: Any) -> str:
    if type(value) is bytearray:
        return f"bytearray of {len(value):,} bytes (numpy not installed)"
    return f"array {value.shape} {value.dtype}"


def main() -> int:
    msg = realistic_message()
    data = msg["data"].data
    frames = dumps(msg)
    out = loads(frames)
    dumps_us, loads_us = [], []
    for _ in range(200):
        start = time.perf_counter()
        again = dumps(msg)
        middle = time.perf_counter()
        loads(again)
        loads_us.append(1e6 * (time.perf_counter() - middle))
        dumps_us.append(1e6 * (middle - start))
    func, a, b = out["run_spec"]
    ok = (out["key"] == msg["key"] and out["raw"] == msg["raw"]
          and same_payload(out["data"], data) and func(a, b) == 3
          and out["who_has"] == msg["who_has"])
    print(f"fastser {__version__} ({'compiled with mypyc' if COMPILED else 'pure Python'})")
    print(f"message: op, key, priority (with a 71-bit int), who_has (tuple keys), a "
          f"{memoryview(data).nbytes:,}-byte {type(data).__name__}, {len(msg['raw']):,} raw "
          "bytes, a pickled callable")
    print(f"dumps -> {len(frames)} frames:")
    print(describe(frames))
    print(f"payload frame aliases the {type(data).__name__} (no copy): "
          f"{aliases(frames[1], data)}")
    print(f"round trip equal with types kept: {ok}; "
          f"key type {type(out['key']).__name__}, {shown(out['data'])}, "
          f"run_spec -> {func.__name__}({a}, {b}) = {func(a, b)}")
    print(f"time (median of 200): dumps {statistics.median(dumps_us):.1f} us, "
          f"loads {statistics.median(loads_us):.1f} us")
    return 0 if ok else 1
