"""Wire version 6's map arrays: a dict of MIN_MAP_ARRAY entries or more travels as an array
[map mark, key, value, ...], which msgpack decodes without interning its str keys."""

import sys
from typing import Any

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fastser
from fastser import DeserializationError, Serialize
from fastser.codec.large_maps import MIN_MAP_ARRAY
from fastser.codec.wire import EXT_MAP_MARK, TUPLE_LEAD

from strategies import examples, large_maps, messages
from test_properties import typed, unwrap
from handmade import body, header_of

MAP_MARK = msgpack.ExtType(EXT_MAP_MARK, b"")


def test_a_map_of_many_entries_is_an_array_led_by_its_mark() -> None:
    small = {f"k{i}": i for i in range(MIN_MAP_ARRAY - 1)}
    large = {f"k{i}": [i] for i in range(MIN_MAP_ARRAY)}
    written = body(fastser.dumps({"small": small, "large": large}))
    assert written["small"] == small
    assert written["large"][0] == MAP_MARK
    assert written["large"][1:5] == ["k0", [0], "k1", [1]]
    got = fastser.loads(fastser.dumps({"small": small, "large": large}))
    assert got == {"small": small, "large": large} and list(got["large"]) == list(large)


def test_keys_of_a_map_array_are_not_interned() -> None:
    # What the form is for: msgpack interns each str key of a map it decodes.
    key = "".join(["a-key-made-at-run-time-", str(12345)])
    large = {key + str(i): i for i in range(MIN_MAP_ARRAY)}
    got = fastser.loads(fastser.dumps(large))
    assert got == large
    first = next(iter(got))
    equal = "".join(list(first))  # another str of the same text
    assert equal is not first and sys.intern(equal) is not first  # first is not interned
    small = fastser.loads(fastser.dumps({first: 1}))  # a map: msgpack interns its keys
    assert sys.intern("".join(list(first))) is next(iter(small))


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(large_maps, min_size=1, max_size=2), messages)
def test_large_maps_round_trip_with_their_types(maps: list[Any], msg: Any) -> None:
    sent = [*maps, msg, {"nested": maps[0]}]
    frames = fastser.dumps(sent)
    assert typed(fastser.loads(frames)) == typed(unwrap(sent))
    kept = fastser.loads(frames, deserialize=False, deserializers=fastser.SAFE_DESERIALIZERS)
    assert typed(fastser.loads(fastser.dumps(kept))) == typed(unwrap(sent))


def test_a_map_array_keeps_key_types_and_order_and_is_forwarded_byte_for_byte() -> None:
    large: dict[Any, Any] = {("x", i): Serialize(i) if i % 5 == 0 else i for i in range(40)}
    large[frozenset({1})] = "frozenset"
    large[7] = b"int key"
    frames = fastser.dumps({"m": large})
    written = body(frames)["m"]
    assert written[0] == MAP_MARK and written[1][0] == TUPLE_LEAD
    got = fastser.loads(frames)["m"]
    assert list(got) == list(large) and got[("x", 5)] == 5 and got[7] == b"int key"
    kept = fastser.loads(frames, deserialize=False)
    assert fastser.dumps(kept) == frames


@pytest.mark.parametrize("items, reason", [
    ([MAP_MARK, "k"], "a key without its value"),
    ([MAP_MARK, "k", 1, "j"], "a key without its value"),
    ([MAP_MARK, [1], 2], "corrupt header.*unhashable"),
    ([MAP_MARK, "k", MAP_MARK], "mark stands elsewhere"),
    (["k", MAP_MARK], "mark stands elsewhere"),
    ([msgpack.ExtType(EXT_MAP_MARK, b"x"), "k", 1], "carries data"),
], ids=repr)
def test_hostile_map_arrays_raise_deserialization_errors(items: list[Any], reason: str) -> None:
    for frames in (header_of(items), header_of({"m": items}), header_of([[items]])):
        with pytest.raises(DeserializationError, match=reason):
            fastser.loads(frames)


def test_an_empty_map_array_is_an_empty_map() -> None:
    assert fastser.loads(header_of([MAP_MARK])) == {}


def test_map_arrays_count_their_level_of_nesting() -> None:
    large: dict[str, Any] = {f"k{i}": i for i in range(MIN_MAP_ARRAY)}
    large["deep"] = [[1]]
    frames = fastser.dumps([large])  # the list, the map, two lists: 4 levels
    assert fastser.loads(frames, limits=fastser.Limits(max_depth=4))
    with pytest.raises(DeserializationError, match="nested deeper"):
        fastser.loads(frames, limits=fastser.Limits(max_depth=3))
