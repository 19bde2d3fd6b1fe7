"""Golden frames: streams written by earlier wire versions are still read, value for value.

The files under tests/golden/ are pack_frames() streams named <message>.v<version>.bin. When
the wire format changes, WIRE_VERSION goes up and the new version's files are added with
`python tests/test_golden.py`; the old files stay, and this test keeps reading them.
"""

import functools
import operator
import pathlib
import sys
from typing import Any

import numpy as np
import pytest

import fastser
from fastser import Pickled, Serialize, Serialized, ToPickle
from fastser._wire import TUPLE_LEAD_VERSION, WIRE_VERSION

GOLDEN = pathlib.Path(__file__).resolve().parent / "golden"


def messages() -> dict[str, Any]:
    """What every golden file holds. Nothing here needs the stdlib pickler, so the files do
    not depend on the Python version that wrote them ("pickled", from version 4, holds
    pickles that fastser's own writer makes: the same opcodes on every version)."""
    return {
        "scalars": {"none": None, "true": True, "int": -7, "u64": 2**64 - 1, "big": -(2**100),
                    "float": 1.25, "str": "héllo", "bytes": b"\x00\xff"},
        "containers": {"list": [1, [2, [3]]], "tuple": (1, ("a", (b"b",))), "set": {1, 2},
                       "frozenset": frozenset({"x"}), "empty": [(), [], {}, set()],
                       (1, "tuple key"): {frozenset({2}): "frozenset key", 3: "int key"}},
        "bytes_likes": {"bytearray": bytearray(b"ba"), "memoryview": memoryview(b"mv"),
                        "large": b"L" * 65_536, "large_bytearray": bytearray(b"B" * 65_536),
                        "large_memoryview": memoryview(b"M" * 65_536)},
        "serialized": {"bytes": Serialize(b"payload"), "large": Serialize(b"P" * 65_536),
                       "array": Serialize(np.arange(12, dtype="<i4").reshape(3, 4)),
                       "msgpack": Serialize({"k": [1, 2]})},
        "split": {"big": b"S" * 70_000, "array": Serialize(np.arange(9_000, dtype="<f8"))},
        "pickled": {"task": Serialize((1, "a", None)), "call": ToPickle([1.5, True, b"x"])},
        "tasks": {"call": Serialize((operator.add, "x-1", 1)),
                  "partial": Serialize(functools.partial(operator.mul, 2.5)),
                  "keywords": ToPickle(functools.partial(int, base=2)),
                  "again": Serialize((operator.add, "x-2", 2))},
        # Version 6: a map of 16 or more Serialize tasks is one extension type; functions
        # named before it keep their index inside it, and after it.
        "task_map": {"before": Serialize((operator.add, "x", 0)),
                     "map": {f"t-{i}": Serialize(
                         (operator.add, f"x-{i}", i) if i % 3 == 0 else
                         functools.partial(operator.mul, i) if i % 3 == 1 else
                         functools.partial(int, str(i), base=8)) for i in range(16)},
                     "after": Serialize(functools.partial(int, "7", base=8))},
        # Version 6: a map of 32 or more entries is an array led by its mark.
        "large_maps": {"str keys": {f"key-{i}": [i, (i, "t")] for i in range(40)},
                       "other keys": {("x", i): {i: b"v"} for i in range(32)}},
        # Version 7: a list of large bytes values is one extension type naming their frames
        # (a list of one, or holding anything else, is written item by item).
        "bytes_lists": {"blobs": [b"a" * 65_536, b"b" * 65_537], "one": [b"c" * 65_536],
                        "mixed": [b"d" * 65_536, b"small"]},
        # Version 8: a numpy array whose header is the dispatch family's own is a short
        # record; a structured dtype (a list, not a str) keeps the generic one.
        "arrays": {"c": Serialize(np.arange(6, dtype="<i8").reshape(2, 3)),
                   "fortran": Serialize(np.asfortranarray(np.arange(6.0).reshape(2, 3))),
                   "read_only": Serialize(read_only(np.arange(3, dtype="<i2"))),
                   "zero_d": Serialize(np.array(3.5)), "empty": Serialize(np.zeros((0, 2))),
                   "big_endian": Serialize(np.arange(4, dtype=">u2")),
                   "large": Serialize(np.arange(9_000, dtype="<f8")),
                   "in_tuple": (Serialize(np.arange(2, dtype="|i1")),),
                   "structured": Serialize(np.zeros(2, dtype=[("a", "<i4"), ("b", "<f8")]))},
        # Version 9: a tuple is an array led by the int -32, and a list led by that int is
        # an array led by its own mark.
        "tuple_leads": {"led": [-32, "x"], "tuple": (-32, ("x", 0)), "empty": [(), [], [-32]],
                        "nested": [[(-32, [-32, [-32]])], (-31, -33)], "not_first": [1, -32],
                        (-32, "key"): {(): [True, -32], frozenset({(-32,)}): [-32.0]}},
    }


