"""The short records of numpy arrays: [mark 24, dtype, flags, ref, *shape] stands
for a serialized record whose header is the dispatch family's own, and is read back as it."""

import collections
from typing import Any

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fastser
from fastser import (DeserializationError, Encoder, FrameReader, Serialize, Serialized,
                     pack_frames)
from fastser.codec.wire import EXT_ARRAY_MARK, EXT_SERIALIZED, EXT_SERIALIZED_MARK, WIRE_VERSION

from strategies import examples
from handmade import body, mark

np = pytest.importorskip("numpy")


def short(dtype: Any, flags: Any, ref: Any, *shape: Any) -> list[Any]:
    return [mark(EXT_ARRAY_MARK), dtype, flags, ref, *shape]


def header_of(dtype: Any, shape: Any, order: Any = "C", writeable: Any = True) -> dict[str, Any]:
    return {"dtype": dtype, "shape": shape, "order": order, "writeable": writeable,
            "type": "numpy.ndarray", "serializer": "dispatch"}


def test_an_array_is_a_short_record_read_back_as_the_dispatch_familys_record() -> None:
    x = np.asfortranarray(np.arange(6, dtype="<f4").reshape(2, 3))
    y = np.arange(20_000, dtype="<i8")
    y.flags.writeable = False
    frames = fastser.dumps({"x": Serialize(x), "y": Serialize(y)})
    assert body(frames) == {"x": short("<f4", 3, x.tobytes(order="F"), 2, 3),
                            "y": short("<i8", 0, 1, 20_000)}
    assert np.shares_memory(np.frombuffer(frames[1], np.uint8), y)  # still not copied
    kept = fastser.loads(frames, deserialize=False)
    for name, array in (("x", x), ("y", y)):
        header, _ = fastser.serialize(array)
        assert kept[name].header == header and list(kept[name].header) == list(header)
        assert [type(value) for value in kept[name].header.values()] == \
            [type(value) for value in header.values()]
    got = fastser.loads(frames)
    assert got["x"].flags.f_contiguous and got["x"].flags.writeable
    assert not got["y"].flags.writeable
    np.testing.assert_array_equal(got["x"], x)
    np.testing.assert_array_equal(got["y"], y)


def raw_body(frames: list[Any]) -> Any:
    # use_list=False: a record in a dict key is an array there.
    return msgpack.unpackb(bytes(frames[0])[1:], use_list=False, strict_map_key=False)


@pytest.mark.parametrize("msg, options", [
    ({"x": Serialize(np.zeros(2, dtype=[("a", "<i4")]))}, {}),  # dtype is a list
    ({"x": Serialize(np.zeros(100_000))}, {"compression": "zlib"}),  # header says so
    ({"x": Serialize(np.arange(3))}, {"serializers": ("pickle",)}),  # another family
], ids=["structured", "compressed", "pickled"])
def test_other_arrays_keep_the_generic_record(msg: Any, options: dict[str, Any]) -> None:
    frames = Encoder(**options).dumps(msg)
    record = raw_body(frames)["x"]
    assert type(record) is tuple and record[0] == mark(EXT_SERIALIZED_MARK)
    np.testing.assert_array_equal(fastser.loads(frames)["x"], msg["x"].data)


def test_a_record_in_a_dict_key_stays_an_extension_type() -> None:
    header, payload = fastser.serialize(np.arange(3, dtype="<i2"))
    frames = fastser.dumps({(Serialized(header, payload),): 1})
    [(written, _)] = raw_body(frames).items()
    assert written[1].code == EXT_SERIALIZED  # an array cannot be hashed there
    [(got, _)] = fastser.loads(frames, deserialize=False).items()
    assert got[0].header == header


@pytest.mark.parametrize("header", [
    {**header_of("<f8", [2]), "extra": 1},
    dict(reversed(list(header_of("<f8", [2]).items()))),
    header_of("<f8", (2,)), header_of("<f8", [2], writeable=1), header_of("<f8", [2], "K"),
    {1 if key == "order" else key: value for key, value in header_of("<f8", [2]).items()},
    header_of("<f8", [-2]), header_of("<f8", [True]), header_of("<f8", [2**62]),
    header_of("<f8", [1] * 65),
    header_of(b"<f8", [2]), {**header_of("<f8", [2]), "type": "numpy.matrix"},
    {**header_of("<f8", [2]), "serializer": "mine"},
], ids=["extra key", "key order", "tuple shape", "writeable int", "order K", "int key",
        "negative", "bool dim", "huge dim", "65 dims", "bytes dtype", "other type", "other family"])
