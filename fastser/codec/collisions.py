"""Equal hashes among the values a decode makes that may become dict keys or set items.

CPython randomizes the hashes of str and bytes, but not of ints, floats, tuples or
frozensets: a peer can send thousands of distinct keys of one hash, and each insertion into
a dict or set then probes past every earlier one (quadratic time inside msgpack, where no
hook runs). The decoder makes every tuple, big int, set and frozenset itself, and counts
their hashes here before msgpack can insert them; floats, which msgpack makes, are counted
from the bytes (depth.float_key_hashes). Past MAX_EQUAL_HASHES distinct values of one hash,
the message is refused: an insertion then probes at most a few dozen keys.

Strategy: each counted value costs a hash and one byte of a table of a quarter of the
header's size (a distinct value takes at least a byte of header, so a benign message
averages at most four a slot). Only a slot past SLOT_BUSY values is checked exactly,
keeping the distinct values of each hash seen there, so one hash has at most COUNT_AFTER
(the values a message makes before counting starts) + SLOT_BUSY + MAX_EQUAL_HASHES distinct
values: 32.
A tuple that holds tuples has its hash made from its items' hashes, those of the items that
hold tuples themselves taken from when they were made (CPython 3.11 does not keep a tuple's
hash: hashing every level of a nested tuple again would make counting quadratic in its
depth); a flat item is hashed again, in time linear in its items.
"""

import os
import sys
from typing import Any, Final, Optional

from mypy_extensions import i64

from fastser.errors import DeserializationError

# Distinct values of one hash checked exactly before the message is refused (a benign
# message has one: hashes of distinct values collide by chance about once in 2**61 pairs).
MAX_EQUAL_HASHES: Final = 8
# A table slot counts up to here; past it, each value's hash is checked exactly.
SLOT_BUSY: Final = 8
# Values a message makes before counting starts: a control message pays no table.
COUNT_AFTER: Final = 16
MIN_SLOTS: Final = 256
MAX_SLOTS: Final = 1 << 25

# CPython's tuple hash (xxHash-based, since 3.8), from its items' hashes.
XXPRIME_1: Final = 11400714785074694791
XXPRIME_2: Final = 14029467366897019727
XXPRIME_5: Final = 2870177450012600261
MASK_64: Final = (1 << 64) - 1
# Whether str and bytes hash with a secret key (PYTHONHASHSEED unset or "random"). Then a
# tuple led by one starts its hash from a value no peer knows, and the xxHash steps after it
# cannot be solved for collisions without it: such tuples (a dask key, ("name", 3)) need
# no count, which saves a hash of every string of them. Led by anything else, a tuple
# can be solved for (two plain ints were, for one hash).
SECRET_STR_HASHES: Final = os.environ.get("PYTHONHASHSEED", "random") == "random"
# What hash() never returns (CPython makes a -1 -2): the mark of an unhashable tuple.
UNHASHABLE: Final = -1


# The same as signed 64-bit ints, for i64 arithmetic, which wraps in compiled code (C's
# int64_t; CPython's extensions are built with -fwrapv) and not in the pure build.
XXPRIME_1_I64: Final = XXPRIME_1 - (1 << 64)
XXPRIME_2_I64: Final = XXPRIME_2 - (1 << 64)
LENGTH_MIX: Final = XXPRIME_5 ^ 3527539


def i64_wraps() -> bool:
    """Whether i64 arithmetic wraps here (compiled) rather than growing (pure)."""
    x: i64 = 1 << 62
    return x * 4 == 0


I64_WRAPS: Final = i64_wraps()


def tuple_hash_i64(lanes: list[int]) -> int:
    """tuple_hash in wrapping i64 arithmetic: ~90 ns where the masked one takes ~2 µs (its
    ints past 2**62 are boxed). Right only where I64_WRAPS."""
    acc: i64 = XXPRIME_5
    for lane in lanes:
        value: i64 = lane
        acc = acc + value * XXPRIME_2_I64
        acc = (acc << 31) | ((acc >> 33) & 0x7FFFFFFF)  # rotate left 31 of 64 bits
        acc = acc * XXPRIME_1_I64
    acc = acc + (len(lanes) ^ LENGTH_MIX)
    if acc == -1:
        return 1546275796
    return acc


def tuple_hash(lanes: list[int]) -> int:
    """hash(t) for a tuple t whose items hash to `lanes` (tupleobject.c's tuplehash)."""
    if I64_WRAPS:
        return tuple_hash_i64(lanes)
    acc = XXPRIME_5
    for lane in lanes:
        acc = (acc + (lane & MASK_64) * XXPRIME_2) & MASK_64
        acc = ((acc << 31) | (acc >> 33)) & MASK_64
        acc = (acc * XXPRIME_1) & MASK_64
    acc = (acc + (len(lanes) ^ (XXPRIME_5 ^ 3527539))) & MASK_64
    if acc == MASK_64:
        return 1546275796
    return acc - (1 << 64) if acc >> 63 else acc


def tuple_hash_matches() -> bool:
    """Whether tuple_hash is this interpreter's (a 64-bit CPython 3.8 or later); where it
    is not, nested tuples are hashed by hash() (right, only slower)."""
    samples: list[tuple[Any, ...]] = [(), (1,), ("a", 2.5, None), ((1, 2), (3,)), (-1, -2)]
    return sys.hash_info.width == 64 and all(
        tuple_hash([hash(item) for item in sample]) == hash(sample) for sample in samples)


