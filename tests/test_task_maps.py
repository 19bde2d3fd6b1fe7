"""Wire version 6's task maps: a dict of many Serialize tasks under str keys travels as one
extension type, read by one nested msgpack call."""

import functools
import operator
from typing import Any, Callable

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fastser
from fastser import (Decoder, DeserializationError, Serialize, Serialized, ToPickle,
                     deserialize)
from fastser._wire import EXT_TASK_MAP

from strategies import examples
from tasks_shared import SAFE, TASK_HEADER, body, header_of, same


def many_tasks(count: int = 20) -> dict[str, Any]:
    return {f"t-{i}": (operator.add, f"x-{i}", i) if i % 3 == 0 else
            functools.partial(operator.mul, i) if i % 3 == 1 else
            functools.partial(int, str(i), base=8) for i in range(count)}


def task_map_of(data: Any) -> Any:
    """frames of a hand-made header whose "m" is a task map holding msgpack of `data`."""
    return header_of({"m": msgpack.ExtType(EXT_TASK_MAP, msgpack.packb(data, use_bin_type=True))})


def test_a_map_of_many_tasks_travels_as_one_extension_type() -> None:
    tasks = many_tasks()
    frames = fastser.dumps({"before": Serialize((operator.mul, 2, 3)),
                            "tasks": {key: Serialize(task) for key, task in tasks.items()},
                            "after": Serialize((operator.add, 1, 2))})
    written = body(frames)
    assert type(written["tasks"]) is msgpack.ExtType and written["tasks"].code == EXT_TASK_MAP
    keys, fields = msgpack.unpackb(written["tasks"].data, raw=False)
    assert keys == list(tasks)
    assert fields[0] == [None, 0, "_operator", "add", "x-0", 0]  # named first in the map
    assert fields[1] == [None, 1, 0, {}, 1]  # operator.mul, named before the map: index 0
    assert written["after"][2] == 1  # operator.add, named inside the map: index 1 after it
    got = fastser.loads(frames)
    assert list(got["tasks"]) == list(tasks)
    assert all(same(got["tasks"][key], task) for key, task in tasks.items())
    assert got["before"] == (operator.mul, 2, 3) and got["after"] == (operator.add, 1, 2)


def test_a_task_map_kept_unopened_is_records_forwarded_byte_for_byte() -> None:
    tasks = many_tasks()
    frames = fastser.dumps({"tasks": {key: Serialize(task) for key, task in tasks.items()}})
    kept = fastser.loads(frames, deserialize=False)
    assert all(type(value) is Serialized and value.header == TASK_HEADER
               for value in kept["tasks"].values())
    assert fastser.dumps(kept) == frames
    assert all(same(deserialize(record.header, record.frames), tasks[key])
               for key, record in kept["tasks"].items())
    # A process that refuses pickle keeps them unopened too, and refuses to open them.
    safe = Decoder(deserialize=False, deserializers=SAFE).loads(frames)
    assert fastser.dumps(safe) == frames
    with pytest.raises(DeserializationError, match="task 0 of a task map"):
        fastser.loads(frames, deserializers=SAFE)


INT_KEYED: dict[Any, Any] = {7: Serialize((operator.add, 1, 7))}


@pytest.mark.parametrize("tasks", [
    {f"t-{i}": Serialize((operator.add, 1, i)) for i in range(15)},  # too few
    {**{f"t-{i}": Serialize((operator.add, 1, i)) for i in range(20)},
     **INT_KEYED},  # a key that is not a str
    {**{f"t-{i}": Serialize((operator.add, 1, i)) for i in range(20)}, "x": 1},
    {**{f"t-{i}": Serialize((operator.add, 1, i)) for i in range(20)},
     "x": Serialize((operator.add, [1], 2))},  # a task the form cannot carry: pickled
    {f"t-{i}": ToPickle((operator.add, 1, i)) for i in range(20)},  # not Serialize
    # The encoder gathers tasks until an entry is not one: first, in the middle, last.
    {"x": 1, **{f"t-{i}": Serialize((operator.add, 1, i)) for i in range(20)}},
    {**{f"t-{i}": Serialize((operator.add, 1, i)) for i in range(10)}, **INT_KEYED,
     **{f"u-{i}": Serialize((operator.add, 1, i)) for i in range(10)}},
    {**{f"t-{i}": Serialize((operator.add, 1, i)) for i in range(10)}, "x": "y",
     **{f"u-{i}": Serialize((operator.add, 1, i)) for i in range(10)}},
], ids=["15 tasks", "int key", "a plain value", "a pickled task", "ToPickle",
        "a plain value first", "int key in the middle", "a plain value in the middle"])
