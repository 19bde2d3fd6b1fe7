"""Version 8's short record of a numpy array: [mark 24, dtype, flags, ref, *shape] stands for
the record [mark 15, header, [ref]] whose header is exactly what the dispatch family writes
for a numpy.ndarray. Sits on _packing and _wire; the encoder and decoder both use it.

Why: that header is a map of six str keys and four str values, and msgpack makes (and
interns, for keys) each string every time it decodes one: two arrays' headers took ~3x the
time of decoding W3's whole message without its payloads. The short record holds one str.
"""

from typing import Any, Final, Optional

from ._errors import DeserializationError
from ._packing import ARRAY_MARK, INT_VALUE, STR_VALUE
from ._types import Header
from ._wire import HEADER_SERIALIZER, HEADER_TYPE

# The header's keys, in the order the dispatch family writes them.
DTYPE: Final = "dtype"
SHAPE: Final = "shape"
ORDER: Final = "order"
WRITEABLE: Final = "writeable"
NUMPY_TYPE: Final = "numpy.ndarray"
DISPATCH_FAMILY: Final = "dispatch"
# What a short record stands for, its dtype, shape and flags to be set in a copy.
HEADER_TEMPLATE: Final[Header] = {DTYPE: "", SHAPE: [], ORDER: "C", WRITEABLE: True,
                                  HEADER_TYPE: NUMPY_TYPE, HEADER_SERIALIZER: DISPATCH_FAMILY}
# flags: which order, and whether the sender's array was writeable.
FORTRAN_FLAG: Final = 1
WRITEABLE_FLAG: Final = 2
# Larger dimensions (no array has them) keep the generic record; this bound is a short int,
# which mypyc compares inline (2**64 - 1 would be a boxed int, ~150 ns a comparison).
MAX_DIM: Final = 2**62 - 1


def plain_str(value: object) -> Optional[str]:
    """A str's value, as msgpack would write it (a subclass as its base value); else None."""
    if type(value) is str:
        return value
    return STR_VALUE(value) if isinstance(value, str) else None


def short_record(header: Header) -> Optional[list[Any]]:
    """[mark, dtype, flags, None, *shape] for a header the short record stands for (the
    caller puts the frame's ref in place of None); None for any other header.

    A header qualifies when the generic record of it would decode to the very header the
    short one decodes to: str and int subclasses count as their base values (msgpack writes
    them so), anything else in it keeps the generic record. Then a message received
    unopened is written back as it came, in either form.
    """
    if len(header) != 6:
        return None
    values: list[object] = []
    # Any: a received header's keys need not be str (typed so, mypyc would check each).
    entries: dict[Any, object] = header
    for key, value in entries.items():  # (not by key: a str subclass may hash as it likes)
        name = plain_str(key)
        index = len(values)
        if name is None or name != (DTYPE if index == 0 else SHAPE if index == 1 else
                                    ORDER if index == 2 else WRITEABLE if index == 3 else
                                    HEADER_TYPE if index == 4 else HEADER_SERIALIZER):
            return None
        values.append(value)
    dtype = plain_str(values[0])
    shape = values[1]
    order = plain_str(values[2])
    writeable = values[3]
    if dtype is None or type(shape) is not list or type(writeable) is not bool or \
            plain_str(values[4]) != NUMPY_TYPE or plain_str(values[5]) != DISPATCH_FAMILY or \
            (order != "C" and order != "F"):
        return None
    flags = (FORTRAN_FLAG if order == "F" else 0) | (WRITEABLE_FLAG if writeable else 0)
    fields: list[Any] = [ARRAY_MARK, dtype, flags, None]
    for n in shape:
        if type(n) is bool or not isinstance(n, int):
            return None
        size = n if type(n) is int else INT_VALUE(n)
        if not 0 <= size <= MAX_DIM:
            return None
        fields.append(size)
    return fields


def record_of(items: list[Any]) -> tuple[Header, Any]:
    """The header and the frame ref that a short record (a decoded array led by its mark)
    stands for; DeserializationError unless it is [mark, str, flags, ref, *dims >= 0]."""
    if len(items) < 4 or type(items[1]) is not str or type(items[2]) is not int or \
            not 0 <= items[2] <= FORTRAN_FLAG | WRITEABLE_FLAG:
        raise DeserializationError(
            "a numpy array record is not [mark, dtype, flags, frame ref, *shape]")
    flags: int = items[2]
    shape = items[4:]
    for n in shape:
        if type(n) is not int or n < 0:
            raise DeserializationError(f"a numpy array record has the shape {shape!r}")
    # A copy of the template, then four values set: cheaper than a dict built key by key.
    header = HEADER_TEMPLATE.copy()
    header[DTYPE] = items[1]
    header[SHAPE] = shape
    if flags & FORTRAN_FLAG:
        header[ORDER] = "F"
    header[WRITEABLE] = flags & WRITEABLE_FLAG != 0
    return header, items[3]
