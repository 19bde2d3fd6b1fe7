"""The compiled bodies of the public functions fastser.dumps and fastser.loads (fastser.api
binds them, with their docstrings): a shared Encoder/Decoder for the default options, also
used by the transports, a new one otherwise. Encoder and Decoder are safe to share between
threads.
"""

from collections.abc import Mapping, Sequence
from typing import Any, Final, Optional

from fastser.codec.decoder import Decoder
from fastser.codec.encoder import DEFAULT_SPLIT_SIZE, Encoder
from fastser.families.serialize import OnError
from fastser.frame_types import Frame
from fastser.limits import Limits

DEFAULT_ENCODER: Final = Encoder()
DEFAULT_DECODER: Final = Decoder()


def dumps(msg: Any, *, serializers: Optional[Sequence[str]] = None,
          on_error: OnError = "raise", context: Optional[Mapping[str, Any]] = None,
          frame_split_size: int = DEFAULT_SPLIT_SIZE,
          compression: Optional[str] = None) -> list[Frame]:
    if (serializers is None and on_error == "raise" and context is None
            and frame_split_size == DEFAULT_SPLIT_SIZE and compression is None):
        return DEFAULT_ENCODER.dumps(msg)
    return Encoder(serializers=serializers, on_error=on_error, context=context,
                   frame_split_size=frame_split_size, compression=compression).dumps(msg)


def loads(frames: Sequence[Frame], *, deserialize: bool = True,
          deserializers: Optional[Sequence[str]] = None,
          limits: Optional[Limits] = None) -> Any:
    # `is True`: any other value goes to Decoder, which checks it (as compiled code does).
    if deserialize is True and deserializers is None and limits is None:
        return DEFAULT_DECODER.loads(frames)
    return Decoder(deserialize=deserialize, deserializers=deserializers,
                   limits=limits).loads(frames)
