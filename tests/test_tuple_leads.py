"""A tuple is an array led by the int -32 (no extension type), and a list
that begins with -32 is led by its own mark, wherever msgpack writes it: in the message, in a
record's header (packed as it is, not walked), under a dict subclass, as a namedtuple."""

import collections
import enum
import pickle
from typing import Any

import msgpack
import pytest

import fastser
from fastser import DeserializationError, Serialize, Serialized, ToPickle
from fastser.codec.tuple_leads import escaped_header
from fastser.codec.wire import (EXT_BIGINT, EXT_LIST_MARK, EXT_PICKLED_MARK,
                                EXT_SERIALIZED, EXT_SET_MARK, TUPLE_LEAD, WIRE_VERSION)

Point = collections.namedtuple("Point", "x y")


class Level(enum.IntEnum):
    LOW = -32


class Headers(dict):  # type: ignore[type-arg]
    pass


def body(frames: list[Any]) -> Any:
    """The header as msgpack reads it, extension types kept as they are."""
    return msgpack.unpackb(bytes(frames[0])[1:], strict_map_key=False)


def header_with_version(version: int, value: Any) -> list[bytes]:
    return [bytes([version]) + msgpack.packb(value, use_bin_type=True)]


def test_tuples_are_led_by_the_int_and_lists_that_begin_with_it_by_a_mark() -> None:
    msg = {"t": (1, "x"), "l": [-32, 1], "both": [(-32,), [-32]], "not": [1, -32]}
    written = body(fastser.dumps(msg))
    assert written["t"] == [TUPLE_LEAD, 1, "x"]
    assert written["l"] == [msgpack.ExtType(EXT_LIST_MARK, b""), -32, 1]
    assert written["both"] == [[TUPLE_LEAD, -32], [msgpack.ExtType(EXT_LIST_MARK, b""), -32]]
    assert written["not"] == [1, -32]
    out = fastser.loads(fastser.dumps(msg))
    assert out == msg and type(out["t"]) is tuple and type(out["l"]) is list
    assert type(out["both"][0]) is tuple and type(out["both"][1]) is list


def test_a_message_with_tuples_costs_the_decoder_no_extension_type() -> None:
    codes: list[int] = []

    def hook(code: int, data: bytes) -> Any:
        codes.append(code)
        return None

    frames = fastser.dumps({"key": ("x", 0), "keys": [("y", i) for i in range(3)]})
    msgpack.unpackb(bytes(frames[0])[1:], ext_hook=hook, strict_map_key=False)
    assert codes == []


def test_a_tuple_led_key_holding_a_list_is_refused_not_crashed() -> None:
    assert fastser.loads(header_with_version(WIRE_VERSION, {(-32, (-32, 1)): [-32, [1]]})) == {
        ((1,),): ([1],)}
    raw = bytes([WIRE_VERSION]) + b"\x81\x92\xe0\x91\x01\x01"  # {[-32, [1]]: 1}
    with pytest.raises(DeserializationError):
        fastser.loads([raw])


def test_record_headers_keep_lists_led_by_the_int_and_forward_byte_for_byte() -> None:
    header = Headers({"serializer": "nothing", "list": [-32, [-32, (-32,)]], "tuple": (-32, 1),
                      "named": Point(-32, 2), "enum": [Level.LOW, 3],
                      "deep": {"a": [[1], {"b": [-32]}]}, "plain": [1, 2]})
    record = Serialized(header, [b"frame"])
    frames = fastser.dumps({"r": record})
    kept = fastser.loads(frames, deserialize=False)["r"]
    assert kept.header == {"serializer": "nothing", "list": [-32, [-32, (-32,)]],
                           "tuple": (-32, 1), "named": [-32, 2], "enum": [-32, 3],
                           "deep": {"a": [[1], {"b": [-32]}]}, "plain": [1, 2]}
    assert type(kept.header["list"]) is list and type(kept.header["tuple"]) is tuple
    assert type(kept.header["named"]) is list and type(kept.header["enum"][0]) is int
    again = fastser.dumps({"r": kept})
    assert list(map(bytes, again)) == list(map(bytes, frames))


