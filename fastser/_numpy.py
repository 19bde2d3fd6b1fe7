"""numpy arrays through the "dispatch" family. Imported only when an array is serialized or a
numpy header is received (see _dispatch.register_numpy).

Not compiled: its types come from numpy, which is not a build dependency, and its cost per
array is numpy's own. Contiguous arrays leave as one frame that aliases the array; arrays
come back as views of the received frame. Dtypes travel as .npy descriptors (never pickled).
"""

from typing import Any

import numpy as np
from numpy.lib.format import descr_to_dtype, dtype_to_descr

from ._dispatch import single_frame
from ._errors import DeserializationError
from ._registry import register_serialization
from ._types import Frame, Header
from ._wire import OUT_OF_BAND_BYTES


def ndarray_dumps(x: "np.ndarray[Any, Any]") -> tuple[Header, list[Frame]]:
    if x.dtype.hasobject:
        raise NotImplementedError("object arrays go to the next family")
    if x.flags.c_contiguous:
        order = "C"
        flat = x.reshape(-1)
    elif x.flags.f_contiguous:
        order = "F"
        flat = x.reshape(-1, order="F")
    else:
        order = "C"
        flat = np.ascontiguousarray(x).reshape(-1)  # the one copy of a strided array
    header: Header = {
        "dtype": _wire_descr(x.dtype),
        "shape": list(x.shape),
        "order": order,
        "writeable": bool(x.flags.writeable),
    }
    # A uint8 view of the contiguous data: no copy, and datetime dtypes, which refuse the
    # buffer protocol, still give a frame.
    return header, [flat.view(np.uint8).data]


def ndarray_loads(header: Header, frames: list[Frame]) -> "np.ndarray[Any, Any]":
    frame = single_frame(frames, "numpy.ndarray")
    dtype = _wire_to_dtype(header.get("dtype"))
    shape: Any = header.get("shape")
    order = header.get("order")
    count = 1
    good = type(shape) is list and (order == "C" or order == "F")
    if good:
        for n in shape:  # one pass: validates and counts (this runs per array received)
            if type(n) is not int or n < 0:
                good = False
                break
            count *= n
    if not good:
        raise DeserializationError(f"bad numpy header: shape {shape!r}, order {order!r}")
    nbytes = frame.nbytes if type(frame) is memoryview else len(frame)
    if count * dtype.itemsize != nbytes:
        raise DeserializationError(
            f"numpy frame of {nbytes} bytes does not hold shape {shape} of {dtype}")
    # frombuffer reads the frame's bytes whatever its format (one call: this runs per array).
    flat = np.frombuffer(frame, dtype=dtype) if nbytes else np.empty(0, dtype)
    x = flat.reshape(shape, order=order) if len(shape) != 1 else flat
    if header.get("writeable") is True:
        if nbytes < OUT_OF_BAND_BYTES and not x.flags.writeable:
            # Small frames were inlined into the header, which arrives read-only; one small
            # copy keeps a writeable array writeable. Large read-only frames stay views.
            x = x.copy(order="K")
    else:
        x.flags.writeable = False
    return x


# numpy's descriptor functions are Python code (~5 µs a call); plain dtypes, whose
# descriptor is a str, are looked up here instead. Bounded: received descriptors are input.
_MAX_CACHED = 256
_wire_descrs: dict["np.dtype[Any]", str] = {}
_dtypes: dict[str, "np.dtype[Any]"] = {}


def _wire_descr(dtype: "np.dtype[Any]") -> Any:
    cached = _wire_descrs.get(dtype)
    if cached is not None:
        return cached
    descr = _descr_to_wire(dtype_to_descr(dtype))
    if type(descr) is str and len(_wire_descrs) < _MAX_CACHED:
        _wire_descrs[dtype] = descr
    return descr


def _descr_to_wire(descr: Any) -> Any:
    # msgpack turns tuples into lists; the descriptor keeps its shape either way.
    if isinstance(descr, (list, tuple)):
        return [_descr_to_wire(item) for item in descr]
    return descr


def _wire_to_descr(descr: Any, depth: int = 0) -> Any:
    if depth > 32:
        raise DeserializationError("numpy dtype descriptor nested too deeply")
    if type(descr) is str:
        return descr
    if type(descr) is list:
        fields = []
        for field in descr:
            if type(field) is not list or not 2 <= len(field) <= 3:
                raise DeserializationError(f"bad numpy dtype field {field!r}")
            name, sub = field[0], _wire_to_descr(field[1], depth + 1)
            name = tuple(name) if type(name) is list else name
            fields.append((name, sub) if len(field) == 2 else (name, sub, tuple(field[2])))
        return fields
    raise DeserializationError(f"bad numpy dtype descriptor {descr!r}")


def _wire_to_dtype(descr: Any) -> "np.dtype[Any]":
    if type(descr) is str:
        cached = _dtypes.get(descr)
        if cached is not None:
            return cached
    dtype = _parse_dtype(descr)
    if type(descr) is str and len(_dtypes) < _MAX_CACHED:
        _dtypes[descr] = dtype
    return dtype


def _parse_dtype(descr: Any) -> "np.dtype[Any]":
    try:
        dtype = descr_to_dtype(_wire_to_descr(descr))
    except DeserializationError:
        raise
    except Exception as exc:
        raise DeserializationError(f"bad numpy dtype descriptor {descr!r}: {exc}") from exc
    if dtype.hasobject:
        # Object arrays would be built from raw pointers: never accepted from the wire.
        raise DeserializationError("numpy object dtypes are refused by the dispatch family")
    return dtype


def register() -> None:
    register_serialization(np.ndarray, ndarray_dumps, ndarray_loads, name="numpy.ndarray")
