"""The least any walk over a message must do before msgpack packs it, for floors.py: visit
every dict entry and list or tuple item, and tell the values msgpack may pack as they are
from the others. It builds nothing, checks no byte size and marks no tuple, so fastser's
own walk can only cost more. floors.py compiles it with mypyc, as fastser is compiled.
"""

from typing import Any, Final, cast

MIN_SHORT_INT: Final = -4611686018427387904
MAX_SHORT_INT: Final = 4611686018427387903


def plain(obj: object) -> bool:
    """Whether msgpack could pack obj as it is (exact str, float, bool, None, small int,
    and dicts, lists and tuples of these)."""
    t = type(obj)
    if t is str or t is float or t is bool or obj is None:
        return True
    if t is int:
        return MIN_SHORT_INT <= cast(int, obj) <= MAX_SHORT_INT
    if t is dict:
        for key, value in cast(dict[Any, Any], obj).items():
            if type(key) is not str and not plain(key):
                return False
            vt = type(value)
            if not (vt is str or vt is float or vt is bool or value is None) and not plain(value):
                return False
        return True
    if t is list or t is tuple:
        items = cast(tuple[Any, ...], obj) if t is tuple else cast(list[Any], obj)
        for item in items:
            it = type(item)
            if not (it is str or it is float or it is bool or item is None) and not plain(item):
                return False
        return True
    return False
