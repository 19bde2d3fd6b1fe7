"""dumps/loads as functions: a shared Encoder/Decoder for the default options, a new one
otherwise. Encoder and Decoder are safe to share between threads.

The options are taken as **options (fastser/arguments.py, "Options"): a call without any
goes to the shared Encoder or Decoder, so the hot path tests one dict for emptiness. The
documented signatures, which the type checker sees, are api.dumps and api.loads. Positional
arguments after the first are gathered as *args, only to be refused in Python's words
(fastser/arguments.py, "Positional arguments").
"""

from collections.abc import Sequence
from typing import Any, Final, Never, Unpack

from fastser.arguments import too_many_positional
from fastser.codec import decoder as _decoder, encoder as _encoder
from fastser.codec.decoder import Decoder, LoadsOptions
from fastser.codec.encoder import DEFAULT_SPLIT_SIZE, DumpsOptions, Encoder
from fastser.frame_types import Frame

DEFAULT_ENCODER: Final = Encoder()
DEFAULT_DECODER: Final = Decoder()


def dumps(msg: Any, *args: Never, **options: Unpack[DumpsOptions]) -> list[Frame]:
    if args:
        raise too_many_positional("dumps", 1, 1, 1 + len(args))
    if not options:
        return DEFAULT_ENCODER.dumps(msg)
    # Named for dumps before Encoder checks them again (for itself).
    _encoder.check_options("dumps", options, _encoder.DUMPS_OPTIONS)
    if (options.get("serializers") is None and options.get("on_error", "raise") == "raise"
            and options.get("context") is None and options.get("compression") is None
            and options.get("frame_split_size", DEFAULT_SPLIT_SIZE) == DEFAULT_SPLIT_SIZE):
        return DEFAULT_ENCODER.dumps(msg)  # the defaults, given by name
    return Encoder(**options).dumps(msg)


def loads(frames: Sequence[Frame], *args: Never, **options: Unpack[LoadsOptions]) -> Any:
    if args:
        raise too_many_positional("loads", 1, 1, 1 + len(args))
    if not options:
        return DEFAULT_DECODER.loads(frames)
    _decoder.check_options("loads", options, _decoder.LOADS_OPTIONS)
    if (options.get("deserialize", True) is True and options.get("deserializers") is None
            and options.get("limits") is None):
        return DEFAULT_DECODER.loads(frames)  # the defaults, given by name
    return Decoder(**options).loads(frames)
