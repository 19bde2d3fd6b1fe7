"""Messages over a blocking socket, compiled: send_msg writes the prelude and frames with
scatter-gather I/O, recv_msg moves bytes with recv_into into the buffers of a
frames.stream.FrameReader, which parses and checks them (transport.receive_buffer's memory).
Sits on frames.stream, codec.dumps_loads and receive_buffer; the public fastser.sock (not
compiled) documents and calls these.
"""

import os
import socket
import sys
from typing import Any, Final, Optional

from fastser.codec.decoder import Decoder
from fastser.codec.dumps_loads import DEFAULT_DECODER, DEFAULT_ENCODER
from fastser.codec.encoder import Encoder
from fastser.errors import FrameError, chained
from fastser.frames.stream import coalesce, pack_frames_prelude
from fastser.transport.receive_buffer import in_place_reader


def iov_max() -> int:
    """How many buffers one sendmsg call may take: the system's IOV_MAX, at most 1024,
    less one to stay clear of the limit."""
    if sys.platform == "win32":
        limit = 1024  # not used: Windows has no sendmsg (nor os.sysconf)
    else:
        try:
            limit = os.sysconf("SC_IOV_MAX")
        except (ValueError, OSError):  # a system that does not know the name
            limit = -1
        if limit <= 0:  # -1: indeterminate
            limit = 1024
    return min(limit, 1024) - 1


MAX_IOV: Final = iov_max()
# Bytes handed to one send or recv call: 32-bit platforms and Windows take an int length.
MAX_IO_BYTES: Final = 2**30
HAS_SENDMSG: Final = hasattr(socket.socket, "sendmsg")


def send_msg(sock: socket.socket, msg: Any, encoder: Optional[Encoder] = None) -> int:
    # Documented in sock.py (not compiled): mypyc drops function docstrings.
    frames = (DEFAULT_ENCODER if encoder is None else encoder).dumps(msg)
    buffers = coalesce(pack_frames_prelude(frames), frames)
    if sys.platform != "win32" and HAS_SENDMSG:
        return sendmsg_all(sock, buffers, MAX_IOV, MAX_IO_BYTES)
    return sendall_each(sock, buffers, MAX_IO_BYTES)


def sendmsg_all(sock: socket.socket, buffers: list[memoryview], max_iov: int,
                max_bytes: int) -> int:
    """Write all `buffers` with sendmsg calls of at most `max_iov` buffers and `max_bytes`
    bytes, resuming after partial sends (`buffers` is advanced in place). Returns the bytes
    written."""
    written = 0
    index = 0
    count = len(buffers)
    while index < count:
        batch: list[memoryview] = []
        batch_bytes = 0
        stop = index
        while stop < count and len(batch) < max_iov and batch_bytes < max_bytes:
            buf = buffers[stop]
            take = min(buf.nbytes, max_bytes - batch_bytes)
            batch.append(buf if take == buf.nbytes else buf[:take])  # a view: no copy
            batch_bytes += take
            stop += 1
        sent = sendmsg(sock, batch)
        written += sent
        # Drop what was sent: whole buffers, then the head of a partly sent one.
        while sent > 0:
            buf = buffers[index]
            if sent >= buf.nbytes:
                sent -= buf.nbytes
                index += 1
            else:
                buffers[index] = buf[sent:]
                sent = 0
    return written


def sendmsg(sock: socket.socket, batch: list[memoryview]) -> int:
    """sock.sendmsg(batch), in a form that type-checks for Windows too (it has no sendmsg)."""
    if sys.platform == "win32":
        raise OSError("socket.sendmsg does not exist on Windows: send_msg uses sendall_each")
    else:
        sent: int = sock.sendmsg(batch)
        return sent


def sendall_each(sock: socket.socket, buffers: list[memoryview], max_bytes: int) -> int:
    """Write all `buffers` with one sendall per buffer (per `max_bytes` slice of a larger
    one), for platforms without sendmsg. Returns the bytes written."""
    written = 0
    for buf in buffers:
        size = buf.nbytes
        for start in range(0, size, max_bytes):
            sock.sendall(buf[start:start + max_bytes])
        written += size
    return written


def recv_msg(sock: socket.socket, decoder: Optional[Decoder] = None) -> Any:
    # Documented in sock.py (not compiled): mypyc drops function docstrings.
    decoder = DEFAULT_DECODER if decoder is None else decoder
    reader = in_place_reader(decoder.limits)
    while True:
        # The reader says where the next bytes go (never past this message) and parses them.
        span = reader.next_buffer()
        try:
            received = sock.recv_into(span)
        except ConnectionResetError as exc:
            if not reader.pending:
                raise  # not inside a message: the socket's own error
            raise truncated(reader.where(), exc)
        if received == 0:
            if not reader.pending:
                raise EOFError("the stream ended before a message")
            raise truncated(reader.where(), None)
        frames = reader.received(received)
        if frames is not None:
            # Zero-copy: the frames are slices of the one buffer the bytes were read into.
            return decoder.loads(frames)


def truncated(where: str, reset: Optional[ConnectionResetError]) -> FrameError:
    """The FrameError for a stream cut `where` inside a message, caused by the reset or by
    an EOFError standing for the peer's close."""
    if reset is not None:
        error = FrameError(f"the connection was reset inside {where}")
        cause: BaseException = reset
    else:
        error = FrameError(f"the stream ended inside {where}")
        cause = EOFError(f"the peer closed the stream inside {where}")
    return chained(error, cause)
