"""Shapes of Dask messages: what capture.py records of each message a comm writes, what
the corpus (corpus/corpus.json) is made of, and how a message is built again from one.

A shape keeps a message's structure and sizes, not its data: protocol words (dict keys
that look like identifiers, and the values of "op" and "status") stay literal; every other
str, bytes, int or float becomes its type and size; payloads become their kind and size
(numpy dtype and shape, pandas rows and dtypes, a dask Task's function name and
arguments, a pickled object's pickle size). Runs of items of one structure in a list, or
of entries in a dict, are kept once with their count, so a batch of 1,000 messages is a
few lines. Nothing in a shape depends on the Python version (no pickles).

    shape(msg) -> dict          (JSON-able)
    build(shape, codec) -> msg  codec: "distributed" (the objects a Dask comm is handed:
                                distributed's wrappers) or "plain" (wrappers opened, for pickle)
"""

import importlib
import json
import operator
import os
import pickle
import re
from typing import Any

# The corpus in the repository (synthesize.py writes it; bench.py --corpus picks another).
CORPUS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "corpus.json")
LITERAL_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]{0,39}$")
LITERAL_VALUES = {"op", "status", "serializer", "reason"}
MAX_RUN_ITEMS = 8  # a list or dict of more items than this is stored as runs


def load_corpus(path: str = "") -> dict[str, Any]:
    """The corpus at `path`, else at $FASTSER_TRAFFIC_CORPUS (bench.py sets it for its
    workers), else CORPUS."""
    with open(path or os.environ.get("FASTSER_TRAFFIC_CORPUS", CORPUS)) as f:
        corpus: dict[str, Any] = json.load(f)
    return corpus


def qualified(obj: Any) -> str:
    return f"{getattr(obj, '__module__', '?')}:{getattr(obj, '__qualname__', type(obj).__name__)}"


def pickled_size(obj: Any) -> int:
    try:
        import cloudpickle
        return len(cloudpickle.dumps(obj, protocol=5))
    except Exception:
        return 0


def shape(obj: Any, depth: int = 0) -> dict[str, Any]:
    """The shape of `obj` (a message, or any value inside one)."""
    if depth > 60:
        return {"t": "deep"}
    t = type(obj)
    if obj is None:
        return {"t": "none"}
    if t is bool:
        return {"t": "bool"}
    if t is int:
        return {"t": "int", "bits": obj.bit_length()}
    if t is float:
        return {"t": "float"}
    if t is str:
        return {"t": "str", "n": len(obj)}
    if t in (bytes, bytearray, memoryview):
        return {"t": t.__name__, "n": memoryview(obj).nbytes}
    if t in (list, tuple, set, frozenset):
        return {"t": t.__name__, "runs": runs([shape(item, depth + 1) for item in obj])}
    if t is dict:
        items = [[key_shape(key, depth), value_shape(key, value, depth)]
                 for key, value in obj.items()]
        return {"t": "dict", "runs": runs(items)}
    return payload_shape(obj, depth)


def key_shape(key: Any, depth: int) -> dict[str, Any]:
    if type(key) is str and LITERAL_KEY.match(key):
        return {"t": "literal", "v": key}
    return shape(key, depth + 1)


def value_shape(key: Any, value: Any, depth: int) -> dict[str, Any]:
    if key in LITERAL_VALUES and type(value) is str:
        return {"t": "literal", "v": value}
    return shape(value, depth + 1)


