"""The header's msgpack bytes read without decoding them. How deep a message nests, for
Limits.max_depth (msgpack itself has no depth option on decode): an upper bound read from the
header's bytes, and the exact walk of the decoded message that the decoder runs only when the
bound is over the limit. And whether the bytes hold an extension type of code -1, which
msgpack turns into a Timestamp before ext_hook could refuse it."""

import struct
from collections.abc import Iterable
from typing import Any, Final, Optional, cast

from mypy_extensions import i64

from fastser.codec.collisions import HashCounter


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


def deeper_than(obj: object, budget: int, keys: bool,
                skip: Optional[dict[int, Any]] = None) -> bool:
    """Whether containers nest more than `budget` levels below `obj` (a container). With
    `keys`, dict keys are looked at too (a tuple key nests like any tuple); without, only
    values — right when the decode made no tuple, set or frozenset, as no other container
    can be a key. `skip`: the ids of containers that count as leaves (opened payloads)."""
    if budget == 0:
        return True
    if skip is not None:
        return deeper_than_skipping(obj, budget, skip)
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


def deeper_than_skipping(obj: object, budget: int, skip: dict[int, Any]) -> bool:
    """deeper_than with keys, where the containers whose ids are in `skip` are leaves."""
    if budget == 0:
        return True
    items: Iterable[Any]
    if type(obj) is dict:
        mapping: dict[Any, Any] = obj
        items = [item for pair in mapping.items() for item in pair]
    else:
        items = cast(Iterable[Any], obj)
    for item in items:
        if is_container(item) and id(item) not in skip and \
                deeper_than_skipping(item, budget - 1, skip):
            return True
    return False


# msgpack's first bytes 0xc4..0xdf: how many bytes follow the first before the value's data
# or items, and whether they hold a length (of data) or a count (of items).
# (bytes, whose items mypyc reads natively: a tuple's would be boxed ints)
SIZE_BYTES: Final = bytes((1, 2, 4, 2, 3, 5, 4, 8, 1, 2, 4, 8, 1, 2, 4, 8, 2, 3, 5, 9, 17,
                           1, 2, 4, 2, 4, 2, 4))
LENGTH_BYTES: Final = bytes((1, 2, 4, 1, 2, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                             1, 2, 4, 0, 0, 0, 0))
# How deep the scan follows containers before it says "maybe too deep" (the walk then
# answers): it recurses once per level, and the pure-Python build has a recursion limit.
SCAN_DEPTH: Final = 300


# What skip_values returns, asked to find one, at an extension type of code -1.
EXT_MINUS_1_FOUND: Final = -2
# The bytes that stand before an extension type's code 0xff when msgpack makes a Timestamp
# of it: fixext 4 and 8 (d6, d7), or the last byte of the data length 4, 8 or 12 of ext
# 8/16/32 (c7 LL, c8 LLLL, c9 LLLLLLLL). msgpack refuses every other ext -1 itself
# (ValueError: "invalid timestamp data").
TIMESTAMP_LEADS: Final = bytes((0x04, 0x08, 0x0c, 0xd6, 0xd7))
# 0xff bytes looked at one by one (one bytes.find each) before the exact scan answers: a
# header of many -1 ints costs a scan, not a call per byte.
PLAIN_FF_LOOKS: Final = 64


def holds_ext_minus_1(data: bytes, start: int) -> bool:
    """Whether the msgpack value at data[start:] holds an extension type of code -1, which
    msgpack's unpacker turns into a msgpack.Timestamp before any ext_hook sees it. Bytes
    that are not one msgpack value may answer either way (msgpack refuses them itself).

    Most headers hold no 0xff at all (a memchr says so), and most 0xff bytes that do occur
    (-1, float and int bytes) do not follow a byte of TIMESTAMP_LEADS: only then, or past
    PLAIN_FF_LOOKS of them, the bytes are scanned token by token. It cannot see into bin and
    extension data (a record in a dict key is looked at where it is decoded)."""
    if 255 not in data:  # a memchr, and no method lookup (a third of this test on control-message)
        return False
    at = data.find(255, start)
    looks = 0
    while at >= 0:
        looks += 1
        if looks > PLAIN_FF_LOOKS or (at > start and data[at - 1] in TIMESTAMP_LEADS):
            return skip_values(data, start, len(data), 1, 0, True) == EXT_MINUS_1_FOUND
        at = data.find(255, at + 1)
    return False


