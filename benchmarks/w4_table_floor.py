"""An experiment for issue 4's W4 loads target: the floor of a wire form fastser does not
write (yet), against the floor of the one it writes.

    PY benchmarks/w4_table_floor.py [--rounds N]

fastser writes each task inline in the header as an array led by an extension-type mark, so
msgpack calls ext_hook (the mark) and list_hook (the array) once per task, and decodes the
tasks map's keys as map keys (each one interned). "inline floor" decodes fastser's own W4
header with hooks that do nothing, then builds the tasks' tuples and partials from ready
fields in C loops: no decoder of that form can be faster. "table floor" decodes the same
message with the tasks map replaced by one extension type holding [keys, fields...] (one
nested msgpack call, no hook per task, keys not interned), then builds the same tasks.
Neither floor checks anything; a real decoder adds its checks and its loop in compiled code.

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

TABLE_CODE = 100  # an extension code fastser does not use; this header is never loaded


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    if not fastser.COMPILED:
        print("note: fastser is not compiled here")
    template = workloads.update_graph()
    pickled = pickle.dumps(floors.fill(template, lambda data: data), protocol=5)
    frames = [bytes(f) for f in fastser.dumps(floors.fill(template, fastser.Serialize))]
    inline_header = frames[0][1:]  # after the version byte

    body = msgpack.unpackb(inline_header, raw=False, strict_map_key=False,
                           ext_hook=msgpack.ExtType)
    tasks = body["tasks"]
    table = msgpack.packb([list(tasks), [fields[1:] for fields in tasks.values()]],
                          use_bin_type=True)  # each task's fields without its mark
    table_header = msgpack.packb({**body, "tasks": msgpack.ExtType(TABLE_CODE, table)},
                                 use_bin_type=True)

    build_tasks = floors.task_builder(template)

    def table_ext_hook(code: int, data: bytes) -> Any:
        if code == TABLE_CODE:
            keys, fields = msgpack.unpackb(data, raw=False, strict_map_key=False)
            return dict(zip(keys, fields))
        return data

    def inline_floor() -> Any:
        msgpack.unpackb(inline_header, ext_hook=floors.no_op_ext_hook,
                        list_hook=floors.no_op_list_hook, raw=False, strict_map_key=False)
        return build_tasks()

    def table_floor() -> Any:
        msgpack.unpackb(table_header, ext_hook=table_ext_hook,
                        list_hook=floors.no_op_list_hook, raw=False, strict_map_key=False)
        return build_tasks()

    fns: dict[str, Callable[[], Any]] = {
        "pickle.loads (whole message)": lambda: pickle.loads(pickled),
        "fastser.loads": lambda: fastser.loads(frames),
        "inline floor (fastser's form)": inline_floor,
        "table floor (tasks map as one ext)": table_floor,
    }
    print(f"W4 header: inline {len(inline_header):,} bytes, table {len(table_header):,} bytes")
    gc.disable()
    floors.run("W4 loads", fns, args.rounds)


if __name__ == "__main__":
    main()