def test_other_headers_keep_the_generic_record_and_are_forwarded_as_they_are(
        header: dict[str, Any]) -> None:
    frames = fastser.dumps({"x": Serialized(header, [b"12345678" * 2])})
    assert raw_body(frames)["x"][0] == mark(EXT_SERIALIZED_MARK)
    kept = fastser.loads(frames, deserialize=False)["x"]
    assert kept.header == header and list(kept.header) == list(header)
    assert type(kept.header["shape"]) is type(header["shape"])
    assert fastser.dumps({"x": kept}) == frames


class Agreeable(str):
    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = str.__hash__


class Listed(list[Any]):
    pass


class Lying(dict[str, Any]):
    """Holds an extra entry that its len() and items() do not show (msgpack reads items())."""

    def __len__(self) -> int:
        return 6

    def items(self) -> Any:
        return list(header_of("<f8", [2, 3]).items())


Shape = collections.namedtuple("Shape", "rows cols")


@pytest.mark.parametrize("header", [
    header_of("<f8", Listed([2, 3])), header_of("<f8", Shape(2, 3)),
    {**header_of("<f8", [2, 3]), "serializer": Agreeable("dispatch")},
    Lying(header_of("<f8", [2, 3]), extra=1),
], ids=["list subclass", "namedtuple", "always-equal str", "dict subclass"])
def test_headers_read_as_msgpack_reads_them_are_forwarded_byte_for_byte(header: Any) -> None:
    record = Serialized({}, [bytes(48)])
    record.header = header  # as set by a caller (the constructor would copy it into a dict)
    frames = fastser.dumps([record])
    assert fastser.dumps(fastser.loads(frames, deserialize=False)) == frames
    assert fastser.dumps([Serialized(header_of("<f8", [2, 3]), [bytes(48)])]) == frames


def test_a_dtype_msgpack_refuses_is_named_with_its_path() -> None:
    header = header_of("\ud800", [1])  # a lone surrogate: not UTF-8
    with pytest.raises(fastser.SerializationError,
                       match=r"Serialized payload .* at msg\['a'\]\[0\]"):
        fastser.dumps({"a": [Serialized(header, [bytes(8)])]})


class Text(str):
    def __str__(self) -> str:
        return "not the value"


class Number(int):
    pass


def test_str_and_int_subclasses_in_a_header_are_written_as_their_values() -> None:
    plain = header_of("<f8", [2, 1])
    dressed: dict[str, Any] = {Text(key): Text(value) if type(value) is str else value
               for key, value in header_of("<f8", [Number(2), Number(1)]).items()}
    payload = [b"12345678" * 2]
    frames = fastser.dumps({"x": Serialized(dressed, payload)})
    assert frames == fastser.dumps({"x": Serialized(plain, payload)})
    assert body(frames)["x"] == short("<f8", 2, payload[0], 2, 1)
    kept = fastser.loads(frames, deserialize=False)
    assert fastser.dumps(kept) == frames


def hostile(header: Any, frames: int = 1) -> list[Any]:
    return [bytes([WIRE_VERSION]) + msgpack.packb(header, use_bin_type=True),
            *[b"v" * 16 for _ in range(frames)]]


@pytest.mark.parametrize("frames, reason", [
    (hostile([mark(EXT_ARRAY_MARK)]), "is not \\[mark, dtype"),
    (hostile(short(8, 2, 1)), "is not \\[mark, dtype"),
    (hostile(short("<f8", 4, 1)), "is not \\[mark, dtype"),
    (hostile(short("<f8", -1, 1)), "is not \\[mark, dtype"),
    (hostile(short("<f8", True, 1)), "is not \\[mark, dtype"),
    (hostile(short("<f8", "2", 1)), "is not \\[mark, dtype"),
    (hostile(short("<f8", 2, 1, -2)), "has the shape \\[-2\\]"),
    (hostile(short("<f8", 2, 1, 2**62)), "has the shape \\[4611686018427387904\\]"),
    (hostile(short("<f8", 2, 1, *[1] * 65)), "is not \\[mark, dtype"),
    (hostile(short("<f8", 2, 1, 2, "1")), "has the shape \\[2, '1'\\]"),
    (hostile(short("<f8", 2, 2)), "names payload frame 2, but the message has 2"),
    (hostile(short("<f8", 2, 0)), "names payload frame 0"),
    (hostile(short("<f8", 2, "x")), "bad frame reference 'x'"),
    (hostile(short("<f8", 2, 1, 2), 0), "names payload frame 1"),
    (hostile([short("<f8", 2, 1, 2), short("<f8", 2, 1, 2)]), "frame 1 is referenced twice"),
    (hostile(short("<f8", 2, b"", 0), 1), "1 of 1 payload frames are not named"),
    (hostile([1, mark(EXT_ARRAY_MARK)]), "mark stands elsewhere than first"),
    (hostile([msgpack.ExtType(EXT_ARRAY_MARK, b"x")]),
     f"extension type {EXT_ARRAY_MARK} \\(a mark\\)"),
], ids=["alone", "dtype", "flags 4", "flags -1", "flags bool", "flags str", "negative",
        "huge dim", "65 dims", "str dim", "beyond", "header", "bad ref", "no frames", "twice",
        "unnamed", "not first", "data"])
