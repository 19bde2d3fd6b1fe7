"""How fastser's header is written with msgpack: extension types built without msgpack's
validating constructor, the marks, the extension types naming payload frames, and the
packers with the `default` that marks tuples, sets and frozensets. Sits on buffers and codec.wire.

The encoder (codec.encoder) decides what goes into the header; this module is how msgpack is
made to write it.
"""

from collections.abc import Iterable
from typing import Any, Final, Optional, cast

import msgpack

from fastser.codec.wire import (EXT_ARRAY_MARK, EXT_BYTEARRAY_FRAME, EXT_BYTES_FRAME,
                                EXT_FROZENSET_MARK, EXT_LIST_MARK,
                                EXT_MEMORYVIEW_FRAME, EXT_PICKLED_MARK, EXT_SERIALIZED_MARK,
                                EXT_SET_MARK, TUPLE_LEAD)
from fastser.frame_types import MEMORYVIEW

ExtType: Final = msgpack.ExtType
# msgpack.ExtType.__new__ validates its arguments in Python (~1 µs a call); ours are valid
# by construction, so extension types are built with the tuple constructor it wraps.
new_tuple: Final = tuple.__new__


def ext(code: int, data: bytes) -> object:
    return new_tuple(ExtType, (code, data))


# A tuple's array begins with this int, boxed once: mypyc would box a Final int
# anew at each use.
TUPLE_LEAD_ITEM: Final[object] = TUPLE_LEAD
LIST_MARK: Final = ext(EXT_LIST_MARK, b"")  # leads a list that begins with TUPLE_LEAD
SET_MARK: Final = ext(EXT_SET_MARK, b"")
FROZENSET_MARK: Final = ext(EXT_FROZENSET_MARK, b"")
SERIALIZED_MARK: Final = ext(EXT_SERIALIZED_MARK, b"")
PICKLED_MARK: Final = ext(EXT_PICKLED_MARK, b"")
ARRAY_MARK: Final = ext(EXT_ARRAY_MARK, b"")
# msgpack's encoding of 0..127 (positive fixint: the byte itself), for frame refs.
FIXINTS: Final = [bytes([i]) for i in range(128)]
# The extension types naming payload frames 1..127, made once: a message of many large
# bytes values needs one per value, and making an ExtType costs more than the rest.
BYTES_FRAME_REFS: Final = [ext(EXT_BYTES_FRAME, ref) for ref in FIXINTS]
BYTEARRAY_FRAME_REFS: Final = [ext(EXT_BYTEARRAY_FRAME, ref) for ref in FIXINTS]
MEMORYVIEW_FRAME_REFS: Final = [ext(EXT_MEMORYVIEW_FRAME, ref) for ref in FIXINTS]


def mark_collection(obj: object) -> object:
    """The body packer's `default`: a tuple, set or frozenset as the array msgpack writes for
    it, its mark first. The walk leaves these in place (so a message holding tuples is not
    copied); only the packer, which meets them anyway, marks them. Subclasses of int, float,
    str, bytes, list and dict can only come from a family's record header (the walk turned
    all others into records): they are packed as their base type, as plain msgpack would."""
    t = type(obj)
    if t is tuple:
        marked = [TUPLE_LEAD_ITEM]
    elif t is set:
        marked = [SET_MARK]
    elif t is frozenset:
        marked = [FROZENSET_MARK]
    else:
        return as_base_type(obj)
    marked.extend(cast(Iterable[Any], obj))
    return marked


# The base types' own conversions: they read a subclass's value as plain msgpack reads it,
# where int(), str(), bytes() and float() would call a method the subclass may override
# (a `class Color(str, Enum)` member's __str__ gives "Color.RED", not its value).
INT_VALUE: Final = int.__int__
FLOAT_VALUE: Final = float.__float__
STR_VALUE: Final = str.__str__
BYTES_VALUE: Final = bytes.__bytes__


def plain_str(value: object) -> Optional[str]:
    """A str's value, as msgpack writes it (a subclass as its base value); else None."""
    if type(value) is str:
        return value
    return STR_VALUE(value) if isinstance(value, str) else None


def as_base_type(obj: object) -> object:
    """A tuple, or a subclass of a msgpack type, as what plain msgpack packs it as: the
    record packer's `default` (see Packers) and the last resort of mark_collection.
    Plain msgpack reads an int, float, str, bytes or bytearray subclass's value, and
    iterates a list or tuple subclass and a dict subclass's items()."""
    if type(obj) is tuple:
        return list(obj)
    if isinstance(obj, ExtType):
        ext_type: Any = obj
        return ext(ext_type.code, ext_type.data)
    if isinstance(obj, bool):
        return bool(obj)
    if isinstance(obj, int):
        return INT_VALUE(obj)
    if isinstance(obj, float):
        return FLOAT_VALUE(obj)
    if isinstance(obj, str):
        return STR_VALUE(obj)
    if isinstance(obj, bytes):
        return BYTES_VALUE(obj)
    if isinstance(obj, bytearray):
        return MEMORYVIEW(obj).tobytes()
    if isinstance(obj, (list, tuple)):
        return list(obj)  # a namedtuple in a header: an array, as plain msgpack writes it
    if isinstance(obj, dict):
        return dict(obj.items())
    raise TypeError(f"cannot pack an object of type {type(obj).__qualname__}")


class Packers:
    """A pair of msgpack Packers (not thread-safe: one dumps call uses a pair at a time).

    autoreset: one pack() call returns the bytes and empties the buffer (a Packer method
    call costs ~0.1 µs; the small-message path cannot afford four per message).
    """

    def __init__(self) -> None:
        # The message: exact types only, so every tuple/set/frozenset reaches
        # mark_collection; the walk has replaced everything else msgpack must not see.
        self.body: Any = msgpack.Packer(autoreset=True, use_bin_type=True, strict_types=True,
                                        default=mark_collection)
        # Records in keys, and refs: what plain msgpack writes (a tuple in a family's
        # header is an array). Exact types only, with as_base_type for the rest: plain
        # msgpack calls isinstance(value, ExtType) before it packs any array.
        self.record: Any = msgpack.Packer(autoreset=True, use_bin_type=True, strict_types=True,
                                          default=as_base_type)
