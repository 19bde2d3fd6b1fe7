from typing import Any

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
