"""Property-based round trips: every message comes back equal, with its types."""

from collections.abc import Callable
from typing import Any, Optional

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fastser
from fastser import Pickled, Serialize, Serialized, ToPickle
from fastser.errors import RefusedFamilyError
from strategies import (MAX_DEPTH, deep_messages, depth, examples, float_messages, keys,
                        large_maps, messages)

BYTES_LIKE = (bytes, bytearray, memoryview)


def unwrap(value: Any) -> Any:
    """What loads gives back for a message: wrappers replaced by their data."""
    if isinstance(value, Serialize):
        data = value.data
        # The dispatch family writes bytes-likes as they are; the rest is pickled.
        return data if type(data) in BYTES_LIKE else as_pickled(data)
    if isinstance(value, ToPickle):
        return as_pickled(value.data)
    if type(value) is dict:
        return {unwrap(k): unwrap(v) for k, v in value.items()}
    if type(value) in (list, tuple, set, frozenset):
        return type(value)(unwrap(v) for v in value)
    return value


def as_pickled(value: Any) -> Any:
    """`value` as unpickling gives it back: a memoryview as bytes (stdlib pickle refuses
    memoryviews, and cloudpickle, the fallback, pickles one as its bytes)."""
    if type(value) is memoryview:
        return bytes(value)
    if type(value) in (Serialize, ToPickle):
        return type(value)(as_pickled(value.data))
    if type(value) is dict:
        return {as_pickled(k): as_pickled(v) for k, v in value.items()}
    if type(value) in (list, tuple):
        return type(value)(as_pickled(v) for v in value)
    return value


def typed(value: Any) -> Any:
    """A comparable form that also records every type. Floats compare by repr: a NaN comes
    back as another NaN object (equal to nothing), and -0.0 must stay -0.0."""
    if type(value) is dict:
        # Sorted by key alone: two NaN keys look alike, and their values may not compare.
        return ("dict", sorted(((repr(typed(k)), typed(v)) for k, v in value.items()),
                               key=lambda item: item[0]))
    if type(value) in (list, tuple):
        return (type(value).__name__, [typed(v) for v in value])
    if type(value) in (set, frozenset):
        return (type(value).__name__, sorted(repr(typed(v)) for v in value))
    if type(value) is float:
        return ("float", repr(value))
    if type(value) in (Serialize, ToPickle):
        return (type(value).__name__, typed(value.data))
    if type(value) in (Serialized, Pickled):
        return (type(value).__name__, typed(value.header), [bytes(f) for f in value.frames])
    return (type(value).__name__, value)


def records(value: Any) -> list[tuple[str, list[tuple[Any, Any]], list[bytes]]]:
    """The kept records of a message in the order dumps walks them: each one's type, header
    items in order and frames' bytes."""
    found: list[tuple[str, list[tuple[Any, Any]], list[bytes]]] = []

    def walk(item: Any) -> None:
        if type(item) in (Serialized, Pickled):
            found.append((type(item).__name__, list(item.header.items()),
                          [bytes(frame) for frame in item.frames]))
        elif type(item) is dict:
            for key, child in item.items():
                walk(key)
                walk(child)
        elif type(item) in (list, tuple, set, frozenset):
            for child in item:
                walk(child)
    walk(value)
    return found


def holds_sets(value: Any) -> bool:
    """Whether a set or frozenset stands anywhere outside wrappers (loads may rebuild one
    in another order, and dumps then writes its items in that order)."""
    if type(value) in (set, frozenset):
        return True
    if type(value) is dict:
        return any(holds_sets(k) or holds_sets(v) for k, v in value.items())
    if type(value) in (list, tuple):
        return any(holds_sets(v) for v in value)
    return False


@settings(max_examples=examples(300), deadline=None)
@given(messages)
def test_roundtrip(msg: Any) -> None:
    assert typed(fastser.loads(fastser.dumps(msg))) == typed(unwrap(msg))


@settings(max_examples=examples(200), deadline=None)
@given(float_messages)
def test_nan_infinities_and_negative_zero_round_trip(msg: Any) -> None:
    assert typed(fastser.loads(fastser.dumps(msg))) == typed(unwrap(msg))


@settings(max_examples=examples(100), deadline=None)
@given(deep_messages)
def test_messages_nested_close_to_the_depth_limit_round_trip(msg: Any) -> None:
    assert 180 <= depth(msg) <= MAX_DEPTH
    assert typed(fastser.loads(fastser.dumps(msg))) == typed(unwrap(msg))


COMPRESSIONS = [None, "zlib", "lz4", "zstd", "auto"]


@settings(max_examples=examples(150), deadline=None)
@given(messages, st.sampled_from(COMPRESSIONS),
       st.one_of(st.none(), st.integers(64, 4096), st.integers(4096, 100_000)))
def test_roundtrip_with_compression_and_split_frames(
        msg: Any, compression: Optional[str], split: Optional[int]) -> None:
    if compression in ("lz4", "zstd"):
        pytest.importorskip("lz4.block" if compression == "lz4" else "zstandard")
    options: dict[str, Any] = {"compression": compression}
    if split is not None:
        options["frame_split_size"] = split
    frames = fastser.dumps(msg, **options)
    assert typed(fastser.loads(frames)) == typed(unwrap(msg))
    # Forwarded unopened with other options, the payloads still arrive as sent.
    kept = fastser.loads(frames, deserialize=False, deserializers=fastser.SAFE_DESERIALIZERS)
    assert typed(fastser.loads(fastser.dumps(kept))) == typed(unwrap(msg))


