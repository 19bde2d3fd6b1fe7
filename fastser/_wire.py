"""The wire format's constants: version, msgpack extension codes, header keys, thresholds.

Everything here is part of the wire format (docs/wire-format.md); changing a value means a
new WIRE_VERSION, and the decoder keeps reading the old one.
"""

from typing import Final

# frames[0] starts with this byte (a msgpack positive fixint) followed by one msgpack object.
# Version 2 marks tuples, sets and frozensets inside the array itself (EXT_*_MARK); version
# 1 packed them into nested extension payloads (EXT_TUPLE ...). Version 3 marks serialized
# and pickled records likewise (v1/v2: EXT_SERIALIZED/EXT_PICKLED). Version 4 writes a record
# that is one small pickle as one extension type (EXT_PICKLE_*). Version 5 writes a task
# (a call tuple or a functools.partial of a module-level function, with plain arguments) as an
# array in the header instead of a pickle (EXT_TASK_*_MARK). Version 6 writes a map of many
# such tasks as one extension type (EXT_TASK_MAP), and any other map of many entries as an
# array led by a mark (EXT_MAP_MARK). Version 7 writes a list of large bytes values as one
# extension type (EXT_BYTES_FRAMES). Version 8 writes the record of a numpy array whose
# header is the dispatch family's own as a short array (EXT_ARRAY_MARK). Version 9 leads a
# tuple's array with the int TUPLE_LEAD instead of EXT_TUPLE_MARK, and a list that begins
# with that int with EXT_LIST_MARK. Decoders read all nine.
WIRE_VERSION: Final = 9
OLDEST_READABLE_VERSION: Final = 1