def payload_shape(obj: Any, depth: int) -> dict[str, Any]:
    from distributed.protocol.serialize import Pickled, Serialize, Serialized, ToPickle

    if isinstance(obj, Serialize):
        return {"t": "Serialize", "data": shape(obj.data, depth + 1)}
    if isinstance(obj, ToPickle):
        return {"t": "ToPickle", "data": shape(obj.data, depth + 1)}
    if isinstance(obj, Pickled):
        return {"t": "Pickled", "frames": [memoryview(f).nbytes for f in obj.frames],
                "header": memoryview(obj.header.get("pickled-obj", b"")).nbytes}
    if isinstance(obj, Serialized):
        return serialized_shape(obj)
    module = type(obj).__module__
    if module.startswith("numpy") and type(obj).__name__ == "ndarray":
        return {"t": "ndarray", "dtype": obj.dtype.str, "shape": list(obj.shape)}
    if module.startswith("pandas"):
        name = type(obj).__name__
        if name == "DataFrame":
            return {"t": "DataFrame", "rows": len(obj), "dtypes": [str(d) for d in obj.dtypes]}
        if name == "Series":
            return {"t": "Series", "rows": len(obj), "dtype": str(obj.dtype)}
    if module.startswith("dask._task_spec"):
        return task_shape(obj, depth)
    if isinstance(obj, type) or type(obj).__name__ in ("builtin_function_or_method", "ufunc"):
        return {"t": "ref", "name": qualified(obj)}  # pickled by reference
    return {"t": "object", "type": qualified(type(obj)), "pickled": pickled_size(obj)}


def serialized_shape(obj: Any) -> dict[str, Any]:
    """A payload the scheduler keeps as it arrived: what it holds, from its header."""
    header = getattr(obj, "fastser_header", None) or obj.header
    out: dict[str, Any] = {"t": "Serialized", "frames": [memoryview(f).nbytes for f in obj.frames]}
    if "dtype" in header and "shape" in header:  # a numpy array (both codecs' headers)
        dtype = header["dtype"]
        if isinstance(dtype, (list, tuple)):  # distributed's header: (kind, dtype.str)
            dtype = dtype[1]
        out["ndarray"] = {"dtype": str(dtype), "shape": list(header["shape"])}
    return out


def task_shape(obj: Any, depth: int) -> dict[str, Any]:
    from dask._task_spec import Alias, DataNode, Task, TaskRef

    if isinstance(obj, TaskRef) and not isinstance(obj, Alias):
        return {"t": "TaskRef", "key": shape(obj.key, depth + 1)}
    if isinstance(obj, Alias):
        return {"t": "Alias", "key": shape(obj.key, depth + 1),
                "target": shape(obj.target, depth + 1)}
    if isinstance(obj, DataNode):
        return {"t": "DataNode", "key": shape(obj.key, depth + 1),
                "value": shape(obj.value, depth + 1)}
    if type(obj) is Task:
        return {"t": "Task", "key": shape(obj.key, depth + 1), "func": qualified(obj.func),
                "args": [shape(a, depth + 1) for a in obj.args],
                "kwargs": [[k, shape(v, depth + 1)] for k, v in obj.kwargs.items()],
                "pickled": pickled_size(obj)}
    return {"t": "object", "type": qualified(type(obj)), "pickled": pickled_size(obj)}


def structure(node: Any) -> Any:
    """`node` without its sizes: the part two items of one run share."""
    if isinstance(node, dict):
        return tuple(sorted((k, structure(v)) for k, v in node.items()
                            if k not in ("n", "bits", "pickled", "shape", "rows")))
    if isinstance(node, list):
        return tuple(structure(item) for item in node)
    return node


def runs(items: list[Any]) -> list[list[Any]]:
    """[[count, item], ...]: consecutive items of one structure kept once (the first), when
    there are more than MAX_RUN_ITEMS items; otherwise every item, each a run of one."""
    if len(items) <= MAX_RUN_ITEMS:
        return [[1, item] for item in items]
    out: list[list[Any]] = []
    last: Any = object()
    for item in items:
        key = structure(item)
        if out and key == last:
            out[-1][0] += 1
        else:
            out.append([1, item])
            last = key
    return out


def kind(msg: Any) -> str:
    """A message's kind: its op; a batch by the op most of its messages have; a reply by
    its keys."""
    if type(msg) is dict:
        op = msg.get("op")
        if type(op) is str:
            return op
        keys = sorted(str(k) for k in msg if type(k) is str and LITERAL_KEY.match(k))
        return "reply{" + ",".join(keys[:4]) + ("" if len(keys) <= 4 else ",...") + "}"
    if type(msg) in (list, tuple):
        ops: dict[str, int] = {}
        for item in msg:
            name = kind(item)
            ops[name] = ops.get(name, 0) + 1
        if not ops:
            return "batch[]"
        return "batch[" + max(ops, key=lambda k: ops[k]) + "]"
    return type(msg).__name__


