"""The established fastser:// (fastser-tls://) connection: distributed's TCP (TLS) comm with
Comm.read/write and the handshake replaced, and the connectors that open one.

Uncompiled: it subclasses distributed's TCP classes and keeps their connection handling.
Sits on frames.stream (the prelude), transport's receive buffers, and dask.codecs (which
Encoder and Decoder a read or write uses).

Rule: each side opens a connection with MAGIC, so a peer speaking another protocol is
refused at its first 8 bytes; every count and length read after it is checked against
DASK_LIMITS before anything is allocated for it.
"""

import logging
from collections.abc import Callable, Sequence
from typing import Any, Final, Optional, cast

from distributed.comm.addressing import get_address_host
from distributed.comm.core import CommClosedError
import distributed.comm.utils as comm_utils
from distributed.comm.tcp import (TCP, TLS, TCPConnector, TLSConnector,
                                  convert_stream_closed_error)
from distributed.sizeof import safe_sizeof
from distributed.utils import offload
from tornado.iostream import IOStream, StreamClosedError

from fastser.codec.encoder import Encoder
from fastser.codec.wire import WIRE_VERSION
from fastser.dask.codecs import (DASK_LIMITS, PEER_READS_KEY, READS_KEY, MessageDecoder,
                                 make_decoder, make_encoder, peer_reads)
from fastser.errors import DeserializationError, FrameError, RefusedFamilyError, SenderError
from fastser.frame_types import Frame
from fastser.frames.adaptive import LinkRate
from fastser.frames.compression import available_compressions
from fastser.frames.stream import coalesce, pack_frames_prelude, reader_for
from fastser.limits import Limits
from fastser.transport.receive_buffer import populate, receive_buffer
from fastser.transport.send_clock import TIMED_BYTES, SendClock, link_to
from fastser.transport.sock import MAX_IO_BYTES

logger = logging.getLogger(__name__)

# The first 8 bytes each side writes. Read by distributed's tcp:// framing as a message
# length it is, about 3.2e16 bytes: a tcp:// listener's reader fails at once instead of
# waiting, and no tcp:// peer's first 8 bytes (see listener.TCP_GREETING_BYTES) are MAGIC.
MAGIC: Final = b"fastser\x00"
# fastser's wire version, added to the handshake. Its "pickle-protocol" key is kept and
# agreed as distributed does (the scheduler asks for 4), but fastser's pickle family writes
# protocol 5 (out-of-band buffers), which every Python fastser runs on reads.
WIRE_KEY: Final = "fastser-wire"


async def read_frames(stream: IOStream, limits: Limits) -> list[memoryview]:
    """One message's frames from `stream`, read in place into the buffer a FrameReader
    hands out (frames.stream: it parses the prelude and checks it against `limits` before
    the buffer is allocated; transport.receive_buffer: numpy.empty's, or private anonymous
    memory from 32 MiB on), each of 64 KiB or more at a 16-byte aligned offset: the frames
    are writeable, arrays on them aligned, and the pieces of a split payload adjacent, so
    loads joins them without a copy."""
    reader = reader_for(limits)
    # Looked up here, not bound once: tests and benchmarks/comm_receive.py replace them.
    reader.allocate = receive_buffer
    reader.populate = populate
    # A read per frame of 64 KiB or more, of at most READ_BYTES (FrameReader.span_end):
    # tornado fills smaller reads faster. tcp:// / fastser:// in benchmarks/comm_receive.py,
    # with a read per run of adjacent frames of up to 1 GiB, of up to 1 MiB, then a read per
    # frame of up to 1 MiB: 200 frames of 64 KiB 1.62x, 1.86x, 2.16x; 10 of 100 KB 1.50x,
    # 2.29x, 2.29x; 50 arrays of 1 MiB 1.03x, 1.10x, 1.10x (measured before populate).
    while True:
        span = reader.next_buffer()
        # tornado annotates a bytearray; it takes any writable buffer. It fills the span.
        await stream.read_into(cast(bytearray, span))
        frames = reader.received(span.nbytes)
        if frames is not None:
            # Zero-copy: the frames are slices of the one buffer the bytes were read into.
            return frames


