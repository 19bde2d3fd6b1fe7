"""fastser:// and fastser-tls:// — distributed comm backends whose messages are fastser's.

Uncompiled: it subclasses distributed's TCP classes and keeps their connection handling;
only Comm.read/write change. Sits on the codec, frames.stream and transport's receive buffers.

Rule: each side opens a connection with MAGIC, so a peer speaking another protocol is
refused at its first 8 bytes; every count and length read after it is checked against
DASK_LIMITS before anything is allocated for it. The listener writes nothing before the
peer's first 8 bytes: MAGIC makes a fastser:// comm, distributed's tcp:// (tls://) framing
one of distributed's own comms on the same stream (one port serves both; see OnePort).

Strategy: distributed's four wrappers are mapped onto fastser's by Encoder(default=)
(anything else distributed would have pickled becomes ToPickle), and back by the Decoder:
workers and clients decode with deserialize=True; the scheduler (deserialize=False) keeps
data payloads as distributed's Serialized and opens ToPickle (Decoder(open_pickled=True)).
The mapping, and the two bridge families that let a payload cross between fastser:// and
tcp:// with its frames, are in dask.bridge; importing this module registers them.
"""

import asyncio
import logging
import struct
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from typing import Any, Final, Optional, Union, cast

import dask.config
from dask.utils import parse_timedelta
from distributed.comm.addressing import get_address_host, unparse_host_port
from distributed.comm.core import CommClosedError
import distributed.comm.utils as comm_utils
from distributed.comm.tcp import (TCP, TLS, TCPBackend, TCPConnector, TCPListener,
                                  TLSBackend, TLSConnector, TLSListener,
                                  convert_stream_closed_error, get_stream_address)
from distributed.sizeof import safe_sizeof
from distributed.system import MEMORY_LIMIT
from distributed.utils import get_ip, offload
import tornado
from tornado.iostream import IOStream, StreamClosedError

from fastser.buffers import Frame, Header
from fastser.codec.decoder import Decoder
from fastser.codec.encoder import Encoder
from fastser.codec.payload_frames import PayloadFrames
from fastser.codec.wire import WIRE_VERSION
from fastser.dask.bridge import (DISTRIBUTED_FAMILY, distributed_to_fastser, families,
                                 fastser_to_distributed, open_distributed)
from fastser.errors import (DeserializationError, FastserError, FrameError, RefusedFamilyError,
                            SenderError)
from fastser.families.serialize import deserialize_within
from fastser.frames.compression import available_compressions
from fastser.frames.stream import FrameReader, coalesce, pack_frames_prelude
from fastser.headers import HEADER_SERIALIZER
from fastser.limits import Limits
from fastser.transport.receive_buffer import populate, receive_buffer
from fastser.transport.sock import MAX_IO_BYTES

logger = logging.getLogger(__name__)

