import copy
import pickle

import pytest

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
