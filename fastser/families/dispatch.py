"""The "dispatch" family: per-type functions for bytes-likes and array.array, and the family's
dumps/loads over the registry. Never unpickles anything.
"""

import array
import importlib
from collections.abc import Mapping
from typing import Any, Final, Optional

from fastser.errors import DeserializationError, shown
from fastser.families.registry import (REGISTRY, register_serialization,
                                       register_serialization_family,
                                       register_serialization_lazy, single_frame)
from fastser.frame_types import Frame, Header, byte_view, bytes_of
from fastser.headers import HEADER_TYPE

ARRAY_TYPECODES: Final = frozenset(array.typecodes)


def dispatch_dumps(obj: Any, context: Optional[Mapping[str, Any]]) -> tuple[Header, list[Frame]]:
    entry = REGISTRY.for_type(type(obj))
    if entry is None:
        raise NotImplementedError(f"no dispatch serializer for {type(obj).__qualname__}")
    header, frames = entry.dumps(obj)
    header[HEADER_TYPE] = entry.name
    return header, frames


def dispatch_accepts(obj: Any) -> bool:
    return REGISTRY.for_type(type(obj)) is not None


def dispatch_loads(header: Header, frames: list[Frame]) -> Any:
    name = header.get(HEADER_TYPE)
    if type(name) is not str:
        raise DeserializationError(
            f"a dispatch header needs a str {HEADER_TYPE!r}, got {shown(name)}")
    return REGISTRY.for_name(name).loads(header, frames)


def bytes_dumps(obj: bytes) -> tuple[Header, list[Frame]]:
    return {}, [obj]


def bytes_loads(header: Header, frames: list[Frame]) -> bytes:
    frame = single_frame(frames, "bytes")
    return bytes_of(frame)


def bytearray_dumps(obj: bytearray) -> tuple[Header, list[Frame]]:
    return {}, [obj]


def bytearray_loads(header: Header, frames: list[Frame]) -> bytearray:
    frame = single_frame(frames, "bytearray")
    return frame if type(frame) is bytearray else bytearray(frame)


def memoryview_frame(view: memoryview) -> Frame:
    """The bytes of `view` as one frame: a 1-d byte view of the same memory when contiguous
    (no copy), else a copy in C order."""
    if view.c_contiguous:
        return view if view.format == "B" and view.ndim == 1 else view.cast("B")
    return view.tobytes()


def memoryview_dumps(obj: memoryview) -> tuple[Header, list[Frame]]:
    return {}, [memoryview_frame(obj)]


def memoryview_loads(header: Header, frames: list[Frame]) -> memoryview:
    return byte_view(single_frame(frames, "memoryview"))


def array_dumps(obj: "array.array[Any]") -> tuple[Header, list[Frame]]:
    return {"typecode": obj.typecode}, [memoryview(obj).cast("B")]


def array_loads(header: Header, frames: list[Frame]) -> "array.array[Any]":
    typecode = header.get("typecode")
    if type(typecode) is not str or typecode not in ARRAY_TYPECODES:
        raise DeserializationError(f"bad array.array typecode {shown(typecode)}")
    result = array.array(typecode)
    frame = single_frame(frames, "array.array")
    if memoryview(frame).nbytes % result.itemsize:
        raise DeserializationError(
            f"array.array frame of {memoryview(frame).nbytes} bytes is not a multiple of "
            f"the item size {result.itemsize}")
    result.frombytes(frame)
    return result


def register_numpy() -> None:
    # Imported by name so that neither mypyc nor the import of fastser pulls numpy in.
    importlib.import_module("fastser.families.numpy").register()


def register_builtin_types() -> None:
    register_serialization(bytes, bytes_dumps, bytes_loads, name="bytes")
    register_serialization(bytearray, bytearray_dumps, bytearray_loads, name="bytearray")
    register_serialization(memoryview, memoryview_dumps, memoryview_loads, name="memoryview")
    register_serialization(array.array, array_dumps, array_loads, name="array.array")
    register_serialization_lazy("numpy", register_numpy)
    register_serialization_family("dispatch", dispatch_dumps, dispatch_loads, dispatch_accepts)
