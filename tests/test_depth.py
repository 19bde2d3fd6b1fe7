"""The header depth scan: an upper bound of a decoded message's nesting, read from msgpack
bytes; and that the decoder still refuses every message nested too deep."""

import pickle
from typing import Any

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fastser
from fastser import DeserializationError
from fastser.codec.depth import header_nests_deeper, holds_ext_minus_1
from fastser.codec.wire import (EXT_SERIALIZED, EXT_SERIALIZED_MARK, EXT_SET_MARK,
                                TUPLE_LEAD, WIRE_VERSION)

VERSION = bytes([WIRE_VERSION])

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**63), max_value=2**64 - 1),
    st.floats(allow_nan=False), st.text(max_size=40), st.binary(max_size=40),
    st.sampled_from(["s" * 300, b"b" * 300]),  # 16-bit lengths (32-bit: tested below)
    st.builds(msgpack.ExtType, st.integers(min_value=0, max_value=127),
              st.sampled_from([b"", b"1", b"12", b"1234", b"12345678", b"1" * 16, b"x" * 20,
                               b"y" * 300])),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=20),
        st.dictionaries(st.one_of(st.text(max_size=5),
                                  st.integers(min_value=-(2**63), max_value=2**63)),
                        inner, max_size=18)),
    max_leaves=60)


def depth(value: Any) -> int:
    """How many containers nest on the deepest path (keys included)."""
    if type(value) is list:
        return 1 + max((depth(item) for item in value), default=0)
    if type(value) is dict:
        return 1 + max((depth(item) for pair in value.items() for item in pair), default=0)
    return 0


@settings(max_examples=300, deadline=None)
@given(values)
def test_the_scan_finds_the_depth_of_any_msgpack_value(value: Any) -> None:
    data = msgpack.packb(value, use_bin_type=True)
    deepest = depth(value)
    for budget in range(1, deepest + 2):
        assert header_nests_deeper(data, budget) == (deepest > budget)


@settings(max_examples=300, deadline=None)
@given(values)
def test_the_float_key_scan_finds_the_depth_the_depth_scan_does(value: Any) -> None:
    # The decoder takes the depth from the float key scan where that ran, instead of
    # scanning twice: the two must agree at every budget.
    from fastser.codec.collisions import HashCounter
    from fastser.codec.depth import float_key_hashes
    data = msgpack.packb(value)
    deepest = float_key_hashes(data, HashCounter(len(data)))
    for budget in range(1, 12):
        assert (deepest > budget or deepest == -1) == header_nests_deeper(data, budget)


def test_the_scan_reads_16_and_32_bit_counts_and_lengths() -> None:
    one_more = b"\x91\xc0"  # [None]: one level
    for prefix in (b"\xdc\x00\x01", b"\xdd\x00\x00\x00\x01"):  # array 16 / 32 of one item
        assert header_nests_deeper(prefix + one_more, 2) is False
        assert header_nests_deeper(prefix + one_more, 1) is True
    for prefix in (b"\xde\x00\x01", b"\xdf\x00\x00\x00\x01"):  # map 16 / 32 of one entry
        assert header_nests_deeper(prefix + b"\xc0" + one_more, 2) is False
        assert header_nests_deeper(prefix + b"\xc0" + one_more, 1) is True
    big = b"x" * 70_000
    for packed in (msgpack.packb([big, [1]]), msgpack.packb([big.decode(), [1]]),
                   msgpack.packb([msgpack.ExtType(5, big), [1]])):
        assert header_nests_deeper(packed, 2) is False
        assert header_nests_deeper(packed, 1) is True


def test_bytes_that_are_not_one_whole_value_say_too_deep() -> None:
    # The decoder scans only what msgpack decoded; anything else must not pass as shallow.
    packed = msgpack.packb({"a": [1, "two", b"3"], "b": 2.5}, use_bin_type=True)
    for end in range(len(packed)):
        assert header_nests_deeper(packed[:end], 10) is True
    assert header_nests_deeper(b"\xc1", 10) is True  # never used by msgpack
    assert header_nests_deeper(b"\xdd\xff\xff\xff\xff", 10) is True  # 2**32 - 1 missing
    assert header_nests_deeper(packed, 10) is False


