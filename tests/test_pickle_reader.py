"""The direct pickle reader: it reads what _pickle_writer writes and the stdlib's own small
pickles of the same types exactly as pickle.loads does, and declines — before calling
anything but functools.partial — whatever else a pickle holds."""

import collections
import functools
import operator
import pickle
import random
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from strategies import examples
from test_pickle_writer import same, values

import fastser
from fastser._pickle_reader import read_pickle
from fastser._pickle_writer import write_pickle

CALLS: list[Any] = []


def record_call(*args: Any) -> list[Any]:
    """A reducer with a visible side effect: the reader must never be the one to call it."""
    CALLS.append(args)
    return list(args)


class Recorded:
    def __reduce__(self) -> Any:
        return (record_call, (1, 2))


@settings(max_examples=examples(300), deadline=None)
@given(values)
def test_reads_the_writer_and_the_stdlib_as_pickle_does(value: Any) -> None:
    written = write_pickle(value)
    if written is not None:
        found, read = read_pickle(written)
        assert found and same(read, value)
    for protocol in (4, 5):
        data = pickle.dumps(value, protocol=protocol)
        found, read = read_pickle(data)
        if found:
            assert same(read, pickle.loads(data))


def test_tasks_and_shared_references() -> None:
    task = (operator.add, "inc-1", 1)
    assert read_pickle(write_pickle(task) or b"") == (True, task)
    partial: "functools.partial[dict[str, int]]" = functools.partial(dict, a=1)
    found, read = read_pickle(pickle.dumps(partial, protocol=5))
    assert found and same(read, partial)
    shared = [1]
    found, read = read_pickle(pickle.dumps((shared, shared), protocol=5))
    assert found and read == ([1], [1]) and read[0] is read[1]  # the memo keeps identity


def test_declines_other_pickles_before_calling_anything() -> None:
    for value in [{1, 2}, bytearray(b"x"), collections.OrderedDict(a=1), Recorded(),
                  [Recorded(), operator.add], 1 + 2j]:
        data = pickle.dumps(value, protocol=5)
        assert read_pickle(data) == (False, None), value
    assert CALLS == []
    assert read_pickle(pickle.dumps(5, protocol=2)) == (False, None)


def test_truncated_and_mutated_pickles_are_declined_or_read_never_crash() -> None:
    good = write_pickle({"f": functools.partial(operator.add, 1), "t": (1.5, "é", b"x" * 300,
                                                                     [None, True, 2**70])})
    assert good is not None
    for end in range(len(good)):
        assert read_pickle(good[:end]) == (False, None)
    rng = random.Random(7)
    for _ in range(3_000):
        data = bytearray(good)
        data[rng.randrange(len(data))] = rng.randrange(256)
        try:
            read_pickle(bytes(data))
        except Exception:  # trusted input: pickle.loads raises for such pickles too
            pass
    assert CALLS == []


def test_globals_are_found_as_pickle_finds_them(find_class_events: list[Any]) -> None:
    found, read = read_pickle(write_pickle((operator.add, len)) or b"")
    assert found and read == (operator.add, len)
    assert ("_operator", "add") in find_class_events and ("builtins", "len") in find_class_events


def test_the_pickle_family_reads_with_it() -> None:
    task = (operator.add, "inc-1", 1)
    header, frames = fastser.serialize(task, serializers=("pickle",))
    assert fastser.deserialize(header, frames) == task
    frames = fastser.dumps({"t": fastser.Serialize(task), "o": collections.OrderedDict(a=1)})
    out = fastser.loads(frames)
    assert out["t"] == task and type(out["o"]) is collections.OrderedDict


def target() -> str:
    return "original"


def test_a_rebound_name_is_found_anew(monkeypatch: pytest.MonkeyPatch) -> None:
    data = write_pickle((target, 1)) or b""
    assert read_pickle(data) == (True, (target, 1))
    replacement = lambda: "rebound"  # noqa: E731
    monkeypatch.setattr(sys.modules[__name__], "target", replacement)
    assert read_pickle(data) == (True, (replacement, 1))  # as pickle.loads finds it
    assert pickle.loads(data) == (replacement, 1)
