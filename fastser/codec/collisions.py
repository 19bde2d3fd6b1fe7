"""Equal hashes among the values a decode makes that may become dict keys or set items.

CPython randomizes the hashes of str and bytes, but not of ints, floats, tuples or
frozensets: a peer can send thousands of distinct keys of one hash, and each insertion into
a dict or set then probes past every earlier one (quadratic time inside msgpack, where no
hook runs). The decoder makes every tuple, big int, set and frozenset itself, and counts
their hashes here before msgpack can insert them; floats, which msgpack makes, are counted
from the header's bytes (depth.float_key_hashes). Past MAX_EQUAL_HASHES distinct values of
one hash, the message is refused: an insertion then probes at most that many keys.

Strategy: once a message has made COUNT_AFTER such values, each costs a hash and one byte
of a table of half the header's size (a distinct value takes at least a byte of header, so
a benign message averages at most two a slot). Only a slot past SLOT_BUSY values is checked
exactly, keeping the distinct values of each hash seen there, so one hash has at most
COUNT_AFTER + SLOT_BUSY + MAX_EQUAL_HASHES distinct values: 32, each insertion probing at
most that many keys.
"""

from typing import Any, Final, Optional

from fastser.errors import DeserializationError

# Distinct values of one hash checked exactly before the message is refused (a benign
# message has one: hashes of distinct values collide by chance about once in 2**61 pairs).
MAX_EQUAL_HASHES: Final = 8
# Values a message makes before counting starts: a control message pays no table.
COUNT_AFTER: Final = 16
# A table slot counts up to here; past it, each value's hash is checked exactly.
SLOT_BUSY: Final = 8
MIN_SLOTS: Final = 256
MAX_SLOTS: Final = 1 << 25


def slots_for(header_bytes: int) -> int:
    """A power of two of at least header_bytes / 2 (within MIN_SLOTS..MAX_SLOTS)."""
    slots = MIN_SLOTS
    while slots < MAX_SLOTS and slots * 2 < header_bytes:
        slots *= 2
    return slots


class HashCounter:
    """The hashes of one message's hashable made values."""

    def __init__(self, header_bytes: int) -> None:
        self.header_bytes = header_bytes
        self.made = 0
        self.slots: Optional[bytearray] = None
        self.mask = 0
        # hash -> the distinct values of that hash seen in busy slots
        self.busy: Optional[dict[int, list[Any]]] = None

    def count(self, value: Any) -> None:
        """Count a value that may be hashed into a dict or set: a tuple, big int, set
        item or frozenset. Unhashable values (a tuple holding a list) are skipped."""
        self.made += 1
        if self.made <= COUNT_AFTER:
            return
        try:
            h = hash(value)
        except TypeError:
            return  # cannot be a key or set item
        self.count_hash(h, value)

    def count_hash(self, h: int, value: Any) -> None:
        slots = self.slots
        if slots is None:
            size = slots_for(self.header_bytes)
            slots = self.slots = bytearray(size)
            self.mask = size - 1
        index = (h ^ (h >> 23) ^ (h >> 41)) & self.mask
        used = slots[index]
        if used < SLOT_BUSY:
            slots[index] = used + 1
            return
        self.check_exactly(h, value)

    def check_exactly(self, h: int, value: Any) -> None:
        busy = self.busy
        if busy is None:
            busy = self.busy = {}
        seen = busy.get(h)
        if seen is None:
            busy[h] = [value]
            return
        for other in seen:
            if other is value or other == value:  # equal: one key, as a dict sees it
                return
        seen.append(value)
        if len(seen) > MAX_EQUAL_HASHES:
            raise DeserializationError(
                f"more than {MAX_EQUAL_HASHES} distinct values of one hash ({h}) in the "
                f"header, such as {type(value).__qualname__}s: keys made to collide would "
                f"make decoding take quadratic time")