# The first 8 bytes each side writes. Read by distributed's tcp:// framing as a message
# length it is, about 3.2e16 bytes: a tcp:// listener's reader fails at once instead of
# waiting, and no tcp:// peer's first 8 bytes (see TCP_GREETING_BYTES) are MAGIC.
MAGIC: Final = b"fastser\x00"
# The most a tcp:// (tls://) peer of a fastser:// listener may announce in its first 8 bytes
# (distributed's length of its first message, native byte order as distributed writes it).
# That message is its handshake, a dict of three short keys (about 100 bytes); distributed's
# reader would reserve whatever is announced before reading it.
TCP_GREETING_BYTES: Final = 2**16
# The dask config key that lets a fastser:// listener serve tcp:// peers (tls:// on
# fastser-tls://) on its port; False refuses them with one log line.
ACCEPT_TCP_KEY: Final = "distributed.comm.fastser.accept-tcp"
# fastser's wire version, added to the handshake. Its "pickle-protocol" key is kept and
# agreed as distributed does (the scheduler asks for 4), but fastser's pickle family writes
# protocol 5 (out-of-band buffers), which every Python fastser runs on reads.
WIRE_KEY: Final = "fastser-wire"
# Frames and messages as large as distributed's own reader takes (half the memory), never
# less than fastser's defaults; a prelude announcing more is refused before any allocation.
DASK_LIMITS: Final = Limits(max_frame_bytes=max(2**30, int(MEMORY_LIMIT) // 2),
                            max_message_bytes=max(2**32, int(MEMORY_LIMIT) // 2))


async def read_frames(stream: IOStream, limits: Limits) -> list[memoryview]:
    """One message's frames from `stream`, read in place into the buffer a FrameReader
    hands out (frames.stream: it parses the prelude and checks it against `limits` before
    the buffer is allocated; transport.receive_buffer: numpy.empty's, or private anonymous
    memory from 32 MiB on), each of 64 KiB or more at a 16-byte aligned offset: the frames
    are writeable, arrays on them aligned, and the pieces of a split payload adjacent, so
    loads joins them without a copy."""
    reader = FrameReader(limits)
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


def write_frames(stream: IOStream, frames: list[Frame], prefix: bytes) -> int:
    """Queue `prefix`, the prelude and `frames` on `stream` (small frames joined, large ones
    as views: never copied). Like distributed's tcp:// comm, does not wait for the send."""
    written = 0
    for buffer in coalesce(prefix + pack_frames_prelude(frames), frames):
        size = buffer.nbytes
        for start in range(0, size, MAX_IO_BYTES):  # OpenSSL and C ints: < 2 GiB a call
            stream.write(buffer[start:start + MAX_IO_BYTES])
        written += size
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
    _closed: bool
    abort: Callable[[], None]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.greeted = False  # MAGIC written
        self.greeting_seen = False  # MAGIC read
        self.encoders: dict[tuple[Any, ...], Encoder] = {}
        self.encoders_options: Optional[dict[str, Any]] = None  # the options they were made for
        self.decoders: dict[Optional[tuple[str, ...]], MessageDecoder] = {}

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
                                                        self.max_shard_size)
        return encoder

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
            written = write_frames(stream, frames, prefix)
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
        return info

    @staticmethod
    def handshake_configuration(local: dict[str, Any], remote: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = TCP.handshake_configuration(local, remote)
        theirs = remote.get(WIRE_KEY)
        if theirs != local[WIRE_KEY]:
            raise ValueError(f"the peer writes fastser wire version {theirs}, this process "
                             f"{local[WIRE_KEY]}: install the same fastser everywhere")
        out[WIRE_KEY] = WIRE_VERSION
        return out


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


class WorkerHost:
    """A worker's listener advertises the address of the interface that routes to its
    scheduler, as on tcp://: distributed's Worker passes that as default_host only when its
    protocol is "tcp" or "tls" (Worker.start_unsafe), so here it is found from the worker
    the listener serves. Without it a worker listening on all interfaces advertises the
    default route's address, which on a host with several interfaces is the wrong one."""

    default_host: Optional[str]

    def __init__(self, address: str, comm_handler: Callable[..., Any], *args: Any,
                 **kwargs: Any) -> None:
        super().__init__(address, comm_handler, *args, **kwargs)  # type: ignore[call-arg]  # TCPListener's
        if self.default_host is None:
            self.default_host = scheduler_route(comm_handler)


def scheduler_route(comm_handler: Callable[..., Any]) -> Optional[str]:
    """The local IP towards the scheduler of the Worker whose handler `comm_handler` is."""
    from distributed.worker import Worker  # the worker module is not needed before this

    server = getattr(comm_handler, "__self__", None)
    if not isinstance(server, Worker):
        return None
    host: str = get_ip(get_address_host(server.scheduler.address))
    return host


# When the connection being handled must have completed its handshake (the event loop's
# clock): set as each accepted connection's task starts, so TLS's handshake and fastser's
# share one deadline.
HANDSHAKE_DEADLINE: ContextVar[Optional[float]] = ContextVar("HANDSHAKE_DEADLINE", default=None)


class HandshakeFailed(Exception):
    """A connection closed by the listener before its handshake completed (the reason)."""


def handshake_seconds_left() -> float:
    """What is left of distributed.comm.timeouts.connect for the connection being handled."""
    loop = asyncio.get_running_loop()
    deadline = HANDSHAKE_DEADLINE.get()
    if deadline is None:
        deadline = loop.time() + parse_timedelta(
            dask.config.get("distributed.comm.timeouts.connect"), default="seconds")
        HANDSHAKE_DEADLINE.set(deadline)
    return max(0.0, deadline - loop.time())


def drop_tracebacks(exc: BaseException) -> None:
    """Clear the tracebacks of `exc` and of the exceptions it was raised from or during."""
    seen: set[int] = set()
    stack: list[Optional[BaseException]] = [exc]
    while stack:
        error = stack.pop()
        if error is None or id(error) in seen:
            continue
        seen.add(id(error))
        error.__traceback__ = None
        stack.extend((error.__cause__, error.__context__))


class HandshakeDeadline:
    """A connection that has not completed its greeting and handshake (and TLS's, on
    fastser-tls://) within distributed.comm.timeouts.connect of its acceptance is closed,
    and so is one whose handshake fails: whatever a peer sends before then, the listener
    logs one line and holds nothing for it. distributed's listener waits without a bound
    and lets a failed handshake escape as a traceback, with the connection left open."""

    async def _handle_stream(self, stream: IOStream, address: Any) -> None:
        HANDSHAKE_DEADLINE.set(None)
        handshake_seconds_left()  # the clock starts at acceptance
        try:
            await super()._handle_stream(stream, address)  # type: ignore[misc]  # OnePort's
        except HandshakeFailed as exc:
            logger.warning("%s", exc)

    async def _prepare_stream(self, stream: IOStream, address: str) -> Optional[IOStream]:
        prepare = super()._prepare_stream(stream, address)  # type: ignore[misc]  # TCPListener's
        try:
            prepared: Optional[IOStream] = await asyncio.wait_for(prepare,
                                                                  handshake_seconds_left())
        except TimeoutError:
            stream.close()
            raise HandshakeFailed(f"closed {address}: no TLS handshake within "
                                  "distributed.comm.timeouts.connect") from None
        return prepared

    async def on_connection(self, comm: Any,
                            handshake_overrides: Optional[dict[str, Any]] = None) -> None:
        handshake = super().on_connection(comm, handshake_overrides)  # type: ignore[misc]  # Listener's
        try:
            await asyncio.wait_for(handshake, handshake_seconds_left())
        except CommClosedError:
            raise  # the peer closed, or sent what is not fastser: distributed logs it
        except TimeoutError:
            comm.abort()
            reason = ("no handshake within distributed.comm.timeouts.connect="
                      f"{dask.config.get('distributed.comm.timeouts.connect')}")
        except Exception as exc:
            comm.abort()
            reason = f"its handshake failed: {type(exc).__name__}: {exc}"
            # The error's traceback holds the frames the message was read into, in a cycle
            # through wait_for's task: cut, the buffer goes with the connection, not with
            # the next cyclic collection.
            drop_tracebacks(exc)
        else:
            return
        raise HandshakeFailed(f"closed {comm.peer_address}: {reason}") from None


def accepts_tcp() -> bool:
    """Whether fastser:// listeners serve tcp:// peers too (dask config ACCEPT_TCP_KEY)."""
    return bool(dask.config.get(ACCEPT_TCP_KEY, default=True))


def give_back(stream: IOStream, data: bytes) -> bool:
    """Put `data` back in front of what `stream` has received and not yet returned, so that
    its next read returns it first; False (and nothing done) where tornado's IOStream is
    not as expected."""
    # tornado has no "unread": its IOStream keeps what it has received and not returned in
    # _read_buffer (a bytearray, _read_buffer_size bytes long; _user_read_buffer while a
    # read_into is under way), and every read takes from there first.
    buffered = getattr(stream, "_read_buffer", None)
    if not isinstance(buffered, bytearray) or getattr(stream, "_user_read_buffer", True) \
            or getattr(stream, "_read_buffer_size", None) != len(buffered):
        return False
    buffered[:0] = data
    stream._read_buffer_size += len(data)
    return True


class OnePort:
    """One port for fastser:// and tcp:// (fastser-tls:// and tls://) peers: the listener
    reads the peer's first 8 bytes before it writes anything. A fastser peer's are MAGIC
    (both sides greet with it); anything else is distributed's framing, a length, and the
    stream goes, those bytes given back, to distributed's comm of the plain scheme. Both
    kinds are then held to the same deadline (HandshakeDeadline). distributed's listener
    writes its handshake first and makes the comm before reading anything. Mixed in after
    HandshakeDeadline, whose deadline and log line it runs under."""

    prefix: str
    comm_class: type[FastserComm]
    # distributed's comm, and its scheme, for peers that do not greet with MAGIC.
    plain_class: type[TCP]
    plain_prefix: str
    tcp_server: Any
    deserialize: bool
    allow_offload: bool
    contact_address: str
    comm_handler: Callable[[Any], Any]

    async def _handle_stream(self, stream: IOStream, address: Any) -> None:
        # distributed's TCPListener._handle_stream (replaced, not called), the peer's first
        # bytes read first.
        peer = unparse_host_port(*address[:2])
        # HandshakeDeadline's, which this is mixed in after.
        prepare = self._prepare_stream  # type: ignore[attr-defined]
        prepared: Optional[IOStream] = await prepare(stream, self.prefix + peer)
        if prepared is None:  # TLS failed
            return
        first = await self.first_bytes(prepared, self.prefix + peer)
        if first is None:
            return
        if self.tcp_server is None:
            # As distributed: stop() was called since the connection was accepted, and no
            # one will close a comm made now.
            prepared.close()
            return
        fastser = first == MAGIC
        if not fastser and not self.check_plain(prepared, first, self.plain_prefix + peer):
            return
        prefix = self.prefix if fastser else self.plain_prefix
        logger.debug("Incoming connection from %r to %r", prefix + peer, self.contact_address)
        comm_class = self.comm_class if fastser else self.plain_class
        comm: Any = comm_class(prepared, prefix + get_stream_address(prepared), prefix + peer,
                               self.deserialize)
        comm.allow_offload = self.allow_offload
        if fastser:
            comm.greeting_seen = True
        try:
            await self.on_connection(comm)  # type: ignore[attr-defined]  # HandshakeDeadline's
        except CommClosedError:
            logger.info("Connection from %s closed before handshake completed", prefix + peer)
            return
        await self.comm_handler(comm)

    async def first_bytes(self, stream: IOStream, address: str) -> Optional[bytes]:
        """The peer's first 8 bytes, or None if it closed first or sent none in time."""
        try:
            first: bytes = await asyncio.wait_for(stream.read_bytes(len(MAGIC)),
                                                  handshake_seconds_left())
        except TimeoutError:
            refuse(stream, f"closed {address}: no first {len(MAGIC)} bytes within "
                           "distributed.comm.timeouts.connect="
                           f"{dask.config.get('distributed.comm.timeouts.connect')}")
            return None
        except StreamClosedError:
            logger.info("Connection from %s closed before handshake completed", address)
            return None
        return first

    def check_plain(self, stream: IOStream, first: bytes, address: str) -> bool:
        """Whether `first` went back to `stream`, for a comm of the plain scheme (if not,
        the stream is closed)."""
        (announced,) = struct.unpack("Q", first)
        if not accepts_tcp():
            return refuse(stream, f"closed {address}: a {self.plain_prefix} peer, and "
                                  f"{ACCEPT_TCP_KEY} is False")
        if announced > TCP_GREETING_BYTES:
            return refuse(stream, f"closed {address}: it speaks neither fastser nor "
                                  f"{self.plain_prefix}: its first bytes {first!r} are not "
                                  f"{MAGIC!r}, nor a handshake's length (they announce "
                                  f"{announced} bytes)")
        if not give_back(stream, first):
            return refuse(stream, f"closed {address}: this tornado ({tornado.version}) "
                                  "cannot hand a stream to distributed's comm after its "
                                  "first bytes were read")
        return True


def refuse(stream: IOStream, reason: str) -> bool:
    """Log `reason`, then close `stream` (in that order: the peer sees the close after the
    line is written). False, for check_plain."""
    logger.warning("%s", reason)
    stream.close()
    return False


class FastserListener(HandshakeDeadline, OnePort, WorkerHost, TCPListener):
    prefix = "fastser://"
    comm_class = FastserTCP
    plain_class = TCP
    plain_prefix = "tcp://"


class FastserTLSListener(HandshakeDeadline, OnePort, WorkerHost, TLSListener):
    prefix = "fastser-tls://"
    comm_class = FastserTLS
    plain_class = TLS
    plain_prefix = "tls://"


class FastserBackend(TCPBackend):
    """The backend of fastser:// (entry point "fastser" of distributed.comm.backends)."""

    _connector_class = FastserConnector
    _listener_class = FastserListener


class FastserTLSBackend(TLSBackend):
    """The backend of fastser-tls:// (entry point "fastser-tls")."""

    _connector_class = FastserTLSConnector
    _listener_class = FastserTLSListener
