"""Tasks as msgpack values: the "task" form of the pickle family (wire versions 5 and 6).

Sits beside _pickle_writer and _pickle_reader, whose checks of a function's name it shares.
It never unpickles: on receipt it finds a function by module and name exactly as pickle's
find_class would (same audit event), and builds a tuple or a functools.partial. The decoder
runs it only where it would run pickle (the "pickle" family, allowed by the caller).

Strategy: a task graph is thousands of small calls — `(function, "key", 1)`,
`functools.partial(function, 2)` — each of which must stay its own payload. Written as a
pickle, each costs a pass of opcode writing and an extension type on the way out, and an
opcode reader on the way in. Written as an array of msgpack values in the header, msgpack
packs and unpacks it with the rest of the message in C. A header names each function once,
by module and name, and later tasks by its index in the header (a graph names a handful of
functions thousands of times), so each function is checked and found once per message, as
one pickle of the whole message would do with its memo. Only what this form carries without
loss qualifies (a module-level function, arguments that are scalars); anything else is
pickled as before. Version 6 writes a map of many such tasks as one extension type (a task
map, made by the encoder): the same fields, read by one nested msgpack call instead of two
hook calls per task.
"""

import functools
from types import BuiltinFunctionType, FunctionType
from typing import Any, Final, Optional, cast

import msgpack

from ._errors import DeserializationError, chained, shown
from ._pickle_reader import Decline, GlobalRef
from ._pickle_writer import lookup_global
from ._types import MEMORYVIEW
from ._wire import OUT_OF_BAND_BYTES, TASK_CALL, TASK_PARTIAL

FUNCTION: Final = FunctionType
BUILTIN_FUNCTION: Final = BuiltinFunctionType
PARTIAL: Final[type[functools.partial[Any]]] = functools.partial
UNPACKB: Final = msgpack.unpackb
# Ints msgpack writes as they are (fastser's header writes others as extension types).
MIN_INT64: Final = -(2**63)
MAX_UINT64: Final = 2**64 - 1
# mypyc compares ints in this range inline; MIN_INT64 and MAX_UINT64 are boxed.
MIN_SHORT_INT: Final = -4611686018427387904
MAX_SHORT_INT: Final = 4611686018427387903
# Functions by (module, name), for records whose frame spells them (deserialize()).
TASK_GLOBALS: Final[dict[tuple[str, str], GlobalRef]] = {}
MAX_TASK_GLOBALS: Final = 4096
UNRESOLVED: Final = object()
FIXARRAY: Final = 0x90  # msgpack's one-byte array header: 0x90 + length, up to 15
MAX_FIXARRAY: Final = 15


def is_scalar(value: object) -> bool:
    """Whether msgpack writes `value` as itself and reads it back equal, with its type."""
    t = type(value)
    if t is str:
        text = cast(str, value)
        if text.isascii():
            return True
        try:
            text.encode()
        except UnicodeEncodeError:
            return False  # lone surrogates: msgpack cannot write them, pickle can
        return True
    if t is int:
        number = cast(int, value)
        return MIN_SHORT_INT <= number <= MAX_SHORT_INT or MIN_INT64 <= number <= MAX_UINT64
    if t is float or t is bool or value is None:
        return True
    if t is bytes:
        return len(cast(bytes, value)) < OUT_OF_BAND_BYTES
    return False


def is_received_scalar(value: object) -> bool:
    """is_scalar for a value msgpack decoded (its strs are valid, its ints in range)."""
    t = type(value)
    return t is str or t is int or t is float or t is bool or value is None or \
        (t is bytes and len(cast(bytes, value)) < OUT_OF_BAND_BYTES)


