"""Arguments of the wrong type raise TypeError in both builds: the compiled build at the call
(mypyc's signatures check types), the pure-Python one in fastser/arguments.py; options
(fastser/arguments.py, "Options") in the same words in both. Wrong values of the right type
raise ValueError in both. A user's mypy --strict still reports the same mistakes."""

import asyncio
import inspect
import pathlib
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


# The same words in both builds, naming the callable and the keyword (fastser/arguments.py,
# "Options" and "Positional arguments"), where mypyc's own would name neither.
MESSAGES: dict[str, tuple[Callable[[], object], str]] = {
    "Encoder keyword": (lambda: fastser.Encoder(**wrong({"compresion": "lz4"})),
                        "Encoder() got an unexpected keyword argument 'compresion'"),
    "Encoder compression": (lambda: fastser.Encoder(compression=wrong(True)),
                            "Encoder() argument 'compression' must be str or None, not bool"),
    "Encoder frame_split_size": (lambda: fastser.Encoder(frame_split_size=wrong("1")),
                                 "Encoder() argument 'frame_split_size' must be int, not str"),
    "Encoder on_error": (lambda: fastser.Encoder(on_error=wrong(1)),
                         "Encoder() argument 'on_error' must be str, not int"),
    "Decoder keyword": (lambda: fastser.Decoder(**wrong({"deserialise": True})),
                        "Decoder() got an unexpected keyword argument 'deserialise'"),
    "Decoder deserialize": (lambda: fastser.Decoder(deserialize=wrong(1)),
                            "Decoder() argument 'deserialize' must be bool, not int"),
    "Decoder lists_as_tuples": (lambda: fastser.Decoder(lists_as_tuples=wrong(None)),
                                "Decoder() argument 'lists_as_tuples' must be bool, not NoneType"),
    "Decoder limits": (lambda: fastser.Decoder(limits=wrong({})),
                       "Decoder() argument 'limits' must be Limits or None, not dict"),
    "Limits keyword": (lambda: fastser.Limits(**wrong({"max_frame": 3})),
                       "Limits() got an unexpected keyword argument 'max_frame'"),
    "Limits max_frames": (lambda: fastser.Limits(max_frames=wrong("5")),
                          "Limits() argument 'max_frames' must be int, not str"),
    "dumps keyword": (lambda: fastser.dumps(1, **wrong({"compresion": "lz4"})),
                      "dumps() got an unexpected keyword argument 'compresion'"),
    "dumps Encoder's default": (lambda: fastser.dumps(1, **wrong({"default": repr})),
                                "dumps() got an unexpected keyword argument 'default'"),
    "dumps compression": (lambda: fastser.dumps(1, compression=wrong(True)),
                          "dumps() argument 'compression' must be str or None, not bool"),
    "loads keyword": (lambda: fastser.loads(FRAMES, **wrong({"limit": None})),
                      "loads() got an unexpected keyword argument 'limit'"),
    "loads deserialize": (lambda: fastser.loads(FRAMES, deserialize=wrong(0)),
                          "loads() argument 'deserialize' must be bool, not int"),
    "loads limits": (lambda: fastser.loads(FRAMES, limits=wrong({})),
                     "loads() argument 'limits' must be Limits or None, not dict"),
    "unpack_frames limits": (lambda: fastser.unpack_frames(FRAMES[0], limits=wrong(5)),
                             "unpack_frames() argument 'limits' must be Limits or None, not int"),
    "sock.send_msg encoder": (lambda: sock.send_msg(wrong(None), 1, encoder=wrong(5)),
                              "send_msg() argument 'encoder' must be Encoder or None, not int"),
    "sock.recv_msg decoder": (lambda: sock.recv_msg(wrong(None), decoder=wrong(5)),
                              "recv_msg() argument 'decoder' must be Decoder or None, not int"),
    "aio.write_msg encoder": (lambda: asyncio.run(aio.write_msg(wrong(None), 1, wrong(5))),
                              "write_msg() argument 'encoder' must be Encoder or None, not int"),
    "aio.read_msg decoder": (lambda: asyncio.run(aio.read_msg(wrong(None), wrong(5))),
                             "read_msg() argument 'decoder' must be Decoder or None, not int"),
    "Encoder positional": (lambda: fastser.Encoder(*wrong((None,))),
                           "Encoder() takes 0 positional arguments but 1 was given"),
    "Decoder positional": (lambda: fastser.Decoder(*wrong((1, 2))),
                           "Decoder() takes 0 positional arguments but 2 were given"),
    "Limits positional": (lambda: fastser.Limits(*wrong((5,))),
                          "Limits() takes 0 positional arguments but 1 was given"),
    "dumps positional": (lambda: fastser.dumps(1, *wrong((2,))),
                         "dumps() takes 1 positional argument but 2 were given"),
    "loads positional": (lambda: fastser.loads(FRAMES, *wrong((None, 2))),
                         "loads() takes 1 positional argument but 3 were given"),
    "FrameReader limits by position": (
        lambda: fastser.FrameReader(wrong({})),
        "FrameReader() argument 'limits' must be Limits or None, not dict"),
    "FrameReader limits by name": (
        lambda: fastser.FrameReader(limits=wrong(5)),
        "FrameReader() argument 'limits' must be Limits or None, not int"),
    "FrameReader positional": (
        lambda: fastser.FrameReader(*wrong((None, None))),
        "FrameReader() takes from 0 to 1 positional arguments but 2 were given"),
    "FrameReader keyword": (lambda: fastser.FrameReader(**wrong({"limit": None})),
                            "FrameReader() got an unexpected keyword argument 'limit'"),
    "FrameReader limits twice": (lambda: fastser.FrameReader(None, **wrong({"limits": None})),
                                 "FrameReader() got multiple values for argument 'limits'"),
    "serialize on_error": (lambda: fastser.serialize(1, on_error=wrong(None)),
                           "serialize() argument 'on_error' must be str, not NoneType"),
    "serialize keyword": (lambda: fastser.serialize(1, **wrong({"on_eror": "raise"})),
                          "serialize() got an unexpected keyword argument 'on_eror'"),
    "extract_serialize bytes_threshold": (
        lambda: fastser.extract_serialize(1, bytes_threshold=wrong("5")),
        "extract_serialize() argument 'bytes_threshold' must be int, not str"),
    "extract_serialize keyword": (
        lambda: fastser.extract_serialize(1, **wrong({"threshold": 5})),
        "extract_serialize() got an unexpected keyword argument 'threshold'"),
}


