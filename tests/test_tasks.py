"""Wire version 5's task form: a call tuple or functools.partial of a module-level function,
with scalar arguments, travels as msgpack values in the header instead of a pickle."""

import _thread
import functools
import json
import math
import operator
import sys
import types
from typing import Any, Callable

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fastser
from fastser import (Decoder, DeserializationError, Pickled, Serialize, Serialized, ToPickle,
                     deserialize)
from fastser._task import FunctionTable
from fastser._wire import (EXT_PICKLE_SERIALIZED, EXT_TASK_PICKLED_MARK, EXT_TASK_SERIALIZED_MARK,
                           TUPLE_LEAD)

from strategies import examples
from tasks_shared import SAFE, TASK_HEADER, body, header_of, listed, mark, same


def task_fields(task: Any) -> Any:
    """What a header with no task before it writes for `task` after its mark, or None."""
    fields = FunctionTable().task_fields(task, "mark")
    return None if fields is None else fields[1:]


TASKS = [
    (operator.add, "x-1", 1),
    (len,),
    (int, "101", 2),
    (max, -(2**63), 2**64 - 1, 0.5, True, False, None, b"\x00\xff", "héllo"),
    functools.partial(operator.mul, 3),
    functools.partial(int, base=2),
    functools.partial(max, 1, 2, key=None),
    functools.partial(sorted),
]


@pytest.mark.parametrize("task", TASKS, ids=repr)
def test_tasks_travel_as_arrays_and_come_back_with_their_types(task: Any) -> None:
    frames = fastser.dumps({"s": Serialize(task), "p": ToPickle(task), "f": [task]})
    written = body(frames)
    assert written["s"][0] == mark() and written["p"][0] == mark(EXT_TASK_PICKLED_MARK)
    if type(task) is functools.partial:  # not a message type: the pickle fallback
        assert listed(written["f"])[0][0] == mark(EXT_TASK_PICKLED_MARK)
    else:  # a tuple in a message is a message tuple
        assert written["f"][0][0] == TUPLE_LEAD
    out = fastser.loads(frames)
    assert same(out["s"], task) and same(out["p"], task) and same(out["f"][0], task)
    assert out["s"] is not out["p"]


def own_function() -> None:
    """A module-level function of this test module."""


class Called:
    def method(self) -> None:
        """A method: by name `Called.method`, found through its class."""


def local_function() -> Callable[[], None]:
    def inner() -> None:
        pass
    return inner


class MyPartial(functools.partial[Any]):
    pass


def attributed() -> functools.partial[Any]:
    task = functools.partial(operator.add, 1)
    task.note = "kept"  # type: ignore[attr-defined]
    return task


@pytest.mark.parametrize("task", [
    (operator.add, [1], 2),  # a list argument: shared identity is pickle's to keep
    (operator.add, (1, 2)),  # a tuple argument
    (operator.add, 2**70),  # beyond 64 bits
    (operator.add, "\ud800"),  # a lone surrogate: msgpack cannot write it
    (operator.add, bytearray(b"x")),
    (operator.add, b"x" * 65_536),
    (1, 2),  # no function first
    (),
    (local_function(), 1),
    (lambda: None, 1),
    functools.partial(operator.add, [1]),
    functools.partial(dict, x=[1]),
    functools.partial(local_function()),
    MyPartial(operator.add, 1),
    attributed(),
], ids=repr)
def test_what_the_form_cannot_carry_is_pickled(task: Any) -> None:
    assert task_fields(task) is None
    frames = fastser.dumps({"s": Serialize(task)})
    written = body(frames)["s"]
    assert not (type(written) is list and written and written[0] == mark())
    out = fastser.loads(frames)["s"]
    if callable(task) and not isinstance(task, functools.partial):
        assert callable(out)
    else:
        assert type(out) is type(task)
        if isinstance(task, functools.partial):
            assert out.func is task.func or callable(out.func)
        elif task and not callable(task[0]):
            assert out == task


def test_methods_and_own_functions_are_tasks_too() -> None:
    for task in [(own_function,), (Called.method, Called()), (Called,)]:
        fields = task_fields(task)
        if type(task[-1]) is Called and len(task) == 2:
            assert fields is None  # an instance argument: pickled
            continue
        assert fields is not None and fields[1] == __name__
        assert same(fastser.loads(fastser.dumps(Serialize(task))), task)


