"""Small pickles read directly: the counterpart of _pickle_writer, for the same opcodes.

Sits below _pickle.py, which tries it first and calls pickle.loads when it declines. It runs
only where pickle.loads would (the "pickle" family, allowed by the caller): it resolves the
same globals and calls the same reducer, so it trusts its input exactly as pickle does.

Strategy: one `pickle.loads` of a task sets an Unpickler up and finds its function through
`__import__`, which costs four times the decoding itself. This reader first checks that every
opcode is one it knows (those _pickle_writer writes, plus the FRAME and memo opcodes of the
stdlib's own small pickles) and that every length stays inside the data; only then does it
build anything. Globals are looked up in the module's namespace as pickle's find_class would
(after the same audit event), importing a module that is not loaded yet; the only reducer it
calls is functools.partial — any other makes it decline before the call, so nothing but
imports (which pickle.loads would repeat as no-ops) has happened when pickle takes over.
"""

import functools
import importlib
import struct
import sys
from typing import Any, Final, Optional

from ._pickle_opcodes import (APPEND, APPENDS, BINBYTES, BINFLOAT, BINGET, BININT, BININT1,
                              BININT2, BINUNICODE, BUILD, EMPTY_DICT, EMPTY_LIST, EMPTY_TUPLE,
                              FRAME, LONG1, LONG_BINGET, MARK, MEMOIZE, NEWFALSE, NEWTRUE, NONE,
                              REDUCE, SETITEM, SETITEMS, SHORT_BINBYTES, SHORT_BINUNICODE,
                              STACK_GLOBAL, STOP, TUPLE, TUPLE1, TUPLE2, TUPLE3, UINT32,
                              known_opcodes)

PARTIAL: Final[type[functools.partial[Any]]] = functools.partial
SYS_MODULES: Final = sys.modules
AUDIT: Final = sys.audit
DOUBLE: Final = struct.Struct(">d")
INT32: Final = struct.Struct("<i")


class Decline(Exception):
    """Raised inside the reader to give the pickle to pickle.loads instead."""


def find_global(module_name: object, name: object) -> Any:
    """What pickle's find_class returns for protocol 4 and 5 (no name remapping)."""
    if type(module_name) is not str or type(name) is not str:
        raise Decline()
    AUDIT("pickle.find_class", module_name, name)
    return resolve(module_name, name)


def resolve(module_name: str, name: str) -> Any:
    module = SYS_MODULES.get(module_name)
    if module is None:
        module = importlib.import_module(module_name)
    found: Any = module
    for part in name.split("."):
        if part == "<locals>":
            raise Decline()  # pickle raises its own error for these
        found = getattr(found, part)
    return found


class GlobalRef:
    """A module and name as a pickle spells them, and the namespace they were last found in
    (looked up again at every use: a rebound name gives the new object, as with pickle)."""

    def __init__(self, module_name: str, name: str) -> None:
        self.module_name = module_name
        self.name = name
        # (module, its namespace), set together so that a reader never pairs the two wrongly
        self.found_in: Optional[tuple[object, dict[str, Any]]] = None

    def find(self) -> Any:
        AUDIT("pickle.find_class", self.module_name, self.name)
        module = SYS_MODULES.get(self.module_name)
        found_in = self.found_in
        if found_in is not None and module is found_in[0]:
            found = found_in[1].get(self.name)
            if found is not None:
                return found
        found = resolve(self.module_name, self.name)
        module = SYS_MODULES.get(self.module_name)
        if "." not in self.name and module is not None:
            self.found_in = (module, vars(module))
        return found


# GlobalRefs by the opcodes that spell them (two short strings and STACK_GLOBAL, as
# _pickle_writer writes them): a task graph names a handful of functions thousands of times.
GLOBAL_REFS: Final[dict[bytes, GlobalRef]] = {}
MAX_GLOBAL_REFS: Final = 4096