class FunctionTable:
    """The functions one header's tasks name, in order of first appearance (the encoder's
    side): the first task naming one spells [module, qualname], later ones its index."""

    def __init__(self) -> None:
        # Functions and builtins hash and compare without running user code (a builtin by
        # its self and C function): they are keys themselves, which spares boxing an id per
        # task. Two builtins may be equal and not the same object (a module's two names for
        # one C function): each entry keeps its function, and an equal other one goes by id,
        # as classes do (a metaclass may define __eq__ and __hash__).
        self.by_function: dict[object, tuple[object, int]] = {}
        self.by_id: dict[int, int] = {}
        self.by_name: dict[tuple[str, str], int] = {}
        self.named: list[object] = []  # keeps every id in by_id alive and unreused

    def task_fields(self, obj: object, head: object) -> Optional[list[Any]]:
        """[head, kind, module, qualname or index, *tail] for a task this form carries
        without loss (_wire.TASK_CALL, TASK_PARTIAL), or None: `obj` is then pickled."""
        t = type(obj)
        if t is tuple:
            call = cast("tuple[Any, ...]", obj)
            if not call:
                return None
            for index in range(1, len(call)):
                if not is_scalar(call[index]):
                    return None
            fields = self.start(head, TASK_CALL, call[0])
            if fields is None:
                return None
            for index in range(1, len(call)):
                fields.append(call[index])
            return fields
        if t is PARTIAL:
            return self.partial_fields(obj, head)
        return None

    def partial_fields(self, task: Any, head: object) -> Optional[list[Any]]:
        # What pickle stores of a partial (its __reduce__): func, args, keywords and its
        # __dict__, which must be empty here (attributes of its own: pickled).
        if task.__dict__:
            return None
        arguments: tuple[Any, ...] = task.args
        keywords: dict[Any, Any] = task.keywords
        for argument in arguments:
            if not is_scalar(argument):
                return None
        for key, value in keywords.items():
            if type(key) is not str or not is_scalar(key) or not is_scalar(value):
                return None
        fields = self.start(head, TASK_PARTIAL, task.func)
        if fields is None:
            return None
        fields.append(keywords)
        for argument in arguments:
            fields.append(argument)
        return fields

    def start(self, head: object, kind: int, function: object) -> Optional[list[Any]]:
        """[head, kind, module, qualname] the first time `function` is named, [head, kind,
        index] after; None when pickle would not store it by name. Called only once the
        rest of the task is known to qualify: a name registered is a name written."""
        t = type(function)
        by_identity = t is FUNCTION or t is BUILTIN_FUNCTION
        if by_identity:
            known = self.by_function.get(function)
            if known is not None and known[0] is function:
                return [head, kind, known[1]]
        elif t is not type:
            return None
        index = self.by_id.get(id(function))
        if index is not None:
            return [head, kind, index]
        entry = lookup_global(function)  # the checks pickle makes before it writes a name
        if entry is None:
            return None
        key = (entry.module_name, entry.name)
        found = self.by_name.get(key)
        if found is None:
            index = self.by_name[key] = len(self.by_name)
            fields: list[Any] = [head, kind, entry.module_name, entry.name]
        else:
            index = found  # a forwarded record named it first
            fields = [head, kind, index]
        if by_identity and function not in self.by_function:
            self.by_function[function] = (function, index)
        else:
            self.named.append(function)
            self.by_id[id(function)] = index
        return fields

    def forwarded_fields(self, fields: list[Any], head: object) -> list[Any]:
        """An unopened task's checked, self-contained fields [_, kind, module, qualname,
        *tail], as this header writes them (after an earlier task naming the same
        function: its index), so that a message is forwarded byte for byte."""
        key = (cast(str, fields[2]), cast(str, fields[3]))
        index = self.by_name.get(key)
        if index is None:
            self.by_name[key] = len(self.by_name)
            fields[0] = head
            return fields
        out: list[Any] = [head, fields[1], index]
        out.extend(fields[4:])
        return out


# Received fields keep the array as msgpack's list_hook hands it over: item 0 is the task's
# mark (deleting it cost a tenth of building the task), or None in a record's fields.
# [_, kind, module, qualname, *tail] or [_, kind, index, *tail]; tail: arguments
# (TASK_CALL), or keywords then arguments (TASK_PARTIAL).
def tail_start(fields: list[Any]) -> int:
    """Where the arguments (TASK_CALL) or the keywords (TASK_PARTIAL) begin in received
    `fields`. Checks the whole task; raises DeserializationError for anything this form
    does not write."""
    size = len(fields)
    if size < 3:
        raise DeserializationError("a task needs a kind and a function")
    kind = fields[1]
    named = fields[2]
    if type(named) is str:
        if size < 4 or type(fields[3]) is not str:
            raise DeserializationError("a task names its function by module and name")
        start = 4
    elif type(named) is int:
        start = 3
    else:
        raise DeserializationError("a task names its function by module and name, or index")
    arguments = start
    if type(kind) is int and kind == TASK_PARTIAL:
        if size <= start or type(fields[start]) is not dict:
            raise DeserializationError("a partial task needs a map of keywords")
        keywords: dict[Any, Any] = fields[start]
        for key, value in keywords.items():
            if type(key) is not str or not is_received_scalar(value):
                raise DeserializationError("a partial task's keywords are str -> scalar")
        arguments += 1
    elif type(kind) is not int or kind != TASK_CALL:
        raise DeserializationError(f"unknown task kind {shown(kind)}")
    for index in range(arguments, size):
        if not is_received_scalar(fields[index]):
            raise DeserializationError(
                f"a task argument of type {type(fields[index]).__qualname__} (only scalars)")
    return start


