"""numpy arrays through the "dispatch" family. Imported only when an array is serialized or a
numpy header is received (see families.dispatch.register_numpy).

Compiled, with numpy seen as Any: numpy is not a build dependency, so where a wheel is built
mypy cannot read its types. Interpreted, the bookkeeping around each array cost more than
numpy's own calls (the suite's arrays loads); compiled, what is left is mostly numpy's.
Contiguous arrays leave as one frame that aliases the array; arrays come back as views of the
received frame. Dtypes travel as .npy descriptors (never pickled).
"""

import importlib
from typing import Any, Final, NoReturn

from fastser.errors import DeserializationError, chained, shown
from fastser.families.registry import REGISTRY, register_serialization, single_frame
from fastser.frame_types import Frame, Header, OUT_OF_BAND_BYTES, nbytes
from fastser.headers import (HEADER_DTYPE, HEADER_ORDER, HEADER_SHAPE, HEADER_WRITEABLE,
                             NUMPY_TYPE)

np: Final[Any] = importlib.import_module("numpy")
npy_format: Final[Any] = importlib.import_module("numpy.lib.format")
frombuffer: Final[Any] = np.frombuffer  # bound once: a method lookup on the module per array
UINT8: Final[Any] = np.uint8


def ndarray_dumps(x: Any) -> tuple[Header, list[Frame]]:
    # Each attribute read once: numpy builds a new flags object at every .flags.
    dtype = x.dtype
    if dtype.hasobject:
        raise NotImplementedError("object arrays go to the next family")
    flags = x.flags
    shape = x.shape
    if flags.c_contiguous:
        order = "C"
        flat = x if len(shape) == 1 else x.reshape(-1)
    elif flags.f_contiguous:
        order = "F"
        flat = x.reshape(-1, order="F")
    else:
        order = "C"
        flat = np.ascontiguousarray(x).reshape(-1)  # the one copy of a strided array
    header: Header = {
        HEADER_DTYPE: _wire_descr(dtype),
        HEADER_SHAPE: list(shape),
        HEADER_ORDER: order,
        HEADER_WRITEABLE: bool(flags.writeable),
    }
    # A uint8 view of the contiguous data: no copy, and datetime dtypes, which refuse the
    # buffer protocol, still give a frame.
    return header, [flat.view(UINT8).data]


def ndarray_loads(header: Header, frames: list[Frame]) -> Any:
    frame = single_frame(frames, NUMPY_TYPE)
    shape = header.get(HEADER_SHAPE)
    order = header.get(HEADER_ORDER)
    if type(order) is not str or type(shape) is not list:
        bad_layout(shape, order)
    return array_of(header.get(HEADER_DTYPE), shape, order,
                    header.get(HEADER_WRITEABLE) is True, frame)


def short_array(dtype: str, shape: list[Any], order: str, writeable: bool, frame: Frame) -> Any:
    """ndarray_loads of the header a short array record stands for (codec/array_records),
    from its fields, without making the header: the decoder's direct way."""
    return array_of(dtype, shape, order, writeable, frame)


def bad_layout(shape: object, order: object) -> NoReturn:
    raise DeserializationError(
        f"bad numpy header: shape {shown(shape)}, order {shown(order)}")


