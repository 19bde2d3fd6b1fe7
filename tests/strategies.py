"""Shared hypothesis strategies: messages of every type the contract lists; and the size
of the extended suite (FASTSER_EXTENDED=1 bash scripts/test.sh)."""

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


scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.integers(min_value=-(2**300), max_value=2**300),
    TUPLE_LEAD,
    st.floats(allow_nan=False), st.text(max_size=20), st.binary(max_size=40),
    st.binary(max_size=40).map(bytearray), st.binary(max_size=40).map(view),
    st.one_of(big_bytes, big_bytes.map(bytearray), big_bytes.map(view)),
)
hashables = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=10),
    st.binary(max_size=10), TUPLE_LEAD,
)
keys = st.one_of(hashables, st.tuples(hashables, hashables),
                 st.frozensets(hashables, max_size=3))


def containers(children: Any) -> Any:
    return st.one_of(
        st.lists(children, max_size=5),
        st.lists(children, max_size=5).map(tuple),
        st.dictionaries(st.text(max_size=8), children, max_size=5),
        st.dictionaries(keys, children, max_size=4),
        st.sets(hashables, max_size=4),
        st.frozensets(hashables, max_size=4),
        children.map(fastser.Serialize),
        children.map(fastser.ToPickle),
    )


messages = st.recursive(scalars, containers, max_leaves=30)
# Maps of 32 entries or more (wire version 6 writes them as arrays), holding messages.
large_maps = st.dictionaries(keys, st.one_of(scalars, messages), min_size=32, max_size=40)