class TaskNames:
    """The functions one received header's tasks name, in order (the decoder's side)."""

    def __init__(self) -> None:
        self.names: list[tuple[str, str]] = []
        self.functions: list[object] = []  # found on first use, or UNRESOLVED
        # Packed record prefixes [array header, kind, module, qualname], by function index,
        # kind and length: a graph names a few functions thousands of times.
        self.record_prefixes: dict[int, bytes] = {}

    def index_of(self, fields: list[Any]) -> int:
        """The table index of the function that checked `fields` name; a first naming is
        added to the table."""
        named = fields[2]
        if type(named) is str:
            self.names.append((named, cast(str, fields[3])))
            self.functions.append(UNRESOLVED)
            return len(self.names) - 1
        index = cast(int, named)
        if not 0 <= index < len(self.names):
            raise DeserializationError(
                f"a task names function {index} of the {len(self.names)} named before it")
        return index

    def function(self, index: int) -> Any:
        """The function at `index`, found (imported if need be) on first use."""
        function = self.functions[index]
        if function is UNRESOLVED:
            module_name, name = self.names[index]
            function = self.functions[index] = find_function(module_name, name)
        return function

    def record_frame(self, fields: list[Any], index: int, start: int, pack: Any) -> bytes:
        """An unopened record's frame: msgpack of self_contained(), byte for byte what
        `pack` (a Packer's, autoreset) makes of it. Its prefix is packed once per
        function, kind and length, only the tail per task: with the list that
        self_contained() builds, packing a whole record cost ~3.3k instructions a task,
        this ~2.7k."""
        tail = fields[start:]
        count = len(tail) + 3
        if count > MAX_FIXARRAY:
            return cast(bytes, pack(self.self_contained(fields, index, start)))
        kind: int = fields[1]  # TASK_CALL or TASK_PARTIAL: tail_start checked it
        key = (index * 2 + kind) * (MAX_FIXARRAY + 1) + count
        prefix = self.record_prefixes.get(key)
        if prefix is None:
            module_name, name = self.names[index]
            # Both arrays are fixarrays (one byte, 0x90 + length): the record's header
            # replaces that of [kind, module, qualname], and the tail's is dropped.
            head: bytes = pack([kind, module_name, name])
            prefix = self.record_prefixes[key] = bytes((FIXARRAY + count,)) + head[1:]
        packed_tail: bytes = pack(tail)
        return prefix + packed_tail[1:]

    def self_contained(self, fields: list[Any], index: int, start: int) -> list[Any]:
        """Checked `fields` as [kind, module, qualname, *tail], for an unopened record's
        frame."""
        module_name, name = self.names[index]
        out: list[Any] = [fields[1], module_name, name]
        out.extend(fields[start:])
        return out


def find_function(module_name: str, name: str) -> Any:
    """What pickle's find_class returns for (module_name, name), after the same audit event;
    imports the module if it is not loaded, as pickle does."""
    key = (module_name, name)
    ref = TASK_GLOBALS.get(key)
    if ref is None:
        ref = GlobalRef(module_name, name)
        if len(TASK_GLOBALS) >= MAX_TASK_GLOBALS:
            TASK_GLOBALS.clear()
        TASK_GLOBALS[key] = ref
    try:
        return ref.find()
    except Decline as exc:
        raise chained(DeserializationError(f"cannot find {module_name}.{name}: a local name"),
                      exc)


def build_task(fields: list[Any], function: Any, start: int) -> Any:
    """The task of checked `fields` (tail_start gave `start`), calling `function`."""
    if fields[1] == TASK_CALL:
        # Up to three arguments (most tasks), the tuple is built without a list.
        arguments = len(fields) - start
        if arguments == 2:
            return (function, fields[start], fields[start + 1])
        if arguments == 1:
            return (function, fields[start])
        if arguments == 3:
            return (function, fields[start], fields[start + 1], fields[start + 2])
        call = fields[start - 1:]
        call[0] = function
        return tuple(call)
    keywords: dict[str, Any] = fields[start]
    if type(function) is not PARTIAL:
        if not keywords:  # a direct call: star-arguments cost more than partial() itself
            arguments = len(fields) - start - 1
            if arguments == 1:
                return PARTIAL(function, fields[start + 1])
            if arguments == 2:
                return PARTIAL(function, fields[start + 1], fields[start + 2])
            if arguments == 0:
                return PARTIAL(function)
        return PARTIAL(function, *fields[start + 1:], **keywords)
    # partial() of a partial flattens the two; pickle's __setstate__ does not.
    task = PARTIAL(function)
    getattr(task, "__setstate__")((function, tuple(fields[start + 1:]), keywords, None))
    return task


def task_from_frame(frame: object) -> Any:
    """The task of an unopened task record's one frame (msgpack of its self-contained
    fields)."""
    fields = unpack_fields(frame)
    return build_task(fields, find_function(fields[2], fields[3]), 4)


def task_fields_of(frame: object) -> Optional[list[Any]]:
    """The checked, self-contained fields in an unopened task record's frame, or None when
    it holds none (the record is then written as a record)."""
    try:
        return unpack_fields(frame)
    except DeserializationError:
        return None


def unpack_fields(frame: object) -> list[Any]:
    """The checked, self-contained fields in an unopened task record's frame, as
    [None, kind, module, qualname, *tail]."""
    if type(frame) is not bytes and type(frame) is not bytearray and \
            type(frame) is not MEMORYVIEW:
        raise DeserializationError("a task record's frame is not bytes-like")
    try:
        fields = UNPACKB(frame, raw=False, strict_map_key=False, use_list=True)
    except Exception as exc:
        raise chained(DeserializationError(f"a task record's frame is not msgpack: {exc}"),
                      exc)
    if type(fields) is not list:
        raise DeserializationError("a task record's frame does not hold an array")
    checked: list[Any] = fields
    checked.insert(0, None)
    if tail_start(checked) != 4:
        raise DeserializationError("a task record's frame names its function by index")
    return checked
