"""The wire format's constants: version, msgpack extension codes, the tuple lead, the flags of
a short numpy record.

Everything here is part of the wire format (docs/wire-format.md); changing the meaning of
any of it means a new WIRE_VERSION.
"""

from typing import Final

# frames[0] starts with this byte (a msgpack positive fixint) followed by one msgpack object.
WIRE_VERSION: Final = 1

# Extension codes of the placeholders in frames[0]. User values never produce extension
# types of their own (msgpack.ExtType objects in a message are pickled like any other
# object), so no user value can be mistaken for a placeholder.
EXT_BIGINT: Final = 1  # data: signed little-endian two's complement bytes
EXT_BYTEARRAY: Final = 2  # data: the bytes themselves (small bytearray, inline)
EXT_MEMORYVIEW: Final = 3  # data: the bytes themselves (small memoryview, inline)
EXT_BYTES_FRAME: Final = 4  # data: msgpack [frame ref] of an out-of-band bytes
EXT_BYTEARRAY_FRAME: Final = 5  # likewise for bytearray
EXT_MEMORYVIEW_FRAME: Final = 6  # likewise for memoryview
# A record in a dict key or set item, where an array cannot be hashed: data msgpack
# [header, [frame ref, ...]].
EXT_SERIALIZED: Final = 7  # Serialize / Serialized
EXT_PICKLED: Final = 8  # ToPickle / Pickled / the pickle fallback
# Marks: empty extension types, each the first item of an array that is the container or
# record it names. A tuple's array is led by the int TUPLE_LEAD instead (no extension
# type: msgpack calls ext_hook for each, while list_hook sees every array anyway).
EXT_SET_MARK: Final = 9
EXT_FROZENSET_MARK: Final = 10
EXT_LIST_MARK: Final = 11  # a list whose first item may read back as TUPLE_LEAD
EXT_SERIALIZED_MARK: Final = 12  # [mark, header, [frame ref, ...]]
EXT_PICKLED_MARK: Final = 13  # likewise
# [mark, dtype, flags, frame ref, *shape] stands for the serialized record of a numpy array
# with the header {"dtype", "shape", "order", "writeable", "type": "numpy.ndarray",
# "serializer": "dispatch"} (see codec.array_records): one str to decode where that header's map
# has ten.
EXT_ARRAY_MARK: Final = 14
# An array led by this int is a tuple of the remaining items: negative fixint's last
# value, one byte, rare at the head of a list (which is then led by EXT_LIST_MARK).
TUPLE_LEAD: Final = -32
ARRAY_FORTRAN_FLAG: Final = 1  # a short record's flags: order "F" (else "C")
ARRAY_WRITEABLE_FLAG: Final = 2  # and the sender's array was writeable

# A frame ref is one of: bytes (the frame inline), int (index of one payload frame in the
# frame list), [start, count] (a frame split into `count` adjacent pieces).
