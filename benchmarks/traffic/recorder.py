"""Records the shape of every message a fastser:// comm writes in this process, one JSON
line per message, into $FASTSER_TRAFFIC_DIR/<pid>.jsonl (capture.py sets it; each process
of the cluster imports this module: the workers as a preload, capture.py itself directly).

A line: {"time", "pid", "kind", "local", "peer", "bytes" (written, prelude included),
"frames", "shape"}. Recording costs time in the cluster; capture.py measures shapes, not
speed.
"""

import json
import os
import time
from typing import Any, Optional

import fastser.dask.comm
from fastser.dask.comm import FastserComm

import shapes

OUT: Optional[Any] = None


def out() -> Any:
    global OUT
    if OUT is None:
        folder = os.environ["FASTSER_TRAFFIC_DIR"]
        OUT = open(os.path.join(folder, f"{os.getpid()}.jsonl"), "a", buffering=1 << 20)
    return OUT


def install() -> None:
    original = FastserComm.write

    async def recorded_write(self: Any, msg: Any, serializers: Any = None,
                             on_error: Optional[str] = "message") -> int:
        # The shape first: the write may hand the message's buffers to the stream.
        try:
            line: dict[str, Any] = {"time": time.time(), "pid": os.getpid(),
                                    "kind": shapes.kind(msg), "shape": shapes.shape(msg),
                                    "local": self.local_address, "peer": self.peer_address,
                                    "serializers": (None if serializers is None
                                                    else list(serializers))}
        except Exception as exc:  # a shape that fails is recorded as such, never raised
            line = {"time": time.time(), "pid": os.getpid(), "kind": "unrecorded",
                    "error": repr(exc)}
        written = await original(self, msg, serializers, on_error)
        line["bytes"] = written
        out().write(json.dumps(line) + "\n")
        return written

    FastserComm.write = recorded_write  # type: ignore[method-assign]


def flush() -> None:
    if OUT is not None:
        OUT.flush()


def dask_setup(worker: Any) -> None:
    """distributed calls this in each worker process that preloads this module."""
    import atexit
    atexit.register(flush)


def dask_teardown(worker: Any) -> None:
    flush()


if not getattr(fastser.dask.comm, "traffic_recorder_installed", False):
    install()
    fastser.dask.comm.traffic_recorder_installed = True  # type: ignore[attr-defined]