def big_header(body: Any) -> list[bytes]:
    # Past the decoder's byte bound, so that the scan (and perhaps the walk) runs.
    return [VERSION + msgpack.packb({"pad": "p" * 4000, "body": body}, use_bin_type=True)]


def test_a_big_header_nested_too_deep_is_refused() -> None:
    for make in (lambda inner: [inner], lambda inner: {"k": inner},
                 lambda inner: [TUPLE_LEAD, inner]):
        deep: Any = 1
        for _ in range(256):  # 257 levels with the top map
            deep = make(deep)
        with pytest.raises(DeserializationError, match="max_depth=256"):
            fastser.loads(big_header(deep))
        assert fastser.loads(big_header(deep), limits=fastser.Limits(max_depth=257))


def test_an_opened_payload_is_one_leaf_as_dumps_counts_it() -> None:
    # One rule both ways: dumps counts a payload as one level, and so does loads once it
    # opened it (its family built it and bounds it: msgpack stops at 1024 levels, pickle
    # is trusted or refused). tcp:// carries such objects; fastser:// must too.
    deep_array = b"\x91" * 600 + b"\x01"  # msgpack of a list nested 600 deep
    record = [msgpack.ExtType(EXT_SERIALIZED_MARK, b""), {"serializer": "msgpack"}, [deep_array]]
    header = VERSION + msgpack.packb(record, use_bin_type=True)
    assert depth_of(fastser.Decoder(deserializers=["msgpack"]).loads([header])) == 600
    deep: Any = 1
    for _ in range(300):
        deep = [deep]
    for wrapped in (fastser.ToPickle(deep), fastser.Serialize(deep)):
        small = fastser.dumps({"x": wrapped})
        large = fastser.dumps({"pad": "p" * 4000, "x": wrapped})  # past the byte bound
        for frames in (small, large):
            assert depth_of(fastser.loads(frames)["x"]) == 300
    # The header around an opened payload still counts, the same way both ways: 256
    # containers pass, 257 do not (the payload a leaf at the bottom).
    shallow: Any = [[[1]]]
    for levels, passes in ((255, True), (256, False)):
        nested: Any = {"pad": "p" * 4000, "x": fastser.ToPickle(shallow)}
        for _ in range(levels):
            nested = [nested]
        if passes:
            out = fastser.loads(fastser.dumps(nested))
            for _ in range(levels):
                out = out[0]
            assert out["x"] == shallow
            continue
        with pytest.raises(fastser.SerializationError, match="max_depth=256"):
            fastser.dumps(nested)
        encoder = fastser.Encoder()
        encoder.max_depth = 257
        with pytest.raises(DeserializationError, match="max_depth=256"):
            fastser.loads(encoder.dumps(nested))


def test_past_the_scan_depth_the_walk_answers() -> None:
    # The scan follows 300 levels (it recurses; the pure build has a recursion limit), so
    # a deeper limit is decided by the exact walk of the decoded message.
    deep: Any = 1
    for _ in range(349):  # 350 levels with the top map
        deep = [deep]
    frames = big_header(deep)
    assert header_nests_deeper(frames[0][1:], 400) is True  # "may be": past 300 levels
    assert fastser.loads(frames, limits=fastser.Limits(max_depth=400)) is not None
    with pytest.raises(DeserializationError, match="max_depth=349"):
        fastser.loads(frames, limits=fastser.Limits(max_depth=349))


# Found by review: a way past the limit that the scan alone let through.


