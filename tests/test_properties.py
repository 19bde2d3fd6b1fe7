"""Property-based round trips: every message comes back equal, with its types."""

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

import fastser
from fastser import Pickled, Serialize, ToPickle
from fastser.errors import RefusedFamilyError
from strategies import examples, large_maps, messages


def unwrap(value: Any) -> Any:
    """What loads gives back for a message: wrappers replaced by their data."""
    if isinstance(value, Serialize):
        data = value.data
        # The dispatch family writes bytes-likes as they are; the rest is pickled.
        return data if type(data) in (bytes, bytearray, memoryview) else as_pickled(data)
    if isinstance(value, ToPickle):
        return as_pickled(value.data)
    if type(value) is dict:
        return {unwrap(k): unwrap(v) for k, v in value.items()}
    if type(value) in (list, tuple):
        return type(value)(unwrap(v) for v in value)
    return value


def as_pickled(value: Any) -> Any:
    """`value` as unpickling gives it back: a memoryview as bytes (stdlib pickle refuses
    memoryviews, and cloudpickle, the fallback, pickles one as its bytes)."""
    if type(value) is memoryview:
        return bytes(value)
    if type(value) is dict:
        return {as_pickled(k): as_pickled(v) for k, v in value.items()}
    if type(value) in (list, tuple):
        return type(value)(as_pickled(v) for v in value)
    return value


def typed(value: Any) -> Any:
    """A comparable form that also records every type."""
    if type(value) is dict:
        return ("dict", sorted((repr(typed(k)), typed(v)) for k, v in value.items()))
    if type(value) in (list, tuple):
        return (type(value).__name__, [typed(v) for v in value])
    if type(value) in (set, frozenset):
        return (type(value).__name__, sorted(repr(typed(v)) for v in value))
    return (type(value).__name__, value)


@settings(max_examples=examples(300), deadline=None)
@given(messages)
def test_roundtrip(msg: Any) -> None:
    assert typed(fastser.loads(fastser.dumps(msg))) == typed(unwrap(msg))


@settings(max_examples=examples(200), deadline=None)
@given(messages)
def test_kept_payloads_forward_byte_identically(msg: Any) -> None:
    frames = fastser.dumps(msg)
    kept = fastser.loads(frames, deserialize=False, deserializers=fastser.SAFE_DESERIALIZERS)
    again = fastser.dumps(kept)
    assert typed(fastser.loads(again)) == typed(unwrap(msg))
    # Each kept record (its header and frames' bytes) arrives again as it was kept.
    assert typed(fastser.loads(again, deserialize=False,
                               deserializers=fastser.SAFE_DESERIALIZERS)) == typed(kept)


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


@settings(max_examples=examples(200), deadline=None)
@given(messages, st.sampled_from([Serialize, ToPickle, lambda x: x]))
def test_a_safe_decoder_that_opens_payloads_runs_no_pickle(msg: Any, wrap: Any) -> None:
    # Opening payloads with SAFE_DESERIALIZERS: a pickled record stays Pickled, a
    # Serialize that its family pickled is refused; no pickle runs either way.
    UNPICKLED.clear()
    frames = fastser.dumps([msg, wrap(Tripwire(1)), {"t": (Tripwire(2),)}])
    try:
        out = fastser.loads(frames, deserializers=fastser.SAFE_DESERIALIZERS)
    except RefusedFamilyError:
        out = None
    assert UNPICKLED == []
    if out is not None:
        assert type(out[1]) is Pickled and type(out[2]["t"][0]) is Pickled
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