# Extension codes of the placeholders in frames[0]. User values never produce extension
# types of their own (msgpack.ExtType objects in a message are pickled like any other
# object), so no user value can be mistaken for a placeholder.
EXT_TUPLE: Final = 1  # data: msgpack array of the items
EXT_SET: Final = 2  # data: msgpack array of the items
EXT_FROZENSET: Final = 3  # data: msgpack array of the items
EXT_BIGINT: Final = 4  # data: signed little-endian two's complement bytes
EXT_BYTEARRAY: Final = 5  # data: the bytes themselves (small bytearray, inline)
EXT_MEMORYVIEW: Final = 6  # data: the bytes themselves (small memoryview, inline)
EXT_BYTES_FRAME: Final = 7  # data: msgpack [frame ref] of an out-of-band bytes
EXT_BYTEARRAY_FRAME: Final = 8  # likewise for bytearray
EXT_MEMORYVIEW_FRAME: Final = 9  # likewise for memoryview
EXT_SERIALIZED: Final = 10  # data: msgpack [header, [frame ref, ...]]: Serialize / Serialized
EXT_PICKLED: Final = 11  # data: msgpack [header, [frame ref, ...]]: ToPickle / Pickled / fallback
# Version 2: an array whose first item is one of these empty extension types is a tuple,
# set or frozenset of the remaining items (one msgpack decode, no nested payload).
EXT_TUPLE_MARK: Final = 12
EXT_SET_MARK: Final = 13
EXT_FROZENSET_MARK: Final = 14
# Version 3: [mark, header, [frame ref, ...]] is a serialized / pickled record.
EXT_SERIALIZED_MARK: Final = 15
EXT_PICKLED_MARK: Final = 16
# Version 4: a record whose header is exactly {"serializer": "pickle"} and whose one frame is
# inline (under OUT_OF_BAND_BYTES, uncompressed) is this extension type, its data the pickle:
# a task graph is thousands of them, and each then costs one extension type instead of an
# array, a map and a list (three decoder callbacks and a header dict apiece).
EXT_PICKLE_SERIALIZED: Final = 17  # as [EXT_SERIALIZED_MARK, {"serializer": "pickle"}, [data]]
EXT_PICKLE_PICKLED: Final = 18  # as [EXT_PICKLED_MARK, {"serializer": "pickle"}, [data]]
PICKLE_FAMILY: Final = "pickle"
# Version 5: [mark, kind, module, qualname, *fields] is a task of the "pickle" family,
# written as msgpack values instead of a pickle (what a pickle of it would do, without one:
# the function is found by module and name, as pickle's find_class does).
#   kind TASK_CALL:    fields are the call's arguments: (function, *fields)
#   kind TASK_PARTIAL: fields are {keyword: value} then the arguments:
#                      functools.partial(function, *fields[1:], **fields[0])
# Arguments and keyword values are scalars (None, bool, int of 64 bits, float, str, bytes
# under OUT_OF_BAND_BYTES); anything else is pickled. Received unopened, such a task is the
# record {"serializer": "pickle", "form": "task"} with one frame: msgpack of the array
# without its mark, which dumps writes back as the same array.
EXT_TASK_SERIALIZED_MARK: Final = 19  # a Serialize payload
EXT_TASK_PICKLED_MARK: Final = 20  # a ToPickle payload, or an object pickled by fallback
# Version 6: a map of Serialize tasks with str keys, as one extension type whose data is
# msgpack [[key, ...], [task, ...]], each task the array above with nil in place of its mark
# (19). Read in one msgpack call, with no hook per task; its keys are array items, which
# msgpack does not intern as it does map keys. Functions are named and indexed as above, in
# the order the tasks appear. A decoded map nests two levels (the map, a task's tuple) where
# the header's bytes show an extension type.
EXT_TASK_MAP: Final = 21
TASK_MAP_DEPTH: Final = 2
# Version 6: a map of many entries is an array led by this mark, then key, value, key,
# value...: msgpack interns every str map key (in the interpreter's table of interned
# strings, a cache miss or two per new key), array items it does not.
EXT_MAP_MARK: Final = 22
# Version 7: a list of two or more bytes values that all travel out of band (each of
# OUT_OF_BAND_BYTES or more, none split or compressed) is one extension type whose data is
# msgpack [start, count]: the payload frames start .. start + count - 1, one value each. A
# list of blobs then costs the decoder one callback instead of one per blob (each ~0.4 µs
# beside a 64 KiB copy of ~2 µs). It nests one level where the header shows an extension
# type, within TASK_MAP_DEPTH.
EXT_BYTES_FRAMES: Final = 23
# Version 8: [mark, dtype, flags, frame ref, *shape] stands for the serialized record of a
# numpy array with the header {"dtype", "shape", "order", "writeable", "type": "numpy.ndarray",
# "serializer": "dispatch"} (see _array_records): one str to decode where that header's map
# has ten.
EXT_ARRAY_MARK: Final = 24
# Version 9: an array led by the int TUPLE_LEAD is a tuple of the remaining items, and one
# led by EXT_LIST_MARK a list of them; the encoder writes the latter only for a list whose
# first item is an int equal to TUPLE_LEAD. A tuple then costs the decoder no extension
# type: msgpack calls ext_hook for each (~1.5k instructions: 4% of a control message with
# one tuple key), and list_hook, which sees every array anyway, tells the int apart. It is
# negative fixint's last value, one byte, rare at the head of a list.
TUPLE_LEAD: Final = -32
EXT_LIST_MARK: Final = 25
TUPLE_LEAD_VERSION: Final = 9  # headers of earlier versions hold no TUPLE_LEAD tuples
ARRAY_FORTRAN_FLAG: Final = 1  # a short record's flags: order "F" (else "C")
ARRAY_WRITEABLE_FLAG: Final = 2  # and the sender's array was writeable
TASK_CALL: Final = 0
TASK_PARTIAL: Final = 1
HEADER_FORM: Final = "form"
FORM_TASK: Final = "task"

# A frame ref is one of: bytes (the frame inline), int (index of one payload frame in the
# frame list), [start, count] (a frame split into `count` adjacent pieces).

# Header keys that fastser itself sets or reads.
HEADER_SERIALIZER: Final = "serializer"
HEADER_TYPE: Final = "type"
HEADER_COMPRESSION: Final = "compression"
# The dispatch family's numpy header (_numpy writes it; version 8's short record stands for it).
NUMPY_TYPE: Final = "numpy.ndarray"
HEADER_DTYPE: Final = "dtype"
HEADER_SHAPE: Final = "shape"
HEADER_ORDER: Final = "order"
HEADER_WRITEABLE: Final = "writeable"

# Bytes-likes of at least this size leave the header frame and travel as their own frames.
OUT_OF_BAND_BYTES: Final = 65536

# Version 1 only: tuples, sets and frozensets were extension types whose payload is decoded
# by a nested msgpack call; each holds ~40 kB of C stack (msgpack's unpack context), and
# about 200 levels overflow an 8 MiB stack. The decoder bounds that nesting.
MAX_NESTED_EXT: Final = 32
