"""The decoder's calls into msgpack, and the marks: what ext_hook returns for a mark's
extension type until list_hook sees the array it leads. Sits on codec.wire and codec.depth."""

from typing import Any, Final, NoReturn

import msgpack

from fastser.codec.depth import holds_ext_minus_1
from fastser.codec.wire import (EXT_ARRAY_MARK, EXT_FROZENSET_MARK, EXT_LIST_MARK,
                                EXT_PICKLED_MARK, EXT_SERIALIZED_MARK, EXT_SET_MARK)
from fastser.errors import DeserializationError

# mypyc looks a module attribute up by name on every use; a Final copy is a static.
UNPACKB: Final = msgpack.unpackb


def unpack(data: Any, ext_hook: Any, list_hook: Any) -> Any:
    # raw=False and use_list=True are msgpack's defaults since 1.0 (the oldest we accept);
    # each keyword passed costs a lookup in unpackb's argument parsing.
    return UNPACKB(data, ext_hook=ext_hook, list_hook=list_hook, strict_map_key=False)


class Mark:
    """What ext_hook returns for a mark (MARKS, by code), until list_hook sees its array."""


SET_MARK: Final = Mark()
FROZENSET_MARK: Final = Mark()
SERIALIZED_MARK: Final = Mark()
PICKLED_MARK: Final = Mark()
ARRAY_MARK: Final = Mark()
LIST_MARK: Final = Mark()
MARKS: Final = {EXT_SET_MARK: SET_MARK, EXT_FROZENSET_MARK: FROZENSET_MARK,
                EXT_SERIALIZED_MARK: SERIALIZED_MARK, EXT_PICKLED_MARK: PICKLED_MARK,
                EXT_ARRAY_MARK: ARRAY_MARK, EXT_LIST_MARK: LIST_MARK}


def unpack_ref(data: bytes) -> Any:
    """A frame ref from an extension type's data; a one-byte positive fixint (the common
    case: payload frames 1..127) is read without calling msgpack."""
    if len(data) == 1 and data[0] < 128:
        return data[0]
    return unpack_plain(data)


def unpack_plain(data: bytes) -> Any:
    """The msgpack in an extension type's data (a record in a dict key or set item, a frame
    ref), which holds no extension type: one there is refused, a timestamp (code -1, which
    msgpack decodes without calling the hook) included. The hook never decodes, so no
    recursion."""
    if holds_ext_minus_1(data, 0):
        refuse_nested_ext(-1, data)
    return UNPACKB(data, ext_hook=refuse_nested_ext, raw=False, strict_map_key=False,
                   use_list=True)


def refuse_nested_ext(code: int, data: bytes) -> NoReturn:
    raise DeserializationError(
        f"extension type code {code} inside the data of an extension type (a record in a "
        f"dict key or set item, or a frame ref) in the header frame")