@pytest.mark.parametrize("value", [
    [msgpack.ExtType(EXT_BIGINT, b"\xe0"), 1], msgpack.ExtType(EXT_SERIALIZED, b"x"),
    {"k": [1, msgpack.ExtType(EXT_SET_MARK, b"")]}, (msgpack.ExtType(EXT_PICKLED_MARK, b""),),
    {msgpack.ExtType(EXT_BIGINT, b""): 1}, {(1, msgpack.ExtType(EXT_BIGINT, b"")): 1}],
    ids=["leading_bigint", "pickle", "nested_mark", "in_tuple", "key", "in_key"])
def test_a_header_holding_an_extension_type_is_refused(value: Any) -> None:
    # fastser's ext_hook would read it as one of its own: an int, a pickle, a mark.
    header = {"serializer": "nothing", "ext": value}
    with pytest.raises(fastser.SerializationError, match=r"msgpack.ExtType.*msg\[0\]"):
        fastser.dumps([Serialized(header, [b""])])
    # Where the record is an extension type (a dict key, a set item), as in the message:
    # its data is read as plain msgpack, which holds no extension type.
    for msg in ({Serialized(header, [b""]): 1}, {Serialized(header, [b""])}):
        with pytest.raises(fastser.SerializationError, match=r"msgpack.ExtType"):
            fastser.dumps(msg)


def test_escape_leads_copies_only_what_it_must() -> None:
    plain = {"serializer": "pickle", "writeable": [True, False], "shape": (3, -32)}
    assert escaped_header(plain, None) is plain
    nested = {"a": [1], "b": {"c": [-32]}}
    escaped: Any = escaped_header(nested, None)
    assert escaped is not nested and nested == {"a": [1], "b": {"c": [-32]}}  # not mutated
    assert escaped["a"] is nested["a"]
    assert escaped["b"]["c"] == [msgpack.ExtType(EXT_LIST_MARK, b""), -32]
    assert escaped_header({"t": (1, [-32])}, None) == {
        "t": (1, [msgpack.ExtType(EXT_LIST_MARK, b""), -32])}


@pytest.mark.parametrize("msg, expected", [
    ([Serialize(-32), None], [-32, None]), ([ToPickle(-32)], [-32]),
    ({"k": [Serialize(-32), "a", "b"]}, {"k": [-32, "a", "b"]}),
    ([Level.LOW, 2], [Level.LOW, 2]),
    ([Serialized({"serializer": "pickle"}, [pickle.dumps(-32)]), 1], [-32, 1])],
    ids=["serialize", "to_pickle", "nested", "pickled_object", "serialized"])
def test_a_first_item_that_reads_back_as_the_int_keeps_its_list(msg: Any,
                                                                 expected: Any) -> None:
    # The decoder sees -32 only once a record or a pickle has been opened.
    out = fastser.loads(fastser.dumps(msg))
    assert out == expected and type(out) is type(msg)
    lists = [out] if type(out) is list else [out["k"]]
    assert all(type(item) is list and item[0] == -32 for item in lists)


def test_an_encoders_default_that_makes_the_int_keeps_its_list() -> None:
    encoder = fastser.Encoder(serializers=["msgpack"], default=int)
    out = fastser.loads(encoder.dumps({"levels": [Level.LOW, Level.LOW], "t": (Level.LOW,)}))
    assert out == {"levels": [-32, -32], "t": (-32,)} and type(out["levels"]) is list


def test_a_header_that_holds_itself_or_nests_too_deep_is_refused_not_crashed() -> None:
    loop: dict[str, Any] = {"serializer": "nothing"}
    loop["again"] = loop
    deep: list[Any] = [-32]
    for _ in range(100_000):
        deep = [deep]
    for header in (loop, {"serializer": "nothing", "deep": deep}):
        with pytest.raises(fastser.SerializationError, match=r"msg\['r'\]"):
            fastser.dumps({"r": Serialized(header, [b"frame"])})


def test_a_header_key_that_msgpack_writes_as_a_plain_array_is_refused() -> None:
    for header in ({"serializer": "nothing", "k": {Point(-32, 7): "v"}},
                   {"serializer": "nothing", "s": {(1, Point(5, 7))}}):
        with pytest.raises(fastser.SerializationError, match=r"Point in a dict key or set"):
            fastser.dumps({"r": [Serialized(header, [b"frame"])]})
