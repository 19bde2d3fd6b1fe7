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

import dask.config
from distributed.system import MEMORY_LIMIT

from fastser.codec.decoder import Decoder
from fastser.codec.encoder import Encoder
from fastser.codec.payload_frames import PayloadFrames
from fastser.dask.bridge import (DISTRIBUTED_FAMILY, distributed_to_fastser, families,
                                 fastser_to_distributed, open_distributed)
from fastser.errors import DeserializationError, FastserError
from fastser.families.serialize import deserialize_within
from fastser.frame_types import Frame, Header
from fastser.frames.adaptive import LinkRate
from fastser.frames.compression import AUTO_ORDER, COMPRESSIONS, available_compressions
from fastser.headers import HEADER_SERIALIZER
from fastser.limits import Limits

# Frames and messages as large as distributed's own reader takes (half the memory), never
# less than fastser's defaults; a prelude announcing more is refused before any allocation.
DASK_LIMITS: Final = Limits(max_frame_bytes=max(2**30, int(MEMORY_LIMIT) // 2),
                            max_message_bytes=max(2**32, int(MEMORY_LIMIT) // 2))


# The dask config key of fastser://'s compression: "adaptive" (the default), none (False,
# None or "none"), or "lz4", "zstd" or "zlib", used wherever a frame's sample shrinks 30 %.
COMPRESSION_KEY: Final = "distributed.comm.fastser.compression"
# The handshake key that lists the compressions a process reads, and the key of the agreed
# options that holds the peer's list.
READS_KEY: Final = "fastser-reads"
PEER_READS_KEY: Final = "fastser-peer-reads"
NONE: Final = (None, False, "none", "None", "false", "False")


def compression_setting() -> Any:
    """fastser://'s compression setting (COMPRESSION_KEY), checked."""
    setting = dask.config.get(COMPRESSION_KEY, default="adaptive")
    if setting in NONE:
        return None
    if setting != "adaptive" and setting not in COMPRESSIONS:
        raise ValueError(f"{COMPRESSION_KEY} is {setting!r}: use 'adaptive', none, "
                         f"{', '.join(repr(name) for name in COMPRESSIONS)}")
    return setting


def peer_reads(remote_info: Mapping[str, Any]) -> list[str]:
    """The compressions a peer's handshake says it reads, of those fastser knows (none, from
    a peer that does not say: it is sent nothing compressed). A peer's list costs one pass
    over it, and what is kept holds at most the known names."""
    reads = remote_info.get(READS_KEY)
    if not isinstance(reads, (list, tuple)):
        return []
    said = {item for item in reads if type(item) is str}
    return [name for name in COMPRESSIONS if name in said]


def make_encoder(serializers: Optional[Sequence[str]], on_error: str,
                 context: Mapping[str, Any], frame_split_size: int,
                 link: Optional[LinkRate] = None, same_host: bool = False) -> Encoder:
    """The Encoder for Comm.write(msg, serializers, on_error) once the handshake agreed on
    `context`, whose PEER_READS_KEY says what the peer can inflate: never anything else.
    Compression as COMPRESSION_KEY says; "adaptive" compresses a frame where that makes it
    arrive sooner on `link` (the peer host's), with lz4 or zstd, and never for a peer on
    the `same_host`: its inflating would take the very cores the sender compresses on, as
    distributed reasons for its own compression. Where COMPRESSION_KEY is not set and
    distributed.comm.compression agreed on a compressor, that one is used, as tcp:// would."""
    reads: Sequence[str] = context.get(PEER_READS_KEY) or ()
    readable = set(reads) & set(available_compressions())
    setting = compression_setting()
    agreed = context.get("compression")
    if dask.config.get(COMPRESSION_KEY, default=None) is None and agreed in COMPRESSIONS:
        setting = agreed
    compression: Optional[str] = None
    if setting == "adaptive" and same_host:
        setting = None
    if setting == "adaptive":
        choices = [name for name in AUTO_ORDER if name in readable]
        compression = "adaptive" if len(choices) == len(AUTO_ORDER) else \
            choices[0] if choices else None
    elif setting in readable:
        compression = setting
        link = None
    return Encoder(serializers=families(serializers) or None,
                   on_error="raise" if on_error == "raise" else "message", context=context,
                   frame_split_size=frame_split_size, default=distributed_to_fastser,
                   compression=compression, link=link if compression is not None else None)


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
