"""How deep a decoded message nests: the walk the decoder runs only on headers that could
nest beyond Limits.max_depth (msgpack itself has no depth option on decode)."""

from collections.abc import Iterable
from typing import Any, cast


def is_container(obj: object) -> bool:
    t = type(obj)
    return t is dict or t is list or t is tuple or t is set or t is frozenset


def flat(items: tuple[Any, ...]) -> bool:
    """Whether a tuple holds no container (it nests one level)."""
    for item in items:
        t = type(item)
        if t is dict or t is list or t is tuple or t is set or t is frozenset:
            return False
    return True


def deeper_than(obj: object, budget: int, keys: bool) -> bool:
    """Whether containers nest more than `budget` levels below `obj` (a container). With
    `keys`, dict keys are looked at too (a tuple key nests like any tuple); without, only
    values — right when the decode made no tuple, set or frozenset, as no other container
    can be a key."""
    if budget == 0:
        return True
    # Typed loops over exact types: mypyc iterates lists and dicts without the generic
    # iterator protocol, and most items are scalars that need no call.
    if type(obj) is dict:
        mapping: dict[Any, Any] = obj
        for key, value in mapping.items():  # mypyc: faster than .values() or keys
            if keys and type(key) is not str and is_container(key) and \
                    deeper_than(key, budget - 1, keys):
                return True
            t = type(value)
            if t is tuple:
                # Inline: a dict of tasks holds thousands of flat tuples.
                if budget > 1 and flat(value):
                    continue
                if deeper_than(value, budget - 1, keys):
                    return True
            elif (t is dict or t is list or t is set or t is frozenset) and \
                    deeper_than(value, budget - 1, keys):
                return True
        return False
    if type(obj) is list:
        sequence: list[Any] = obj
        for item in sequence:
            t = type(item)
            if (t is dict or t is list or t is tuple or t is set or t is frozenset) and \
                    deeper_than(item, budget - 1, keys):
                return True
        return False
    for item in cast(Iterable[Any], obj):
        if is_container(item) and deeper_than(item, budget - 1, keys):
            return True
    return False