def test_a_rebound_name_is_not_written_for_the_old_function() -> None:
    module = types.ModuleType("fastser_test_rebound")
    exec("def f(): pass", module.__dict__)
    sys.modules[module.__name__] = module
    try:
        old = module.f
        assert task_fields((old, 1)) is not None
        exec("def f(): pass", module.__dict__)
        assert task_fields((old, 1)) is None  # pickle would refuse it by name too
        assert task_fields((module.f, 1)) is not None
    finally:
        del sys.modules[module.__name__]


@given(st.lists(st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**63), max_value=2**64 - 1),
    st.floats(), st.text(max_size=20), st.binary(max_size=40)), max_size=6))
@settings(max_examples=examples(200), deadline=None)
def test_scalar_arguments_round_trip(arguments: list[Any]) -> None:
    for task in [(operator.add, *arguments), functools.partial(operator.add, *arguments),
                 functools.partial(operator.add, **{f"k{i}": a for i, a in enumerate(arguments)})]:
        assert same(fastser.loads(fastser.dumps([Serialize(task)]))[0], task)


@given(st.lists(st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**63), max_value=2**64 - 1),
    st.floats(), st.text(max_size=20), st.binary(max_size=40)), max_size=16),
    st.integers(min_value=1, max_value=3))
@settings(max_examples=examples(200), deadline=None)
def test_an_unopened_task_record_holds_its_fields_as_msgpack_packs_them(
        arguments: list[Any], copies: int) -> None:
    # The decoder packs a record's prefix once per function, kind and length (up to
    # msgpack's one-byte array header, 15 items) and the tail per task: the frame must be
    # the bytes msgpack makes of the whole list, on the first use of a prefix and later.
    keywords = {f"k{i}": argument for i, argument in enumerate(arguments[:5])}
    tasks: list[Any] = [(operator.add, *arguments), functools.partial(operator.add, *arguments),
                        functools.partial(operator.add, *arguments[5:], **keywords)]
    sent = [task for task in tasks for _ in range(copies)]
    kept = fastser.loads(fastser.dumps([Serialize(task) for task in sent]), deserialize=False)
    names = [operator.add.__module__, operator.add.__name__]
    for task, record in zip(sent, kept):
        assert type(record) is Serialized and record.header == TASK_HEADER
        fields = ([0, *names, *task[1:]] if type(task) is tuple else
                  [1, *names, task.keywords, *task.args])
        assert record.frames == [msgpack.packb(fields, use_bin_type=True)]


def test_kept_unopened_a_task_is_a_record_that_is_forwarded_byte_for_byte() -> None:
    task = functools.partial(int, "7", base=8)
    frames = fastser.dumps({"s": Serialize(task), "p": ToPickle((operator.neg, 1))})
    kept = fastser.loads(frames, deserialize=False)
    assert type(kept["s"]) is Serialized and type(kept["p"]) is Pickled
    assert kept["s"].header == TASK_HEADER and kept["p"].header == TASK_HEADER
    assert kept["s"].header is not kept["p"].header
    assert fastser.dumps(kept) == frames
    kept["s"].header["mine"] = True  # a record's header is its own
    assert fastser.loads(frames, deserialize=False)["s"].header == TASK_HEADER
    del kept["s"].header["mine"]
    assert same(deserialize(kept["s"].header, kept["s"].frames), task)
    assert deserialize(kept["p"].header, kept["p"].frames) == (operator.neg, 1)
    made: list[Any] = []

    def factory(header: Any, payload: list[Any]) -> str:
        made.append((header, payload))
        return "mine"

    assert Decoder(deserialize=False, serialized_factory=factory).loads(frames)["s"] == "mine"
    assert made[0][0] == TASK_HEADER and msgpack.unpackb(made[0][1][0]) == \
        [1, "builtins", "int", {"base": 8}, "7"]
    # Opened where pickle is allowed: a scheduler opens ToPickle payloads.
    opened = Decoder(deserialize=False, open_pickled=True).loads(frames)
    assert type(opened["s"]) is Serialized and opened["p"] == (operator.neg, 1)


def test_a_process_that_refuses_pickle_refuses_tasks() -> None:
    frames = fastser.dumps({"p": ToPickle((operator.neg, 1))})
    assert type(fastser.loads(frames, deserializers=SAFE)["p"]) is Pickled
    frames = fastser.dumps({"s": Serialize((operator.neg, 1))})
    with pytest.raises(DeserializationError, match="'pickle' refused"):
        fastser.loads(frames, deserializers=SAFE)
    kept = fastser.loads(frames, deserialize=False, deserializers=SAFE)["s"]
    assert type(kept) is Serialized and kept.header == TASK_HEADER