def large(msg: Any, threshold: int) -> bool:
    """Whether distributed would encode `msg` off the event loop: its estimated size, by
    dask's sizeof (which samples large collections), is over `threshold` or unknown."""
    size: int = safe_sizeof(msg, default_size=-1)
    return size == -1 or size > threshold


def raised_eof(exc: BaseException) -> bool:
    """Whether EOFError is among the causes of `exc`."""
    cause: Optional[BaseException] = exc
    while cause is not None:
        if isinstance(cause, EOFError):
            return True
        cause = cause.__cause__
    return False


def write_frames(stream: IOStream, frames: list[Frame], prefix: bytes,
                 clock: Optional[SendClock] = None) -> int:
    """Queue `prefix`, the prelude and `frames` on `stream` (small frames joined, large ones
    as views: never copied). Like distributed's tcp:// comm, does not wait for the send;
    `clock` times it if it is large (until tornado has handed its last byte to the kernel)."""
    buffers = coalesce(prefix + pack_frames_prelude(frames), frames)
    written = sum([buffer.nbytes for buffer in buffers])
    if written < TIMED_BYTES:
        clock = None
    if clock is not None:
        # Before the first write: tornado hands the kernel what it can at once, and the
        # clock must not count those bytes both as queued and as already in the kernel.
        clock.queued(written)
    last: Any = None
    for buffer in buffers:
        size = buffer.nbytes
        for start in range(0, size, MAX_IO_BYTES):  # OpenSSL and C ints: < 2 GiB a call
            last = stream.write(buffer[start:start + MAX_IO_BYTES])
    if clock is not None:
        timed = clock
        last.add_done_callback(lambda future: timed.flushed(
            not future.cancelled() and future.exception() is None))
    return written


