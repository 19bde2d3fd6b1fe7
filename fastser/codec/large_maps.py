"""A large dict's form on the wire, both ways: the map array [map mark, key, value, key,
value, ...]. msgpack interns every str key of a map it decodes (a lookup in the
interpreter's table of interned strings, a cache miss for each new key), and array items it
does not. docs/wire-format.md describes it.
"""

from typing import Any, Final

from fastser.codec.packing import MAP_MARK
from fastser.errors import DeserializationError

# A dict of at least this many entries is a map array.
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
    its mark (start 1). An unhashable key raises TypeError, which loads reports as a
    corrupt header."""
    size = len(items)
    if (size - start) % 2:
        raise DeserializationError("a map's array holds a key without its value")
    out: dict[Any, Any] = {}
    for index in range(start, size, 2):
        out[items[index]] = items[index + 1]
    return out