def read_only(array: Any) -> Any:
    array.flags.writeable = False
    return array


def options(name: str) -> dict[str, Any]:
    if name == "serialized":
        return {"serializers": ("dispatch", "msgpack")}
    if name == "split":
        return {"frame_split_size": 30_000}
    return {}


def same(a: Any, b: Any) -> bool:
    """Equal with the same types all the way down (arrays by value, dtype and shape)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and a.shape == b.shape and bool((a == b).all())
    if type(a) is dict:
        return (sorted(map(repr, a)) == sorted(map(repr, b))
                and all(same(a[k], b[k]) for k in a))
    if type(a) in (list, tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if type(a) is memoryview:
        return bytes(a) == bytes(b)
    if type(a) is functools.partial:
        return a.func is b.func and same(a.args, b.args) and same(a.keywords, b.keywords)
    equal: bool = a == b
    return equal


def unwrap(msg: Any) -> Any:
    """The message as loads returns it: Serialize(x) comes back as x."""
    if isinstance(msg, (Serialize, ToPickle)):
        return msg.data
    if type(msg) is dict:
        return {k: unwrap(v) for k, v in msg.items()}
    if type(msg) is tuple:
        return tuple(unwrap(v) for v in msg)
    return msg


def golden_files() -> list[pathlib.Path]:
    return sorted(GOLDEN.glob("*.v*.bin"))


def test_every_wire_version_up_to_the_current_one_has_golden_files() -> None:
    versions = {int(path.name.split(".v")[1].split(".")[0]) for path in golden_files()}
    assert versions == set(range(1, WIRE_VERSION + 1))
    names = {path.name.split(".v")[0] for path in golden_files()}
    assert names == set(messages())


@pytest.mark.parametrize("path", golden_files(), ids=lambda path: path.name)
def test_golden_frames_are_read(path: pathlib.Path) -> None:
    name = path.name.split(".v")[0]
    frames = fastser.unpack_frames(path.read_bytes())
    expected = unwrap(messages()[name])
    assert same(fastser.loads(frames), expected)
    kept = fastser.loads(frames, deserialize=False)
    if name == "serialized":
        assert all(isinstance(value, Serialized) for value in kept.values())
    if name == "pickled":
        assert type(kept["task"]) is Serialized and type(kept["call"]) is Pickled
        assert kept["task"].header == kept["call"].header == {"serializer": "pickle"}
    if name == "tasks":
        assert [type(value) for value in kept.values()] == [Serialized, Serialized, Pickled,
                                                             Serialized]
        assert kept["call"].header == {"serializer": "pickle", "form": "task"}
        assert forwarded(kept) == after_version(frames)
    if name == "task_map":
        assert all(type(value) is Serialized for value in kept["map"].values())
        assert forwarded(kept) == after_version(frames)
    version = int(path.name.split(".v")[1].split(".")[0])
    if name == "arrays" and version >= TUPLE_LEAD_VERSION:  # before, its tuple had an ext mark
        assert forwarded(kept) == after_version(frames)
    if name == "tuple_leads":
        assert forwarded(kept) == after_version(frames)


def after_version(frames: list[Any]) -> list[bytes]:
    """Frames as bytes, the header without its version byte: a message kept unopened is
    forwarded byte for byte, under the current version."""
    return [bytes(frames[0])[1:], *map(bytes, frames[1:])]


def forwarded(kept: Any) -> list[bytes]:
    frames = fastser.dumps(kept)
    assert frames[0][0] == WIRE_VERSION
    return after_version(frames)


def test_the_current_version_writes_its_golden_files_byte_for_byte() -> None:
    for name, msg in messages().items():
        if name in ("containers", "serialized"):
            continue  # set order and the numpy header's key order are not fixed
        path = GOLDEN / f"{name}.v{WIRE_VERSION}.bin"
        assert fastser.pack_frames(fastser.dumps(msg, **options(name))) == path.read_bytes()


def write_golden() -> None:
    for name, msg in messages().items():
        path = GOLDEN / f"{name}.v{WIRE_VERSION}.bin"
        path.write_bytes(fastser.pack_frames(fastser.dumps(msg, **options(name))))
        print(f"wrote {path} ({path.stat().st_size} bytes)")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        sys.exit("usage: python tests/test_golden.py  (writes the current version's files)")
    write_golden()
