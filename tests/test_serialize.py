"""serialize/deserialize, the families and the registry."""

import array
import collections
from typing import Any, Optional
from collections.abc import Mapping

import pytest

import fastser
from fastser import DeserializationError, SerializationError
from fastser.errors import RefusedFamilyError, SenderError


class Unregistered:
    """Never registered with dispatch, so it goes to pickle."""


class Point:
    def __init__(self, x: int, y: int) -> None:
        self.x, self.y = x, y


def test_dispatch_builtin_types() -> None:
    for obj in (b"abc", bytearray(b"ab"), array.array("d", [1.0, 2.5])):
        header, frames = fastser.serialize(obj)
        assert header["serializer"] == "dispatch"
        out = fastser.deserialize(header, frames)
        assert type(out) is type(obj) and out == obj
    header, frames = fastser.serialize(memoryview(b"mv"))
    assert bytes(fastser.deserialize(header, frames)) == b"mv"


def test_registration_by_type_and_name() -> None:
    def dumps(p: Point) -> tuple[dict[str, Any], list[fastser.Frame]]:
        return {"xy": [p.x, p.y]}, []

    def loads(header: dict[str, Any], frames: list[fastser.Frame]) -> Point:
        return Point(*header["xy"])

    fastser.register_serialization(Point, dumps, loads, name="test.Point")
    header, frames = fastser.serialize(Point(1, 2), ["dispatch"])
    assert header["type"] == "test.Point"
    out = fastser.loads(fastser.dumps({"p": fastser.Serialize(Point(3, 4))}),
                        deserializers=fastser.SAFE_DESERIALIZERS)["p"]
    assert (out.x, out.y) == (3, 4)


def test_lazy_registration_runs_once_when_needed() -> None:
    calls: list[str] = []

    def register() -> None:
        calls.append("registered")
        fastser.register_serialization(
            LazyThing, lambda obj: ({}, [b"lazy"]), lambda h, f: LazyThing(), name="lazymod.T")

    LazyThing.__module__ = "lazymod.sub"
    fastser.register_serialization_lazy("lazymod", register)
    assert calls == []
    header, frames = fastser.serialize(LazyThing(), ["dispatch"])
    assert calls == ["registered"] and header["type"] == "lazymod.T"
    assert isinstance(fastser.deserialize(header, frames), LazyThing)


class LazyThing:
    pass


def test_deserialize_takes_a_dict_subclass_header_by_its_items() -> None:
    header, frames = fastser.serialize([1, 2], ["msgpack"])
    assert fastser.deserialize(collections.OrderedDict(header), frames) == [1, 2]


def test_unknown_dispatch_name_is_refused() -> None:
    with pytest.raises(DeserializationError, match="no dispatch deserializer"):
        fastser.deserialize({"serializer": "dispatch", "type": "os.system"}, [b"x"])


def test_family_order_and_fallthrough() -> None:
    header, frames = fastser.serialize({"a": [1, 2]}, ["msgpack", "pickle"])
    assert header["serializer"] == "msgpack"
    assert fastser.deserialize(header, frames) == {"a": [1, 2]}
    header, _ = fastser.serialize(Unregistered(), ["msgpack", "pickle"])
    assert header["serializer"] == "pickle"
    with pytest.raises(SerializationError, match="Unregistered"):
        fastser.serialize(Unregistered(), ["msgpack", "dispatch"])


def test_custom_family_gets_context() -> None:
    seen: list[Optional[Mapping[str, Any]]] = []

    def dumps(obj: Any, context: Optional[Mapping[str, Any]]
              ) -> tuple[dict[str, Any], list[fastser.Frame]]:
        seen.append(context)
        return {}, [repr(obj).encode()]

    def loads(header: dict[str, Any], frames: list[fastser.Frame]) -> Any:
        return bytes(frames[0]).decode()

    fastser.register_serialization_family("repr", dumps, loads)
    frames = fastser.dumps({"x": fastser.Serialize(42)}, serializers=["repr"],
                           context={"peer": "a"})
    assert seen == [{"peer": "a"}]
    assert fastser.loads(frames) == {"x": "42"}
    with pytest.raises(DeserializationError, match="not in deserializers"):
        fastser.loads(frames, deserializers=["dispatch"])