def test_functions_are_found_as_pickle_finds_them(find_class_events: list[Any]) -> None:
    fastser.loads(fastser.dumps(Serialize(functools.partial(operator.truediv, 1))))
    assert ("_operator", "truediv") in find_class_events


def test_replaced_families_turn_the_form_off() -> None:
    task = (operator.add, "x", 1)
    original = fastser._registry.REGISTRY.families["pickle"]
    fastser.register_serialization_family("pickle", original.dumps, original.loads)
    try:
        written = body(fastser.dumps(Serialize(task)))
        assert type(written) is msgpack.ExtType and written.code == EXT_PICKLE_SERIALIZED
        assert fastser.loads(fastser.dumps(Serialize(task))) == task
    finally:
        fastser._registry.REGISTRY.families["pickle"] = original
    assert body(fastser.dumps(Serialize(task)))[0] == mark()


class LazilyRegistered:
    """Of a module whose lazy registration replaces the "pickle" family."""


LazilyRegistered.__module__ = "fastser_test_lazy"


def test_a_family_replaced_during_dumps_serves_the_rest_of_that_message() -> None:
    original = fastser._registry.REGISTRY.families["pickle"]
    seen: list[str] = []

    def replacing_dumps(obj: Any, context: Any) -> tuple[dict[str, Any], list[Any]]:
        seen.append(type(obj).__name__)
        return original.dumps(obj, context)

    def replace_pickle() -> None:
        fastser.register_serialization_family("pickle", replacing_dumps, original.loads)

    fastser.register_serialization_lazy("fastser_test_lazy", replace_pickle)
    try:
        # The lazy registration runs at the first payload (the dispatch family looks its
        # type up); the task and the list after it must meet the new family.
        fastser.dumps([Serialize(LazilyRegistered()), Serialize((operator.add, 1, 2)),
                       Serialize([1, 2])])
        assert seen == ["LazilyRegistered", "tuple", "list"]
    finally:
        fastser._registry.REGISTRY.families["pickle"] = original
    assert body(fastser.dumps(Serialize((operator.add, 1, 2))))[0] == mark()


@pytest.mark.parametrize("fields, reason", [
    ([], "needs a kind and a function"),
    ([0], "needs a kind and a function"),
    ([0, "_operator"], "by module and name"),
    ([0, "_operator", b"add"], "by module and name"),
    ([0, 1.5, "add"], "or index"),
    ([0, 0, "x"], "names function 0 of the 0"),  # an index before any name
    ([0, -1], "names function -1"),
    ([2, "_operator", "add"], "unknown task kind"),
    ([True, "_operator", "add"], "unknown task kind"),
    (["0", "_operator", "add"], "unknown task kind"),
    ([1, "_operator", "add"], "map of keywords"),
    ([1, "_operator", "add", [1]], "map of keywords"),
    ([1, "_operator", "add", {1: 2}], "keywords are str"),
    ([1, "_operator", "add", {"k": [2]}], "keywords are str"),
    ([0, "_operator", "add", [1]], "only scalars"),
    ([0, "_operator", "add", {"a": 1}], "only scalars"),
    ([0, "_operator", "add", msgpack.ExtType(5, b"\x01")], "only scalars"),
    ([0, "_operator", "add", 2**64 - 1, [mark(12), 1]], "only scalars"),
    ([0, "fastser_no_such_module", "f"], "No module named"),
    ([0, "_operator", "no_such_function"], "no_such_function"),
    ([0, __name__, "local_function.<locals>.inner"], "local"),
], ids=repr)
def test_hostile_tasks_raise_deserialization_errors(fields: list[Any], reason: str) -> None:
    for code in (EXT_TASK_SERIALIZED_MARK, EXT_TASK_PICKLED_MARK):
        frames = header_of({"t": [mark(code), *fields]})
        with pytest.raises(DeserializationError, match=reason):
            fastser.loads(frames)
        if not any(word in reason for word in ("module named", "no_such", "local")):
            with pytest.raises(DeserializationError, match=reason):  # checked unopened too
                fastser.loads(frames, deserialize=False)
        else:
            kept = fastser.loads(frames, deserialize=False)["t"]
            with pytest.raises(DeserializationError, match=reason):
                deserialize(kept.header, kept.frames)


@pytest.mark.parametrize("frames", [
    [b"\xc1"], [b""], [msgpack.packb({"a": 1})], [msgpack.packb([0, "_operator"])],
    [msgpack.packb([0, "_operator", "add"]), b"extra"], ["not bytes"],
], ids=repr)
def test_hostile_task_records_raise_deserialization_errors(frames: list[Any]) -> None:
    with pytest.raises(DeserializationError):
        deserialize(dict(TASK_HEADER), frames)