@settings(max_examples=examples(200), deadline=None)
@given(messages)
def test_kept_payloads_forward_byte_identically(msg: Any) -> None:
    frames = fastser.dumps(msg)
    kept = fastser.loads(frames, deserialize=False, deserializers=fastser.SAFE_DESERIALIZERS)
    again = fastser.dumps(kept)
    assert typed(fastser.loads(again)) == typed(unwrap(msg))
    # The payload frames go out again byte for byte, and so does the header frame, and each
    # kept record (its header, key order included, and its frames' bytes) arrives again as it
    # was kept. A set rebuilt by loads may hold its items in another order (a kept record
    # hashes unlike the wrapper it came from), and dumps then walks them in that order: where
    # the message holds one, only the order may differ.
    payloads = [bytes(frame) for frame in again[1:]]
    kept_again = records(fastser.loads(again, deserialize=False,
                                       deserializers=fastser.SAFE_DESERIALIZERS))
    if holds_sets(msg):
        assert sorted(payloads) == sorted(bytes(frame) for frame in frames[1:])
        assert sorted(map(repr, kept_again)) == sorted(map(repr, records(kept)))
    else:
        assert payloads == [bytes(frame) for frame in frames[1:]]
        assert bytes(again[0]) == bytes(frames[0])
        assert kept_again == records(kept)


UNPICKLED: list[int] = []


def trip(marker: int) -> "Tripwire":
    UNPICKLED.append(marker)
    return Tripwire(marker)


class Tripwire:
    """Records, when unpickled, that a pickle ran."""

    def __init__(self, marker: int) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, tuple[int]]:
        return trip, (self.marker,)


def refused_by_a_safe_decoder(value: Any) -> bool:
    """Whether a message holds a Serialize whose family pickled it (a safe decoder refuses
    those; a bytes-like goes through the dispatch family)."""
    if isinstance(value, Serialize):
        return type(value.data) not in BYTES_LIKE
    if type(value) is dict:
        return any(refused_by_a_safe_decoder(k) or refused_by_a_safe_decoder(v)
                   for k, v in value.items())
    if type(value) in (list, tuple, set, frozenset):
        return any(refused_by_a_safe_decoder(v) for v in value)
    return False


@settings(max_examples=examples(200), deadline=None)
@given(messages, st.sampled_from([Serialize, ToPickle, lambda x: x]))
def test_a_safe_decoder_that_opens_payloads_runs_no_pickle(msg: Any, wrap: Any) -> None:
    # Opening payloads with SAFE_DESERIALIZERS: a pickled record stays Pickled, a
    # Serialize that its family pickled is refused; no pickle runs either way.
    UNPICKLED.clear()
    sent = [msg, wrap(Tripwire(1)), {"t": (Tripwire(2),)}]
    frames = fastser.dumps(sent)
    if refused_by_a_safe_decoder(sent):
        with pytest.raises(RefusedFamilyError, match="'pickle' refused"):
            fastser.loads(frames, deserializers=fastser.SAFE_DESERIALIZERS)
        # Kept unopened instead, the pickled records are Pickled, the Serialize Serialized.
        out = fastser.loads(frames, deserialize=False, deserializers=fastser.SAFE_DESERIALIZERS)
        assert type(out[1]) is (Serialized if wrap is Serialize else Pickled)
    else:
        out = fastser.loads(frames, deserializers=fastser.SAFE_DESERIALIZERS)
        assert type(out[1]) is Pickled
    assert type(out[2]["t"][0]) is Pickled
    assert UNPICKLED == []
    fastser.loads(frames)  # the same frames, pickle allowed: the tripwires go off
    assert sorted(set(UNPICKLED)) == [1, 2]


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(large_maps, min_size=1, max_size=2), messages)
def test_large_maps_round_trip_with_their_types(maps: list[Any], msg: Any) -> None:
    # Dicts of 32 entries or more, alone and nested: plain msgpack maps like the others.
    sent = [*maps, msg, {"nested": maps[0]}]
    frames = fastser.dumps(sent)
    assert typed(fastser.loads(frames)) == typed(unwrap(sent))
    kept = fastser.loads(frames, deserialize=False, deserializers=fastser.SAFE_DESERIALIZERS)
    assert typed(fastser.loads(fastser.dumps(kept))) == typed(unwrap(sent))


# A new NaN object at each draw (SPECIAL_FLOATS holds one, equal to itself as a key).
WRAPS: list[Callable[[float], Any]] = [float, Serialize, ToPickle, lambda x: (Serialize(x), 1)]
FRESH_NANS = st.sampled_from(WRAPS).map(lambda wrap: wrap(float("nan")))


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.one_of(keys, FRESH_NANS), max_size=6), st.booleans())
def test_a_map_or_set_of_any_keys_loses_none_or_is_refused(drawn: list[Any], as_set: bool) -> None:
    # Keys not kept apart by `opened` as the other strategies keep them: wrapped and plain
    # NaNs, wrappers that open to a key beside them. Nothing is lost without a word.
    msg: Any = set(drawn) if as_set else {key: index for index, key in enumerate(drawn)}
    try:
        frames = fastser.dumps(msg)
    except fastser.SerializationError as exc:
        assert "loads would merge the two" in str(exc)
        return
    got = fastser.loads(frames)
    assert len(got) == len(msg)
    if not as_set:
        assert sorted(got.values()) == sorted(msg.values())
