"""Pickle opcodes written directly for the small objects a task graph is made of.

Sits below _pickle.py, which calls it first and falls back to pickle.dumps when it declines.
Its rule: what it writes is a pickle that `pickle.loads` reads back equal, with every type,
or it returns None — it never writes a pickle the stdlib would not have accepted to write.

Strategy: `pickle.dumps` of a task like `(operator.add, "x-1", 1)` spends most of its time
setting a Pickler up and re-resolving the function by name (an `__import__` per call); a
graph of 5,000 tasks pickled one by one costs five times one pickle of the whole graph, and
each task must stay its own payload. This writer emits the same protocol-5 opcodes as the
stdlib for exact builtin types, module-level functions and classes (checked by name lookup on
every call, as pickle does, without the import machinery) and functools.partial of those.
Anything else — subclasses, sets, bytearrays, objects with reducers, a list or dict seen
twice (pickle would keep the shared identity), `__main__` functions and those of modules
registered with cloudpickle.register_pickle_by_value (cloudpickle's job) — makes it decline.
"""

import functools
import struct
import sys
from types import BuiltinFunctionType, FunctionType
from collections.abc import Collection
from typing import Any, Final, Optional, cast

PROTO_5: Final = b"\x80\x05"
STOP: Final = b"."
NONE: Final = b"N"
NEWTRUE: Final = b"\x88"
NEWFALSE: Final = b"\x89"
BININT1: Final = b"K"
BININT2: Final = b"M"
BININT: Final = b"J"
LONG1: Final = b"\x8a"
BINFLOAT: Final = b"G"
SHORT_BINUNICODE: Final = b"\x8c"
BINUNICODE: Final = b"X"
SHORT_BINBYTES: Final = b"C"
BINBYTES: Final = b"B"
EMPTY_TUPLE: Final = b")"
TUPLE_OF: Final = (b"", b"\x85", b"\x86", b"\x87")  # TUPLE1..TUPLE3 by length
MARK: Final = b"("
TUPLE: Final = b"t"
EMPTY_LIST: Final = b"]"
APPENDS: Final = b"e"
EMPTY_DICT: Final = b"}"
SETITEMS: Final = b"u"
STACK_GLOBAL: Final = b"\x93"
REDUCE: Final = b"R"
BUILD: Final = b"b"
MEMOIZE: Final = b"\x94"
BINGET: Final = b"h"

# mypyc looks module attributes and imported names up at every use; Final copies are statics.
FUNCTION: Final = FunctionType
BUILTIN_FUNCTION: Final = BuiltinFunctionType
PARTIAL: Final = functools.partial
SYS_MODULES: Final = sys.modules
DOUBLE: Final = struct.Struct(">d")
INT32: Final = struct.Struct("<i")
UINT32: Final = struct.Struct("<I")
SIZE_BYTE: Final = tuple(bytes((size,)) for size in range(256))
# An opcode and its one-byte argument as one part: the join at the end costs per part.
BININT1_OF: Final = tuple(BININT1 + size for size in SIZE_BYTE)
BININT2_LOW: Final = tuple(BININT2 + size for size in SIZE_BYTE)  # then the high byte
SHORT_BINUNICODE_OF: Final = tuple(SHORT_BINUNICODE + size for size in SIZE_BYTE)
SHORT_BINBYTES_OF: Final = tuple(SHORT_BINBYTES + size for size in SIZE_BYTE)

# Deeper structures go to pickle, which has its own recursion handling.
MAX_DEPTH: Final = 32
# Larger bytes and str go to pickle: copying them into the writer's parts gains nothing.
MAX_INLINE_BYTES: Final = 1 << 16
# Writers kept for reuse between calls (allocating one per task costs more than a task's
# opcodes); more than this many at once are threads' extras, left to the collector.
MAX_POOLED_WRITERS: Final = 16
# Globals whose opcodes are kept (a task graph names a handful of functions thousands of
# times); the table is emptied when full rather than grown.
MAX_GLOBALS: Final = 4096


class Decline(Exception):
    """Raised inside the writer to give the object to pickle instead."""


class GlobalName:
    """A function or class found by module and name, with its STACK_GLOBAL opcodes."""

    def __init__(self, obj: object, module_name: str, module: object, name: str,
                 opcodes: bytes) -> None:
        self.obj = obj  # held, so that its id cannot be reused while it is in the table
        self.module_name = module_name
        self.module = module
        self.namespace: Optional[dict[str, Any]] = (
            vars(module) if "." not in name else None)
        self.name = name
        self.opcodes = opcodes
        # The module's own name, which cloudpickle's by-value registry is keyed by: it may
        # differ from __module__ when sys.modules holds the module under another name too.
        own = getattr(module, "__name__", module_name)
        self.own_name: str = own if type(own) is str else module_name

    def still_names(self, obj: object) -> bool:
        """Whether the module and name still find `obj` (pickle checks this at every dump:
        a rebound name must not be written for the old object)."""
        if SYS_MODULES.get(self.module_name) is not self.module:
            return False
        namespace = self.namespace
        if namespace is not None:
            return namespace.get(self.name) is obj
        return resolve(self.module, self.name) is obj