def test_later_tasks_name_their_function_by_index() -> None:
    tasks = [(operator.add, "a", 1), functools.partial(operator.add, 2), (operator.mul, 3),
             (operator.add, "b", 4)]
    frames = fastser.dumps([Serialize(task) for task in tasks])
    written = listed(body(frames))
    assert [fields[1:4] for fields in written] == [
        [0, "_operator", "add"], [1, 0, {}], [0, "_operator", "mul"], [0, 0, "b"]]
    out = fastser.loads(frames)
    assert all(same(a, b) for a, b in zip(out, tasks))
    kept = fastser.loads(frames, deserialize=False)
    assert [msgpack.unpackb(record.frames[0])[:3] for record in kept] == [
        [0, "_operator", "add"], [1, "_operator", "add"], [0, "_operator", "mul"],
        [0, "_operator", "add"]]
    assert fastser.dumps(kept) == frames  # indexes again, as they came
    # A message mixing forwarded and new tasks names each function once.
    mixed = fastser.dumps([kept[1], Serialize((operator.add, 5)), kept[2]])
    assert [fields[1:3] for fields in listed(body(mixed))] == [
        [1, "_operator"], [0, 0], [0, "_operator"]]


def test_functions_builtins_and_classes_are_each_named_once() -> None:
    # A function or builtin is looked up by itself, a class by its id (_task.FunctionTable).
    tasks: list[tuple[Any, ...]] = [
        (math.hypot, 3.0, 4.0), (types.SimpleNamespace,), (functools.reduce, "f"),
        (math.hypot, 5.0, 12.0), (types.SimpleNamespace,), (functools.reduce, "g")]
    tasks += [(json.dumps, "x"), (json.dumps, "y")]  # a Python function
    frames = fastser.dumps([Serialize(task) for task in tasks])
    assert [fields[2:4] for fields in listed(body(frames))] == [
        ["math", "hypot"], ["types", "SimpleNamespace"], ["_functools", "reduce"],
        [0, 5.0], [1], [2, "g"], ["json", "dumps"], [3, "y"]]
    assert all(same(a, b) for a, b in zip(fastser.loads(frames), tasks))
    kept = fastser.loads(frames, deserialize=False)
    mixed = fastser.dumps([kept[1], Serialize((types.SimpleNamespace,)), kept[0],
                           Serialize((math.hypot, 1.0, 1.0))])
    assert [fields[2:4] for fields in listed(body(mixed))] == [
        ["types", "SimpleNamespace"], [0], ["math", "hypot"], [1, 1.0]]


def test_equal_builtins_of_other_names_keep_their_names() -> None:
    # Two names of one C function: equal, not the same object (FunctionTable.by_function).
    first, second = _thread.start_new_thread, _thread.start_new
    assert first == second and first is not second
    tasks = [(first, 1), (second, 2), (first, 3), (second, 4)]
    frames = fastser.dumps([Serialize(task) for task in tasks])
    assert [fields[2:4] for fields in listed(body(frames))] == [
        ["_thread", "start_new_thread"], ["_thread", "start_new"], [0, 3], [1, 4]]
    assert [task[0] for task in fastser.loads(frames)] == [first, second, first, second]
    assert [task[0].__name__ for task in fastser.loads(frames)] == [
        "start_new_thread", "start_new", "start_new_thread", "start_new"]


def test_a_task_inside_a_key_or_a_set_is_pickled() -> None:
    task = Serialize((operator.add, "x", 1))
    frames = fastser.dumps({(1, task): [task], "s": {task}})
    out = fastser.loads(frames)
    assert out == {(1, task.data): [task.data], "s": {task.data}}


def test_a_task_mark_must_be_empty_and_first() -> None:
    with pytest.raises(DeserializationError, match="carries data"):
        fastser.loads(header_of([msgpack.ExtType(EXT_TASK_SERIALIZED_MARK, b"x"), 0]))
    with pytest.raises(DeserializationError, match="elsewhere than first"):
        fastser.loads(header_of([0, mark(), "_operator", "add"]))


def test_compression_leaves_tasks_inline() -> None:
    task = functools.partial(operator.add, 1)
    frames = fastser.dumps({"s": Serialize(task), "big": Serialize((operator.add, [0] * 9))},
                           compression="zlib")
    assert body(frames)["s"][0] == mark()  # no frame to compress: still a task
    out = fastser.loads(frames)
    assert same(out["s"], task) and out["big"] == (operator.add, [0] * 9)
