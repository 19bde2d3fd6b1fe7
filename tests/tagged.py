"""The conformance corpus (tests/conformance/): its cases, and its type-tagged JSON values
both ways. Shared by tests/test_conformance.py and tests/conformance/make_corpus.py; the
scheme is described in tests/conformance/README.md.

A tagged value is JSON null, true or false, or an object with exactly one key, the tag:
"int" (decimal str), "float" (float.hex str), "str", "bytes" / "bytearray" / "memoryview"
(hex str, or [hex, n]: that hex repeated n times), "list" / "tuple" / "set" / "frozenset"
(array of tagged), "dict" (array of [key, value] pairs, in order), "serialized" / "pickled"
({"header": tagged dict, "frames": [tagged bytes, ...]}), and, for opened payloads only,
"ndarray" and "array.array".
"""

import array
import json
import pathlib
from typing import Any, TypedDict

from fastser import Pickled, Serialized

CONFORMANCE = pathlib.Path(__file__).resolve().parent / "conformance"
CASES_FILE = CONFORMANCE / "cases.json"
FRAMES_DIR = CONFORMANCE / "frames"
BYTES_TAGS = ("bytes", "bytearray", "memoryview")
ITEM_TAGS = ("list", "tuple", "set", "frozenset")


class Case(TypedDict, total=False):
    name: str  # also the frames file: frames/<name>.bin
    construct: str  # the docs/wire-format.md row (or other construct) the case is about
    description: str
    options: dict[str, Any]  # dumps keywords that wrote the frames (encoded cases)
    value: Any  # tagged: loads(frames, deserialize=False)
    opened: Any  # tagged: loads(frames), when it differs from value
    opened_refused: str  # loads(frames) raises this fastser exception class
    written: bool  # False: frames hand-built (a form the decoder reads, dumps never writes)
    refused: str  # loads(unpack_frames(file), deserialize=False) raises this class


def load_cases() -> list[Case]:
    with CASES_FILE.open(encoding="utf-8") as file:
        cases: list[Case] = json.load(file)["cases"]
    return cases


def frames_file(case: Case) -> pathlib.Path:
    return FRAMES_DIR / f"{case['name']}.bin"


def is_encoded(case: Case) -> bool:
    """Whether make_corpus writes the case's frames with dumps (else they are hand-built)."""
    return "refused" not in case and case.get("written", True)


def bytes_of_tag(data: Any) -> bytes:
    """The bytes of a bytes-like tag's data: hex, or [hex, n]."""
    if isinstance(data, list):
        pattern, times = data
        return bytes.fromhex(str(pattern)) * int(times)
    return bytes.fromhex(str(data))


def value_of(tagged: Any) -> Any:
    """The Python value of a tagged message value (no "ndarray"/"array.array": those are
    only ever what a payload opens to)."""
    if tagged is None or tagged is True or tagged is False:
        return tagged
    if not isinstance(tagged, dict) or len(tagged) != 1:
        raise ValueError(f"not a tagged value: {tagged!r}")
    [(tag, data)] = tagged.items()
    if tag == "int":
        return int(data)
    if tag == "float":
        return float.fromhex(data)
    if tag == "str":
        if not isinstance(data, str):
            raise ValueError(f"not a str: {data!r}")
        return data
    if tag == "bytes":
        return bytes_of_tag(data)
    if tag == "bytearray":
        return bytearray(bytes_of_tag(data))
    if tag == "memoryview":
        return memoryview(bytes_of_tag(data))
    if tag in ITEM_TAGS:
        items = [value_of(item) for item in data]
        return {"list": list, "tuple": tuple, "set": set, "frozenset": frozenset}[tag](items)
    if tag == "dict":
        return {value_of(key): value_of(value) for key, value in data}
    if tag == "serialized" or tag == "pickled":
        header = value_of(data["header"])
        frames = [value_of(frame) for frame in data["frames"]]
        return Serialized(header, frames) if tag == "serialized" else Pickled(header, frames)
    raise ValueError(f"unknown tag {tag!r}")


def tagged_of(value: Any) -> Any:
    """The tagged form of a received value, by exact type (a subclass, or a type the
    scheme has no tag for, raises TypeError): what a test compares with a case."""
    t = type(value)
    if value is None or t is bool:
        return value
    if t is int:
        return {"int": str(value)}
    if t is float:
        return {"float": value.hex()}
    if t is str:
        return {"str": value}
    if t is bytes or t is bytearray:
        return {t.__name__: value.hex()}
    if t is memoryview:
        if value.format != "B" or value.ndim != 1:
            raise TypeError(f"a memoryview of format {value.format!r}, {value.ndim} dims")
        return {"memoryview": value.hex()}
    if t is list or t is tuple or t is set or t is frozenset:
        return {t.__name__: [tagged_of(item) for item in value]}
    if t is dict:
        return {"dict": [[tagged_of(key), tagged_of(item)] for key, item in value.items()]}
    if t is Serialized or t is Pickled:
        # A frame is compared by its bytes: its type (bytes, a view of a receive buffer) is
        # the transport's.
        return {"serialized" if t is Serialized else "pickled": {
            "header": tagged_of(value.header),
            "frames": [{"bytes": memoryview(frame).cast("B").hex()} for frame in value.frames]}}
    if t is array.array:
        return {"array.array": {"typecode": value.typecode, "data": value.tobytes().hex()}}
    if t.__module__ == "numpy" and t.__name__ == "ndarray":
        order = "F" if value.flags.f_contiguous and not value.flags.c_contiguous else "C"
        return {"ndarray": {"dtype": value.dtype.descr if value.dtype.names else value.dtype.str,
                            "shape": list(value.shape), "order": order,
                            "data": {"bytes": value.tobytes(order=order).hex()}}}
    raise TypeError(f"no tag for a {t.__module__}.{t.__qualname__}")


def canonical(tagged: Any) -> Any:
    """`tagged` in one form per value, for comparison: byte tags as plain hex, floats as
    Python's float.hex writes them, set items sorted, ndarray dtypes as JSON has them
    (lists, not tuples)."""
    if not isinstance(tagged, dict):
        return tagged
    [(tag, data)] = tagged.items()
    if tag == "float":
        return {tag: float.fromhex(data).hex()}
    if tag in BYTES_TAGS:
        return {tag: bytes_of_tag(data).hex()}
    if tag == "list" or tag == "tuple":
        return {tag: [canonical(item) for item in data]}
    if tag == "set" or tag == "frozenset":
        return {tag: sorted((canonical(item) for item in data), key=json.dumps)}
    if tag == "dict":
        return {tag: [[canonical(key), canonical(value)] for key, value in data]}
    if tag == "serialized" or tag == "pickled":
        return {tag: {"header": canonical(data["header"]),
                      "frames": [canonical(frame) for frame in data["frames"]]}}
    if tag == "ndarray":
        return {tag: {**json.loads(json.dumps(data)), "data": canonical(data["data"])}}
    return tagged

