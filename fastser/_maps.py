"""Version 6's two forms of a large dict, both ways: the map array and the task map.

A map array is [map mark, key, value, key, value, ...]: msgpack interns every str key of a
map it decodes, a lookup in the interpreter's table of interned strings that misses the
cache for each new key (a tenth of W4's loads), and array items it does not. A task map is
one extension type holding [[key, ...], [task, ...]] for a dict of Serialize tasks with str
keys: msgpack reads it in one nested call, with no hook call per task. The encoder decides
which form a walked dict takes; the decoder's hooks rebuild the dict (_task checks and
builds each task). docs/wire-format.md describes both.
"""

from typing import Any, Callable, Final

from ._errors import DeserializationError
from ._packing import MAP_MARK, TASK_SERIALIZED_MARK, ext
from ._wire import EXT_TASK_MAP

# A dict of at least this many Serialize tasks, all with str keys, is a task map. Smaller
# ones stay inline, where a control message's handful of tasks costs no nested msgpack call.
MIN_TASK_MAP: Final = 16
# A dict of at least this many entries (not a task map) is a map array.
MIN_MAP_ARRAY: Final = 32


def map_array(mapping: dict[Any, Any]) -> list[Any]:
    """A walked dict as the array [map mark, key, value, ...], in its order."""
    flat: list[Any] = [MAP_MARK]
    for key, value in mapping.items():
        flat.append(key)
        flat.append(value)
    return flat


def dict_of_pairs(items: list[Any], start: int) -> dict[Any, Any]:
    """The dict of items[start:], key, value, key, value, ...: a received map array after
    its mark (start 1), or the entries the encoder gathered (start 0). An unhashable key
    raises TypeError, which loads reports as a corrupt header."""
    size = len(items)
    if (size - start) % 2:
        raise DeserializationError("a map's array holds a key without its value")
    out: dict[Any, Any] = {}
    for index in range(start, size, 2):
        out[items[index]] = items[index + 1]
    return out


def is_task(encoded: object) -> bool:
    """Whether a walked value is a Serialize task's array (led by its mark, which nothing
    else is)."""
    if type(encoded) is not list:
        return False
    fields: list[Any] = encoded
    return len(fields) > 0 and fields[0] is TASK_SERIALIZED_MARK


def task_map(entries: list[Any], pack: Callable[[object], bytes]) -> object:
    """The task map of a walked dict of tasks, from its entries key, task, key, task, ... in
    its order (so functions keep the indices the walk gave them); each task's array gets nil
    in place of its mark (the arrays are the walk's own, made for this message). `pack` is
    plain msgpack's."""
    tasks: list[list[Any]] = entries[1::2]
    for fields in tasks:
        fields[0] = None
    return ext(EXT_TASK_MAP, pack([entries[0::2], tasks]))


def task_map_parts(table: object) -> tuple[list[Any], list[Any]]:
    """The keys and tasks of a received task map's decoded data, checked to be two arrays
    of one length (each key and task is checked where it is built)."""
    if type(table) is not list or len(table) != 2:
        raise DeserializationError("a task map is not [keys, tasks]")
    parts: list[Any] = table
    keys = parts[0]
    tasks = parts[1]
    if type(keys) is not list or type(tasks) is not list or len(keys) != len(tasks):
        raise DeserializationError("a task map's keys and tasks are not two arrays of "
                                   "one length")
    return keys, tasks