def test_other_maps_of_tasks_stay_inline(tasks: dict[Any, Any]) -> None:
    frames = fastser.dumps({"tasks": tasks})
    assert type(body(frames)["tasks"]) is dict
    got = fastser.loads(frames)["tasks"]
    assert list(got) == list(tasks)
    assert got == {key: value.data if isinstance(value, (Serialize, ToPickle)) else value
                   for key, value in tasks.items()}


@given(st.lists(st.lists(st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**63), max_value=2**64 - 1),
    st.floats(), st.text(max_size=8), st.binary(max_size=8)), max_size=4),
    min_size=16, max_size=24))
@settings(max_examples=examples(100), deadline=None)
def test_task_maps_round_trip(arguments: list[list[Any]]) -> None:
    functions: list[Callable[..., Any]] = [operator.add, operator.mul, int, max]
    tasks: dict[str, Any] = {}
    for i, args in enumerate(arguments):
        function = functions[i % len(functions)]
        tasks[f"k{i}"] = ((function, *args) if i % 2 else
                          functools.partial(function, *args[1:], **{"a": a for a in args[:1]}))
    frames = fastser.dumps({"m": {key: Serialize(task) for key, task in tasks.items()}})
    assert body(frames)["m"].code == EXT_TASK_MAP
    got = fastser.loads(frames)["m"]
    assert list(got) == list(tasks) and all(same(got[key], tasks[key]) for key in tasks)
    kept = fastser.loads(frames, deserialize=False)
    assert fastser.dumps(kept) == frames


@pytest.mark.parametrize("data, reason", [
    ({"k": 1}, "not \\[keys, tasks\\]"),
    ([["k"]], "not \\[keys, tasks\\]"),
    ([["k"], [[None, 0, "_operator", "add"]], []], "not \\[keys, tasks\\]"),
    ([["k"], []], "two arrays of one length"),
    (["k", [[None, 0, "_operator", "add"]]], "two arrays of one length"),
    ([[7], [[None, 0, "_operator", "add"]]], "key 0 of a task map is not a str"),
    ([["k"], [7]], "task 0 of a task map is not an array led by nil"),
    ([["k"], [[]]], "task 0 of a task map is not an array led by nil"),
    ([["k"], [[0, 0, "_operator", "add"]]], "task 0 of a task map is not an array led by nil"),
    ([["k"], [[None, 2, "_operator", "add"]]], "unknown task kind.*task 0 of a task map"),
    ([["k", "j"], [[None, 0, "_operator", "add"], [None, 0, 1]]],
     "names function 1 of the 1.*task 1 of a task map"),
    ([["k"], [[None, 0, "_operator", "add", msgpack.ExtType(19, b"")]]], "only scalars"),
    ([["k"], [[None, 0, "fastser_no_such_module", "f"]]], "No module named"),
], ids=repr)
def test_hostile_task_maps_raise_deserialization_errors(data: Any, reason: str) -> None:
    with pytest.raises(DeserializationError, match=reason):
        fastser.loads(task_map_of(data))
    if "module" not in reason:  # found only when opened
        with pytest.raises(DeserializationError, match=reason):
            fastser.loads(task_map_of(data), deserialize=False)


def test_a_task_map_counts_its_two_levels_of_nesting() -> None:
    tasks = {key: Serialize(task) for key, task in many_tasks().items()}
    for depth in range(1, 6):
        msg: Any = tasks
        for _ in range(depth):
            msg = [msg]
        frames = fastser.dumps(msg)
        # The lists, the map and a task's tuple: depth + 2 levels.
        assert fastser.loads(frames, limits=fastser.Limits(max_depth=depth + 2))
        with pytest.raises(DeserializationError, match="nested deeper"):
            fastser.loads(frames, limits=fastser.Limits(max_depth=depth + 1))