@pytest.mark.parametrize("call, message", MESSAGES.values(), ids=list(MESSAGES))
def test_both_builds_name_the_callable_and_the_keyword_in_the_same_words(
        call: Callable[[], object], message: str) -> None:
    with pytest.raises(TypeError) as raised:
        call()
    assert str(raised.value) == message


# Encoder.dumps and Decoder.loads, the hot methods, keep mypyc's one-argument fast path: a
# keyword or a second argument raises TypeError in both builds, each worded its own way
# ("dumps() takes at most 1 argument (2 given)" compiled; docs/design.md, "A precise
# signature words its errors mypyc's way", says what wording them alike would cost).
HOT_METHODS: dict[str, Callable[[], object]] = {
    "Encoder.dumps keyword": lambda: fastser.Encoder().dumps(1, **wrong({"compression": None})),
    "Encoder.dumps positional": lambda: fastser.Encoder().dumps(1, *wrong((2,))),
    "Decoder.loads keyword": lambda: fastser.Decoder().loads(FRAMES, **wrong({"limits": None})),
    "Decoder.loads positional": lambda: fastser.Decoder().loads(FRAMES, *wrong((2,))),
}


@pytest.mark.parametrize("call", HOT_METHODS.values(), ids=list(HOT_METHODS))
def test_the_hot_methods_take_one_argument(call: Callable[[], object]) -> None:
    with pytest.raises(TypeError):
        call()


def test_a_frame_reader_takes_its_limits_by_position_or_by_name() -> None:
    limits = fastser.Limits(max_frames=3)
    for reader in (fastser.FrameReader(limits), fastser.FrameReader(limits=limits)):
        assert reader.limits is limits
    for reader in (fastser.FrameReader(), fastser.FrameReader(None),
                   fastser.FrameReader(limits=None)):
        assert reader.limits == fastser.Limits()


def test_every_documented_keyword_is_taken() -> None:
    # The option names are spelled out in the modules (mypyc's TypedDicts lack their keys
    # at run time): each keyword of the documented signatures must be among them.
    pairs: list[tuple[Callable[..., object], Callable[..., object], object]] = [
        (fastser.dumps, fastser.Encoder, 1), (fastser.loads, fastser.Decoder, FRAMES)]
    for public, options_of, first in pairs:
        keywords = list(inspect.signature(public).parameters.values())[1:]
        assert keywords
        for keyword in keywords:
            public(first, **{keyword.name: keyword.default})
            options_of(**{keyword.name: keyword.default})
    assert fastser.Encoder(default=repr).default is repr
    decoder = fastser.Decoder(open_pickled=True, serialized_factory=fastser.Serialized,
                              lists_as_tuples=True)
    assert (decoder.open_pickled, decoder.serialized_factory, decoder.lists_as_tuples) == \
        (True, fastser.Serialized, True)
    names = ("max_frames", "max_frame_bytes", "max_message_bytes", "max_header_bytes",
             "max_depth")
    limits = fastser.Limits(**dict(zip(names, range(1, 6))))
    assert [getattr(limits, name) for name in names] == [1, 2, 3, 4, 5]


