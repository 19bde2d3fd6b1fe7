"""Wire version 7's lists of bytes frames: a list of two or more bytes values that all travel
out of band whole is one extension type naming a run of payload frames, one value each."""

from typing import Any

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fastser
from fastser import DeserializationError, Encoder, FrameReader, Limits, pack_frames
from fastser._wire import EXT_BYTES_FRAME, EXT_BYTES_FRAMES, OUT_OF_BAND_BYTES, WIRE_VERSION

from strategies import examples
from tasks_shared import body
from test_properties import typed

BIG = OUT_OF_BAND_BYTES


def run_ext(start: int, count: int) -> msgpack.ExtType:
    return msgpack.ExtType(EXT_BYTES_FRAMES, msgpack.packb([start, count]))


def test_a_list_of_large_bytes_is_one_extension_type_and_its_values_the_frames() -> None:
    blobs = [bytes([i]) * (BIG + i) for i in range(4)]
    msg = {"op": "blobs", "data": [blobs[:3], blobs[3:]], "tail": [blobs[0], blobs[1]]}
    frames = fastser.dumps(msg)
    assert body(frames) == {"op": "blobs", "data": [run_ext(1, 3), [msgpack.ExtType(
        EXT_BYTES_FRAME, b"\x04")]], "tail": run_ext(5, 2)}
    assert frames[1:] == blobs[:3] + [blobs[3]] + blobs[:2]
    assert all(frame is blob for frame, blob in zip(frames[1:4], blobs))  # not copied
    got = fastser.loads(frames)
    assert typed(got) == typed(msg)
    assert got["data"][0][0] is blobs[0]  # bytes frames come back as the objects they are


@pytest.mark.parametrize("items, options", [
    ([b"a" * BIG], {}),  # one value
    ([b"a" * BIG, b"small"], {}),  # a value that stays in the header
    ([b"a" * BIG, bytearray(b"b" * BIG)], {}),  # another type
    ([b"a" * BIG, b"b" * (BIG + 1)], {"frame_split_size": BIG}),  # one value is split
    ([b"a" * BIG, b"b" * BIG], {"compression": "zlib"}),  # frames may be compressed
], ids=["one", "small", "bytearray", "split", "compressed"])
def test_other_lists_are_written_item_by_item(items: list[Any], options: dict[str, Any]) -> None:
    frames = Encoder(**options).dumps({"list": items})
    written = body(frames)["list"]
    assert type(written) is list and len(written) == len(items)
    assert all(type(item) is not msgpack.ExtType or item.code != EXT_BYTES_FRAMES
               for item in written)
    assert typed(fastser.loads(frames)) == typed({"list": items})


def test_received_values_own_their_memory_and_are_forwarded_byte_for_byte() -> None:
    blobs = [bytes(range(256)) * 300, b"q" * BIG]
    sent = fastser.dumps({"blobs": blobs, "other": [blobs[0], blobs[1]]})
    [received] = FrameReader().feed(pack_frames(sent))
    got = fastser.loads(received)
    for frame in received[1:]:
        frame[:3] = b"xyz"  # the receive buffer is reused: the values own their memory
    assert got == {"blobs": blobs, "other": blobs} and type(got["blobs"][1]) is bytes
    [received] = FrameReader().feed(pack_frames(sent))
    kept = fastser.loads(received, deserialize=False)
    assert [bytes(frame) for frame in fastser.dumps(kept)] == [bytes(f) for f in sent]


def hostile(header: Any, frames: int = 2) -> list[Any]:
    return [bytes([WIRE_VERSION]) + msgpack.packb(header, use_bin_type=True),
            *[b"v" * 10 for _ in range(frames)]]


