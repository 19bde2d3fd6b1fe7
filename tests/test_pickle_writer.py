"""The direct pickle writer: what it writes, pickle.loads reads back equal with every type;
what it cannot write exactly as pickle would, it declines (and pickle.dumps does it)."""

import functools
import math
import operator
import pickle
import struct
import sys
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st
from strategies import examples

import fastser
from fastser._pickle_writer import write_pickle

leaves = st.one_of(
    st.none(), st.booleans(), st.integers(), st.integers(min_value=-(2**2000), max_value=2**2000),
    st.floats(), st.text(), st.text(alphabet=st.characters(min_codepoint=0xD800,
                                                           max_codepoint=0xDFFF)),
    st.binary(max_size=300), st.sampled_from([operator.add, len, int, functools.partial, dict]),
)
keys = st.one_of(st.integers(), st.text(max_size=8), st.tuples(st.integers(), st.text(max_size=4)))
values = st.recursive(leaves, lambda children: st.one_of(
    st.lists(children, max_size=6), st.lists(children, max_size=6).map(tuple),
    st.dictionaries(keys, children, max_size=5)), max_leaves=40)


def same(a: Any, b: Any) -> bool:
    """Equal, with the same exact types all the way down (NaN equal to NaN)."""
    if type(a) is not type(b):
        return False
    if type(a) is float:
        return struct.pack("<d", a) == struct.pack("<d", b) or (math.isnan(a) and math.isnan(b))
    if type(a) in (list, tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if type(a) is dict:
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if type(a) is functools.partial:
        return (a.func is b.func and same(a.args, b.args) and same(a.keywords, b.keywords)
                and same(a.__dict__, b.__dict__))
    return bool(a == b) if not callable(a) else a is b


@settings(max_examples=examples(300), deadline=None)
@given(values)
def test_what_it_writes_pickle_reads_back_the_same(value: Any) -> None:
    written = write_pickle(value)
    if written is None:  # only ints beyond LONG1's 255 bytes, or text beyond 64 KiB
        return
    assert same(pickle.loads(written), value)
    assert same(pickle.loads(written), pickle.loads(pickle.dumps(value, protocol=5)))


def module_function(x: int) -> int:
    return x + 1


def test_tasks_globals_and_partials() -> None:
    for value in [(operator.add, "inc-1", 1), (module_function, ("x", 0), [1.5, None]),
                  functools.partial(operator.mul, 3), functools.partial(module_function, x=2),
                  {"f": functools.partial(functools.partial(max, 1), 2)}, (int, str, bytes),
                  -(2**63), 2**64, 255, 256, 65535, 65536, -1, 2**31 - 1, -(2**31), "é" * 300,
                  b"b" * 300, ()]:
        written = write_pickle(value)
        assert written is not None, value
        assert same(pickle.loads(written), value)
    marked = functools.partial(operator.add, 1)
    marked.note = "kept"  # type: ignore[attr-defined]  # partials carry a __dict__
    assert pickle.loads(write_pickle(marked) or b"").note == "kept"


class Sub(int):
    pass


def test_declines_what_pickle_must_do() -> None:
    shared = [1]
    recursive: list[Any] = []
    recursive.append(recursive)

    def local() -> None:
        pass

    main_function = FunctionAlias()
    for value in [Sub(1), {1, 2}, frozenset(), bytearray(b"x"), b"x" * 70_000, 2**3000,
                  (shared, shared), recursive, local, lambda: 0, main_function, [].append,
                  fastser.Serialize(1), functools.partial(local), object()]:
        assert write_pickle(value) is None, value
    deep: Any = 1
    for _ in range(40):
        deep = (deep,)
    assert write_pickle(deep) is None and pickle.loads(pickle.dumps(deep)) == deep


def FunctionAlias() -> Any:
    def main_function() -> None:
        pass
    main_function.__qualname__ = "main_function"
    main_function.__module__ = "__main__"
    return main_function


def test_a_rebound_name_is_not_written(monkeypatch: pytest.MonkeyPatch) -> None:
    # pickle refuses a function its name no longer finds; so does the writer, every call.
    assert write_pickle(module_function) is not None
    monkeypatch.setattr(sys.modules[__name__], "module_function", lambda x: x)
    assert write_pickle(module_function) is None


def test_the_pickle_family_uses_it() -> None:
    task = (operator.add, "inc-1", 1)
    header, frames = fastser.serialize(task, serializers=("pickle",))
    assert header["serializer"] == "pickle" and bytes(frames[0]) == write_pickle(task)
    assert fastser.deserialize(header, frames) == task
