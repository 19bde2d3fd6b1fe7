"""Messages over asyncio streams: write_msg and read_msg.

Not compiled, on purpose: mypyc drops the docstrings of compiled functions and the
signatures of compiled coroutines (https://github.com/mypyc/mypyc/issues/437). Each function
here is a thin call into the compiled _aio, which does the work.
"""

import asyncio
from typing import Any, Optional

from fastser.arguments import check_optional
from fastser.codec.decoder import Decoder
from fastser.codec.encoder import Encoder
from fastser.transport import aio as _aio


async def write_msg(writer: asyncio.StreamWriter, msg: Any,
                    encoder: Optional[Encoder] = None) -> int:
    """Encode a message and write it to an asyncio StreamWriter as one framed message.

    Parameters
    ----------
    writer: an asyncio StreamWriter.
    msg: any message (see fastser.dumps).
    encoder: the Encoder to use (default: the shared encoder of fastser.dumps).

    Returns
    -------
    The bytes written, prelude included, once the transport has taken them all (after a
    final drain). Frames are written one by one with writer.write (never joined, except
    runs of small ones), and the writer is drained after every frame of 1 MiB or more (and
    after every MiB of smaller ones), so memory stays bounded. The transport may keep views
    of the frames until it has sent them: the message's buffers must not be changed before
    write_msg returns.

    Raises
    ------
    SerializationError from the encoder; the transport's errors (for example
    ConnectionResetError) from drain.
    """
    check_optional("write_msg", encoder, Encoder, "encoder")  # named, in both builds
    return await _aio.write_msg(writer, msg, encoder)


async def read_msg(reader: asyncio.StreamReader, decoder: Optional[Decoder] = None) -> Any:
    """Read one framed message from an asyncio StreamReader and decode it.

    Parameters
    ----------
    reader: an asyncio StreamReader.
    decoder: the Decoder to use (default: the shared decoder of fastser.loads); its Limits
        bound the prelude.

    Returns
    -------
    The message. Its frames arrive in a few bytes objects (one readexactly per run of frames
    that follow one another without a gap; a gap of under 16 bytes starts each frame of
    64 KiB or more at a multiple of 16, so received numpy arrays are aligned): the
    StreamReader copies each payload once, and nothing copies it again — so received numpy
    arrays and memoryviews are read-only views of those bytes objects, and the pieces of a
    split payload are joined without a copy. A bytes value that is a run of its own (alone
    between gaps, or last) is that bytes object itself; other bytes values, and bytearray
    values, are copied out of their run, as their types require.

    Raises
    ------
    EOFError if the stream ended before the first byte of a message.
    FrameError if it ended (or the connection was reset) inside a message, with the cause
    kept, or if the prelude exceeds the decoder's Limits (checked before anything is read or
    allocated for it). DeserializationError from the decoder. Other errors of the stream as
    they are (a reset while the frame count is read among them: the StreamReader then
    raises before saying whether part of a message had arrived).
    """
    check_optional("read_msg", decoder, Decoder, "decoder")
    return await _aio.read_msg(reader, decoder)