class FastserComm:
    """Comm.read/write and the handshake of fastser:// (mixed into distributed's TCP/TLS)."""

    # Provided by the distributed class this is mixed into.
    stream: Optional[IOStream]
    deserialize: bool
    allow_offload: bool
    handshake_options: dict[str, Any]
    local_info: dict[str, Any]
    remote_info: dict[str, Any]
    max_shard_size: int
    peer_address: str
    same_host: bool  # distributed's rule: the peer's address is this comm's own
    _closed: bool
    abort: Callable[[], None]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.greeted = False  # MAGIC written
        self.greeting_seen = False  # MAGIC read
        self.encoders: dict[tuple[Any, ...], Encoder] = {}
        self.encoders_options: Optional[dict[str, Any]] = None  # the options they were made for
        self.decoders: dict[Optional[tuple[str, ...]], MessageDecoder] = {}
        self.clock: Optional[SendClock] = None  # made with the first encoder

    def encoder(self, serializers: Optional[Sequence[str]], on_error: str) -> Encoder:
        options = self.handshake_options
        if options is not self.encoders_options:  # the handshake has completed since
            self.encoders.clear()
            self.encoders_options = options
        key = (None if serializers is None else tuple(serializers), on_error)
        encoder = self.encoders.get(key)
        if encoder is None:
            context = {"sender": self.local_info, "recipient": self.remote_info, **options}
            encoder = self.encoders[key] = make_encoder(serializers, on_error, context,
                                                        self.max_shard_size, self.link(),
                                                        self.same_host)
        return encoder

    def link(self) -> Optional[LinkRate]:
        """The LinkRate of the peer's host, which this comm's large sends feed."""
        if self.clock is None:
            stream = self.stream
            try:
                host = get_address_host(self.peer_address)
                sock = stream.socket if stream is not None else None
            except (ValueError, AttributeError, OSError):
                return None
            self.clock = SendClock(link_to(host), sock)
        return self.clock.link

    def decoder(self, deserializers: Optional[Sequence[str]]) -> "MessageDecoder":
        # A reader that opens no payloads (the scheduler) reads alike whatever it is told.
        key = None if deserializers is None or not self.deserialize else tuple(deserializers)
        decoder = self.decoders.get(key)
        if decoder is None:
            decoder = self.decoders[key] = make_decoder(self.deserialize, key)
        return decoder

    async def read(self, deserializers: Optional[Sequence[str]] = None) -> Any:
        stream = self.stream
        if stream is None:
            raise CommClosedError()
        try:
            if not self.greeting_seen:
                greeting = await stream.read_bytes(len(MAGIC))
                if greeting != MAGIC:
                    raise FrameError(
                        f"the peer does not speak fastser: its first bytes are {greeting!r}, "
                        f"not {MAGIC!r} (a tcp:// peer on a fastser:// address, or the other "
                        "way round?)")
                self.greeting_seen = True
            frames = await read_frames(stream, DASK_LIMITS)
        except StreamClosedError as exc:
            self.stream = None
            self._closed = True
            convert_stream_closed_error(self, exc)
        except FrameError as exc:
            logger.warning("%s: closed: %s", self, exc)
            self.abort()
            raise CommClosedError(f"in {self}: {exc}") from exc
        except BaseException:
            # What was read is unknown: the stream cannot be used again (as in TCP.read).
            self.abort()
            raise
        # The whole message was read: a decode error leaves the stream usable.
        decoder = self.decoder(deserializers)
        try:
            # Looked up on each read, as distributed does (its tests change it).
            threshold = comm_utils.OFFLOAD_THRESHOLD
            if self.deserialize and self.allow_offload and threshold and \
                    sum(frame.nbytes for frame in frames) > threshold:
                # As distributed does: a large message is opened in its offload thread, so
                # unpickling a large object does not stall the event loop (arrays are views).
                return await offload(decoder.loads, frames)
            return decoder.loads(frames)
        except (RefusedFamilyError, SenderError) as exc:
            # distributed raises TypeError for both (its deserialize() and its "error"
            # family), and its callers catch that: Client(deserializers=...) relies on it.
            raise TypeError(str(exc)) from exc
        except DeserializationError as exc:
            if not raised_eof(exc):
                raise
            # As TCP.read: a payload that ends too early (EOFError while opening it) may be
            # a stream garbled in transit, so the comm is closed rather than read again.
            self.abort()
            raise CommClosedError(f"in {self}: aborted stream on truncated data") from exc

    async def write(self, msg: Any, serializers: Optional[Sequence[str]] = None,
                    on_error: Optional[str] = "message") -> int:
        stream = self.stream
        if stream is None:
            raise CommClosedError()
        encoder = self.encoder(serializers, on_error or "message")
        threshold = comm_utils.OFFLOAD_THRESHOLD
        if self.allow_offload and threshold and large(msg, threshold):
            # As TCP.write (to_frames): a large message is encoded in distributed's offload
            # thread, so pickling a large object does not stall the event loop.
            frames = await offload(encoder.dumps, msg)
        else:
            frames = encoder.dumps(msg)
        prefix = b"" if self.greeted else MAGIC
        try:
            written = write_frames(stream, frames, prefix, self.clock)
            self.greeted = True
        except StreamClosedError as exc:
            self.stream = None
            self._closed = True
            convert_stream_closed_error(self, exc)
        except BaseException:
            self.abort()
            raise
        return written

    def handshake_info(self) -> dict[str, Any]:
        info: dict[str, Any] = super().handshake_info()  # type: ignore[misc]  # Comm's
        info[WIRE_KEY] = WIRE_VERSION
        info[READS_KEY] = available_compressions()
        return info

    @staticmethod
    def handshake_configuration(local: dict[str, Any], remote: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = TCP.handshake_configuration(local, remote)
        theirs = remote.get(WIRE_KEY)
        if theirs != local[WIRE_KEY]:
            raise ValueError(f"the peer writes fastser wire version {theirs}, this process "
                             f"{local[WIRE_KEY]}: install the same fastser everywhere")
        out[WIRE_KEY] = WIRE_VERSION
        out[PEER_READS_KEY] = peer_reads(remote)
        return out


class FastserTCP(FastserComm, TCP):
    """An established fastser:// connection."""


class FastserTLS(FastserComm, TLS):
    """An established fastser-tls:// connection."""


class FastserConnector(TCPConnector):
    prefix = "fastser://"
    comm_class = FastserTCP


class FastserTLSConnector(TLSConnector):
    prefix = "fastser-tls://"
    comm_class = FastserTLS