TUPLE_HASH_FROM_ITEMS: Final = tuple_hash_matches()


def slots_for(header_bytes: int) -> int:
    """A power of two of at least header_bytes / 4 (within MIN_SLOTS..MAX_SLOTS)."""
    slots = MIN_SLOTS
    while slots < MAX_SLOTS and slots * 4 < header_bytes:
        slots *= 2
    return slots


class HashCounter:
    """The hashes of one message's hashable made values."""

    def __init__(self, header_bytes: int) -> None:
        size = slots_for(header_bytes)
        self.slots = bytearray(size)
        self.mask: i64 = size - 1
        # hash -> the distinct values of that hash seen in busy slots
        self.busy: Optional[dict[int, list[Any]]] = None
        # The tuples counted that hold tuples or unhashable values, newest last, and their
        # hashes (UNHASHABLE): the decode makes a tuple's items before the tuple, so those
        # are on top when it is made.
        self.tuples: list[Any] = []
        self.tuple_hashes: list[int] = []
        # How deep the last float key scan found containers nest (depth.float_key_hashes).
        self.deepest: i64 = 0

    def count(self, value: Any) -> None:
        """Count a value that may be hashed into a dict or set: a big int, set item or
        frozenset. Unhashable values are skipped."""
        try:
            h: i64 = hash(value)
        except TypeError:
            return  # cannot be a key or set item
        self.count_hash(h, value)

    def count_tuple(self, made: tuple[Any, ...]) -> Any:
        """Count a tuple the decode made, its hash made from its items' (a tuple that
        holds an unhashable value is skipped). Returns the tuple the message holds: an
        equal one seen before in a busy slot, where there is one (tuples are immutable,
        and a nested tuple's items then compare by identity: comparing each level of
        equal nested tuples item by item again was quadratic in their depth)."""
        nested = False
        for item in made:
            t = type(item)
            if t is tuple:
                nested = True
            elif t is dict or t is list or t is set or t is bytearray:
                return self.unhashable(made)  # without hash() raising (slow compiled)
        secret = SECRET_STR_HASHES and len(made) > 0 and \
            (type(made[0]) is str or type(made[0]) is bytes)
        if secret and not nested:
            return made  # a dask key ("name", 3): nothing to count, nothing to hash
        try:
            h: i64 = self.nested_hash(made) if nested and TUPLE_HASH_FROM_ITEMS \
                else hash(made)
        except TypeError:  # an item of another unhashable type
            h = UNHASHABLE
        if h == UNHASHABLE:
            return self.unhashable(made)
        kept = made if secret else self.count_hash(h, made)
        if nested and TUPLE_HASH_FROM_ITEMS:
            self.tuples.append(kept)
            self.tuple_hashes.append(h)
        return kept

    def unhashable(self, made: tuple[Any, ...]) -> Any:
        """A tuple that holds an unhashable value, on the stack as such: a tuple made of it
        is unhashable too, which it learns there without hash() raising."""
        self.tuples.append(made)
        self.tuple_hashes.append(UNHASHABLE)
        return made

    def nested_hash(self, made: tuple[Any, ...]) -> int:
        """hash(made), each tuple item's hash taken off the stack where it is on top;
        UNHASHABLE where an item is."""
        tuples = self.tuples
        hashes = self.tuple_hashes
        lanes = [0] * len(made)
        index = len(made) - 1
        while index >= 0:
            item = made[index]
            if type(item) is tuple and tuples and tuples[-1] is item:
                tuples.pop()
                lane = hashes.pop()
                if lane == UNHASHABLE:
                    return UNHASHABLE
                lanes[index] = lane
            else:
                lanes[index] = hash(item)  # a scalar, a flat tuple, a frozenset (kept hash)
            index -= 1
        return tuple_hash(lanes)

    def drop_items(self, items: list[Any]) -> None:
        """The stack without the tuples among `items`, made into a list, set or frozenset:
        a tuple made later finds its own items on top."""
        tuples = self.tuples
        index = len(items) - 1
        while index >= 0 and tuples:
            if items[index] is tuples[-1]:
                tuples.pop()
                self.tuple_hashes.pop()
            index -= 1

    def count_hash(self, h: i64, value: Any) -> Any:
        """Count `value` of hash `h`; returns it, or an equal value seen before."""
        index: i64 = (h ^ (h >> 23) ^ (h >> 41)) & self.mask
        slots = self.slots
        used = slots[index]
        if used < SLOT_BUSY:
            slots[index] = used + 1
            return value
        return self.check_exactly(h, value)

    def check_exactly(self, h: int, value: Any) -> Any:
        busy = self.busy
        if busy is None:
            busy = self.busy = {}
        seen = busy.get(h)
        if seen is None:
            busy[h] = [value]
            return value
        for other in seen:
            if other is value or other == value:  # equal: one key, as a dict sees it
                return other if type(other) is type(value) else value
        seen.append(value)
        if len(seen) <= MAX_EQUAL_HASHES:
            return value
        raise DeserializationError(
                f"more than {MAX_EQUAL_HASHES} distinct values of one hash ({h}) in the "
                f"header, such as {type(value).__qualname__}s: keys made to collide would "
                f"make decoding take quadratic time")
