"""The Encoder and Decoder a fastser:// comm uses for Comm.write(serializers, on_error) and
Comm.read(deserializers), and the limits its reads are held to.

Strategy: distributed's four wrappers are mapped onto fastser's by Encoder(default=)
(anything else distributed would have pickled becomes ToPickle), and back by the Decoder:
workers and clients decode with deserialize=True; the scheduler (deserialize=False) keeps
data payloads as distributed's Serialized and opens ToPickle (Decoder(open_pickled=True)).
The mapping, and the two bridge families that let a payload cross between fastser:// and
tcp:// with its frames, are in dask.bridge.
"""

from collections.abc import Mapping, Sequence
from typing import Any, Final, Optional, Union

from distributed.system import MEMORY_LIMIT

from fastser.codec.decoder import Decoder
from fastser.codec.encoder import Encoder
from fastser.codec.payload_frames import PayloadFrames
from fastser.dask.bridge import (DISTRIBUTED_FAMILY, distributed_to_fastser, families,
                                 fastser_to_distributed, open_distributed)
from fastser.errors import DeserializationError, FastserError
from fastser.families.serialize import deserialize_within
from fastser.frame_types import Frame, Header
from fastser.frames.compression import available_compressions
from fastser.headers import HEADER_SERIALIZER
from fastser.limits import Limits

# Frames and messages as large as distributed's own reader takes (half the memory), never
# less than fastser's defaults; a prelude announcing more is refused before any allocation.
DASK_LIMITS: Final = Limits(max_frame_bytes=max(2**30, int(MEMORY_LIMIT) // 2),
                            max_message_bytes=max(2**32, int(MEMORY_LIMIT) // 2))


def make_encoder(serializers: Optional[Sequence[str]], on_error: str,
                 context: Mapping[str, Any], frame_split_size: int) -> Encoder:
    """The Encoder for Comm.write(msg, serializers, on_error) once the handshake agreed on
    `context` (its "compression": distributed's name, used when fastser has it too)."""
    compression = context.get("compression")
    if compression not in available_compressions():  # distributed's names are fastser's
        compression = None
    return Encoder(serializers=families(serializers) or None,
                   on_error="raise" if on_error == "raise" else "message", context=context,
                   frame_split_size=frame_split_size, default=distributed_to_fastser,
                   compression=compression)


class PayloadOpener:
    """Decoder(serialized_factory=) for one message read with distributed's `deserializers`:
    a data payload opened as distributed's deserialize() would, by a family those names
    allow (a payload bridged from tcp:// by distributed's own check, on its own header),
    each compressed frame within what the message's earlier ones left of DASK_LIMITS."""

    def __init__(self, deserializers: tuple[str, ...]) -> None:
        self.deserializers = deserializers
        self.names = families(deserializers)
        # Its msgpack payloads' own object budget (the header's is the decoder's).
        self.budget = PayloadFrames([], DASK_LIMITS, 0)

    def __call__(self, header: Header, frames: list[Frame]) -> Any:
        header, frames = self.budget.inflate_payload(header, frames)
        if header.get(HEADER_SERIALIZER) == DISTRIBUTED_FAMILY:
            try:
                return open_distributed(header, frames, self.deserializers)
            except FastserError:
                raise
            except Exception as exc:
                raise DeserializationError(
                    f"the {DISTRIBUTED_FAMILY!r} family failed to deserialize a payload: "
                    f"{type(exc).__name__}: {exc}") from exc
        return deserialize_within(header, frames, self.names, DASK_LIMITS.max_frame_bytes)


class RestrictedDecoder:
    """Comm.read(deserializers=[...]) on a worker or client, read as tcp:// reads it:
    ToPickle parts (distributed's "__Pickled__") are always opened, and a data payload only
    by a family the list names, pickle's included. fastser's Decoder has one list for both,
    so payloads are left to PayloadOpener, as the scheduler's are to its factory."""

    def __init__(self, deserializers: tuple[str, ...]) -> None:
        self.deserializers = deserializers

    def loads(self, frames: Sequence[Frame]) -> Any:
        # A Decoder per message, for the message's decompression budget; readers with a
        # list of deserializers are few (a Client told so), and its set-up is small.
        return Decoder(deserialize=False, limits=DASK_LIMITS, open_pickled=True,
                       serialized_factory=PayloadOpener(self.deserializers),
                       lists_as_tuples=True).loads(frames)


MessageDecoder = Union[Decoder, RestrictedDecoder]


def make_decoder(deserialize: bool, deserializers: Optional[Sequence[str]]) -> MessageDecoder:
    """The decoder for Comm.read(deserializers) (distributed's family names): workers and
    clients open payloads; the scheduler (deserialize=False) keeps data payloads as
    distributed's Serialized. Both open ToPickle, whatever the deserializers, as
    distributed's loads does. Lists come back as tuples, as tcp:// delivers them:
    distributed's code relies on it (ForwardOutput's print events, for one)."""
    if not deserialize:
        return Decoder(deserialize=False, limits=DASK_LIMITS, open_pickled=True,
                       serialized_factory=fastser_to_distributed, lists_as_tuples=True)
    if deserializers is None:
        return Decoder(limits=DASK_LIMITS, lists_as_tuples=True)
    return RestrictedDecoder(tuple(deserializers))