def array_of(descr: Any, shape: list[Any], order: str, writeable: bool, frame: Frame) -> Any:
    # Typed shape and order (callers check their types): mypyc iterates, compares and
    # multiplies natively, where Any costs a generic call per operation, per array received.
    dtype = _wire_to_dtype(descr)
    count = 1
    # At most numpy's own number of dims: the count below multiplies them all.
    if len(shape) > MAX_DIMS or (order != "C" and order != "F"):
        bad_layout(shape, order)
    for n in shape:  # one pass: validates and counts
        if type(n) is not int:
            bad_layout(shape, order)
        dim: int = n
        if dim < 0:
            bad_layout(shape, order)
        count *= dim
    size = nbytes(frame)
    itemsize: int = dtype.itemsize  # one attribute lookup (a generic one) per array
    if itemsize == 0:
        # numpy makes an array of unsized bytes or str (S0, U0) with items of one char:
        # memory no frame paid for, uninitialised. No sender has one (numpy sizes them).
        if dtype.kind == "S" or dtype.kind == "U":
            raise DeserializationError(f"numpy header of {count} items of unsized {dtype}")
        if count > MAX_ITEMS_OF_NO_SIZE:
            raise DeserializationError(
                f"numpy header of {count} items of no size (more than {MAX_ITEMS_OF_NO_SIZE})")
    if count * itemsize != size:
        raise DeserializationError(
            f"numpy frame of {size} bytes does not hold shape {shape} of {dtype}")
    if size:
        # frombuffer reads the frame's bytes whatever its format (one call: per array).
        flat = frombuffer(frame, dtype)
        x = flat.reshape(shape, order=order) if len(shape) != 1 else flat
    else:
        # No bytes: a dim of 0, or items of no size (V0), whose count no buffer tells.
        x = np.empty(shape, dtype, order=order)
        if x.nbytes:  # a dtype numpy sizes on its own, as it does S0 and U0 (refused above)
            raise DeserializationError(f"numpy made {x.nbytes} bytes of {dtype} from none")
    if writeable:
        if size < OUT_OF_BAND_BYTES and not x.flags.writeable:
            # Small frames were inlined into the header, which arrives read-only; one small
            # copy keeps a writeable array writeable. Large read-only frames stay views.
            x = x.copy(order="K")
    else:
        x.flags.writeable = False
    return x


# numpy's descriptor functions are Python code (~5 µs a call); plain dtypes, whose
# descriptor is a str, are looked up here instead. Bounded: received descriptors are input.
_MAX_CACHED: Final = 256
MAX_DESCR_CHARS: Final = 64
MAX_DIMS: Final = 64  # numpy's NPY_MAXDIMS (numpy 2; 32 before)
# Items of no size (dtype V0) are the one count no frame's size bounds: a hostile header
# could hand the receiver an array of 2**124 of them, for consumers to iterate.
MAX_ITEMS_OF_NO_SIZE: Final = 2**31
_wire_descrs: Final[dict[Any, str]] = {}
_dtypes: Final[dict[str, Any]] = {}


def _wire_descr(dtype: Any) -> Any:
    cached = _wire_descrs.get(dtype)
    if cached is not None:
        return cached
    descr = _descr_to_wire(npy_format.dtype_to_descr(dtype))
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
        # A dtype's .str ("<f8", "<M8[ns]", "|V16") is short and has no comma. numpy also
        # parses "f8,?,..." into a structured dtype: 2 MB of "?," made 1M fields (~215 MB,
        # 3 s), and the cache below then kept such dtypes alive.
        if len(descr) > MAX_DESCR_CHARS or "," in descr:
            raise DeserializationError(f"bad numpy dtype descriptor {descr[:80]!r}")
        return descr
    if type(descr) is list:
        fields = []
        for field in descr:
            if type(field) is not list or not 2 <= len(field) <= 3:
                raise DeserializationError(f"bad numpy dtype field {shown(field)}")
            name, sub = field[0], _wire_to_descr(field[1], depth + 1)
            name = tuple(name) if type(name) is list else name
            fields.append((name, sub) if len(field) == 2 else (name, sub, tuple(field[2])))
        return fields
    raise DeserializationError(f"bad numpy dtype descriptor {shown(descr)}")


def _wire_to_dtype(descr: Any) -> Any:
    if type(descr) is str:
        cached = _dtypes.get(descr)
        if cached is not None:
            return cached
    dtype = _parse_dtype(descr)
    if type(descr) is str and len(_dtypes) < _MAX_CACHED:
        _dtypes[descr] = dtype
    return dtype


def _parse_dtype(descr: Any) -> Any:
    try:
        dtype = npy_format.descr_to_dtype(_wire_to_descr(descr))
    except DeserializationError:
        raise
    except Exception as exc:
        raise chained(DeserializationError(f"bad numpy dtype descriptor {shown(descr)}: {exc}"),
                      exc)
    if dtype.hasobject:
        # Object arrays would be built from raw pointers: never accepted from the wire.
        raise DeserializationError("numpy object dtypes are refused by the dispatch family")
    return dtype


def register() -> None:
    register_serialization(np.ndarray, ndarray_dumps, ndarray_loads, name=NUMPY_TYPE)
    REGISTRY.by_name[NUMPY_TYPE].short_loads = short_array
