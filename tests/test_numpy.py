"""numpy arrays through the dispatch family: layouts, dtypes, zero copy, writeable flag."""

import warnings
from typing import Any

import pytest

import fastser
from fastser import Serialize

np = pytest.importorskip("numpy")


def arrays() -> list[Any]:
    base = np.arange(24, dtype="f8").reshape(4, 6)
    structured = np.zeros(3, dtype=[("a", "<i4"), ("b", [("c", "f8", (2,))])])
    structured["a"] = [1, 2, 3]
    return [
        np.array(5.0), np.arange(10), base, np.asfortranarray(base), base[::2, ::3],
        base.T, np.arange(10, dtype=">i4"), np.array(["2026-01-01", "NaT"], dtype="M8[ns]"),
        np.arange(3, dtype="m8[s]"), structured, np.zeros((0, 3)), np.array([True, False]),
        np.array(["ab", "c"]), np.arange(4, dtype="c16"), np.ones(100_000, dtype="f4"),
        np.arange(20)[::3], np.arange(20).astype("M8[s]")[::2],
        np.zeros(3, dtype="V0"), np.zeros((2, 0, 3), order="F"), np.zeros((2, 3), dtype="V0"),
    ]


@pytest.mark.parametrize("x", arrays(), ids=lambda x: f"{x.dtype}-{x.shape}")
def test_layouts_roundtrip(x: Any) -> None:
    out = fastser.loads(fastser.dumps({"x": Serialize(x)}))["x"]
    assert out.dtype == x.dtype and out.shape == x.shape
    np.testing.assert_array_equal(out, x)
    assert out.flags.writeable


def test_contiguous_arrays_leave_without_copy() -> None:
    for x in (np.ones((300, 300)), np.asfortranarray(np.ones((300, 300))), np.ones(90_000)):
        frames = fastser.dumps({"x": Serialize(x)})
        assert len(frames) == 2
        assert np.shares_memory(np.frombuffer(frames[1], dtype=np.uint8), x)


def test_received_array_is_a_view_of_the_frame() -> None:
    x = np.arange(100_000, dtype="f8")
    frames = fastser.dumps({"x": Serialize(x)})
    received = [frames[0], bytearray(frames[1])]  # as a reader would hand them over
    out = fastser.loads(received)["x"]
    assert np.shares_memory(out, np.frombuffer(received[1], dtype=np.uint8))
    assert out.flags.writeable
    read_only = fastser.loads([frames[0], bytes(frames[1])])["x"]
    assert not read_only.flags.writeable


def test_read_only_sender_gives_read_only_array() -> None:
    x = np.arange(10)
    x.flags.writeable = False
    out = fastser.loads(fastser.dumps(Serialize(x)))
    assert not out.flags.writeable


def test_object_arrays_go_to_pickle_and_are_refused_in_safe_mode() -> None:
    x = np.array([{"a": 1}, None], dtype=object)
    frames = fastser.dumps({"x": Serialize(x)})
    kept = fastser.loads(frames, deserialize=False)["x"]
    assert kept.header["serializer"] == "pickle"
    assert fastser.loads(frames)["x"][0] == {"a": 1}
    with pytest.raises(fastser.DeserializationError):
        fastser.loads(frames, deserializers=fastser.SAFE_DESERIALIZERS)


def test_safe_mode_still_receives_arrays() -> None:
    x = np.arange(12).reshape(3, 4)
    out = fastser.loads(fastser.dumps({"x": Serialize(x)}),
                        deserializers=fastser.SAFE_DESERIALIZERS)["x"]
    np.testing.assert_array_equal(out, x)


def test_array_subclass_goes_to_next_family() -> None:
    m = np.ma.masked_array([1, 2], mask=[0, 1])
    header, _ = fastser.serialize(m)
    assert header["serializer"] == "pickle"


def test_hostile_numpy_headers_are_refused() -> None:
    header, frames = fastser.serialize(np.arange(4))
    for change in ({"shape": [5]}, {"dtype": "|O"}, {"dtype": [["a", "|O"]]},
                   {"dtype": 7}, {"shape": "x"}, {"order": "Z"}, {"shape": [-1]},
                   {"dtype": "?," * 1000}, {"dtype": "<i8,<i8"}, {"dtype": " " * 70 + "<i8"},
                   {"dtype": [["a", "?," * 1000]]}, {"shape": [1] * 65}):
        with pytest.raises(fastser.DeserializationError):
            fastser.deserialize({**header, **change}, frames)


def test_hostile_shapes_of_no_bytes_are_refused() -> None:
    # No frame's size bounds the count of items of no size (V0).
    header, frames = fastser.serialize(np.zeros(0, dtype="V0"))
    for shape in ([2**62, 2**62], [2**40] * 3, [2**31 + 1]):
        with pytest.raises(fastser.DeserializationError, match="items of no size"):
            fastser.deserialize({**header, "shape": shape}, frames)
    assert fastser.deserialize({**header, "shape": [0, 2**62, 2**62]}, frames).size == 0
    for dtype in ("|S0", "<U0"):  # numpy would make items of one char: memory unpaid for
        for shape in ([3], [2**31], [0, 5]):
            with pytest.raises(fastser.DeserializationError, match="unsized"):
                fastser.deserialize({**header, "dtype": dtype, "shape": shape}, frames)
    floats, frames = fastser.serialize(np.zeros(0))
    with pytest.raises(fastser.DeserializationError):  # numpy: "array is too big"
        fastser.deserialize({**floats, "shape": [0, 2**62, 2**62]}, frames)


def test_hostile_dtype_strings_are_refused_before_numpy_parses_them() -> None:
    # numpy parses "?,?,..." into a structured dtype: 2 MB of it made 1M fields (~215 MB,
    # ~3 s), and the dtype cache kept such dtypes alive from message to message.
    header, frames = fastser.serialize(np.arange(4))
    with pytest.raises(fastser.DeserializationError, match="bad numpy dtype descriptor"):
        fastser.deserialize({**header, "dtype": "?," * 1_000_000}, frames)


def metadata_arrays() -> list[Any]:
    plain = np.arange(6, dtype=np.dtype("f8", metadata={"unit": "m"})).reshape(2, 3)
    field = np.dtype("i4", metadata={"enum": {"A": 0}})
    structured = np.zeros(3, dtype=np.dtype([("a", field), ("b", "f8")], metadata={"s": 1}))
    structured["a"] = [0, 1, 0]
    big = np.ones(100_000, dtype=np.dtype("<i8", metadata={"big": True}))  # out of band
    return [plain, structured, big]


@pytest.mark.parametrize("x", metadata_arrays(), ids=lambda x: f"{x.dtype}-{x.shape}")
def test_dtype_metadata_is_dropped_and_the_rest_survives(x: Any) -> None:
    # The .npy descriptor cannot carry a metadata dict (docs/api.md, the numpy section);
    # numpy 2 warns so, on the dtypes whose descriptor it makes.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        out = fastser.loads(fastser.dumps({"x": Serialize(x)}))["x"]
    assert out.dtype == x.dtype and out.dtype.names == x.dtype.names
    assert out.shape == x.shape and out.strides == x.strides
    assert (out == x).all()
    assert out.dtype.metadata is None
    if out.dtype.names:
        assert all(out.dtype[name].metadata is None for name in out.dtype.names)
    pickled = fastser.loads(fastser.dumps({"x": fastser.ToPickle(x)}))["x"]
    assert pickled.dtype.metadata == x.dtype.metadata and (pickled == x).all()