@pytest.mark.parametrize("frames, reason", [
    (hostile([msgpack.ExtType(EXT_BYTES_FRAMES, b"\xc1")]), "corrupt header"),
    (hostile([msgpack.ExtType(EXT_BYTES_FRAMES, msgpack.packb(1))]), "not \\[first frame"),
    (hostile([msgpack.ExtType(EXT_BYTES_FRAMES, msgpack.packb([1]))]), "not \\[first frame"),
    (hostile([msgpack.ExtType(EXT_BYTES_FRAMES, msgpack.packb([1, 2, 3]))]),
     "not \\[first frame"),
    (hostile([msgpack.ExtType(EXT_BYTES_FRAMES, msgpack.packb([1, "2"]))]),
     "not \\[first frame"),
    (hostile([run_ext(0, 2)]), "names 2 frames from payload frame 0"),
    (hostile([run_ext(1, 0)]), "names 0 frames"),
    (hostile([run_ext(1, -1)]), "names -1 frames"),
    (hostile([run_ext(2, 2)]), "names 2 frames from payload frame 2, but the message has 3"),
    (hostile([run_ext(1, 2**40)]), "names 1099511627776 frames"),
    (hostile([run_ext(1, 2), run_ext(2, 1)]), "frame 2 is referenced twice"),
    (hostile([run_ext(1, 2), msgpack.ExtType(EXT_BYTES_FRAME, b"\x01")]),
     "frame 1 is referenced twice"),
    (hostile([run_ext(1, 1)]), "1 of 2 payload frames are not named"),
], ids=["corrupt", "int", "short", "long", "str", "header", "none", "negative", "beyond",
        "huge", "overlap", "twice", "unnamed"])
def test_hostile_runs_raise_deserialization_errors(frames: list[Any], reason: str) -> None:
    for decoder in (fastser.Decoder(), fastser.Decoder(deserialize=False)):
        with pytest.raises(DeserializationError, match=reason):
            decoder.loads(frames)


def nested(levels: int, inner: Any) -> Any:
    for _ in range(levels):
        inner = [inner]
    return inner


def test_a_run_counts_as_the_level_of_nesting_its_list_is() -> None:
    # Hand-made headers (the encoder refuses to nest deeper): a run inside `levels` arrays
    # nests exactly as deep as a list of two ints there, and is refused at the same depth.
    limits = Limits(max_depth=20)
    refused = []
    for levels in range(16, 24):
        plain = [bytes([WIRE_VERSION]) + msgpack.packb(nested(levels, [1, 2]))]
        runs = hostile(nested(levels, run_ext(1, 2)))
        try:
            fastser.loads(plain, limits=limits)
        except DeserializationError:
            with pytest.raises(DeserializationError, match="nested deeper"):
                fastser.loads(runs, limits=limits)
            refused.append(levels)
        else:
            assert fastser.loads(runs, limits=limits) == nested(levels, [b"v" * 10] * 2)
    assert refused == [20, 21, 22, 23]  # the list inside 20 arrays is level 21


def test_the_encoder_refuses_a_run_at_the_depth_it_refuses_its_items() -> None:
    # encode() counts a large bytes value as a level; a list of them must not escape that.
    blob = b"b" * BIG
    for items in ([blob], [blob, blob]):
        assert fastser.loads(fastser.dumps(nested(254, items))) == nested(254, items)
        with pytest.raises(fastser.SerializationError, match="max_depth"):
            fastser.dumps(nested(255, items))


sizes = st.sampled_from([0, 5, BIG - 1, BIG, BIG + 17])
blob_lists = st.lists(sizes.map(lambda size: b"b" * size), max_size=4)


@settings(max_examples=examples(60), deadline=None)
@given(msg=st.dictionaries(st.text(max_size=3), st.lists(blob_lists, max_size=3), max_size=3))
def test_lists_of_bytes_round_trip_and_forward(msg: dict[str, list[list[bytes]]]) -> None:
    frames = fastser.dumps(msg)
    assert typed(fastser.loads(frames)) == typed(msg)
    [received] = FrameReader().feed(pack_frames(frames))
    assert typed(fastser.loads(received)) == typed(msg)
    kept = fastser.loads(received, deserialize=False)
    assert [bytes(frame) for frame in fastser.dumps(kept)] == [bytes(f) for f in frames]