def header_nests_deeper(data: bytes, budget: int) -> bool:
    """Whether the msgpack value at the start of `data` may nest more than `budget`
    containers deep: True when its arrays and maps do, or when `data` ends before the value
    does or holds a byte msgpack never writes. An upper bound of the depth of the decoded
    header (a record is an array here, and no container once decoded; a tuple or set is an
    array either way). It cannot see into bin and extension data: values made from those
    (payloads opened inline) are the decoder's to account for.

    One pass over the bytes, making no objects. Under callgrind it costs 0.3x the walk of
    the decoded message on batch-of-1000 (where the walk cost a tenth of the decode) and
    0.8x on update-graph, whose flat tasks the walk skips cheaply (`bench.sh
    instructions`)."""
    end: i64 = len(data)
    pos = skip_values(data, 0, end, 1, min(budget, SCAN_DEPTH))
    return pos < 0 or pos > end



def skip_values(data: bytes, pos: i64, end: i64, count: i64, budget: i64,
                flat: bool = False) -> i64:
    """The position after the `count` msgpack values at `pos`, or -1 when they nest more
    than `budget` containers deep, run past `end` or hold a byte msgpack never writes.
    Recursive, one call per container: each parent's count stays a native int on the C
    stack (kept in a list, each was a boxed int: half the scan). i64, not int: mypyc's
    ints check for big values at every operation.

    `flat`: containers are not descended into, their items are counted in with the rest
    (no recursion, no depth bound: `budget` is unused), and an extension type of code -1
    ends the scan with EXT_MINUS_1_FOUND."""
    while count > 0:
        if pos >= end:
            return -1
        first: i64 = data[pos]
        count -= 1
        # The most frequent first: map keys are short strings, values small ints.
        if 0xa0 <= first < 0xc0:  # fixstr
            pos += 1 + (first & 0x1f)
            continue
        if first < 0x80 or first >= 0xe0 or first == 0xc0 or first == 0xc2 or first == 0xc3:
            pos += 1  # fixint, nil, bool
            continue
        if first == 0xc1:
            return -1  # never used by msgpack
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
            length_bytes: i64 = LENGTH_BYTES[index]
            if flat and (0xd4 <= first <= 0xd8 or 0xc7 <= first <= 0xc9):
                # an extension type's code: after the first byte (fixext), or after
                # the data length (ext 8/16/32)
                code_at: i64 = pos + 1 if first >= 0xd4 else pos + size
                if code_at < end and data[code_at] == 0xff:
                    return EXT_MINUS_1_FOUND
            if length_bytes == 0 and first < 0xdc:
                # float, int, fixext: a fixed size, nothing to read (an overrun shows at the
                # next value, or at the end)
                pos += 1 + size
                continue
            if pos + 1 + size > end:
                return -1
            if length_bytes == 1:  # bin 8, str 8, ext 8 (a task's mark): no call
                pos += 1 + size + data[pos + 1]
                continue
            if first < 0xdc:  # bin, str, ext 16/32: a length of data follows
                pos += 1 + size + big_endian(data, pos + 1, length_bytes)
                continue
            count_here = big_endian(data, pos + 1, size)  # array 16/32, map 16/32
            items = count_here if first <= 0xdd else 2 * count_here
            pos += 1 + size
        if flat:
            count += items
            continue
        if budget <= 0:
            return -1
        if items > 0:
            pos = skip_values(data, pos, end, items, budget - 1)
            if pos < 0:
                return -1
    return pos


def big_endian(data: bytes, start: i64, size: i64) -> i64:
    """The unsigned big-endian int in data[start:start + size] (in range: checked)."""
    value: i64 = 0
    stop = start + size
    while start < stop:
        value = (value << 8) | data[start]
        start += 1
    return value


# Float keys are counted only where a map of this many may stand: fewer colliding keys in
# one dict cost it at most ~1 + 40/20 times a benign decode of the same bytes (measured:
# groups of 200 cost 11 times). Such a map takes 10 bytes a key or more (0xcb and 8 bytes,
# and a value), more than 15 entries (a fixmap's most) a map16 or map32 header (0xde, 0xdf),
# and as many bytes 0xcb. Float32 keys (0xca), which no writer of fastser's sends, need no
# count: a float32 has 24 bits of mantissa, and at most ~5 of them share a hash (m * 2**(e
# mod 61) mod 2**61-1 must fit 24 bits, which one rotation of the hash's bits and ~5
# exponents do).
FLOAT_KEYS_WORTH_COUNTING: Final = 40


