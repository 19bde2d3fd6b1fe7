"""The short record of a numpy array: [array mark, dtype, flags, ref, *shape] stands for
the record [serialized mark, header, [ref]] whose header is exactly what the dispatch family writes
for a numpy.ndarray. Sits on codec.packing, the registry and the dispatch family; the encoder
writes it, the decoder reads it into that record or, when the record would reach fastser's
own ndarray_loads, straight into the array (DirectLoads).

Why: that header is a map of six str keys and four str values, and msgpack makes (and
interns, for keys) each string every time it decodes one: two arrays' headers took several
times as long as the rest of the message of the suite's arrays workload. The short record
holds one str.
"""

from typing import Any, Final, Optional

from fastser.codec.packing import ARRAY_MARK, INT_VALUE, plain_str
from fastser.codec.wire import ARRAY_FORTRAN_FLAG, ARRAY_WRITEABLE_FLAG
from fastser.errors import DeserializationError, shown
from fastser.families.registry import DispatchEntry, REGISTRY, ShortLoads
from fastser.families.serialize import BUILTIN_DISPATCH, DISPATCH_FAMILY
from fastser.frame_types import Header
from fastser.headers import (HEADER_DTYPE, HEADER_ORDER, HEADER_SERIALIZER, HEADER_SHAPE,
                             HEADER_TYPE, HEADER_WRITEABLE, NUMPY_TYPE)

# What a short record stands for, its dtype, shape and flags to be set in a copy.
HEADER_TEMPLATE: Final[Header] = {
    HEADER_DTYPE: "", HEADER_SHAPE: [], HEADER_ORDER: "C", HEADER_WRITEABLE: True,
    HEADER_TYPE: NUMPY_TYPE, HEADER_SERIALIZER: DISPATCH_FAMILY}
# Larger dimensions (no array has them) keep the generic record; this bound is a short int,
# which mypyc compares inline (2**64 - 1 would be a boxed int, ~150 ns a comparison).
MAX_DIM: Final = 2**62 - 1
MAX_DIMS: Final = 64  # numpy's own bound (NPY_MAXDIMS, numpy 2; 32 before)


def short_record(header: Header) -> Optional[list[Any]]:
    """[mark, dtype, flags, None, *shape] for a header the short record stands for (the
    caller puts the frame's ref in place of None); None for any other header.

    A header qualifies when the generic record of it would decode to the very header the
    short one decodes to: str and int subclasses count as their base values (msgpack writes
    them so), anything else in it keeps the generic record. Then a message received
    unopened is written back as it came, in either form.
    """
    # As msgpack reads a dict subclass: its items() (its len() may say otherwise). Any: a
    # header's keys need not be str (typed so, mypyc would check each).
    entries: dict[Any, object] = header if type(header) is dict else dict(header.items())
    if len(entries) != 6:
        return None
    values: list[object] = []
    for key, value in entries.items():  # (not by key: a str subclass may hash as it likes)
        name = plain_str(key)
        index = len(values)
        # The keys in the order the dispatch family writes them.
        if name is None or name != (HEADER_DTYPE if index == 0 else HEADER_SHAPE if index == 1
                                    else HEADER_ORDER if index == 2 else HEADER_WRITEABLE
                                    if index == 3 else HEADER_TYPE if index == 4
                                    else HEADER_SERIALIZER):
            return None
        values.append(value)
    dtype = plain_str(values[0])
    shape = values[1]
    order = plain_str(values[2])
    writeable = values[3]
    # A list, or a list or tuple subclass (a namedtuple), is written as an array; an exact
    # tuple as a tuple (marked), which the short record cannot stand for.
    if dtype is None or type(shape) is tuple or not isinstance(shape, (list, tuple)) or \
            type(writeable) is not bool or \
            plain_str(values[4]) != NUMPY_TYPE or plain_str(values[5]) != DISPATCH_FAMILY or \
            (order != "C" and order != "F") or len(shape) > MAX_DIMS:
        return None
    flags = ((ARRAY_FORTRAN_FLAG if order == "F" else 0) |
             (ARRAY_WRITEABLE_FLAG if writeable else 0))
    fields: list[Any] = [ARRAY_MARK, dtype, flags, None]
    for n in shape:
        if type(n) is bool or not isinstance(n, int):
            return None
        size = n if type(n) is int else INT_VALUE(n)
        if not 0 <= size <= MAX_DIM:
            return None
        fields.append(size)
    return fields


def check_short_record(items: list[Any]) -> None:
    """DeserializationError unless a decoded array led by the mark is [mark, str, flags,
    frame ref, *shape] with at most MAX_DIMS dims from 0 to MAX_DIM (the ref is checked where
    it is used)."""
    if not 4 <= len(items) <= 4 + MAX_DIMS or type(items[1]) is not str or \
            type(items[2]) is not int or \
            not 0 <= items[2] <= ARRAY_FORTRAN_FLAG | ARRAY_WRITEABLE_FLAG:
        raise DeserializationError(
            "a numpy array record is not [mark, dtype, flags, frame ref, *shape]")
    for index in range(4, len(items)):
        n = items[index]
        # Within what short_record writes: every record read is written back the same.
        if type(n) is not int or not 0 <= n <= MAX_DIM:
            raise DeserializationError(f"a numpy array record has the shape {shown(items[4:])}")


def header_of(items: list[Any]) -> Header:
    """The header a checked short record stands for."""
    flags: int = items[2]
    # A copy of the template, then four values set: cheaper than a dict built key by key.
    header = HEADER_TEMPLATE.copy()
    header[HEADER_DTYPE] = items[1]
    header[HEADER_SHAPE] = items[4:]
    if flags & ARRAY_FORTRAN_FLAG:
        header[HEADER_ORDER] = "F"
    header[HEADER_WRITEABLE] = flags & ARRAY_WRITEABLE_FLAG != 0
    return header


def numpy_entry(deserializers: Optional[tuple[str, ...]]) -> Optional[DispatchEntry]:
    """The numpy entry whose short_loads reads a short record's fields, when the record's
    header would reach that entry now: the dispatch family allowed and fastser's own, and
    the numpy entry registered. None sends the caller the general way, which also runs
    numpy's lazy registration (and says why, if numpy cannot be imported)."""
    if deserializers is not None and DISPATCH_FAMILY not in deserializers:
        return None
    if REGISTRY.families.get(DISPATCH_FAMILY) is not BUILTIN_DISPATCH:
        return None
    return REGISTRY.by_name.get(NUMPY_TYPE)


class DirectLoads:
    """numpy's loads of a short record's fields, when the record's header would reach that
    very function now (fastser's own ndarray_loads): see numpy_entry. Held by a Decoder and
    asked per array; the entry is looked up again only when a registration or a family
    changed since (a payload opened earlier in the message may have registered another).
    The lookups were ~1% of the suite's arrays loads per array."""

    def __init__(self, deserializers: Optional[tuple[str, ...]]) -> None:
        self.deserializers = deserializers
        # (the registry's generation and families_version when asked, the entry found): one
        # attribute, written at once, so that a thread never pairs one's stamps with
        # another's entry (Decoders are shared between threads).
        self.found: tuple[int, int, Optional[DispatchEntry]] = (-1, -1, None)

    def get(self) -> Optional[ShortLoads]:
        generation, families, entry = self.found
        if generation != REGISTRY.generation or families != REGISTRY.families_version:
            # Stamps read before the lookup: a registration made during it is seen next time.
            generation = REGISTRY.generation
            families = REGISTRY.families_version
            entry = numpy_entry(self.deserializers)
            self.found = (generation, families, entry)
        return None if entry is None else entry.short_loads
