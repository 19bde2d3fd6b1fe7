"""How deep a message nests, for Limits.max_depth (msgpack itself has no depth option on
decode): an upper bound read from the header's bytes, and the exact walk of the decoded
message that the decoder runs only when the bound is over the limit."""

from collections.abc import Iterable
from typing import Any, Final, cast

from mypy_extensions import i64


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


# msgpack's first bytes 0xc4..0xdf: how many bytes follow the first before the value's data
# or items, and whether they hold a length (of data) or a count (of items).
# (bytes, whose items mypyc reads natively: a tuple's would be boxed ints)
SIZE_BYTES: Final = bytes((1, 2, 4, 2, 3, 5, 4, 8, 1, 2, 4, 8, 1, 2, 4, 8, 2, 3, 5, 9, 17,
                           1, 2, 4, 2, 4, 2, 4))
LENGTH_BYTES: Final = bytes((1, 2, 4, 1, 2, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                             1, 2, 4, 0, 0, 0, 0))


def header_nests_deeper(data: bytes, budget: int) -> bool:
    """Whether the msgpack value at the start of `data` may nest more than `budget`
    containers deep: True when its arrays and maps do, or when `data` ends before the value
    does or holds a byte msgpack never writes. An upper bound of the depth of the decoded
    header for wire versions 2 and later (a record or a task is an array here, and no
    container once decoded; a tuple or set is an array either way). It cannot see into
    bin and extension data: values made from those (payloads opened inline, version 1's
    nested tuples) are the decoder's to account for.
    One pass over the bytes, making no objects. Under callgrind, on a batch of 1,000
    control messages (W2) it costs 0.4x the walk of the decoded message (which cost a
    tenth of the decode); on an update-graph (W4), whose flat tasks the walk skips
    cheaply, 1.5x. i64, not int: mypyc's ints check for big values at every operation,
    which cost the scan half its instructions."""
    end: i64 = len(data)
    pos: i64 = 0
    left: i64 = 1  # values still to come in the innermost open container (1: the top value)
    depth: i64 = 0  # containers open
    # msgpack decodes no more than 1024 levels: past those, the walk can answer.
    limit: i64 = min(budget, 1024)
    # For each open container, what was left in its parent: a list made once (append and
    # pop cost a third of the scan).
    parents_left: list[i64] = [0] * limit
    while left > 0 or depth > 0:
        if left == 0:
            depth -= 1
            left = parents_left[depth]
            continue
        if pos >= end:
            return True
        first: i64 = data[pos]
        left -= 1
        # The most frequent first: map keys are short strings, values small ints.
        if 0xa0 <= first < 0xc0:  # fixstr
            pos += 1 + (first & 0x1f)
            continue
        if first < 0x80 or first >= 0xe0 or first == 0xc0 or first == 0xc2 or first == 0xc3:
            pos += 1  # fixint, nil, bool
            continue
        if first == 0xc1:
            return True  # never used by msgpack
        items: i64  # a container's item count (maps: keys and values)
        if first < 0x90:
            items = 2 * (first & 0x0f)
            pos += 1
        elif first < 0xa0:
            items = first & 0x0f
            pos += 1
        else:
            index: i64 = first - 0xc4
            size: i64 = SIZE_BYTES[index]
            if pos + 1 + size > end:
                return True
            length_bytes: i64 = LENGTH_BYTES[index]
            if first < 0xdc:
                if length_bytes:  # bin, str, ext 8/16/32: a length of data follows
                    pos += 1 + size + big_endian(data, pos + 1, length_bytes)
                else:  # float, int, fixext: a fixed size
                    pos += 1 + size
                continue
            count = big_endian(data, pos + 1, size)  # array 16/32, map 16/32
            items = count if first <= 0xdd else 2 * count
            pos += 1 + size
        if depth >= limit:
            return True
        parents_left[depth] = left
        depth += 1
        left = items
    return pos > end


def big_endian(data: bytes, start: i64, size: i64) -> i64:
    """The unsigned big-endian int in data[start:start + size] (in range: checked)."""
    value: i64 = 0
    stop = start + size
    while start < stop:
        value = (value << 8) | data[start]
        start += 1
    return value