def depth_of(value: Any) -> int:
    """How deep containers nest in `value` (an explicit stack: no recursion limit)."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if type(item) is dict:
            stack.extend((part, depth + 1) for pair in item.items() for part in pair)
        elif type(item) in (list, tuple, set, frozenset):
            stack.extend((part, depth + 1) for part in item)
        else:
            continue
        deepest = max(deepest, depth)
    return deepest


def test_a_payload_opened_as_a_dict_key_is_one_leaf() -> None:
    deep: Any = 1
    for _ in range(10):
        deep = (deep,)
    # A pickle record where an array cannot be hashed: a dict key, a set item.
    pickled = msgpack.ExtType(EXT_SERIALIZED, msgpack.packb(
        [{"serializer": "pickle"}, [pickle.dumps(deep)]]))
    for key_holder in ({pickled: 1}, [msgpack.ExtType(EXT_SET_MARK, b""), pickled]):
        frames = [VERSION + msgpack.packb(key_holder)]
        assert depth_of(fastser.loads(frames)) == 11
        # The header holds one container; the opened tuple is one leaf in it.
        assert depth_of(fastser.loads(frames, limits=fastser.Limits(max_depth=1))) == 11


# The ext -1 scan: msgpack makes a Timestamp of an extension type of code -1 before ext_hook
# sees it, so the decoder looks for one in the header's bytes.


def holds_timestamp(value: Any) -> bool:
    if type(value) is msgpack.Timestamp:
        return True
    if type(value) is list:
        return any(holds_timestamp(item) for item in value)
    if type(value) is dict:
        return any(holds_timestamp(item) for pair in value.items() for item in pair)
    return False


timestamps = st.builds(msgpack.Timestamp,  # packed as fixext 4, fixext 8 or ext 8 (12 bytes)
                       st.sampled_from([0, 1, 2**32 - 1, 2**32, 2**34 - 1, 2**34, -1, 2**62]),
                       st.sampled_from([0, 1, 999_999_999]))
lookalikes = st.sampled_from([  # their bytes hold d6 ff, d7 ff, 04 ff, 08 ff, 0c ff
    23548.000000000004, 1.001219782964483, [4, -1], [8, -1], [12, -1], 0xd6ff_0000_0001,
    b"\xd6\xff\x00\x00\x00\x01", b"\xc7\x0c\xff", msgpack.ExtType(5, b"\xd7\xff" * 4),
    [-1] * 70])
with_timestamps = st.recursive(
    st.one_of(scalars, timestamps, lookalikes),
    lambda inner: st.one_of(
        st.lists(inner, max_size=8),
        st.dictionaries(st.one_of(st.text(max_size=5), st.integers(min_value=-(2**63),
                                                                   max_value=2**63)),
                        inner, max_size=8)),
    max_leaves=30)


@settings(max_examples=500, deadline=None)
@given(with_timestamps)
def test_the_ext_minus_1_scan_finds_every_timestamp(value: Any) -> None:
    data = msgpack.packb(value, use_bin_type=True)
    assert holds_ext_minus_1(data, 0) == holds_timestamp(value)
    assert holds_ext_minus_1(b"\x01" + data, 1) == holds_timestamp(value)


@pytest.mark.parametrize("token", [
    "d6ff 00000001", "d7ff 0000000000000001", "c70cff 000000000000000000000001",
    # forms msgpack's packer never writes, which its unpacker makes Timestamps of too
    "c704ff 00000001", "c708ff 0000000000000001", "c80004ff 00000001", "c8000cff" + "00" * 12,
    "c900000004ff 00000001", "c900000008ff" + "00" * 8])
def test_the_ext_minus_1_scan_finds_every_form_of_timestamp(token: str) -> None:
    # Other lengths of ext -1 msgpack refuses itself (test_hostile.py).
    ext = bytes.fromhex(token)
    for data in (ext, b"\x92\x01" + ext, b"\x81\xa1x" + ext, b"\x81" + ext + b"\xc0",
                 b"\xdc\x00\x02\xff" + ext,  # -1, then the ext
                 b"\x94\xcb" + b"\xff" * 8 + b"\x93\xff\xff\xff\x90" + ext):
        assert holds_ext_minus_1(data, 0), data.hex()
    assert holds_ext_minus_1(b"\x91" + b"\xff" * 200, 0) is False  # past the looks: scanned
    assert holds_ext_minus_1(b"\xdc\x00\xc9" + b"\xff" * 200 + ext, 0)


def test_the_ext_minus_1_scan_reads_no_further_than_the_value() -> None:
    stamp = bytes.fromhex("d6ff00000001")
    for data in (b"\xc0" + stamp, b"\xc1" + stamp, b"\xc4\x06" + stamp, b"\xa6" + stamp,
                 b"\xc7\x06\x05" + stamp, b"\x92\x01\x02" + stamp):
        assert holds_ext_minus_1(data, 0) is False, data.hex()
    for end in range(len(stamp) + 2):  # truncated: either answer (msgpack refuses them)
        holds_ext_minus_1(b"\x91" + stamp[:end], 0)
        holds_ext_minus_1(b"\xc7\x0c\xff"[:end], 0)
