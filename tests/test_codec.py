"""dumps/loads: nothing lost, nothing copied, errors that say where."""

import datetime
import enum
import functools
import operator
import threading
from typing import Any

import msgpack
import pytest

import fastser
from fastser import (Decoder, DeserializationError, Encoder, Pickled, SerializationError,
                     Serialize, Serialized, ToPickle)

BIG = 2**16  # the out-of-band threshold


class Color(enum.Enum):
    RED = 1


class MyInt(int):
    pass


class MyDict(dict[str, int]):
    pass


def roundtrip(msg: Any, **kwargs: Any) -> Any:
    return fastser.loads(fastser.dumps(msg), **kwargs)


def same(a: Any, b: Any) -> bool:
    """Equal with the same types all the way down."""
    if type(a) is not type(b):
        return False
    if type(a) is dict:
        return list(a) == list(b) and all(same(k1, k2) and same(a[k1], b[k2])
                                          for k1, k2 in zip(a, b))
    if type(a) in (list, tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if type(a) is memoryview:
        return bool(a.tobytes() == b.tobytes())
    equal: bool = a == b
    return equal


MESSAGE_VALUES = [
    None, True, False, 0, -1, 2**63 - 1, -(2**63), 2**64 - 1, 2**64, -(2**63) - 1, 2**200,
    -(2**200), 1.5, float("inf"), "", "héllo", b"", b"abc", bytearray(b"xy"), bytearray(),
    [], (), [1, (2, [3])], ((),), {}, {"a": {"b": [1, 2]}}, {1, 2}, frozenset({"a"}), set(),
    {(1, 2): "tuple key", 3: "int key", None: "none key", b"k": "bytes key", 1.5: "float",
     frozenset({1}): "frozenset key", True: "bool key"},
    {"__Serialized__": 1, "__Pickled__": [2], "serializer": "pickle"},
    [b"x" * BIG, bytearray(b"y" * BIG), (b"z" * (BIG + 1),)],
]


@pytest.mark.parametrize("value", MESSAGE_VALUES, ids=lambda v: type(v).__name__)
def test_every_message_type_roundtrips_with_its_type(value: Any) -> None:
    msg = {"v": value, "nested": [value, (value,)]}
    assert same(roundtrip(msg), msg)


def test_top_level_values_roundtrip() -> None:
    for value in MESSAGE_VALUES:
        assert same(roundtrip(value), value)


def test_memoryview_comes_back_as_byte_view() -> None:
    import array
    arr = array.array("i", [1, 2, 3])
    for view in (memoryview(b"abc"), memoryview(arr), memoryview(b"q" * BIG),
                 memoryview(bytes(range(256)) * 300)[::3]):
        out = roundtrip({"m": view})["m"]
        assert type(out) is memoryview and out.format == "B" and out.ndim == 1
        assert out.tobytes() == view.tobytes()


def test_other_objects_are_pickled_in_one_pass() -> None:
    msg = {"when": datetime.datetime(2026, 1, 2), "color": Color.RED, "n": MyInt(5),
           "d": MyDict(a=1), "ext": msgpack.ExtType(1, b"x"), "fn": operator.add,
           "part": functools.partial(operator.add, 1)}
    frames = fastser.dumps(msg)
    assert len(frames) == 1  # small pickles are inline: no orphan frames
    out = fastser.loads(frames)
    assert out["when"] == msg["when"] and out["color"] is Color.RED
    assert type(out["n"]) is MyInt and type(out["d"]) is MyDict
    assert out["ext"] == msgpack.ExtType(1, b"x") and out["part"](2) == 3


def test_cloudpickle_for_lambdas_and_closures() -> None:
    k = 10
    out = roundtrip({"f": lambda x: x + k, "s": Serialize(lambda: 3)})
    assert out["f"](1) == 11 and out["s"]() == 3


def test_pickle_fallback_refused_names_path() -> None:
    msg = {"tasks": {"x": [1, 2, Color.RED]}}
    with pytest.raises(SerializationError) as info:
        fastser.dumps(msg, serializers=["dispatch"])
    text = str(info.value)
    assert "msg['tasks']['x'][2]" in text and "Color" in text


def test_unpicklable_payload_names_path() -> None:
    with pytest.raises(SerializationError) as info:
        fastser.dumps({"a": [ToPickle(threading.Lock())]})
    assert "msg['a'][0]" in str(info.value) and "lock" in str(info.value)


def test_on_error_message_applies_to_payloads_and_fallback() -> None:
    for msg in ({"x": Serialize(threading.Lock())}, {"x": ToPickle(threading.Lock())},
                {"x": threading.Lock()}):
        frames = fastser.dumps(msg, on_error="message")
        kept = fastser.loads(frames, deserialize=False)["x"]
        assert isinstance(kept, Serialized) and kept.header["serializer"] == "error"
        with pytest.raises(DeserializationError, match="lock"):
            fastser.loads(frames)
    frames = fastser.dumps({"x": Color.RED}, serializers=["dispatch"], on_error="message")
    with pytest.raises(DeserializationError, match="Color"):
        fastser.loads(frames)


def test_serialize_payload_roundtrip_and_kept_form() -> None:
    msg = {"data": Serialize({"a": (1, 2)}), "raw": Serialize(b"r" * BIG)}
    frames = fastser.dumps(msg)
    assert fastser.loads(frames) == {"data": {"a": (1, 2)}, "raw": b"r" * BIG}
    kept = fastser.loads(frames, deserialize=False)
    assert isinstance(kept["data"], Serialized) and isinstance(kept["raw"], Serialized)


def test_redump_of_kept_payloads_is_byte_identical() -> None:
    msg = {"s": Serialize([1, 2]), "p": ToPickle({"k": 1}), "o": Color.RED,
           "big": Serialize(b"b" * (3 * BIG)), "t": (1, b"x" * BIG), "l": [Serialize(5)]}
    for split in (64 * 2**20, BIG):
        frames = fastser.dumps(msg, frame_split_size=split)
        kept = fastser.loads(frames, deserialize=False)
        again = fastser.dumps(kept, frame_split_size=split)
        assert [bytes(f) for f in again] == [bytes(f) for f in frames]


def test_a_large_dict_keeps_key_types_and_order_and_is_forwarded_byte_for_byte() -> None:
    large: dict[Any, Any] = {("x", i): Serialize(i) if i % 5 == 0 else i for i in range(40)}
    large[frozenset({1})] = "frozenset"
    large[7] = b"int key"
    frames = fastser.dumps({"m": large})
    got = fastser.loads(frames)["m"]
    assert list(got) == list(large) and got[("x", 5)] == 5 and got[7] == b"int key"
    kept = fastser.loads(frames, deserialize=False)
    assert fastser.dumps(kept) == frames


def test_deserializers_refuse_pickle_but_forward() -> None:
    msg = {"p": ToPickle(Color.RED), "o": Color.RED, "b": b"ok"}
    frames = fastser.dumps(msg)
    out = fastser.loads(frames, deserializers=fastser.SAFE_DESERIALIZERS)
    assert isinstance(out["p"], Pickled) and isinstance(out["o"], Pickled)
    assert out["b"] == b"ok"
    assert fastser.loads(fastser.dumps(out)) == {"p": Color.RED, "o": Color.RED, "b": b"ok"}
    with pytest.raises(DeserializationError, match="pickle"):
        fastser.loads(fastser.dumps({"s": Serialize(Color.RED)}),
                      deserializers=fastser.SAFE_DESERIALIZERS)


def test_large_bytes_are_not_copied_on_either_side() -> None:
    payload = b"p" * (BIG * 4)
    array = bytearray(b"q" * BIG)
    frames = fastser.dumps({"a": payload, "b": [array]})
    assert frames[1] is payload and frames[2] is array
    out = fastser.loads(frames)
    assert out["a"] is payload and out["b"][0] is array


def test_large_bytes_received_as_views_come_back_as_bytes_of_their_own() -> None:
    payload = bytes(range(256)) * 300
    message = {"a": payload, "s": Serialize(payload)}
    received = [memoryview(bytearray(frame)) for frame in fastser.dumps(message)]
    out = fastser.loads(received)
    assert type(out["a"]) is bytes and type(out["s"]) is bytes
    assert out == message | {"s": payload}
    for frame in received[1:]:
        frame[:3] = b"xyz"  # the receive buffer is reused: the values own their memory
    assert out["a"] == payload and out["s"] == payload


def test_split_frames_are_views_and_join() -> None:
    payload = bytes(range(256)) * 1000
    frames = fastser.dumps({"a": payload, "s": Serialize(bytearray(payload))},
                           frame_split_size=10_000)
    assert len(frames) == 1 + 2 * 26
    assert all(type(f) is memoryview and f.obj is not None for f in frames[1:])
    out = fastser.loads(frames)
    assert out["a"] == payload and out["s"] == bytearray(payload)


def test_max_depth_on_both_sides() -> None:
    deep: Any = 1
    for _ in range(300):
        deep = [deep]
    with pytest.raises(SerializationError, match="max_depth"):
        fastser.dumps(deep)
    ok: Any = 1
    for _ in range(200):
        ok = {"k": ok}
    assert roundtrip(ok) == ok


def test_max_depth_counts_containers_alike_on_both_sides() -> None:
    """A message exactly max_depth containers deep passes dumps and loads, whatever leaf it
    ends in (a bytes-like in or out of band, a record kept or opened); one container more is
    refused by both. The encoder used to count a leaf that is not a scalar as a level, so
    loads read messages that dumps then refused to forward."""
    big = bytes(range(256)) * 300  # out of band
    leaves: list[Any] = [1, b"ab", big, bytearray(b"ab"), memoryview(big), Serialize(b"ab"),
                         Serialized(*fastser.serialize(b"ab")), ToPickle(b"ab")]
    for leaf in leaves:
        deep: Any = leaf
        for _ in range(256):
            deep = [deep]
        kept = fastser.loads(fastser.dumps(deep), deserialize=False)
        frames = fastser.dumps(kept)  # forwarded as it was read
        opened = fastser.loads(frames)
        for _ in range(256):
            opened = opened[0]
        assert opened == (leaf.data if isinstance(leaf, (Serialize, ToPickle)) else
                          b"ab" if isinstance(leaf, Serialized) else leaf)
        with pytest.raises(SerializationError, match="max_depth=256"):
            fastser.dumps([deep])
        with pytest.raises(DeserializationError, match="max_depth=255"):
            fastser.loads(frames, deserialize=False, limits=fastser.Limits(max_depth=255))


def test_a_default_that_never_settles_is_refused_at_max_depth() -> None:
    class Again:
        pass

    encoder = Encoder(default=lambda obj: Again())
    with pytest.raises(SerializationError, match="max_depth=256"):
        encoder.dumps({"x": Again()})


def test_tuples_and_sets_nest_like_lists_up_to_max_depth() -> None:
    deep: Any = 1
    for _ in range(300):
        deep = (deep,)
    with pytest.raises(SerializationError, match="max_depth=256"):
        fastser.dumps({"t": deep})
    fine: Any = 1
    for i in range(250):
        fine = (fine,) if i % 3 else frozenset({fine})
    assert roundtrip(fine) == fine


def test_encoder_default_hook() -> None:
    class Foreign:
        def __init__(self, data: Any) -> None:
            self.data = data

    def default(obj: Any) -> Any:
        if isinstance(obj, Foreign):
            return Serialize(obj.data)
        raise NotImplementedError

    encoder = Encoder(default=default)
    frames = encoder.dumps({"x": Foreign([1]), "y": Color.RED})
    assert fastser.loads(frames) == {"x": [1], "y": Color.RED}


def test_encoder_default_is_called_only_for_other_objects() -> None:
    seen: list[Any] = []

    def default(obj: Any) -> Any:
        seen.append(obj)
        raise NotImplementedError  # the pickle fallback proceeds

    msg = {"a": [1, "x", (2.0, None)], "b": Serialize(b"y"), "c": ToPickle(5), "d": Color.RED}
    assert fastser.loads(Encoder(default=default).dumps(msg)) == \
        {"a": [1, "x", (2.0, None)], "b": b"y", "c": 5, "d": Color.RED}
    assert seen == [Color.RED]


def test_encoder_default_may_forward_frames_unchanged() -> None:
    class Foreign:
        def __init__(self, header: dict[str, Any], frames: list[Any]) -> None:
            self.header, self.frames = header, frames

    payload = bytearray(b"z" * BIG)
    kept = fastser.loads(fastser.dumps({"x": Serialize(payload)}), deserialize=False)["x"]
    encoder = Encoder(default=lambda obj: Serialized(obj.header, obj.frames))
    frames = encoder.dumps({"x": Foreign(kept.header, kept.frames)})
    assert frames[1] is kept.frames[0]  # the received frame itself, not a copy
    assert [bytes(f) for f in frames] == [bytes(f) for f in fastser.dumps({"x": kept})]
    assert fastser.loads(frames) == {"x": payload}


def test_decoder_hooks() -> None:
    frames = fastser.dumps({"s": Serialize(3), "p": ToPickle(4)})
    out = Decoder(deserialize=False, open_pickled=True,
                  serialized_factory=lambda h, f: ("made", h["serializer"])).loads(frames)
    assert out == {"s": ("made", "pickle"), "p": 4}


def test_decoder_hooks_only_where_they_apply() -> None:
    frames = fastser.dumps({"s": Serialize(3), "p": ToPickle(4)})
    # open_pickled never opens what "pickle" is not allowed for.
    safe = Decoder(deserialize=False, open_pickled=True, deserializers=["msgpack"])
    assert type(safe.loads(frames)["p"]) is Pickled
    # serialized_factory builds only what deserialize=False keeps.
    assert Decoder(serialized_factory=lambda h, f: "made").loads(frames) == {"s": 3, "p": 4}


def test_decoder_lists_as_tuples() -> None:
    # Every list of the message, wherever the encoder put it (a plain array, an empty one,
    # a list led by a mark, a list of large bytes), as msgpack's use_list=False; tuples,
    # sets and what payloads hold keep their types.
    big = b"x" * 2**17
    msg = {"a": [1, [2, []]], "b": [-32, 1], "c": [big, big], "t": (1, [2]), "s": {3},
           "p": Serialize([4, [5]])}
    frames = fastser.dumps(msg)
    out = Decoder(lists_as_tuples=True).loads(frames)
    assert out == {"a": (1, (2, ())), "b": (-32, 1), "c": (big, big), "t": (1, (2,)),
                   "s": {3}, "p": [4, [5]]}
    assert type(out["p"][1]) is list
    assert Decoder().loads(frames) == {**msg, "p": [4, [5]]}
    assert type(Decoder().loads(frames)["a"]) is list
    msgpack_view = msgpack.unpackb(msgpack.packb(msg["a"]), use_list=False)
    assert out["a"] == msgpack_view


def test_lists_as_tuples_leaves_payload_headers_and_refs_as_the_sender_wrote_them() -> None:
    # Lists become tuples as msgpack decodes the header, so a payload's own header and
    # refs get their lists back: kept payloads forward byte for byte (a message of payloads
    # alone: its own lists come back as tuples), split refs resolve.
    header = {"serializer": "msgpack", "list": [1, [2, []]], "tuple": (3, [4]), "e": []}
    np = pytest.importorskip("numpy")
    msg = {"kept": Serialized(header, [msgpack.packb([5, [6]])]),
           "split": Serialize(b"s" * 200_000), "array": Serialize(np.arange(40_000)),
           "key": {Serialized({"serializer": "msgpack", "k": [1]}, [msgpack.packb(8)]): 9}}
    frames = fastser.dumps(msg, frame_split_size=65_536)
    kept = Decoder(deserialize=False, lists_as_tuples=True).loads(frames)
    assert kept["kept"].header == header
    assert type(kept["kept"].header["list"][1]) is list
    assert type(kept["kept"].header["tuple"]) is tuple
    assert type(kept["kept"].header["tuple"][1]) is list
    assert [bytes(f) for f in fastser.dumps(kept, frame_split_size=65_536)] == \
        [bytes(f) for f in frames]
    out = Decoder(lists_as_tuples=True).loads(frames)
    assert out["kept"] == [5, [6]] and out["split"] == b"s" * 200_000
    assert np.array_equal(out["array"], np.arange(40_000)) and out["key"] == {8: 9}


def test_encoder_validates_options() -> None:
    with pytest.raises(ValueError):
        Encoder(serializers=["nope"])
    with pytest.raises(ValueError):
        Encoder(on_error="ignore")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        Encoder(frame_split_size=0)
    with pytest.raises(ValueError):
        Decoder(deserializers=["nope"])


def test_shared_encoder_decoder_across_threads() -> None:
    encoder, decoder = Encoder(), Decoder()
    msg = {"k": [(i, str(i), b"x" * 10) for i in range(50)], "s": Serialize(b"y" * BIG)}
    expected = fastser.dumps(msg)
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for _ in range(200):
                frames = encoder.dumps(msg)
                assert [bytes(f) for f in frames] == [bytes(f) for f in expected]
                assert decoder.loads(frames)["k"] == msg["k"]
        except BaseException as exc:  # collected and re-raised in the main thread
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors


class Unpicklable:
    def __reduce__(self) -> Any:
        raise RuntimeError("no pickling here")


def test_errors_keep_their_cause_in_both_builds() -> None:
    # Compiled code cannot use `raise X from Y` (mypyc drops the cause): _errors.chained.
    with pytest.raises(SerializationError) as info:
        fastser.dumps({"a": [Unpicklable()]})
    assert "msg['a'][0]" in str(info.value)
    assert isinstance(info.value.__cause__, RuntimeError)
    with pytest.raises(DeserializationError) as bad:
        fastser.loads([b"\x01\xc1"])  # 0xc1: a byte msgpack never uses
    assert bad.value.__cause__ is not None
    with pytest.raises(DeserializationError) as failed:
        fastser.deserialize({"serializer": "msgpack"}, [b"\xc1"])
    assert failed.value.__cause__ is not None


def test_payload_frames_the_header_does_not_name_are_refused() -> None:
    big = b"x" * 100_000  # out of band: frame 1
    one = fastser.dumps({"a": big})
    other = fastser.dumps({"b": big})
    for frames, first in ((one + [b"extra"], 2), (one + other[1:], 2),
                          (fastser.dumps({"small": 1}) + one[1:], 1)):
        with pytest.raises(DeserializationError, match=f"the first is frame {first}"):
            fastser.loads(frames)
        with pytest.raises(DeserializationError, match="not named by the header"):
            fastser.loads(frames, deserialize=False)
    assert fastser.loads(one) == {"a": big}


def test_a_released_memoryview_frame_is_refused() -> None:
    frames = fastser.dumps({"a": b"x" * 70_000})
    released = memoryview(bytearray(frames[1]))
    released.release()
    with pytest.raises(DeserializationError, match="frame 1 is a released memoryview"):
        fastser.loads([frames[0], released])


def strided_copy(frame: fastser.Frame) -> memoryview:
    """`frame` as a view that skips every other byte of its buffer (not contiguous)."""
    spread = bytearray(2 * len(frame))
    spread[::2] = frame
    return memoryview(spread)[::2]


def test_a_header_frame_in_any_buffer_layout_is_read() -> None:
    for msg in ({"small": (1, "x")}, {"large": list(range(3000))}):
        header = fastser.dumps(msg)[0]
        assert fastser.loads([strided_copy(header)]) == msg
        assert fastser.loads([memoryview(bytearray(header))]) == msg


def test_a_header_frame_that_cannot_be_viewed_as_bytes_is_refused() -> None:
    np = pytest.importorskip("numpy")
    header = fastser.dumps({"k": list(range(3000))})[0]
    columns = np.zeros((len(header), 2), dtype=np.uint8)
    columns[:, 0] = np.frombuffer(header, dtype=np.uint8)
    with pytest.raises(DeserializationError, match="frame 0 is not a C-contiguous buffer"):
        fastser.loads([memoryview(columns[:, 0:1])])
    small = fastser.dumps({"k": 1})[0]  # a small header is copied, whatever its layout
    columns = np.zeros((len(small), 2), dtype=np.uint8)
    columns[:, 0] = np.frombuffer(small, dtype=np.uint8)
    assert fastser.loads([memoryview(columns[:, 0:1])]) == {"k": 1}


def test_a_large_memoryview_key_comes_back_hashable_from_a_writeable_buffer() -> None:
    key = memoryview(b"k" * 70_000)
    msg = {key: 1, (1, memoryview(b"t" * 70_000)): 2}
    frames = fastser.dumps(msg)
    assert len(frames) == 1  # keys stay inline: a writeable view could not be hashed
    received = fastser.unpack_frames(memoryview(bytearray(fastser.pack_frames(frames))))
    assert fastser.loads(received) == msg
    big = fastser.dumps({"v": key})  # as a value it still leaves as its own frame
    assert len(big) == 2 and memoryview(big[1]).obj is key.obj
