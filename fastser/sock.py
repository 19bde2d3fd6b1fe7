"""Messages over a blocking socket: send_msg and recv_msg.

Not compiled, on purpose: mypyc drops the docstrings of compiled functions
(https://github.com/mypyc/mypyc/issues/437). Each function here is a thin call into the
compiled _sock, which does the work.
"""

import socket
from typing import Any, Optional

from fastser.arguments import check_optional
from fastser.codec.decoder import Decoder
from fastser.codec.encoder import Encoder
from fastser.transport import sock as _sock


def send_msg(sock: socket.socket, msg: Any, encoder: Optional[Encoder] = None) -> int:
    """Encode a message and write it to a connected stream socket as one framed message.

    Parameters
    ----------
    sock: a blocking (or timeout) stream socket.
    msg: any message (see fastser.dumps).
    encoder: the Encoder to use (default: the shared encoder of fastser.dumps).

    Returns
    -------
    The bytes written, prelude included. The frames are not joined or copied (only runs of
    small ones are): large payloads go from the caller's memory to the socket with sendmsg
    scatter-gather writes, or with one sendall per frame where sendmsg does not exist.

    Raises
    ------
    SerializationError from the encoder. OSError (socket.timeout included) from the socket,
    after which the stream is unusable: part of a message may have been written.
    """
    check_optional("send_msg", encoder, Encoder, "encoder")  # named, in both builds
    return _sock.send_msg(sock, msg, encoder)


def recv_msg(sock: socket.socket, decoder: Optional[Decoder] = None) -> Any:
    """Read one framed message from a connected stream socket and decode it.

    Parameters
    ----------
    sock: a blocking (or timeout) stream socket.
    decoder: the Decoder to use (default: the shared decoder of fastser.loads); its Limits
        bound the prelude.

    Returns
    -------
    The message. All its frames are read with recv_into into one buffer allocated here (a
    numpy array from numpy.empty when numpy is loaded, else a bytearray; an anonymous mmap
    for messages of 32 MiB or more, on Linux faulted in 1 MiB at a time just ahead of the
    bytes), each of 64 KiB or more
    starting at a multiple of 16 bytes in it, so received numpy arrays are aligned; the
    pieces of a split payload are adjacent and joined without a copy. The frames are
    writeable, and received numpy arrays and memoryviews are views of that buffer (no copy
    after the read), writeable unless the sender's array was read-only; bytes and bytearray
    values are copied out of it, as their types require.

    Raises
    ------
    EOFError if the peer closed the stream before the first byte of a message.
    FrameError if it closed (or reset) it inside a message, with the cause kept, or if the
    prelude exceeds the decoder's Limits (checked before anything is allocated for it).
    DeserializationError from the decoder. OSError (socket.timeout included) from the
    socket as it is, after which the stream is unusable.
    """
    check_optional("recv_msg", decoder, Decoder, "decoder")
    return _sock.recv_msg(sock, decoder)