def test_deserialize_refuses_unknown_and_disallowed() -> None:
    with pytest.raises(DeserializationError):
        fastser.deserialize({"serializer": "nope"}, [])
    with pytest.raises(DeserializationError):
        fastser.deserialize({}, [])
    header, frames = fastser.serialize(Unregistered())
    with pytest.raises(DeserializationError):
        fastser.deserialize(header, frames, deserializers=fastser.SAFE_DESERIALIZERS)


def test_on_error_message_returns_error_record() -> None:
    import threading
    header, frames = fastser.serialize(threading.Lock(), on_error="message")
    assert header["serializer"] == "error"
    with pytest.raises(DeserializationError, match="lock"):
        fastser.deserialize(header, frames)
    # Read whatever the deserializers: the sender's text says more than a refusal would.
    with pytest.raises(SenderError, match="lock"):
        fastser.deserialize(header, frames, deserializers=["msgpack"])


def test_refusals_and_sender_errors_keep_their_class_in_a_message() -> None:
    # fastser.dask tells them apart from corrupt input by class, wherever they are.
    import threading
    frames = fastser.dumps({"a": [fastser.Serialize(threading.Lock())]}, on_error="message")
    with pytest.raises(SenderError, match="lock"):
        fastser.loads(frames, deserializers=["dispatch"])
    frames = fastser.dumps({"a": [fastser.Serialize(Unregistered())]})
    with pytest.raises(RefusedFamilyError, match="not in deserializers"):
        fastser.loads(frames, deserializers=["dispatch"])


def test_pickle_keeps_buffers_out_of_band() -> None:
    np = pytest.importorskip("numpy")
    x = np.ones(100_000)
    header, frames = fastser.serialize({"arr": x}, ["pickle"])
    assert len(frames) == 2 and np.shares_memory(np.frombuffer(frames[1], np.uint8), x)
    assert (fastser.deserialize(header, frames)["arr"] == x).all()


def test_a_type_registered_after_it_was_looked_up_is_dispatched() -> None:
    class Late:
        pass

    late = Late()
    header, _ = fastser.serialize(late)
    assert header["serializer"] == "pickle"  # no dispatch entry yet: remembered as a miss
    fastser.register_serialization(Late, lambda obj: ({}, [b"late"]), lambda h, f: Late(),
                                   name="test.Late")
    header, frames = fastser.serialize(late)
    assert header["serializer"] == "dispatch" and frames == [b"late"]


def test_a_family_may_return_any_buffer_as_a_frame_and_is_named_when_it_returns_none() -> None:
    # Frames are bytes-likes; a family handing back another buffer (an array.array, a numpy
    # array) gets a byte view of it, not a corrupt length or a bare TypeError.
    def dumps(obj: Any, context: Optional[Mapping[str, Any]]) -> Any:
        return {}, [array.array("d", [float(obj)] * obj)]

    def loads(header: dict[str, Any], frames: list[fastser.Frame]) -> Any:
        return array.array("d", bytes(frames[0])).tolist()

    fastser.register_serialization_family("doubles", dumps, loads)
    for count in (3, 10_000):  # inline in the header, and a frame of its own
        frames = fastser.dumps({"x": fastser.Serialize(count)}, serializers=["doubles"])
        assert fastser.loads(fastser.unpack_frames(fastser.pack_frames(frames))) == \
            {"x": [float(count)] * count}

    def broken(obj: Any, context: Optional[Mapping[str, Any]]) -> Any:
        return {}, [obj]

    def shapeless(obj: Any, context: Optional[Mapping[str, Any]]) -> Any:
        return [b"no header"]

    fastser.register_serialization_family("broken", broken, loads)
    fastser.register_serialization_family("shapeless", shapeless, loads)
    with pytest.raises(SerializationError,
                       match=r"'broken' family returned a frame of type int.*at msg\['x'\]"):
        fastser.dumps({"x": fastser.Serialize(5)}, serializers=["broken"])
    # (compiled code checks the declared return type first, and says so as the cause)
    with pytest.raises(SerializationError, match=r"shapeless.*(returned list|got list)"):
        fastser.dumps({"x": fastser.Serialize(5)}, serializers=["shapeless"])


def test_deserialize_takes_any_sequence_of_frames_in_both_builds() -> None:
    header, frames = fastser.serialize(array.array("i", [1, 2, 3]))
    assert fastser.deserialize(header, tuple(frames)) == array.array("i", [1, 2, 3])