# --- building a message from its shape ----------------------------------------------

class Opaque:
    """What stands for an object the recorded message pickled (its type is not importable
    here, or not constructible from a shape): a pickle of about the recorded size."""

    def __init__(self, blob: bytes) -> None:
        self.blob = blob

    def __eq__(self, other: Any) -> bool:
        return type(other) is Opaque and other.blob == self.blob

    def __hash__(self) -> int:
        return hash(self.blob)


def text(n: int, seed: int) -> str:
    base = f"({seed:x}-abcdefghijklmnopqrstuvwxyz0123456789)"
    return (base * (n // len(base) + 1))[:n]


def function(name: str) -> Any:
    module, _, qualname = name.partition(":")
    try:
        obj: Any = importlib.import_module(module)
        for part in qualname.split("."):
            obj = getattr(obj, part)
        pickle.dumps(obj)  # by reference, as the recorded one was
        return obj
    except Exception:
        return operator.add


class Builder:
    def __init__(self, codec: str) -> None:
        self.codec = codec
        self.seed = 0

    def next(self) -> int:
        self.seed += 1
        return self.seed

    def build(self, node: dict[str, Any]) -> Any:
        t = node["t"]
        method = getattr(self, "build_" + t, None)
        if method is not None:
            return method(node)
        if t == "none":
            return None
        if t == "literal":
            return node["v"]
        if t == "ref":
            return function(node["name"])
        if t == "bool":
            return self.next() % 2 == 0
        if t == "int":
            bits = node["bits"]
            return (1 << (bits - 1)) + self.next() % max(1, 1 << max(0, bits - 2)) if bits else 0
        if t == "float":
            return self.next() * 0.37
        if t == "str":
            return text(node["n"], self.next())
        if t == "bytes":
            return bytes(node["n"])
        if t == "bytearray":
            return bytearray(node["n"])
        if t == "memoryview":
            return memoryview(bytearray(node["n"]))
        if t in ("list", "tuple", "set", "frozenset"):
            items = [self.build(item) for count, item in node["runs"] for _ in range(count)]
            if t in ("set", "frozenset"):
                kept = [i if _hashable(i) else repr(i) for i in items]
                return set(kept) if t == "set" else frozenset(kept)
            return items if t == "list" else tuple(items)
        if t == "dict":
            out = {}
            for count, (key, value) in node["runs"]:
                for _ in range(count):
                    k = self.build(key)
                    out[k if _hashable(k) else repr(k)] = self.build(value)
            return out
        return self.build_object(node)

    def build_object(self, node: dict[str, Any]) -> Any:
        """A recorded dict subclass of the standard library (the heartbeat's task_counts, a
        Counter) as that type, filled until it pickles to about its recorded size: each codec
        then does with it what it does in a cluster (msgpack, distributed's, packs a dict
        subclass as a map; fastser pickles it to keep its type). Anything else: an Opaque."""
        module, _, name = node.get("type", "").partition(":")
        size = node.get("pickled", 64)
        cls = getattr(importlib.import_module(module), name, None) \
            if module in ("collections", "builtins") else None
        if isinstance(cls, type) and issubclass(cls, dict):
            try:
                out = cls()
            except TypeError:
                out = None
            if out is not None:
                while pickled_size(out) < size:
                    out[text(7, self.next())] = self.next()
                return out
        return Opaque(bytes(max(0, size - 64)))

    def build_ndarray(self, node: dict[str, Any]) -> Any:
        import numpy as np
        dtype = np.dtype(node["dtype"])
        if dtype.kind == "O":
            return np.array([text(8, i) for i in range(int(np.prod(node["shape"])))],
                            dtype=object).reshape(node["shape"])
        return np.ones(node["shape"], dtype=dtype)

    def build_DataFrame(self, node: dict[str, Any]) -> Any:
        import pandas as pd
        rows = node["rows"]
        return pd.DataFrame({f"c{i}": self.column(dtype, rows)
                             for i, dtype in enumerate(node["dtypes"])})

    def build_Series(self, node: dict[str, Any]) -> Any:
        import pandas as pd
        return pd.Series(self.column(node["dtype"], node["rows"]))

    def column(self, dtype: str, rows: int) -> Any:
        import numpy as np
        import pandas as pd
        if dtype in ("object", "string", "str") or dtype.startswith("string"):
            names = np.array(["Alice", "Bob", "Charlie", "Dan", "Edith", "Frank"], dtype=object)
            return pd.array(names[np.arange(rows) % len(names)],
                            dtype=dtype if dtype != "str" else "string")
        try:
            return np.arange(rows).astype(np.dtype(dtype))
        except TypeError:
            return pd.array(np.arange(rows)).astype(dtype)

    def wrap(self, kind: str, data: Any) -> Any:
        if self.codec == "plain":
            return data
        from distributed.protocol.serialize import Serialize, ToPickle
        return Serialize(data) if kind == "Serialize" else ToPickle(data)

    def build_Serialize(self, node: dict[str, Any]) -> Any:
        return self.wrap("Serialize", self.build(node["data"]))

    def build_ToPickle(self, node: dict[str, Any]) -> Any:
        return self.wrap("ToPickle", self.build(node["data"]))

    def build_Serialized(self, node: dict[str, Any]) -> Any:
        array = node.get("ndarray")
        data: Any = (self.build_ndarray(array) if array is not None else
                     bytes(sum(node["frames"])))
        if self.codec == "plain":
            return data
        # As the scheduler of each cluster keeps a payload: distributed's Serialized with
        # distributed's header on tcp://, with fastser's (FastserSerialized) on fastser://.
        if self.codec == "fastser":
            import fastser
            try:
                from fastser.dask.bridge import FastserSerialized
            except ImportError:  # a build from before the layered package (bench.sh forms)
                from fastser._dask_bridge import FastserSerialized  # type: ignore[no-redef]
            return FastserSerialized(*fastser.serialize(data))
        from distributed.protocol.serialize import Serialized, serialize
        return Serialized(*serialize(data))

    def build_Pickled(self, node: dict[str, Any]) -> Any:
        data = Opaque(bytes(max(0, node["header"] - 64)))
        if self.codec == "plain":
            return data
        from distributed.protocol.serialize import Pickled
        return Pickled({"pickled-obj": pickle.dumps(data, protocol=5)}, [])

    def build_TaskRef(self, node: dict[str, Any]) -> Any:
        from dask._task_spec import TaskRef
        return TaskRef(self.key(node["key"]))

    def build_Alias(self, node: dict[str, Any]) -> Any:
        from dask._task_spec import Alias
        return Alias(self.key(node["key"]), self.key(node["target"]))

    def build_DataNode(self, node: dict[str, Any]) -> Any:
        from dask._task_spec import DataNode
        return DataNode(self.key(node["key"]), self.build(node["value"]))

    def build_Task(self, node: dict[str, Any]) -> Any:
        from dask._task_spec import Task
        return Task(self.key(node["key"]), function(node["func"]),
                    *[self.build(a) for a in node["args"]],
                    **{k: self.build(v) for k, v in node["kwargs"]})

    def key(self, node: dict[str, Any]) -> Any:
        if node["t"] in ("TaskRef", "Alias"):
            return self.key(node["key"])
        value = self.build(node)
        return value if _hashable(value) else repr(value)


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


def build(node: dict[str, Any], codec: str) -> Any:
    """A message of shape `node`, as handed to a comm of `codec` ("distributed",
    "fastser": distributed's wrappers, the scheduler's kept payloads as each codec keeps
    them; "plain": every wrapper opened)."""
    return Builder(codec).build(node)
