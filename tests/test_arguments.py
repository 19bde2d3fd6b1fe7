"""Arguments of the wrong type raise TypeError in both builds: the compiled build at the call
(mypyc's signatures check types), the pure-Python one in fastser/arguments.py. Wrong values
of the right type raise ValueError in both."""

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

import fastser
from fastser import aio, sock

FRAMES = fastser.dumps({"a": 1})


class Unused:
    """Never registered: each registration below is refused first."""


def wrong(value: object) -> Any:
    """`value`, typed Any: these calls are wrong on purpose (mypy would refuse them)."""
    return value


WRONG_TYPES: dict[str, Callable[[], object]] = {
    "dumps frame_split_size str": lambda: fastser.dumps(1, frame_split_size=wrong("1")),
    "dumps frame_split_size float": lambda: fastser.dumps(1, frame_split_size=wrong(1.5)),
    "Encoder frame_split_size": lambda: fastser.Encoder(frame_split_size=wrong("1")),
    "dumps compression": lambda: fastser.dumps(1, compression=wrong(1)),
    "dumps on_error": lambda: fastser.dumps(1, on_error=wrong(1)),
    "serialize on_error": lambda: fastser.serialize(1, on_error=wrong(1)),
    "loads deserialize 0": lambda: fastser.loads(FRAMES, deserialize=wrong(0)),
    "loads deserialize None": lambda: fastser.loads(FRAMES, deserialize=wrong(None)),
    "Decoder deserialize": lambda: fastser.Decoder(deserialize=wrong(1)),
    "Decoder open_pickled": lambda: fastser.Decoder(open_pickled=wrong(1)),
    "Decoder lists_as_tuples": lambda: fastser.Decoder(lists_as_tuples=wrong(1)),
    "loads limits": lambda: fastser.loads(FRAMES, limits=wrong({})),
    "Limits max_frames": lambda: fastser.Limits(max_frames=wrong("5")),
    "Limits max_depth": lambda: fastser.Limits(max_depth=wrong(5.0)),
    "extract_serialize bytes_threshold": lambda: fastser.extract_serialize(
        [1], bytes_threshold=wrong("5")),
    "dumps serializers item": lambda: fastser.dumps(1, serializers=wrong([1])),
    "dumps serializers bytes": lambda: fastser.dumps(1, serializers=wrong(b"ab")),
    "Decoder deserializers item": lambda: fastser.Decoder(deserializers=wrong((None,))),
    "FrameReader limits": lambda: fastser.FrameReader(limits=wrong({})),
    "unpack_frames limits": lambda: fastser.unpack_frames(
        fastser.pack_frames(FRAMES), limits=wrong(5)),
    "deserialize header": lambda: fastser.deserialize(wrong(None), []),
    "register_serialization name": lambda: fastser.register_serialization(
        Unused, wrong(repr), wrong(repr), name=wrong(5)),
    "register_serialization_lazy module": lambda: fastser.register_serialization_lazy(
        wrong(5), print),
    "register_serialization_family name": lambda: fastser.register_serialization_family(
        wrong(5), wrong(repr), wrong(repr)),
    "sock.send_msg encoder": lambda: sock.send_msg(wrong(None), 1, encoder=wrong(5)),
    "sock.recv_msg decoder": lambda: sock.recv_msg(wrong(None), decoder=wrong(5)),
    "aio.write_msg encoder": lambda: asyncio.run(aio.write_msg(wrong(None), 1, wrong(5))),
    "aio.read_msg decoder": lambda: asyncio.run(aio.read_msg(wrong(None), wrong(5))),
}

WRONG_VALUES: dict[str, Callable[[], object]] = {
    "dumps frame_split_size 0": lambda: fastser.dumps(1, frame_split_size=0),
    "dumps frame_split_size 63": lambda: fastser.dumps(1, frame_split_size=63),
    "dumps on_error": lambda: fastser.dumps(1, on_error=wrong("ignore")),
    "dumps compression": lambda: fastser.dumps(1, compression="snappy"),
    "Limits max_frames 0": lambda: fastser.Limits(max_frames=0),
}


@pytest.mark.parametrize("call", WRONG_TYPES.values(), ids=list(WRONG_TYPES))
def test_an_argument_of_the_wrong_type_raises_type_error(call: Callable[[], object]) -> None:
    with pytest.raises(TypeError):
        call()


@pytest.mark.parametrize("call", WRONG_VALUES.values(), ids=list(WRONG_VALUES))
def test_an_argument_of_the_wrong_value_raises_value_error(call: Callable[[], object]) -> None:
    with pytest.raises(ValueError):
        call()


def test_a_bool_counts_as_an_int_as_compiled_code_takes_it() -> None:
    assert fastser.Limits(max_depth=True).max_depth == 1
    assert fastser.loads(fastser.dumps([[1]]), limits=fastser.Limits(max_depth=2)) == [[1]]
