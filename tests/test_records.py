"""Serialized and pickled records in the header: a family's header packed as plain msgpack
packs it, one small pickle as one extension type, and records where an array cannot stand
(dict keys, set items) as extension types; each forwarded byte for byte."""

import collections
import enum
import operator
from typing import Any

import msgpack
import pytest

import fastser
from fastser import Decoder, Pickled, SerializationError, Serialize, Serialized, ToPickle
from fastser.codec.wire import EXT_PICKLED_MARK, EXT_SERIALIZED, EXT_SERIALIZED_MARK


def roundtrip(msg: Any) -> Any:
    return fastser.loads(fastser.dumps(msg))


class OddHeader:
    """Serialized by a family whose header holds what the test puts in it."""

    def __init__(self, value: Any) -> None:
        self.value = value


def test_record_headers_pack_like_plain_msgpack_or_fail_with_a_path() -> None:
    Pair = collections.namedtuple("Pair", "a b")

    class Level(enum.IntEnum):
        HIGH = 3

    def dumps_odd(x: OddHeader) -> tuple[dict[str, Any], list[fastser.Frame]]:
        return {"value": x.value}, [b""]

    def loads_odd(header: dict[str, Any], frames: list[Any]) -> OddHeader:
        return OddHeader(header["value"])

    fastser.register_serialization(OddHeader, dumps_odd, loads_odd, name="test.OddHeader")
    ok = {"pair": Pair(1, 2), "level": Level.HIGH, "tuple": (1, 2)}
    out = roundtrip({"x": Serialize(OddHeader(ok))})["x"].value
    # A namedtuple and an IntEnum pack as plain msgpack packs them; a tuple stays a tuple.
    assert out == {"pair": [1, 2], "level": 3, "tuple": (1, 2)}
    assert type(out["level"]) is int
    with pytest.raises(SerializationError, match=r"not msgpack-encodable.* at msg\['a'\]\[1\]"):
        fastser.dumps({"a": [1, Serialize(OddHeader(object()))]})


class Fallback:
    """Not a message type: pickled by the fallback."""

    def __eq__(self, other: object) -> bool:
        return type(other) is Fallback

    def __hash__(self) -> int:
        return 0


def test_a_small_pickle_is_a_record_like_any_other() -> None:
    # [mark, {"serializer": "pickle"}, [the pickle inline]]: no form of its own (a pickle
    # as one extension type saved 2-3 % on compute-task batches: benchmarks/forms.py).
    task = (operator.add, "inc-1", [1])
    frames = fastser.dumps({"s": Serialize(task), "p": ToPickle(task), "f": Fallback()})
    body = msgpack.unpackb(bytes(frames[0])[1:], raw=False)
    assert [value[0].code for value in body.values()] == [
        EXT_SERIALIZED_MARK, EXT_PICKLED_MARK, EXT_PICKLED_MARK]
    assert all(value[1] == {"serializer": "pickle"} and type(value[2][0]) is bytes
               for value in body.values())
    out = fastser.loads(frames)
    assert out["s"] == task and out["p"] == task and type(out["f"]) is Fallback
    kept = fastser.loads(frames, deserialize=False)
    assert type(kept["s"]) is Serialized and type(kept["p"]) is Pickled
    assert kept["s"].header == {"serializer": "pickle"} and kept["s"].header is not \
        kept["p"].header
    assert fastser.dumps(kept) == frames  # forwarded byte for byte
    made: list[Any] = []

    def factory(header: Any, payload: list[Any]) -> str:
        made.append((header, payload))
        return "mine"

    assert Decoder(deserialize=False, serialized_factory=factory).loads(frames)["s"] == "mine"
    assert made == [({"serializer": "pickle"}, [body["s"][2][0]])]


@pytest.mark.parametrize("payload, opened", [
    (fastser.Serialize(b"abc"), b"abc"),
    (fastser.Serialize(b"L" * 70_000), b"L" * 70_000),  # its bytes in a frame of their own
    (fastser.Serialized({"serializer": "msgpack"}, [msgpack.packb(7)]), 7),
], ids=["small", "out of band", "msgpack record"])
def test_a_record_in_a_dict_key_or_a_set_item_travels_as_an_extension_type(
        payload: Any, opened: Any) -> None:
    # An array cannot be hashed: there a record is extension type EXT_SERIALIZED (or
    # EXT_PICKLED), not the array [mark, header, refs]. dumps raised TypeError before.
    for msg, expected in (({payload: 1}, {opened: 1}), ({(payload, 2)}, {(opened, 2)})):
        frames = fastser.dumps(msg)
        assert fastser.loads(frames) == expected
        kept = fastser.loads(frames, deserialize=False)
        assert fastser.dumps(kept) == frames
    written = msgpack.unpackb(bytes(fastser.dumps({payload: 1})[0])[1:], strict_map_key=False)
    assert [type(key) for key in written] == [msgpack.ExtType]
    assert next(iter(written)).code == EXT_SERIALIZED