def test_hostile_short_records_raise_deserialization_errors(frames: list[Any],
                                                            reason: str) -> None:
    for decoder in (fastser.Decoder(), fastser.Decoder(deserialize=False)):
        with pytest.raises(DeserializationError, match=reason):
            decoder.loads(frames)


@pytest.mark.parametrize("record, reason", [
    (short("<f8", 2, b"1234567", 1), "does not hold shape \\[1\\] of float64"),
    (short("no dtype", 2, b"", 0), "bad numpy dtype descriptor 'no dtype'"),
    (short("|O", 2, b"12345678", 1), "object dtypes are refused"),
], ids=["size", "dtype", "object"])
def test_short_records_numpy_refuses_fail_like_their_records(record: Any, reason: str) -> None:
    frames = hostile({"x": record}, 0)
    with pytest.raises(DeserializationError,
                       match=f"{reason}.*\\(the payload inline in the header\\)"):
        fastser.loads(frames)
    kept = fastser.loads(frames, deserialize=False)["x"]  # unopened: forwarded as it came
    assert fastser.dumps({"x": kept})[0][1:] == frames[0][1:]


def test_a_short_record_is_refused_where_the_dispatch_family_is() -> None:
    frames = fastser.dumps(Serialize(np.arange(4)))
    with pytest.raises(DeserializationError, match="family 'dispatch'"):
        fastser.loads(frames, deserializers=("pickle",))
    seen: list[Any] = []

    def factory(header: dict[str, Any], payload: list[Any]) -> str:
        seen.append(header)
        return "made"

    decoder = fastser.Decoder(deserialize=False, serialized_factory=factory)
    assert decoder.loads(frames) == "made"
    assert seen == [fastser.serialize(np.arange(4))[0]]


def test_a_short_record_reaches_a_numpy_entry_registered_in_fastsers_place() -> None:
    from fastser.families.registry import REGISTRY  # restored below: the registry is global
    frames = fastser.dumps(Serialize(np.arange(4, dtype="<i4")))
    fastser.loads(frames)  # numpy registers itself at the first array
    own = REGISTRY.by_name["numpy.ndarray"]
    direct = own.short_loads
    assert direct is not None  # the direct way, which makes no header
    taken: list[Any] = []

    def spy(dtype: str, shape: list[Any], order: str, writeable: bool, frame: Any) -> Any:
        taken.append((dtype, shape, order, writeable))
        return direct(dtype, shape, order, writeable, frame)

    own.short_loads = spy
    try:
        assert fastser.loads(frames).tolist() == [0, 1, 2, 3]
        assert fastser.loads(frames, deserializers=("dispatch",)).tolist() == [0, 1, 2, 3]
    finally:
        own.short_loads = direct
    assert taken == [("<i4", [4], "C", True)] * 2
    seen: list[Any] = []

    def mine(header: dict[str, Any], payload: list[Any]) -> str:
        seen.append(header)
        return "mine"

    fastser.register_serialization(np.ndarray, own.dumps, mine, name="numpy.ndarray")
    try:
        assert fastser.loads(frames) == "mine"
        assert seen == [fastser.serialize(np.arange(4, dtype="<i4"))[0]]
    finally:
        REGISTRY.by_type[np.ndarray] = REGISTRY.by_name["numpy.ndarray"] = own
        REGISTRY.generation += 1  # as a registration would: decoders look the entry up again
    assert type(fastser.loads(frames)) is np.ndarray
    # The default decoder's direct way again, not the general one that found `own` too.
    taken.clear()
    own.short_loads = spy
    try:
        assert fastser.loads(frames).tolist() == [0, 1, 2, 3]
    finally:
        own.short_loads = direct
    assert taken == [("<i4", [4], "C", True)]


