"""The floors of W4 loads under fastser's two task forms, against pickle.loads.

    PY benchmarks/w4_task_forms.py [--rounds N]

Wire version 5 writes each task inline in the header, as an array led by an extension-type
mark: msgpack calls ext_hook (the mark) and list_hook (the array) once per task, and
decodes the tasks map's keys as map keys, each of which it interns. Version 6 writes a map
of 16 or more Serialize tasks as one extension type holding [[key, ...], [task, ...]]: one
nested msgpack call, no hook per task, and keys that are array items (not interned).

"inline floor" decodes the W4 header in the version 5 form with hooks that do nothing, then
builds the tasks' tuples and partials from ready fields in C loops; "task map floor" does
the same with the version 6 header (its ext_hook reads the map's data and nothing else).
No decoder of either form can be faster: neither checks anything, and a real decoder's
loop over the tasks runs in compiled code, not in C loops.

Each line: the median time per call, and the median over rounds of its ratio to
pickle.loads of the whole message, measured in the same round (GC off, as in suite.py).
"""

import argparse
import gc
import pickle
import sys
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))

import msgpack  # noqa: E402

import fastser  # noqa: E402
import floors  # noqa: E402
import suite_workloads as workloads  # noqa: E402
from fastser._wire import EXT_TASK_MAP, EXT_TASK_SERIALIZED_MARK  # noqa: E402


def inline_form(header: bytes) -> bytes:
    """A version 6 header body with each task map written back as version 5 did: a map
    of arrays, each led by its task mark."""
    def expand(code: int, data: bytes) -> Any:
        if code != EXT_TASK_MAP:
            return msgpack.ExtType(code, data)
        keys, tasks = msgpack.unpackb(data, raw=False, strict_map_key=False)
        mark = msgpack.ExtType(EXT_TASK_SERIALIZED_MARK, b"")
        return {key: [mark, *fields[1:]] for key, fields in zip(keys, tasks)}

    body = msgpack.unpackb(header, raw=False, strict_map_key=False, ext_hook=expand)
    return msgpack.packb(body, use_bin_type=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    if not fastser.COMPILED:
        print("note: fastser is not compiled here")
    template = workloads.update_graph()
    pickled = pickle.dumps(floors.fill(template, lambda data: data), protocol=5)
    frames = [bytes(f) for f in fastser.dumps(floors.fill(template, fastser.Serialize))]
    map_header = frames[0][1:]  # after the version byte
    inline_header = inline_form(map_header)
    build_tasks = floors.task_builder(template)

    def inline_floor() -> Any:
        msgpack.unpackb(inline_header, ext_hook=floors.no_op_ext_hook,
                        list_hook=floors.no_op_list_hook, raw=False, strict_map_key=False)
        return build_tasks()

    def task_map_floor() -> Any:
        msgpack.unpackb(map_header, ext_hook=floors.task_map_ext_hook,
                        list_hook=floors.no_op_list_hook, raw=False, strict_map_key=False)
        return build_tasks()

    fns: dict[str, Callable[[], Any]] = {
        "pickle.loads (whole message)": lambda: pickle.loads(pickled),
        "fastser.loads": lambda: fastser.loads(frames),
        "inline floor (version 5)": inline_floor,
        "task map floor (version 6)": task_map_floor,
    }
    print(f"W4 header: inline {len(inline_header):,} bytes, "
          f"task map {len(map_header):,} bytes")
    gc.disable()
    floors.run("W4 loads", fns, args.rounds)


if __name__ == "__main__":
    main()
