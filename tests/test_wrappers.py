import copy
import pickle

import pytest

import fastser
from fastser import Pickled, Serialize, Serialized, ToPickle


@pytest.mark.parametrize("obj", [
    Serialize({"a": 1}), ToPickle([1, 2]),
    Serialized({"serializer": "pickle"}, [b"abc", bytearray(b"de")]),
    Pickled({"serializer": "pickle"}, [b"xyz"]),
])
def test_pickle_copy_deepcopy_roundtrip(obj: object) -> None:
    for clone in (pickle.loads(pickle.dumps(obj, protocol=5)), copy.copy(obj),
                  copy.deepcopy(obj)):
        assert type(clone) is type(obj)
        assert clone == obj


def test_eq_and_repr() -> None:
    assert Serialize(1) == Serialize(1)
    assert Serialize(1) != ToPickle(1)
    assert Serialize(1) != Serialize(2)
    assert repr(Serialize(1)) == "Serialize(1)"
    assert "3 bytes" in repr(Serialized({"serializer": "x"}, [b"abc"]))
    assert Serialized({}, [b"a"]) != Pickled({}, [b"a"])


def test_frames_accept_any_iterable_in_both_builds() -> None:
    wrapped = Serialized({"serializer": "x"}, (b"a", b"b"))
    assert wrapped.frames == [b"a", b"b"]
    assert type(wrapped.frames) is list


def test_hashable_for_use_as_keys() -> None:
    assert hash(Serialize("k")) == hash(Serialize("k"))
    assert hash(Pickled({"serializer": "pickle"}, [b"a"])) == \
        hash(Pickled({"serializer": "pickle"}, [bytearray(b"a")]))


def test_subclass_pickles_as_itself() -> None:
    clone = pickle.loads(pickle.dumps(MyToPickle(5)))
    assert type(clone) is MyToPickle and clone.data == 5


class MyToPickle(ToPickle):
    pass


# A wrapper in a dict key or set item travels as a record and is opened on receipt: beside a
# key equal to what it opens to, loads would merge the two. dumps refuses that, naming where.
@pytest.mark.parametrize("msg, where", [
    ({Serialize(1): "a", 1: "b"}, "msg (the key Serialize(1))"),
    ({1: "b", Serialize(1): "a"}, "msg (the key Serialize(1))"),
    ({"x": {Serialize(1): "a", ToPickle(1): "b"}}, "msg['x'] (the key ToPickle(1))"),
    ({(Serialize(1), 2): "a", (1, 2): "b"}, "msg (the key (Serialize(1), 2))"),
    ({"s": {ToPickle("k"), "k"}}, "msg['s'] (a member ToPickle('k'))"),
    ([frozenset({frozenset({Serialize(3)}), frozenset({3})})], "msg[0] (a member frozenset("),
])
def test_wrapper_key_that_opens_to_a_key_beside_it_is_refused(msg: object, where: str) -> None:
    with pytest.raises(fastser.SerializationError, match="loads would merge the two") as info:
        fastser.dumps(msg)
    assert f" at {where}" in str(info.value)


def test_wrapper_keys_that_open_to_distinct_keys_round_trip() -> None:
    msg = {Serialize(1): "a", 2: "b", (ToPickle(3), 4): "c", (3, 5): "d", 2**70: "e",
           "s": {Serialize("k"), "j", frozenset({ToPickle(1)})}}
    assert fastser.loads(fastser.dumps(msg)) == {
        1: "a", 2: "b", (3, 4): "c", (3, 5): "d", 2**70: "e", "s": {"k", "j", frozenset({1})}}


class Token:
    """Equal only to itself (no __eq__), and pickled the same as every other Token."""


# NaN is equal to nothing, yet two wrapped NaNs make the same record: dumps' own dict (or
# set) of records, and loads, would merge them, losing a value. dumps refuses, naming where.
@pytest.mark.parametrize("msg, where", [
    ({Serialize(float("nan")): "a", Serialize(float("nan")): "b"}, "msg (the key Serialize(nan))"),
    ({"x": {ToPickle(float("nan")): "a", ToPickle(float("nan")): "b"}},
     "msg['x'] (the key ToPickle(nan))"),
    ({(Serialize(float("nan")), 1): "a",
      (Serialize(float("nan")), 1): "b"},  # noqa: F601 - two keys: each NaN equals nothing
     "msg (the key (Serialize(nan), 1))"),
    ({"s": {Serialize(float("nan")), Serialize(float("nan"))}},
     "msg['s'] (a member Serialize(nan))"),
    ([frozenset({ToPickle((float("nan"),)), ToPickle((float("nan"),))})],
     "msg[0] (a member ToPickle((nan,)))"),
    ({Serialize(Token()): "a", Serialize(Token()): "b"}, "msg (the key Serialize(<"),
], ids=["keys", "pickled-keys", "tuple-keys", "set", "frozenset", "no-eq"])
def test_wrapper_keys_written_alike_though_unequal_are_refused(msg: object, where: str) -> None:
    with pytest.raises(fastser.SerializationError, match="as two NaNs.*loads would merge") as info:
        fastser.dumps(msg)
    assert f" at {where}" in str(info.value)


def test_nan_keys_that_loads_keeps_apart_round_trip() -> None:
    nan = float("nan")
    # A plain NaN and a wrapped one; NaNs of other bits; a NaN beside a NaN in a tuple.
    msg = {nan: "a", Serialize(float("nan")): "b", ToPickle(-nan): "c", (nan, nan): "d"}
    got = fastser.loads(fastser.dumps(msg))
    assert sorted(got.values()) == ["a", "b", "c", "d"]