GLOBALS: Final[dict[int, GlobalName]] = {}


def resolve(module: object, name: str) -> object:
    found: object = module
    for part in name.split("."):
        found = getattr(found, part, None)
    return found


def global_name(obj: object) -> GlobalName:
    """The table entry for `obj`; Decline when pickle would not store it by name."""
    entry = lookup_global(obj)
    if entry is None:
        raise Decline()
    return entry


# The modules cloudpickle.register_pickle_by_value was given (and their submodules): their
# functions and classes travel by value, never by name. _pickle binds cloudpickle's registry
# here at import; this module does not import cloudpickle.
BY_VALUE_REGISTRY: Final[list[Collection[str]]] = [frozenset()]


def pickled_by_value(module_name: str) -> bool:
    """Whether cloudpickle was told to pickle `module_name`, or a package above it, by
    value (its _is_registered_pickle_by_value, by name)."""
    registry = BY_VALUE_REGISTRY[0]
    if not registry:
        return False
    while True:
        if module_name in registry:
            return True
        dot = module_name.rfind(".")
        if dot < 0:
            return False
        module_name = module_name[:dot]


def lookup_global(obj: object) -> Optional[GlobalName]:
    """The table entry for `obj`, made on first sight; None when pickle would not store it
    by name or the receiver could not find it (functions of __main__ or of a module
    registered to be pickled by value, local ones, names that are not valid UTF-8)."""
    entry = GLOBALS.get(id(obj))
    if entry is None or entry.obj is not obj or not entry.still_names(obj):
        entry = new_global(obj)
        if entry is None:
            return None
    # Asked at every call, cached entry or not: a module may be registered at any time.
    if pickled_by_value(entry.module_name) or pickled_by_value(entry.own_name):
        return None
    return entry


def new_global(obj: object) -> Optional[GlobalName]:
    """A table entry for `obj`, stored; None when pickle would not store it by name."""
    module_name = getattr(obj, "__module__", None)
    name = getattr(obj, "__qualname__", None)
    if type(module_name) is not str or type(name) is not str or \
            module_name == "__main__" or "<" in name:
        return None
    module = SYS_MODULES.get(module_name)
    if module is None or resolve(module, name) is not obj:
        return None
    writer = PickleWriter()
    try:
        writer.write_str(module_name)
        writer.write_str(name)
    except Decline:
        return None
    writer.parts.append(STACK_GLOBAL)
    entry = GlobalName(obj, module_name, module, name, b"".join(writer.parts[1:]))
    if len(GLOBALS) >= MAX_GLOBALS:
        GLOBALS.clear()
    GLOBALS[id(obj)] = entry
    return entry