def many_float_bytes(data: bytes) -> bool:
    """Whether `data` may hold a map of FLOAT_KEYS_WORTH_COUNTING float keys: long enough,
    with a byte 0xde or 0xdf, and that many bytes 0xcb: counted in C up to COUNT_BYTES
    (~0.4 ns a byte), found by memchr past it (a find call costs ~0.1 µs, a count would
    read all of a large header). A control message is too short to be looked at twice."""
    size = len(data)
    if size < 10 * FLOAT_KEYS_WORTH_COUNTING or (0xde not in data and 0xdf not in data):
        return False
    if size <= COUNT_BYTES:
        return data.count(0xcb) >= FLOAT_KEYS_WORTH_COUNTING
    at = data.find(0xcb)
    found = 0
    while at >= 0:
        found += 1
        if found >= FLOAT_KEYS_WORTH_COUNTING:
            return True
        at = data.find(0xcb, at + 1)
    return False


COUNT_BYTES: Final = 16 * 1024


# What float_keys returns where the header nests deeper than SCAN_DEPTH.
KEYS_TOO_DEEP: Final = -3


def float_key_hashes(data: bytes, counter: HashCounter) -> i64:
    """Count, with `counter`, the hash of every float that stands as a key of a map in the
    msgpack value at the start of `data`: msgpack makes those floats and inserts them with
    no hook between. Returns how deep its containers nest (what header_nests_deeper
    compares with its budget: the decoder needs no second scan),
    KEYS_TOO_DEEP past SCAN_DEPTH (its floats there are not counted), or -1 where bytes
    that are not one msgpack value end the scan early (msgpack refuses them itself)."""
    counter.deepest = 0
    end = float_keys(data, 0, len(data), 1, False, counter, SCAN_DEPTH)
    if end == KEYS_TOO_DEEP:
        return KEYS_TOO_DEEP
    return counter.deepest if 0 <= end <= len(data) else -1


def float_keys(data: bytes, pos: i64, end: i64, count: i64, in_map: bool,
               counter: HashCounter, budget: i64) -> i64:
    """skip_values, counting float map keys: the position after the `count` values at
    `pos` (a map's keys and values alternate when `in_map`), -1 at bytes that end early or
    that msgpack never writes, KEYS_TOO_DEEP past `budget` levels."""
    key = in_map
    while count > 0:
        if pos >= end:
            return -1
        first: i64 = data[pos]
        count -= 1
        is_key = key
        if in_map:
            key = not key
        if 0xa0 <= first < 0xc0:  # fixstr
            pos += 1 + (first & 0x1f)
            continue
        if first < 0x80 or first >= 0xe0 or first == 0xc0 or first == 0xc2 or first == 0xc3:
            pos += 1
            continue
        if first == 0xc1:
            return -1
        items: i64
        is_map = False
        if first < 0x90:
            items = 2 * (first & 0x0f)
            is_map = True
            pos += 1
        elif first < 0xa0:
            items = first & 0x0f
            pos += 1
        else:
            index: i64 = first - 0xc4
            size: i64 = SIZE_BYTES[index]
            length_bytes: i64 = LENGTH_BYTES[index]
            if pos + 1 + size > end:
                return -1
            if first == 0xca or first == 0xcb:
                if is_key:
                    value: float = struct.unpack_from(">f" if first == 0xca else ">d",
                                                      data, pos + 1)[0]
                    counter.count_hash(hash(value), value)
                pos += 1 + size
                continue
            if length_bytes == 0 and first < 0xdc:
                pos += 1 + size
                continue
            if first < 0xdc:
                pos += 1 + size + big_endian(data, pos + 1, length_bytes)
                continue
            count_here = big_endian(data, pos + 1, size)
            is_map = first > 0xdd
            items = 2 * count_here if is_map else count_here
            pos += 1 + size
        if budget <= 0:  # every container counts, as in skip_values
            return KEYS_TOO_DEEP
        level: i64 = SCAN_DEPTH - budget + 1
        if level > counter.deepest:
            counter.deepest = level
        if items > 0:
            pos = float_keys(data, pos, end, items, is_map, counter, budget - 1)
            if pos < 0:
                return pos
    return pos
