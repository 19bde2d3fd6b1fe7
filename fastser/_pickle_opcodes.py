"""The pickle opcodes fastser's direct reader knows, and the check that a pickle holds only
those, each with its arguments inside the data, before anything is built from it. Sits
below _pickle_reader.py; this is where a pickle's hostile lengths are rejected.
"""

import struct
from typing import Final

UINT32: Final = struct.Struct("<I")

# Opcode bytes (pickletools names).
PROTO: Final = 0x80
FRAME: Final = 0x95
STOP: Final = 0x2E  # "."
NONE: Final = 0x4E  # "N"
NEWTRUE: Final = 0x88
NEWFALSE: Final = 0x89
BININT1: Final = 0x4B  # "K"
BININT2: Final = 0x4D  # "M"
BININT: Final = 0x4A  # "J"
LONG1: Final = 0x8A
BINFLOAT: Final = 0x47  # "G"
SHORT_BINUNICODE: Final = 0x8C
BINUNICODE: Final = 0x58  # "X"
SHORT_BINBYTES: Final = 0x43  # "C"
BINBYTES: Final = 0x42  # "B"
EMPTY_TUPLE: Final = 0x29  # ")"
TUPLE1: Final = 0x85
TUPLE2: Final = 0x86
TUPLE3: Final = 0x87
MARK: Final = 0x28  # "("
TUPLE: Final = 0x74  # "t"
EMPTY_LIST: Final = 0x5D  # "]"
APPEND: Final = 0x61  # "a"
APPENDS: Final = 0x65  # "e"
EMPTY_DICT: Final = 0x7D  # "}"
SETITEM: Final = 0x73  # "s"
SETITEMS: Final = 0x75  # "u"
STACK_GLOBAL: Final = 0x93
REDUCE: Final = 0x52  # "R"
BUILD: Final = 0x62  # "b"
MEMOIZE: Final = 0x94
BINGET: Final = 0x68  # "h"
LONG_BINGET: Final = 0x6A  # "j"

# What follows each opcode this reader knows, indexed by opcode: the size of its fixed
# argument (0-8), SIZED_1 or SIZED_4 when a 1- or 4-byte length and that many bytes follow,
# UNKNOWN otherwise (a bytes table: indexing it costs less than a dict lookup).
SIZED_1: Final = 0xF1
SIZED_4: Final = 0xF4
UNKNOWN: Final = 0xFF


def argument_table() -> bytes:
    table = bytearray([UNKNOWN]) * 256
    for opcode in (NONE, NEWTRUE, NEWFALSE, EMPTY_TUPLE, TUPLE1, TUPLE2, TUPLE3, MARK, TUPLE,
                   EMPTY_LIST, APPEND, APPENDS, EMPTY_DICT, SETITEM, SETITEMS, STACK_GLOBAL,
                   REDUCE, BUILD, MEMOIZE, STOP):
        table[opcode] = 0
    for opcode, size in ((BININT1, 1), (BINGET, 1), (BININT2, 2), (BININT, 4),
                         (LONG_BINGET, 4), (BINFLOAT, 8), (FRAME, 8)):
        table[opcode] = size
    for opcode in (LONG1, SHORT_BINUNICODE, SHORT_BINBYTES):
        table[opcode] = SIZED_1
    for opcode in (BINUNICODE, BINBYTES):
        table[opcode] = SIZED_4
    return bytes(table)


ARGUMENT: Final = argument_table()


def known_opcodes(data: bytes) -> bool:
    """Whether `data` is protocol 4 or 5 and made only of opcodes this reader knows, each
    with its arguments inside `data`, ending at STOP: checked before anything is built."""
    size = len(data)
    if size < 3 or data[0] != PROTO or not 4 <= data[1] <= 5:
        return False
    pos = 2
    while pos < size:
        opcode = data[pos]
        pos += 1
        if opcode == STOP:
            return pos == size
        kind = ARGUMENT[opcode]
        if kind < SIZED_1:
            pos += kind
        elif kind == SIZED_1:
            if pos >= size:
                return False
            pos += 1 + data[pos]
        elif kind == SIZED_4:
            if pos + 4 > size:
                return False
            pos += 4 + UINT32.unpack_from(data, pos)[0]
        else:
            return False
    return False
