"""The messages and contestants of benchmarks/suite.py, built inside a worker process
(benchmarks/harness.py).

Each workload is written once as a template in which `Payload(x)` marks what distributed
would wrap in `Serialize`; `forms()` derives from it the message each contestant sends:
fastser (`fastser.Serialize`), distributed (`distributed.protocol.to_serialize`), pickle
(the bare object) and the header-only "floor" (every payload, including raw bytes of
64 KiB or more, replaced by a small int). Payload objects (arrays, large bytes) are shared
by all forms, so the 100 MiB array of `arrays` exists once per worker.

Loads are timed on frames laid out as each codec's own transport hands them over, built
once at set-up (see `received_*`), never on the sender's frames: a loads that returns
views of the sender's memory would hide the copies a receiver really makes.
"""

import functools
import gc
import operator
import pickle
import struct
import sys
from collections.abc import Callable
from typing import Any, Optional

import msgpack
import numpy as np

import fastser

KiB = 2**10
MiB = 2**20
LARGE_BYTES = 64 * KiB  # fastser sends bytes-likes of this size or more as their own frames
N_TASKS = 5000  # update-graph

# name -> one line shown in the report
WORKLOADS = {
    "control-message": "one control message (task-finished, 10 keys)",
    "batch-of-1000": "batch of 1,000 control messages",
    "arrays": "Serialize(1 MiB array) + Serialize(100 MiB array)",
    "update-graph": f"update-graph, {N_TASKS:,} Serialize(task) + dependencies",
    "raw-bytes": "100 raw bytes of 64 KiB nested in lists",
    "extract-serialize": "extract_serialize(11*[10*[2*[5*[3 MB bytes]]]])",
}

Fn = Callable[[], Any]


class Payload:
    """Template marker: what distributed would wrap in Serialize."""

    __slots__ = ("data",)

    def __init__(self, data: Any) -> None:
        self.data = data


def convert(obj: Any, wrap: Callable[[Any], Any], floor: bool = False) -> Any:
    """A copy of the template `obj` with each Payload replaced by wrap(payload.data), and,
    for the floor, each bytes-like of LARGE_BYTES or more by a small int too."""
    kind = type(obj)
    if kind is Payload:
        return wrap(obj.data)
    if kind is dict:
        return {key: convert(value, wrap, floor) for key, value in obj.items()}
    if kind is list:
        return [convert(item, wrap, floor) for item in obj]
    if kind is tuple:
        return tuple(convert(item, wrap, floor) for item in obj)
    if floor and kind in (bytes, bytearray, memoryview) and memoryview(obj).nbytes >= LARGE_BYTES:
        return 1
    return obj


def forms(template: Any, anchors: bool) -> dict[str, Any]:
    """The message of each codec (fastser's and pickle's only, without the anchors)."""
    out = {"fastser": convert(template, fastser.Serialize),
           "pickle": convert(template, lambda data: data)}
    if anchors:
        from distributed.protocol import to_serialize

        out["distributed"] = convert(template, to_serialize)
        out["floor"] = convert(template, lambda data: 1, floor=True)
    return out


# --- templates ----------------------------------------------------------------------

def control_message(i: int) -> dict[str, Any]:
    """What a worker tells the scheduler when a task finished (distributed's
    'task-finished'), about ten keys of small values."""
    return {
        "op": "task-finished",
        "key": (f"inc-{i:08x}", i % 97),
        "status": "OK",
        "nbytes": 80_000 + i,
        "type": "numpy.ndarray",
        "typename": "numpy.ndarray",
        "metadata": {"shape": [100, 100], "dtype": "float64"},
        "thread": 140_229_857_920_768,
        "startstops": [
            {"action": "transfer", "start": 1_700_000_000.125 + i, "stop": 1_700_000_000.25 + i,
             "source": "tcp://10.0.0.2:40001"},
            {"action": "compute", "start": 1_700_000_000.5 + i, "stop": 1_700_000_001.0 + i},
        ],
        "worker": "tcp://10.0.0.1:40000",
        "stimulus_id": f"compute-task-{i}-1700000000.0",
    }