# The stack and the mark list keep this many placeholders under their first entry: CPython
# reallocates a list that shrinks below half its capacity, and a task's pickle fills and
# empties its stack a dozen times, which cost more in reallocations than in reading.
STACK_BASE: Final = 16


class PickleReader:
    def __init__(self) -> None:
        self.data = b""
        self.stack: list[Any] = [None] * STACK_BASE
        self.marks: list[int] = [0] * STACK_BASE
        self.memo: list[Any] = []

    def reset(self) -> None:
        """Ready for the next pickle, holding nothing of the last."""
        self.data = b""
        del self.stack[STACK_BASE:]
        del self.marks[STACK_BASE:]
        self.memo.clear()

    def pop_mark(self) -> list[Any]:
        """The items pushed since the last MARK, removed from the stack."""
        if len(self.marks) <= STACK_BASE:
            raise Decline()
        start = self.marks.pop()
        stack = self.stack
        items = stack[start:]
        del stack[start:]
        return items

    def pop(self) -> Any:
        if len(self.stack) <= STACK_BASE:
            raise Decline()
        return self.stack.pop()

    def top(self) -> Any:
        if len(self.stack) <= STACK_BASE:
            raise Decline()
        return self.stack[-1]

    def global_ref(self, start: int, middle: int, end: int) -> GlobalRef:
        """The GlobalRef spelled by data[start:end]: module (a short string at start), name
        (a short string at middle), and STACK_GLOBAL at end."""
        key = self.data[start:end]
        ref = GLOBAL_REFS.get(key)
        if ref is None:
            ref = GlobalRef(self.text(start + 2, middle), self.text(middle + 2, end))
            if len(GLOBAL_REFS) >= MAX_GLOBAL_REFS:
                GLOBAL_REFS.clear()
            GLOBAL_REFS[key] = ref
        return ref

    def text(self, start: int, end: int) -> str:
        raw = self.data[start:end]
        try:
            return raw.decode()
        except UnicodeDecodeError:
            return raw.decode("utf-8", "surrogatepass")  # as pickle reads lone surrogates

    def read(self) -> Any:
        data = self.data
        size = len(data)
        stack = self.stack
        pos = 2
        while True:
            opcode = data[pos]
            pos += 1
            if opcode == SHORT_BINUNICODE:
                end = pos + 1 + data[pos]
                after = end + 1 + data[end + 1] + 1 if end + 1 < size else size
                if after < size and data[end] == SHORT_BINUNICODE and \
                        data[after] == STACK_GLOBAL:
                    stack.append(self.global_ref(pos - 1, end, after).find())
                    pos = after + 1
                else:
                    stack.append(self.text(pos + 1, end))
                    pos = end
            elif opcode == BININT1:
                stack.append(data[pos])
                pos += 1
            elif opcode == BININT2:  # two bytes, little-endian (a struct call costs more)
                stack.append(data[pos] | data[pos + 1] << 8)
                pos += 2
            elif opcode == MEMOIZE:
                self.memo.append(self.top())
            elif opcode == STACK_GLOBAL:
                name = self.pop()
                stack.append(find_global(self.pop(), name))
            elif opcode == TUPLE3:
                if len(stack) < STACK_BASE + 3:
                    raise Decline()
                third = stack.pop()
                second = stack.pop()
                stack.append((stack.pop(), second, third))
            elif opcode == TUPLE2:
                second = self.pop()
                stack.append((self.pop(), second))
            elif opcode == TUPLE1:
                stack.append((self.pop(),))
            elif opcode == STOP:
                if len(stack) != STACK_BASE + 1 or len(self.marks) != STACK_BASE:
                    raise Decline()
                return stack[STACK_BASE]
            else:
                pos = self.read_rare(opcode, pos)

    def read_rare(self, opcode: int, pos: int) -> int:
        """The opcodes a task tuple does not need; returns the position after the argument."""
        data = self.data
        stack = self.stack
        if opcode == NONE:
            stack.append(None)
        elif opcode == NEWTRUE:
            stack.append(True)
        elif opcode == NEWFALSE:
            stack.append(False)
        elif opcode == BININT:
            stack.append(INT32.unpack_from(data, pos)[0])
            return pos + 4
        elif opcode == LONG1:
            end = pos + 1 + data[pos]
            stack.append(int.from_bytes(data[pos + 1:end], "little", signed=True))
            return end
        elif opcode == BINFLOAT:
            stack.append(DOUBLE.unpack_from(data, pos)[0])
            return pos + 8
        elif opcode == BINUNICODE:
            end = pos + 4 + self.length_at(pos)
            stack.append(self.text(pos + 4, end))
            return end
        elif opcode == SHORT_BINBYTES:
            end = pos + 1 + data[pos]
            stack.append(data[pos + 1:end])
            return end
        elif opcode == BINBYTES:
            end = pos + 4 + self.length_at(pos)
            stack.append(data[pos + 4:end])
            return end
        elif opcode == EMPTY_TUPLE:
            stack.append(())
        elif opcode == MARK:
            self.marks.append(len(stack))
        elif opcode == TUPLE:
            stack.append(tuple(self.pop_mark()))
        elif opcode == EMPTY_LIST:
            stack.append([])
        elif opcode == APPEND:
            item = self.pop()
            self.append_to(self.top(), [item])
        elif opcode == APPENDS:
            items = self.pop_mark()
            self.append_to(self.top(), items)
        elif opcode == EMPTY_DICT:
            stack.append({})
        elif opcode == SETITEM:
            value = self.pop()
            key = self.pop()
            self.set_items(self.top(), [key, value])
        elif opcode == SETITEMS:
            items = self.pop_mark()
            self.set_items(self.top(), items)
        elif opcode == REDUCE:
            args = self.pop()
            func = self.pop()
            if func is not PARTIAL or type(args) is not tuple:
                raise Decline()  # before the call: pickle.loads makes any other
            stack.append(PARTIAL(*args))
        elif opcode == BUILD:
            state = self.pop()
            target = self.top()
            if type(target) is not PARTIAL:
                raise Decline()
            getattr(target, "__setstate__")(state)  # typeshed omits partial.__setstate__
        elif opcode == BINGET:
            stack.append(self.memo_at(data[pos]))
            return pos + 1
        elif opcode == LONG_BINGET:
            stack.append(self.memo_at(self.length_at(pos)))
            return pos + 4
        elif opcode == FRAME:
            return pos + 8  # a length hint for buffered readers; the data is all here
        else:
            raise Decline()
        return pos

    def length_at(self, pos: int) -> int:
        length: int = UINT32.unpack_from(self.data, pos)[0]
        return length

    def memo_at(self, index: int) -> Any:
        if index >= len(self.memo):
            raise Decline()
        return self.memo[index]

    def append_to(self, target: Any, items: list[Any]) -> None:
        if type(target) is not list:
            raise Decline()
        target.extend(items)

    def set_items(self, target: Any, items: list[Any]) -> None:
        if type(target) is not dict or len(items) % 2:
            raise Decline()
        for index in range(0, len(items), 2):
            target[items[index]] = items[index + 1]


# Readers kept for reuse between calls (making one per task costs more than reading it);
# more than this many at once are threads' extras, left to the collector.
READERS: Final[list[PickleReader]] = []
MAX_POOLED_READERS: Final = 16


def read_pickle(data: bytes) -> tuple[bool, Any]:
    """(True, the object) for a pickle this reader knows every opcode of; (False, None)
    when pickle.loads must read it."""
    if not known_opcodes(data):
        return False, None
    try:
        reader = READERS.pop()  # atomic: threads never share a reader
    except IndexError:
        reader = PickleReader()
    reader.data = data
    try:
        result: tuple[bool, Any] = True, reader.read()
    except Decline:
        result = False, None
    finally:
        reader.reset()
    if len(READERS) < MAX_POOLED_READERS:
        READERS.append(reader)
    return result
