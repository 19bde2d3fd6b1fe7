from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from fastser import Pickled, Serialize, Serialized, ToPickle, extract_serialize


def test_seed_message() -> None:
    msg = 11 * [10 * [2 * [5 * [b"x" * 3_000_000]]]]
    plain, extracted, byte_paths = extract_serialize(msg)
    assert len(extracted) == 1100 and byte_paths == set(extracted)
    assert plain[10][9][1] == 5 * [None]
    assert extracted[(10, 9, 1, 4)] is msg[10][9][1][4]


def test_wrappers_and_paths() -> None:
    s, p = Serialize(1), Pickled({}, [])
    msg: dict[str, Any] = {"a": [1, s, (2, ToPickle(3))], "b": {"c": p, "d": b"small"},
                           "e": Serialized({}, [])}
    original = repr(msg)
    plain, extracted, byte_paths = extract_serialize(msg)
    assert plain == {"a": [1, None, (2, None)], "b": {"d": b"small"}}
    assert type(plain["a"][2]) is tuple
    assert set(extracted) == {("a", 1), ("a", 2, 1), ("b", "c"), ("e",)}
    assert extracted[("a", 1)] is s and byte_paths == set()
    assert repr(msg) == original


def test_threshold_and_bytes_likes() -> None:
    plain, extracted, byte_paths = extract_serialize(
        {"a": bytearray(10), "b": memoryview(b"12345")}, bytes_threshold=5)
    assert plain == {} and byte_paths == {("a",), ("b",)}


def test_top_level_payload() -> None:
    s = Serialize(1)
    assert extract_serialize(s) == (None, {(): s}, set())


def test_bytes_paths_before_and_after_a_wrapper() -> None:
    s = Serialize(1)
    plain, extracted, byte_paths = extract_serialize(
        [b"x" * 10, {"s": s, "late": bytearray(10)}, b"y" * 10], bytes_threshold=5)
    assert plain == [None, {}, None] and extracted[(1, "s")] is s
    assert byte_paths == {(0,), (1, "late"), (2,)}
    assert extract_serialize(b"z" * 10, bytes_threshold=5) == (None, {(): b"z" * 10}, {()})


def reference_extract(msg: Any, threshold: int) -> tuple[Any, dict[Any, Any], set[Any]]:
    """extract_serialize written the obvious way, to check the fast walk against."""
    extracted: dict[Any, Any] = {}
    bytes_paths: set[Any] = set()

    def removed(value: Any, path: tuple[Any, ...]) -> bool:
        if type(value) in (bytes, bytearray, memoryview):
            if memoryview(value).nbytes < threshold:
                return False
            bytes_paths.add(path)
        elif not isinstance(value, (Serialize, Serialized, ToPickle, Pickled)):
            return False
        extracted[path] = value
        return True

    def copy(obj: Any, path: tuple[Any, ...]) -> Any:
        if type(obj) is dict:
            return {key: copy(value, path + (key,)) for key, value in obj.items()
                    if not removed(value, path + (key,))}
        if type(obj) in (list, tuple):
            items = [None if removed(value, path + (i,)) else copy(value, path + (i,))
                     for i, value in enumerate(obj)]
            return items if type(obj) is list else tuple(items)
        return obj

    if removed(msg, ()):
        return None, extracted, bytes_paths
    return copy(msg, ()), extracted, bytes_paths


leaves = st.one_of(st.integers(-3, 3), st.binary(max_size=12), st.builds(Serialize, st.integers()),
                   st.builds(ToPickle, st.integers()))
nested = st.recursive(leaves, lambda children: st.one_of(
    st.lists(children, max_size=4), st.lists(children, max_size=4).map(tuple),
    st.dictionaries(st.one_of(st.text(max_size=2), st.integers(0, 5)), children, max_size=4)),
    max_leaves=25)


@settings(max_examples=200, deadline=None)
@given(nested)
def test_matches_the_obvious_walk(msg: Any) -> None:
    got = extract_serialize(msg, bytes_threshold=6)
    want = reference_extract(msg, 6)
    assert got == want
    for path, value in got[1].items():  # the removed objects themselves, not copies
        assert value is want[1][path]