def update_graph() -> dict[str, Any]:
    """A client's update-graph: N_TASKS tasks, half (func, key, i) tuples and half
    functools.partial objects, each a Payload, plus their dependencies."""
    tasks: dict[str, Any] = {}
    dependencies: dict[str, list[str]] = {}
    for i in range(N_TASKS):
        key = f"inc-{i}"
        if i % 2:
            tasks[key] = Payload(functools.partial(operator.mul, i))
            dependencies[key] = [f"inc-{i - 1}"]
        else:
            tasks[key] = Payload((operator.add, f"x-{i}", i))
            dependencies[key] = [f"x-{i}"]
    return {"op": "update-graph", "tasks": tasks, "dependencies": dependencies,
            "keys": list(tasks), "stimulus_id": "update-graph-1700000000.0"}


def arrays_message() -> dict[str, Any]:
    small = np.random.default_rng(0).random(MiB // 8)  # float64: 1 MiB
    large = np.ones(100 * MiB // 8)  # 100 MiB, pages touched
    return {"op": "get-data-response", "status": "OK",
            "data": {("x", 0): Payload(small), ("x", 1): Payload(large)},
            "keys": [("x", 0), ("x", 1)]}


def raw_bytes_message() -> dict[str, Any]:
    blobs = [bytes([i]) * (64 * KiB) for i in range(100)]
    return {"op": "raw-data", "key": "blobs",
            "data": [[blobs[10 * j + k] for k in range(10)] for j in range(10)]}


def seed_message() -> Any:
    return 11 * [10 * [2 * [5 * [b"x" * 3_000_000]]]]


# --- received frames ----------------------------------------------------------------

def byte_view(frame: Any) -> memoryview:
    view = memoryview(frame)
    return view if view.format == "B" and view.ndim == 1 else view.cast("B")


def received_one_buffer(frames: list[Any]) -> list[memoryview]:
    """Frames as fastser's readers hand them over (fastser.sock.recv_msg, FrameReader):
    writeable slices of one buffer the whole message was received into, each at a 16-byte
    aligned offset, so the pieces of a split payload are adjacent. Made by fastser's own
    FrameReader from the framed stream. Also used for pickle's data + out-of-band buffers."""
    views = [byte_view(frame) for frame in frames]  # pickle's PickleBuffers too
    [received] = fastser.FrameReader().feed(fastser.pack_frames(views))
    return received


def received_distributed_tcp(frames: list[Any]) -> list[Any]:
    """Frames as distributed's TCP comm reads them (TCP.write/TCP.read of the installed
    version): the prelude, header and small frames in one host array, then each large
    uncompressed buffer (each piece of a split one too) in a host array of its own.
    Without that private helper (another distributed version), every frame gets its own."""
    from distributed.protocol.utils import host_array, unpack_frames

    try:
        from distributed.comm.tcp import _add_frames_header
    except ImportError:
        copies = []
        for frame in frames:
            view = byte_view(frame)
            copies.append(host_array(view.nbytes))
            copies[-1][:] = view
        return copies
    stream, _, _ = _add_frames_header(list(frames))
    wire = memoryview(b"".join(stream))
    (nosplit,) = struct.unpack_from("Q", wire)
    first = host_array(nosplit)
    first[:] = wire[8:8 + nosplit]
    received, missing = unpack_frames(first, partial=True)
    pos = 8 + nosplit
    for length in missing:
        buffer = host_array(length)
        buffer[:] = wire[pos:pos + length]
        received.append(buffer)
        pos += length
    return received


# --- zero-copy checks ---------------------------------------------------------------

def as_array(buffer: Any) -> np.ndarray:
    return buffer if isinstance(buffer, np.ndarray) else np.asarray(memoryview(buffer))


def payloads_in(obj: Any, found: list[Any]) -> list[Any]:
    """The arrays and large bytes-likes in a (decoded) message, in walk order."""
    if isinstance(obj, dict):
        for value in obj.values():
            payloads_in(value, found)
    elif isinstance(obj, (list, tuple)):
        for item in obj:
            payloads_in(item, found)
    elif isinstance(obj, np.ndarray) or (isinstance(obj, (bytes, bytearray, memoryview))
                                         and memoryview(obj).nbytes >= LARGE_BYTES):
        found.append(obj)
    return found


def copied_bytes(payloads: list[Any], frames: list[Any]) -> int:
    """Bytes of `payloads` that no frame aliases (np.shares_memory)."""
    arrays = [as_array(frame) for frame in frames]
    copied = 0
    for payload in payloads:
        target = as_array(payload)
        aliased = sum(min(frame.nbytes, target.nbytes) for frame in arrays
                      if np.shares_memory(frame, target))
        copied += max(0, target.nbytes - aliased)
    return copied


# --- contestants --------------------------------------------------------------------

class Built:
    """What a worker holds for one workload: per contestant, its timed functions
    ("dumps", "loads", or "extract"), and facts found at set-up."""

    def __init__(self) -> None:
        self.fns: dict[str, dict[str, Fn]] = {}
        self.info: dict[str, Any] = {}
        self.keep: list[Any] = []  # keeps the template's payloads alive


# The handshake's context of two processes on one host: no compression, pickle protocol 5.
CONTEXT = {"compression": None, "python": tuple(sys.version_info)[:3], "pickle-protocol": 5}


def distributed_codec(serializers: Optional[tuple[str, ...]] = ("dask", "pickle", "error"),
                      deserialize: bool = True
                      ) -> tuple[Callable[[Any], list[Any]], Callable[[list[Any]], Any]]:
    """distributed.protocol.dumps/loads with the arguments its TCP comm passes
    (distributed/comm/tcp.py TCP.write -> comm/utils.py to_frames; TCP.read -> from_frames):
    `serializers` are what the caller of Comm.write names, the same read back (the suite's
    anchors name them; the recorded traffic passes None, distributed's default), and a
    scheduler's comm reads with deserialize=False."""
    from distributed.comm.tcp import TCP
    from distributed.protocol import dumps, loads

    def dist_dumps(msg: Any) -> list[Any]:
        return dumps(msg, serializers=serializers, on_error="message", context=CONTEXT,
                     frame_split_size=TCP.max_shard_size)

    def dist_loads(frames: list[Any]) -> Any:
        return loads(frames, deserialize=deserialize, deserializers=serializers)

    return dist_dumps, dist_loads


def pickle_dumps(msg: Any) -> list[Any]:
    buffers: list[Any] = []
    data = pickle.dumps(msg, protocol=5, buffer_callback=buffers.append)
    return [data, *buffers]


def pickle_loads(frames: list[Any]) -> Any:
    return pickle.loads(frames[0], buffers=frames[1:])


def add_message_contestants(built: Built, template: Any, anchors: bool,
                            check_copies: bool) -> None:
    msgs = forms(template, anchors)
    received: dict[str, list[Any]] = {}  # per codec with payload frames: what loads gets

    def add(name: str, dumps: Fn, loads: Fn) -> None:
        built.fns[name] = {"dumps": dumps, "loads": loads}

    fs_msg = msgs["fastser"]
    fs_frames = received["fastser"] = received_one_buffer(fastser.dumps(fs_msg))
    add("fastser", lambda: fastser.dumps(fs_msg), lambda: fastser.loads(fs_frames))
    if anchors:
        import msgspec

        floor_msg = msgs["floor"]
        floor_bytes = msgpack.packb(floor_msg, use_bin_type=True)
        add("floor", lambda: msgpack.packb(floor_msg, use_bin_type=True),
            lambda: msgpack.unpackb(floor_bytes, raw=False, use_list=False, strict_map_key=False))
        spec_bytes = msgspec.msgpack.encode(floor_msg)
        add("msgspec", lambda: msgspec.msgpack.encode(floor_msg),
            lambda: msgspec.msgpack.decode(spec_bytes))
        built.info["floor header bytes"] = len(floor_bytes)

        pk_msg = msgs["pickle"]
        pk_frames = received["pickle5"] = received_one_buffer(pickle_dumps(pk_msg))
        add("pickle5", lambda: pickle_dumps(pk_msg), lambda: pickle_loads(pk_frames))

        dist_dumps, dist_loads = distributed_codec()
        dist_msg = msgs["distributed"]
        dist_frames = received["distributed"] = received_distributed_tcp(dist_dumps(dist_msg))
        add("distributed", lambda: dist_dumps(dist_msg), lambda: dist_loads(dist_frames))

    frames_info: dict[str, Any] = {}
    for name, frames in received.items():
        sent = built.fns[name]["dumps"]()
        facts: dict[str, Any] = {"frames": len(sent),
                                 "bytes": sum(byte_view(f).nbytes for f in sent)}
        if check_copies:
            originals = payloads_in(msgs["pickle"], [])
            result = payloads_in(built.fns[name]["loads"](), [])
            facts["payloads"] = len(originals)
            facts["dumps copied bytes"] = copied_bytes(originals, sent)
            facts["loads copied bytes"] = (
                copied_bytes(result, frames) if len(result) == len(originals) else
                f"{len(result)} payloads found in the result, {len(originals)} sent")
        frames_info[name] = facts
        del sent
    built.info["frames"] = frames_info


def build(workload: str, anchors: bool) -> Built:
    """Build workload `workload`: fastser always; the anchors too when `anchors`."""
    built = Built()
    if workload == "control-message":
        add_message_contestants(built, control_message(7), anchors, False)
    elif workload == "batch-of-1000":
        add_message_contestants(built, [control_message(i) for i in range(1000)], anchors, False)
    elif workload == "arrays":
        template = arrays_message()
        built.keep.append(template)
        add_message_contestants(built, template, anchors, True)
    elif workload == "update-graph":
        template = update_graph()
        add_message_contestants(built, template, anchors, False)
        if anchors:
            add_pickle_per_task(built, template)
    elif workload == "raw-bytes":
        add_message_contestants(built, raw_bytes_message(), anchors, True)
    elif workload == "extract-serialize":
        seed = seed_message()
        built.fns["fastser"] = {"extract": lambda: fastser.extract_serialize(seed)}
        if anchors:
            import distributed
            import distributed.protocol.serialize as dist_serialize

            found = getattr(dist_serialize, "extract_serialize", None)
            if found is None:
                built.info["distributed"] = (
                    f"distributed {distributed.__version__} has no "
                    "distributed.protocol.serialize.extract_serialize: skipped")
            else:
                built.fns["distributed"] = {"extract": lambda: found(seed)}
    else:
        raise ValueError(f"unknown workload {workload!r}")
    gc.collect()
    return built


def add_pickle_per_task(built: Built, template: dict[str, Any]) -> None:
    """One pickle.dumps(task, protocol=5) per task: the part of a per-payload cost that
    pickling itself takes (the rest is the codec's fixed cost per payload)."""
    tasks = [payload.data for payload in template["tasks"].values()]
    pickled = [pickle.dumps(task, protocol=5) for task in tasks]
    built.fns["pickle5/task"] = {
        "dumps": lambda: [pickle.dumps(task, protocol=5) for task in tasks],
        "loads": lambda: [pickle.loads(data) for data in pickled]}
    built.info["tasks"] = len(tasks)


def check_roundtrip(workload: str, built: Built) -> Optional[str]:
    """A cheap check that every contestant's loads gives the message back (None if so)."""
    for name, fns in built.fns.items():
        if "loads" not in fns or name in ("floor", "msgspec", "pickle5/task"):
            continue
        result = fns["loads"]()
        if workload in ("control-message", "batch-of-1000") and result is None:
            return f"{name}: loads returned None"
        if workload == "update-graph" and len(result["tasks"]) != N_TASKS:
            return f"{name}: {len(result['tasks'])} tasks back"
        if workload == "arrays":
            arr = result["data"][("x", 1)]
            if not (isinstance(arr, np.ndarray) and arr.shape == (100 * MiB // 8,)
                    and arr[0] == 1.0 and arr[-1] == 1.0):
                return f"{name}: the 100 MiB array did not come back"
        if workload == "raw-bytes" and bytes(result["data"][9][9]) != bytes([99]) * (64 * KiB):
            return f"{name}: the last bytes did not come back"
    return None
