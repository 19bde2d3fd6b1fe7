"""What the task tests share: hand-made headers, the decoded header of frames, and equality
that tells a partial and a task's types apart."""

import functools
import math
from typing import Any

import msgpack

from fastser._wire import EXT_LIST_MARK, EXT_TASK_SERIALIZED_MARK, WIRE_VERSION

TASK_HEADER = {"serializer": "pickle", "form": "task"}
SAFE = ("dispatch", "msgpack", "error")


def body(frames: list[Any]) -> Any:
    return msgpack.unpackb(bytes(frames[0])[1:], raw=False, strict_map_key=False)


def listed(array: list[Any]) -> list[Any]:
    """The items of a list's array: a list led by a payload carries the list mark first (a
    payload may read back as -32, a tuple's lead; wire version 9)."""
    assert array[0] == mark(EXT_LIST_MARK)
    return array[1:]


def header_of(obj: Any) -> list[Any]:
    """frames of a hand-made header holding `obj` (hostile input)."""
    return [bytes([WIRE_VERSION]) + msgpack.packb(obj, use_bin_type=True)]


def mark(code: int = EXT_TASK_SERIALIZED_MARK) -> msgpack.ExtType:
    return msgpack.ExtType(code, b"")


def same(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if type(a) is functools.partial:
        return a.func is b.func and same(a.args, b.args) and same(a.keywords, b.keywords)
    if type(a) in (tuple, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if type(a) is dict:
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if type(a) is float and math.isnan(a):
        return math.isnan(b)
    equal: bool = a == b
    return equal
