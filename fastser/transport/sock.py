"""Messages over a blocking socket, compiled: send_msg writes the prelude and frames with
scatter-gather I/O, recv_msg reads them into one buffer of its own (transport.receive_buffer).
Sits on frames.stream, codec.defaults and receive_buffer; the public fastser.sock (not
compiled) documents and calls these.

Rule: the prelude is checked against the decoder's Limits before anything is allocated for
what it announces; the frames are then read with recv_into straight into their one buffer.
"""

import os
import socket
import sys
from typing import Any, Final, Optional

from fastser.arguments import check_optional
from fastser.codec.decoder import Decoder
from fastser.codec.defaults import DEFAULT_DECODER, DEFAULT_ENCODER
from fastser.codec.encoder import Encoder
from fastser.errors import FrameError, chained
from fastser.frames.stream import (COUNT, WORD, check_count, coalesce, frame_holding,
                                   frame_layout, frame_runs, pack_frames_prelude,
                                   prelude_lengths, slice_frames)
from fastser.transport.receive_buffer import READ_BYTES, populate, receive_buffer


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
    check_optional(encoder, Encoder, "encoder")
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
    check_optional(decoder, Decoder, "decoder")
    decoder = DEFAULT_DECODER if decoder is None else decoder
    limits = decoder.limits
    head = bytearray(WORD)
    got, reset = recv_full(sock, memoryview(head))
    if got == 0:
        if reset is not None:
            raise reset  # not inside a message: the socket's own error
        raise EOFError("the stream ended before a message")
    if got < WORD:
        where = f"the prelude: {got} of the {WORD} bytes of the frame count received"
        raise truncated(where, reset)
    count = check_count(COUNT.unpack_from(head, 0)[0], limits)
    size = WORD * count  # bounded by Limits.max_frames, checked above
    raw = bytearray(size)
    got, reset = recv_full(sock, memoryview(raw))
    if got < size:
        where = (f"the prelude: {WORD + got} of {WORD + size} bytes received "
                 f"({count} frame lengths announced)")
        raise truncated(where, reset)
    lengths, total = prelude_lengths(raw, 0, count, limits)
    gaps, size = frame_layout(lengths)
    view = receive_buffer(size)
    got = 0
    for start, stop in frame_runs(lengths):  # each large frame at an aligned offset
        for piece in range(start, stop, READ_BYTES):
            end = min(piece + READ_BYTES, stop)
            populate(view, piece, end)
            received, reset = recv_full(sock, view[piece:end])
            got += received
            if received < end - piece:
                where = (f"{frame_holding(lengths, got)}: {got} of the {total} frame bytes "
                         f"received")
                raise truncated(where, reset)
    # Zero-copy: the frames are slices of the one buffer the bytes were received into.
    return decoder.loads(slice_frames(view, lengths, 0, gaps, True))


def recv_full(sock: socket.socket,
              view: memoryview) -> tuple[int, Optional[ConnectionResetError]]:
    """Fill `view` with recv_into calls. Returns how many bytes arrived before the stream
    ended, and the error if it ended by a connection reset."""
    size = view.nbytes
    got = 0
    try:
        while got < size:
            received = sock.recv_into(view[got:got + MAX_IO_BYTES])
            if received == 0:
                break
            got += received
    except ConnectionResetError as exc:
        return got, exc
    return got, None


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