class PickleWriter:
    def __init__(self) -> None:
        # Opcodes and data in order, joined once at the end: appending to a list is cheaper
        # in compiled code than growing a bytearray.
        self.parts: list[bytes] = [PROTO_5]
        # ids of the lists and dicts written: one seen twice declines (shared identity).
        self.containers: Optional[set[int]] = None
        self.memoized = 0  # MEMOIZE opcodes written: the next one stores at this index

    def write(self, obj: object, depth: int) -> None:
        # Exact types only: a subclass may pickle differently (its own reducer, its class).
        parts = self.parts
        t = type(obj)
        if t is str:
            self.write_str(cast(str, obj))
        elif t is int:
            self.write_int(cast(int, obj))
        elif obj is None:
            parts.append(NONE)
        elif t is tuple:
            self.write_tuple(cast("tuple[Any, ...]", obj), depth)
        elif t is float:
            parts.append(BINFLOAT)
            parts.append(DOUBLE.pack(cast(float, obj)))
        elif obj is True:
            parts.append(NEWTRUE)
        elif obj is False:
            parts.append(NEWFALSE)
        elif t is bytes:
            self.write_sized(SHORT_BINBYTES_OF, BINBYTES, cast(bytes, obj))
        elif t is list:
            self.write_list(cast("list[Any]", obj), depth)
        elif t is dict:
            self.write_dict(cast("dict[Any, Any]", obj), depth)
        elif t is FUNCTION or t is BUILTIN_FUNCTION or t is type:
            parts.append(global_name(obj).opcodes)
        elif t is PARTIAL:
            self.write_partial(obj, depth)
        else:
            raise Decline()

    def write_str(self, text: str) -> None:
        try:
            encoded = text.encode()
        except UnicodeEncodeError:
            # Lone surrogates: pickle writes them with "surrogatepass"; leave them to it.
            raise Decline()
        self.write_sized(SHORT_BINUNICODE_OF, BINUNICODE, encoded)

    def write_sized(self, short_heads: tuple[bytes, ...], opcode: bytes, data: bytes) -> None:
        """Data after its opcode and length: one length byte below 256 (the short opcode
        and that byte, from `short_heads`), else four."""
        parts = self.parts
        size = len(data)
        if size < 256:
            parts.append(short_heads[size])
        elif size <= MAX_INLINE_BYTES:
            parts.append(opcode)
            parts.append(UINT32.pack(size))
        else:
            raise Decline()
        parts.append(data)

    def write_int(self, number: int) -> None:
        parts = self.parts
        if 0 <= number < 256:
            parts.append(BININT1_OF[number])
        elif 0 <= number < 65536:
            # Two table lookups: a struct.pack call costs ten times more compiled.
            parts.append(BININT2_LOW[number & 0xFF])
            parts.append(SIZE_BYTE[number >> 8])
        elif -2**31 <= number < 2**31:
            parts.append(BININT)
            parts.append(INT32.pack(number))
        else:
            # Two's complement, little-endian, long enough for the sign bit (pickle's LONG1).
            size = (number.bit_length() >> 3) + 1
            if size > 255:
                raise Decline()
            parts.append(LONG1)
            parts.append(SIZE_BYTE[size])
            parts.append(number.to_bytes(size, "little", signed=True))

    def write_tuple(self, items: tuple[Any, ...], depth: int) -> None:
        if depth >= MAX_DEPTH:
            raise Decline()
        size = len(items)
        if size == 0:
            self.parts.append(EMPTY_TUPLE)
            return
        if size > 3:
            self.parts.append(MARK)
        for item in items:
            self.write(item, depth + 1)
        self.parts.append(TUPLE_OF[size] if size <= 3 else TUPLE)

    def seen(self, container: object) -> None:
        containers = self.containers
        if containers is None:
            containers = self.containers = set()
        key = id(container)
        if key in containers:
            raise Decline()
        containers.add(key)

    def write_list(self, entries: list[Any], depth: int) -> None:
        if depth >= MAX_DEPTH:
            raise Decline()
        self.seen(entries)
        self.parts.append(EMPTY_LIST)
        if entries:
            self.parts.append(MARK)
            for item in entries:
                self.write(item, depth + 1)
            self.parts.append(APPENDS)

    def write_dict(self, mapping: dict[Any, Any], depth: int) -> None:
        if depth >= MAX_DEPTH:
            raise Decline()
        self.seen(mapping)
        self.parts.append(EMPTY_DICT)
        if mapping:
            self.parts.append(MARK)
            for key, value in mapping.items():
                self.write(key, depth + 1)
                self.write(value, depth + 1)
            self.parts.append(SETITEMS)

    def write_partial(self, obj: Any, depth: int) -> None:
        # What functools.partial.__reduce__ returns, written the way pickle writes it:
        # partial(func), then __setstate__((func, args, keywords or None, __dict__ or None)).
        # The function is written once and memoized, as pickle does: the state names it
        # again, and a reader would otherwise look it up twice.
        reduced = obj.__reduce__()
        if type(reduced) is not tuple or len(reduced) != 3 or reduced[0] is not PARTIAL:
            raise Decline()
        new_args, state = reduced[1], reduced[2]
        if type(new_args) is not tuple or len(new_args) != 1 or type(state) is not tuple \
                or len(state) != 4 or state[0] is not new_args[0] or self.memoized > 255:
            raise Decline()
        parts = self.parts
        parts.append(global_name(PARTIAL).opcodes)
        self.write(new_args[0], depth + 2)
        parts.append(MEMOIZE)
        parts.append(TUPLE_OF[1])
        parts.append(REDUCE)
        parts.append(MARK)
        parts.append(BINGET)
        parts.append(SIZE_BYTE[self.memoized])
        self.memoized += 1
        for item in state[1:]:
            self.write(item, depth + 2)
        parts.append(TUPLE)
        parts.append(BUILD)


    def reset(self) -> None:
        self.parts.clear()
        self.parts.append(PROTO_5)
        self.containers = None
        self.memoized = 0


WRITERS: Final[list[PickleWriter]] = []


def write_pickle(obj: object) -> Optional[bytes]:
    """The protocol-5 pickle of `obj` written directly, or None when pickle must do it."""
    try:
        writer = WRITERS.pop()  # atomic: threads never share a writer
    except IndexError:
        writer = PickleWriter()
    written: Optional[bytes] = None
    try:
        writer.write(obj, 0)
        writer.parts.append(STOP)
        written = b"".join(writer.parts)
    except Decline:
        pass
    writer.reset()
    if len(WRITERS) < MAX_POOLED_WRITERS:
        WRITERS.append(writer)
    return written
