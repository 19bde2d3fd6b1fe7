"""Arguments of the wrong type raise TypeError in both builds: the compiled build at the call
(mypyc's signatures check types), the pure-Python one in fastser/_arguments.py. Wrong values
of the right type raise ValueError in both."""

from collections.abc import Callable
from typing import Any

import pytest

import fastser

FRAMES = fastser.dumps({"a": 1})


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
    "loads limits": lambda: fastser.loads(FRAMES, limits=wrong({})),
    "Limits max_frames": lambda: fastser.Limits(max_frames=wrong("5")),
    "Limits max_depth": lambda: fastser.Limits(max_depth=wrong(5.0)),
    "extract_serialize bytes_threshold": lambda: fastser.extract_serialize(
        [1], bytes_threshold=wrong("5")),
}

WRONG_VALUES: dict[str, Callable[[], object]] = {
    "dumps frame_split_size 0": lambda: fastser.dumps(1, frame_split_size=0),
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
