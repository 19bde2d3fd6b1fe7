"""Claims of the guide (docs/guide/) that no other test pins: each checked as written, with
fastser's own error text where the claim is a TypeError (Python's own would pass unseen)."""

import fractions
import json
import operator
import subprocess
import sys
from collections.abc import Iterator
from typing import Any, Optional

import numpy as np
import pytest

import fastser
from fastser import Serialize, ToPickle
from fastser.families.registry import REGISTRY


@pytest.mark.parametrize("call", [
    lambda: fastser.dumps(1, serializers="pickle"),
    lambda: fastser.Encoder(serializers="pickle"),
    lambda: fastser.loads(fastser.dumps(1), deserializers="pickle"),
    lambda: fastser.Decoder(deserializers="pickle"),
], ids=["dumps", "Encoder", "loads", "Decoder"])
def test_one_str_for_the_families_is_a_type_error(call: Any) -> None:
    # messages.md: "TypeError for serializers given as one str" (not a family per letter).
    with pytest.raises(TypeError, match="serializers must be a sequence of family names, "
                                        "not a str"):
        call()


@pytest.fixture
def replaced(request: pytest.FixtureRequest) -> Iterator[list[tuple[str, str]]]:
    """The family named by the test's parameter replaced by one that calls fastser's own
    and records each call as (dumps or loads, type name); fastser's own restored after."""
    name: str = request.param
    own = REGISTRY.families[name]
    calls: list[tuple[str, str]] = []

    def dumps(obj: Any, context: Optional[Any]) -> Any:
        calls.append(("dumps", type(obj).__name__))
        return own.dumps(obj, context)

    def loads(header: Any, frames: Any) -> Any:
        calls.append(("loads", str(header.get("type", header.get("serializer")))))
        return own.loads(header, frames)

    fastser.register_serialization_family(name, dumps, loads)
    try:
        yield calls
    finally:
        REGISTRY.families[name] = own  # as registered, its `accepts` test included
        REGISTRY.families_version += 1


TASK = (operator.add, "x", 1)


@pytest.mark.parametrize("replaced", ["pickle"], indirect=True)
def test_a_replaced_pickle_family_sees_every_payload(replaced: list[tuple[str, str]]) -> None:
    # families.md: replacing "pickle" turns off the shortcuts through it (tasks written as
    # msgpack values, the direct pickle writer and reader).
    half = fractions.Fraction(1, 2)
    msg = {"task": Serialize(TASK), "p": ToPickle(half), "fallback": half}
    out = fastser.loads(fastser.dumps(msg))
    assert out == {"task": TASK, "p": half, "fallback": half}
    assert sorted(replaced) == sorted([("dumps", "tuple"), ("dumps", "Fraction"),
                                       ("dumps", "Fraction"), ("loads", "pickle"),
                                       ("loads", "pickle"), ("loads", "pickle")])


@pytest.mark.parametrize("replaced", ["dispatch"], indirect=True)
def test_a_replaced_dispatch_family_sees_every_array(replaced: list[tuple[str, str]]) -> None:
    # families.md: replacing "dispatch" turns off numpy arrays' short records.
    array = np.arange(5, dtype="<i4")
    out = fastser.loads(fastser.dumps({"a": Serialize(array), "b": Serialize(b"raw")}))
    assert out["a"].tolist() == [0, 1, 2, 3, 4] and out["b"] == b"raw"
    assert sorted(replaced) == [("dumps", "bytes"), ("dumps", "ndarray"),
                                ("loads", "bytes"), ("loads", "numpy.ndarray")]


class Odd:
    pass


def test_encoder_default_lets_other_exceptions_propagate() -> None:
    # messages.md: default raises NotImplementedError to let the pickle fallback proceed;
    # "Other exceptions propagate" (as they are, not as a SerializationError).
    def refuse(obj: object) -> object:
        raise LookupError(f"no {type(obj).__name__} here")

    def pass_on(obj: object) -> object:
        raise NotImplementedError

    with pytest.raises(LookupError, match="no Odd here") as info:
        fastser.Encoder(default=refuse).dumps({"x": [Odd()]})
    assert type(info.value) is LookupError
    out = fastser.loads(fastser.Encoder(default=pass_on).dumps({"x": [Odd()]}))
    assert type(out["x"][0]) is Odd


@pytest.mark.parametrize("frame", [5, "text", None, [1, 2]], ids=["int", "str", "None", "list"])
def test_pack_frames_refuses_a_frame_that_is_not_bytes_like(frame: Any) -> None:
    # streams.md: "Raises TypeError if a frame is not bytes-like", naming it (not Python's
    # "object of type 'int' has no len()" nor "sequence item 2", which counts the prelude).
    kind = type(frame).__qualname__
    with pytest.raises(TypeError, match=f"^frame 1 is of type {kind}, not a bytes-like frame"):
        fastser.pack_frames([b"header", frame])


# safety.md: what one feed allocates for a stream of small messages is under 30x the chunk.
FEED_SMALL = r"""
import json, sys, tracemalloc
import fastser

count = int(sys.argv[1])
chunk = fastser.pack_frames([b""]) * count  # 16 bytes a message
reader = fastser.FrameReader()
tracemalloc.start()
messages = reader.feed(chunk)
peak = tracemalloc.get_traced_memory()[1]
tracemalloc.stop()
print(json.dumps({"messages": len(messages), "ratio": peak / len(chunk)}))
"""


@pytest.mark.parametrize("count", [1_000, 20_000])
def test_feeding_many_small_messages_costs_under_30_times_the_chunk(count: int) -> None:
    done = subprocess.run([sys.executable, "-c", FEED_SMALL, str(count)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout)
    assert seen["messages"] == count
    assert seen["ratio"] < 30, seen
