"""Shared hypothesis strategies: messages of every type the contract lists; and the size
of the extended suite (FASTSER_EXTENDED=1 bash scripts/test.sh)."""

import math
import os
from typing import Any

from hypothesis import strategies as st

import fastser

# The extended suite: 20,000 examples per property, 100,000 mutated inputs, 1,000,000 round
# trips for the leak check. The normal run keeps CI quick.
EXTENDED = os.environ.get("FASTSER_EXTENDED", "") == "1"


def examples(normal: int) -> int:
    """How many hypothesis examples a property gets in this run."""
    return 20_000 if EXTENDED else normal


def rounds(normal: int, extended: int) -> int:
    return extended if EXTENDED else normal

# -32 leads a tuple's array: a list that begins with it must stay a list.
TUPLE_LEAD = st.just(-32)
# bytes-likes of 64 KiB or more travel as payload frames (ext 4, 5, 6), not in the header;
# hypothesis draws no binary this large, so a size and a byte are drawn instead.
big_bytes = st.tuples(st.integers(65_536, 70_000), st.integers(0, 255)).map(
    lambda drawn: bytes([drawn[1]]) * drawn[0])


def view(data: bytes) -> memoryview:
    return memoryview(data)


NAN_KEY = ("nan",)


def opened(value: Any) -> Any:
    """What loads makes of a hashable: Serialize and ToPickle replaced by their data. Keys of
    one map (items of one set) must differ in this form: dumps refuses a wrapper that opens
    to a value equal to another key beside it, since loads would merge the two."""
    if isinstance(value, (fastser.Serialize, fastser.ToPickle)):
        return opened(value.data)
    if type(value) is tuple:
        return tuple(opened(item) for item in value)
    if type(value) is float and math.isnan(value):
        # Two NaN keys, one wrapped: equal when the same object. Both wrapped: written
        # alike, which dumps refuses too (loads would merge them). Keep one.
        return NAN_KEY
    return value


# Floats hypothesis seldom draws: NaN (it comes back as another NaN object, so the properties
# compare floats by repr, which also tells -0.0 from 0.0), infinities and -0.0.
SPECIAL_FLOATS = st.sampled_from([math.nan, -math.nan, math.inf, -math.inf, -0.0])
scalars = st.one_of(
    st.none(), SPECIAL_FLOATS, st.booleans(), st.integers(),
    st.integers(min_value=-(2**300), max_value=2**300), TUPLE_LEAD, st.floats(),
    st.text(max_size=20), st.binary(max_size=40),
    st.binary(max_size=40).map(bytearray), st.binary(max_size=40).map(view),
    st.one_of(big_bytes, big_bytes.map(bytearray), big_bytes.map(view)),
)
hashables = st.one_of(
    st.none(), SPECIAL_FLOATS, st.booleans(), st.integers(), st.floats(), st.text(max_size=10),
    st.binary(max_size=10), TUPLE_LEAD,
)
# Wrappers in keys and set items travel as extension types (dumps' hashable records).
wrapped = st.one_of(hashables.map(fastser.Serialize), hashables.map(fastser.ToPickle))
keys = st.one_of(hashables, st.tuples(hashables, hashables),
                 st.tuples(st.one_of(hashables, wrapped), st.one_of(hashables, wrapped)),
                 st.frozensets(hashables, max_size=3), wrapped)


def maps(key: Any, value: Any, min_size: int = 0, max_size: int = 5) -> Any:
    """Dicts whose keys differ once opened (see `opened`)."""
    return st.lists(st.tuples(key, value), min_size=min_size, max_size=max_size,
                    unique_by=lambda item: opened(item[0])).map(dict)


def sets(item: Any, kind: type = set) -> Any:
    """Sets (or frozensets) of `item`, tuples, frozensets and wrappers among them."""
    return st.lists(item, max_size=4, unique_by=opened).map(kind)


def containers(children: Any) -> Any:
    return st.one_of(
        st.lists(children, max_size=5),
        st.lists(children, max_size=5).map(tuple),
        st.dictionaries(st.text(max_size=8), children, max_size=5),
        maps(keys, children, max_size=4),
        sets(keys), sets(keys, frozenset),
        children.map(fastser.Serialize),
        children.map(fastser.ToPickle),
    )


messages = st.recursive(scalars, containers, max_leaves=30)
# Messages whose leaves are mostly NaN, infinities and -0.0: in `messages` hypothesis draws them
# seldom (it does not repeat a leaf it has drawn).
float_messages = st.recursive(
    st.one_of(SPECIAL_FLOATS, st.floats(), hashables), containers, max_leaves=12)
# Maps of 32 entries or more (the wire format writes them as arrays), holding messages.
large_maps = maps(keys, st.one_of(scalars, messages), min_size=32, max_size=40)

# Nesting close to the default Limits().max_depth (256): a chain of up to 250 containers
# around a scalar or a short list of them, wrapped or not. A tuple key counts as a level
# (dumps counts keys); a Serialize or ToPickle counts none (its payload is pickled), so it
# stands only innermost, where it does not cut the chain short.
NESTINGS: list[Any] = [
    lambda inner: [inner], lambda inner: (inner,), lambda inner: {"k": inner},
    lambda inner: {(1, 2): inner},
]
MAX_DEPTH = fastser.Limits().max_depth


def depth(value: Any) -> int:
    """How many containers nest on the deepest path, as dumps counts them (keys included;
    not inside wrappers)."""
    if type(value) in (list, tuple, set, frozenset):
        return 1 + max((depth(item) for item in value), default=0)
    if type(value) is dict:
        return 1 + max((depth(item) for pair in value.items() for item in pair), default=0)
    return 0


def nest(drawn: tuple[list[int], Any]) -> Any:
    kinds, inner = drawn
    for kind in kinds:
        inner = NESTINGS[kind](inner)
    return inner


leaves = st.one_of(scalars, st.lists(scalars, max_size=3))
deep_messages = st.tuples(
    st.lists(st.integers(0, len(NESTINGS) - 1), min_size=180, max_size=MAX_DEPTH - 6),
    st.one_of(leaves, leaves.map(fastser.Serialize), leaves.map(fastser.ToPickle)),
).map(nest)