def test_a_decoder_shared_by_threads_never_pairs_fresh_stamps_with_a_stale_entry() -> None:
    # After a registration, thread A's loads looks the numpy entry up again and is held
    # inside the lookup; thread B's loads on the same decoder meanwhile must not take the
    # entry cached before the registration. A is held by the one call the lookup makes into
    # Python code in both builds: the comparison of a family name, a str subclass here,
    # when the lookup asks whether the decoder's deserializers allow "dispatch".
    import threading

    from fastser.families.registry import REGISTRY
    inside, go_on = threading.Event(), threading.Event()
    held: list[threading.Thread] = []

    class HeldName(str):
        def __eq__(self, other: object) -> bool:
            if held and threading.current_thread() is held[0] and not inside.is_set():
                inside.set()
                go_on.wait(10)
            return str.__eq__(self, other)

        __hash__ = str.__hash__

    frames = fastser.dumps(Serialize(np.arange(4, dtype="<i4")))
    decoder = fastser.Decoder(deserializers=[HeldName("dispatch")])
    assert type(decoder.loads(frames)) is np.ndarray  # numpy registered, its entry cached
    own = REGISTRY.by_name["numpy.ndarray"]
    fastser.register_serialization(np.ndarray, own.dumps, lambda h, f: "mine",
                                   name="numpy.ndarray")
    got: dict[str, Any] = {}
    first = threading.Thread(target=lambda: got.setdefault("A", decoder.loads(frames)))
    held.append(first)
    try:
        first.start()
        assert inside.wait(10)
        got["B"] = decoder.loads(frames)
    finally:
        go_on.set()
        first.join(10)
        REGISTRY.by_type[np.ndarray] = REGISTRY.by_name["numpy.ndarray"] = own
        REGISTRY.generation += 1
    assert got == {"A": "mine", "B": "mine"}
    assert type(decoder.loads(frames)) is np.ndarray


DTYPES = ["<f8", "<f4", ">i4", "|u1", "|b1", "<c16", "<M8[ns]", "<m8[s]", "<U3", "|S2"]


@settings(max_examples=examples(150), deadline=None)
@given(dtype=st.sampled_from(DTYPES), shape=st.lists(st.integers(0, 5), max_size=3),
       fortran=st.booleans(), writeable=st.booleans(),
       split=st.sampled_from([None, 16_384, 48_000]))
def test_arrays_round_trip_and_are_forwarded_byte_for_byte(
        dtype: str, shape: list[int], fortran: bool, writeable: bool,
        split: Any) -> None:
    x = np.zeros(shape, dtype=dtype, order="F" if fortran else "C")
    x.reshape(-1, order="A").view(np.uint8)[:] = np.arange(x.nbytes) % 251
    x.flags.writeable = writeable
    encoder = Encoder() if split is None else Encoder(frame_split_size=split)
    big = np.resize(x.reshape(-1), 70_000 // x.itemsize)  # out of band (or split)
    frames = encoder.dumps({"x": Serialize(x), "big": [Serialize(big)]})
    [received] = FrameReader().feed(pack_frames(frames))
    got = fastser.loads(received)
    for sent, out in ((x, got["x"]), (big, got["big"][0])):
        assert out.dtype == sent.dtype and out.shape == sent.shape
        assert out.tobytes(order="A") == sent.tobytes(order="A")
        assert out.flags.f_contiguous == sent.flags.f_contiguous
        assert out.flags.c_contiguous == sent.flags.c_contiguous
    assert got["x"].flags.writeable == writeable and got["big"][0].flags.writeable
    kept = fastser.loads(received, deserialize=False)
    assert [bytes(frame) for frame in encoder.dumps(kept)] == [bytes(f) for f in frames]
    # The direct way (no header made) gives what the dispatch family gives for the header.
    general = fastser.deserialize(kept["x"].header, kept["x"].frames)
    assert general.dtype == got["x"].dtype and general.shape == got["x"].shape
    assert general.tobytes(order="A") == got["x"].tobytes(order="A")
    assert general.flags.writeable == got["x"].flags.writeable
    assert general.flags.f_contiguous == got["x"].flags.f_contiguous
