"""The record packer (records, frame refs, task maps) writes what plain msgpack writes, byte
for byte: it packs exact types only, for speed, and hands the rest to as_base_type."""

import collections
import enum
from collections.abc import Iterator
from typing import Any

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import examples

from fastser.codec.packing import Packers


class Name(str):
    pass


class Count(int):
    pass


class Ratio(float):
    pass


class Blob(bytes):
    pass


class Buffer(bytearray):
    pass


class Items(list[Any]):
    pass


class Table(dict[Any, Any]):
    pass


class Code(msgpack.ExtType):  # type: ignore[misc]  # msgpack ships no types
    pass


Pair = collections.namedtuple("Pair", "left right")

plain_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**63), max_value=2**64 - 1),
    st.floats(allow_nan=False), st.text(max_size=10), st.binary(max_size=10),
    st.binary(max_size=10).map(bytearray), st.binary(max_size=10).map(lambda b: memoryview(b)),
    st.builds(msgpack.ExtType, st.integers(0, 127), st.binary(max_size=5)),
    st.text(max_size=5).map(Name), st.integers(-100, 100).map(Count),
    st.floats(allow_nan=False).map(Ratio), st.binary(max_size=5).map(Blob),
    st.binary(max_size=5).map(Buffer),
    st.builds(Code, st.integers(0, 127), st.binary(max_size=5)),
)
plain_keys = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.text(max_size=5))


def plain_containers(children: Any) -> Any:
    return st.one_of(
        st.lists(children, max_size=4), st.lists(children, max_size=4).map(tuple),
        st.lists(children, max_size=4).map(Items),
        st.builds(Pair, children, children),
        st.dictionaries(plain_keys, children, max_size=4),
        st.dictionaries(plain_keys, children, max_size=4).map(Table),
    )


plain_values = st.recursive(plain_scalars, plain_containers, max_leaves=20)


@settings(max_examples=examples(300), deadline=None)
@given(plain_values)
def test_the_record_packer_writes_what_plain_msgpack_writes(value: Any) -> None:
    assert Packers().record.pack(value) == msgpack.packb(value, use_bin_type=True)


class Color(str, enum.Enum):  # noqa: UP042 - the mixin users write, not StrEnum
    RED = "red"


class Level(enum.IntEnum):
    HIGH = 3


class OwnBytes(bytes):
    def __bytes__(self) -> bytes:
        return b"other"


class OwnInt(int):
    def __int__(self) -> int:
        return 0


class OwnFloat(float):
    def __float__(self) -> float:
        return 0.0


class OwnItems(dict[Any, Any]):
    def items(self) -> Any:
        return [("swapped", 1)]


class OwnIter(list[Any]):
    def __iter__(self) -> Iterator[Any]:
        return iter([7] * len(self))


@pytest.mark.parametrize("value", [
    {"color": Color.RED}, Level.HIGH, OwnBytes(b"abc"), OwnInt(5), OwnFloat(2.5),
    OwnItems(a=1), OwnIter([1, 2]), Buffer(b"xyz"),
], ids=repr)
def test_subclasses_that_override_their_conversions_pack_as_plain_msgpack_does(
        value: Any) -> None:
    # Plain msgpack reads the value of a str, bytes, int or float subclass (not what its
    # __str__, __bytes__, __int__ or __float__ says), and iterates lists and dict items().
    assert Packers().record.pack(value) == msgpack.packb(value, use_bin_type=True)


@pytest.mark.parametrize("value", [2**64, -(2**63) - 1, {1, 2}, object(), [1, {"a": object()}]])
def test_the_record_packer_refuses_what_plain_msgpack_refuses(value: Any) -> None:
    with pytest.raises((TypeError, OverflowError, ValueError)) as plain:
        msgpack.packb(value, use_bin_type=True)
    with pytest.raises(plain.type):
        Packers().record.pack(value)
