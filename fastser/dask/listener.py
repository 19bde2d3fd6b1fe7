"""The fastser:// (fastser-tls://) listener: one port for fastser's peers and distributed's
tcp:// (tls://) ones, each connection held to a handshake deadline, and a worker's
listener advertising the address that routes to its scheduler.

Uncompiled: its classes are mixed into distributed's TCPListener (TLSListener).

Rule: the listener writes nothing before the peer's first 8 bytes: MAGIC makes a
fastser:// comm, distributed's tcp:// (tls://) framing one of distributed's own comms on
the same stream (OnePort); whatever a peer sends, it is given
distributed.comm.timeouts.connect to complete its handshake (HandshakeDeadline).
"""

import asyncio
import logging
import struct
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any, Final, Optional

import dask.config
from dask.utils import parse_timedelta
from distributed.comm.addressing import get_address_host, unparse_host_port
from distributed.comm.core import CommClosedError
from distributed.comm.tcp import TCP, TLS, TCPListener, TLSListener, get_stream_address
from distributed.utils import get_ip
import tornado
from tornado.iostream import IOStream, StreamClosedError

from fastser.dask.comm import MAGIC, FastserComm, FastserTCP, FastserTLS

logger = logging.getLogger(__name__)

# The most a tcp:// (tls://) peer of a fastser:// listener may announce in its first 8 bytes
# (distributed's length of its first message, native byte order as distributed writes it).
# That message is its handshake, a dict of three short keys (about 100 bytes); distributed's
# reader would reserve whatever is announced before reading it.
TCP_GREETING_BYTES: Final = 2**16
# The dask config key that lets a fastser:// listener serve tcp:// peers (tls:// on
# fastser-tls://) on its port; False refuses them with one log line.
ACCEPT_TCP_KEY: Final = "distributed.comm.fastser.accept-tcp"


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
