"""A tuple's array is led by the int TUPLE_LEAD (-32): which lists the
encoder leads with LIST_MARK instead, so that they read back as lists. Sits on errors,
buffers, codec.wire and codec.packing.

The decoder's list_hook sees an array's items as they were decoded, not as they were
written: a list whose first item reads back as the int -32 would read as a tuple, whether
that int was written as one or came out of a record, a pickle or an Encoder's `default`.
So a list is marked when its first item is an int equal to -32, or an object that the walk
does not keep as a message value. Record headers are packed as they are, not walked:
escaped_header looks into them as plain msgpack does.
"""

from collections.abc import Iterable
from typing import Any, Final, Optional, cast

from fastser.codec.packing import ExtType, INT_VALUE, LIST_MARK
from fastser.codec.wire import TUPLE_LEAD
from fastser.errors import UnencodableError
from fastser.frame_types import Header, MEMORYVIEW

# msgpack's Packer refuses values nested deeper than 511 levels: past that, a header is
# left for it to refuse (dumps then names the payload), and the recursion stays bounded.
MAX_HEADER_NESTING: Final = 512
EXT_TYPE_REFUSED: Final = (
    "a record header holds a msgpack.ExtType, which fastser's decoder would read as one of "
    "its own extension types (a pickle, a frame, a mark), not as what it is")


def leads_like_a_tuple(items: list[Any]) -> bool:
    """Whether a list's first item may read back as the int TUPLE_LEAD."""
    if not items:
        return False
    first = items[0]
    t = type(first)
    if t is int:
        return cast(int, first) == TUPLE_LEAD
    # A message value reads back as what it is, never an int; any other object becomes a
    # record, a pickle or `default`'s value, which may read back as -32.
    return not (t is str or t is float or t is bool or first is None or t is dict or
                t is list or t is bytes or t is tuple or t is set or t is frozenset or
                t is bytearray or t is MEMORYVIEW)


def escaped_header(header: Header, payload: object) -> object:
    """`header`, a record's, with every array msgpack would write for it that begins with
    TUPLE_LEAD led by LIST_MARK; `header` itself when there is none (the usual case:
    nothing is copied). UnencodableError (naming `payload`) for a dict key or set item that
    msgpack would write as an array no mark leads: read back, it would be a list, which no
    dict or set can hold (or, led by -32, another tuple); and for a msgpack.ExtType, which
    the decoder's ext_hook would take for one of fastser's own."""
    return escape_leads(header, payload, 0)


def escape_leads(value: object, payload: object, depth: int) -> object:
    """Looks into `value` as plain msgpack packs it: a list or tuple subclass is an array,
    a dict subclass its items(), an int subclass its value."""
    t = type(value)
    if t is str or t is int or t is float or t is bool or value is None or t is bytes or \
            depth > MAX_HEADER_NESTING:
        return value
    if isinstance(value, dict):
        out: Optional[dict[Any, Any]] = None
        index = 0
        for key, item in value.items():
            if type(key) is not str:
                check_key(key, payload, depth + 1)
            new_item = escape_leads(item, payload, depth + 1)
            if out is None and new_item is not item:
                out = dict(list(value.items())[:index])  # the entries before: unchanged
            if out is not None:
                out[key] = new_item
            index += 1
        return value if out is None else out
    if t is set or t is frozenset:
        check_key(value, payload, depth)
        return value
    if not isinstance(value, (list, tuple)):
        return value  # what msgpack refuses anyway
    if isinstance(value, ExtType):
        raise UnencodableError(payload, EXT_TYPE_REFUSED)
    items: Optional[list[Any]] = None
    first: object = None
    index = 0
    for item in cast(Iterable[Any], value):
        if index == 0:
            first = item
        new_item = escape_leads(item, payload, depth + 1)
        if items is None and new_item is not item:
            items = list(cast(Iterable[Any], value))[:index]
        if items is not None:
            items.append(new_item)
        index += 1
    if t is tuple:  # mark_collection leads it with TUPLE_LEAD: only its items matter
        return value if items is None else tuple(items)
    if index and isinstance(first, int) and not isinstance(first, bool) and \
            INT_VALUE(first) == TUPLE_LEAD:
        out_items = list(cast(Iterable[Any], value)) if items is None else items
        out_items.insert(0, LIST_MARK)
        return out_items
    return value if items is None else items


def check_key(key: object, payload: object, depth: int) -> None:
    """Raise UnencodableError if `key`, a dict key or set item in a header, holds what
    msgpack writes as an array that no mark leads (a tuple subclass: lists cannot be keys)."""
    t = type(key)
    if t is tuple or t is frozenset or t is set:
        if depth <= MAX_HEADER_NESTING:
            for item in cast(Iterable[Any], key):
                check_key(item, payload, depth + 1)
    elif isinstance(key, ExtType):
        raise UnencodableError(payload, EXT_TYPE_REFUSED)
    elif isinstance(key, tuple):
        raise UnencodableError(payload, (
            f"a record header holds a {t.__qualname__} in a dict key or set item, which "
            "msgpack writes as an array: it would be read back as a list, which cannot be one"))