# What a user's `mypy --strict` reports for the same mistakes: the options are typed
# keywords to the type checker (**options: Unpack[...]), not `object`, and a positional
# argument to Encoder, Decoder or Limits is refused as not a `Never` (*args: Never). One
# mistake passes: FrameReader's limits are `*args: Optional[Limits]` to it, so a second
# positional (line 21) is refused at run time only.
USER_CODE = """\
import fastser
from fastser import sock
fastser.Encoder(compresion="lz4")
fastser.Encoder(compression=True)
fastser.Decoder(deserialise=True)
fastser.Decoder(limits={})
fastser.Limits(max_frame=3)
fastser.Limits(max_frames="5")
fastser.dumps(1, compresion="lz4")
fastser.dumps(1, compression=True)
fastser.loads([b""], limit=None)
fastser.loads([b""], deserialize=0)
fastser.Encoder(default=repr, compression="lz4", frame_split_size=2**20)
fastser.Decoder(lists_as_tuples=True, limits=fastser.Limits(max_depth=3))
sock.send_msg(wrong, 1, encoder=fastser.Decoder())
fastser.Encoder(None)
fastser.dumps(1, 2)
fastser.FrameReader({})
fastser.FrameReader(limits=5)
fastser.FrameReader(limit=None)
fastser.FrameReader(None, None)
fastser.FrameReader(fastser.Limits(max_frames=2))
fastser.FrameReader(limits=None)
fastser.serialize(1, on_error=None)
fastser.extract_serialize(1, bytes_threshold="5")
"""
USER_ERRORS = [
    '3: error: Unexpected keyword argument "compresion" for "Encoder"; did you mean '
    '"compression"?  [call-arg]',
    '4: error: Argument "compression" to "Encoder" has incompatible type "bool"; expected '
    '"str | None"  [arg-type]',
    '5: error: Unexpected keyword argument "deserialise" for "Decoder"; did you mean '
    '"deserialize"?  [call-arg]',
    '6: error: Argument "limits" to "Decoder" has incompatible type "dict[Never, Never]"; '
    'expected "Limits | None"  [arg-type]',
    '7: error: Unexpected keyword argument "max_frame" for "Limits"; did you mean '
    '"max_frames"?  [call-arg]',
    '8: error: Argument "max_frames" to "Limits" has incompatible type "str"; expected "int"  '
    '[arg-type]',
    '9: error: Unexpected keyword argument "compresion" for "dumps"; did you mean '
    '"compression"?  [call-arg]',
    '10: error: Argument "compression" to "dumps" has incompatible type "bool"; expected '
    '"str | None"  [arg-type]',
    '11: error: Unexpected keyword argument "limit" for "loads"; did you mean "limits"?  '
    '[call-arg]',
    '12: error: Argument "deserialize" to "loads" has incompatible type "int"; expected '
    '"bool"  [arg-type]',
    '15: error: Name "wrong" is not defined  [name-defined]',
    '15: error: Argument "encoder" to "send_msg" has incompatible type "Decoder"; expected '
    '"Encoder | None"  [arg-type]',
    '16: error: Argument 1 to "Encoder" has incompatible type "None"; expected "Never"  '
    '[arg-type]',
    '17: error: Too many positional arguments for "dumps"  [call-arg]',
    '17: error: Argument 2 to "dumps" has incompatible type "int"; expected '
    '"Sequence[str] | None"  [arg-type]',
    '18: error: Argument 1 to "FrameReader" has incompatible type "dict[Never, Never]"; '
    'expected "Limits | None"  [arg-type]',
    '19: error: Argument "limits" to "FrameReader" has incompatible type "int"; expected '
    '"Limits | None"  [arg-type]',
    '20: error: Unexpected keyword argument "limit" for "FrameReader"; did you mean '
    '"limits"?  [call-arg]',
    '24: error: Argument "on_error" to "serialize" has incompatible type "None"; expected '
    '"Literal[\'raise\', \'message\']"  [arg-type]',
    '25: error: Argument "bytes_threshold" to "extract_serialize" has incompatible type '
    '"str"; expected "int"  [arg-type]',
]


def test_mypy_strict_reports_a_misspelled_keyword_and_a_wrong_type(
        tmp_path: pathlib.Path) -> None:
    mypy_api = pytest.importorskip("mypy.api")
    user = tmp_path / "user.py"
    user.write_text(USER_CODE)
    out, err, status = mypy_api.run(
        ["--strict", "--follow-imports=silent", "--no-error-summary", "--no-pretty",
         "--hide-error-context", "--cache-dir", str(tmp_path / "cache"), str(user)])
    reported = [line.split("user.py:", 1)[1] for line in out.splitlines()
                if ": error:" in line]
    assert reported == USER_ERRORS, out + err
    assert status == 1
