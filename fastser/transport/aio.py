"""Messages over asyncio streams, compiled: write_msg writes the prelude and frames to a
StreamWriter, read_msg moves a StreamReader's bytes into the buffers of a
frames.stream.FrameReader, which parses and checks them. Sits on frames.stream, codec.dumps_loads
and transport; the public fastser.aio (not compiled) documents and calls these.
"""

import asyncio
from typing import Any, Final, Optional

from fastser.codec.decoder import Decoder
from fastser.codec.dumps_loads import DEFAULT_DECODER, DEFAULT_ENCODER
from fastser.codec.encoder import Encoder
from fastser.frames.stream import coalesce, pack_frames_prelude
from fastser.transport.receive_buffer import in_place_reader
from fastser.transport.sock import truncated

# write_msg waits for the transport to drain once this many bytes were handed to it (after
# each frame of this size or more, at the latest), so the transport buffers about one large
# frame at a time.
DRAIN_BYTES: Final = 2**20


async def write_msg(writer: asyncio.StreamWriter, msg: Any,
                    encoder: Optional[Encoder] = None) -> int:
    # Documented in aio.py (not compiled): mypyc drops function docstrings.
    frames = (DEFAULT_ENCODER if encoder is None else encoder).dumps(msg)
    written = 0
    pending = 0  # bytes handed to the transport since the last drain
    for buffer in coalesce(pack_frames_prelude(frames), frames):
        # Not writelines: in Python 3.11 it joins its buffers into one bytes object.
        writer.write(buffer)  # large frames: a view of the caller's memory, not a copy
        written += buffer.nbytes
        pending += buffer.nbytes
        if pending >= DRAIN_BYTES:
            await writer.drain()
            pending = 0
    await writer.drain()
    return written


async def read_msg(reader: asyncio.StreamReader, decoder: Optional[Decoder] = None) -> Any:
    # Documented in aio.py (not compiled): mypyc drops function docstrings.
    decoder = DEFAULT_DECODER if decoder is None else decoder
    frame_reader = in_place_reader(decoder.limits)
    while True:
        # The reader says where the next bytes go (never past this message) and parses
        # them; a StreamReader cannot read into a buffer, so they are copied there.
        span = frame_reader.next_buffer()
        try:
            data = await reader.read(span.nbytes)
        except ConnectionResetError as exc:
            if not frame_reader.pending:
                raise  # not inside a message: the stream's own error
            raise truncated(frame_reader.where(), exc)
        received = len(data)
        if received == 0:
            if not frame_reader.pending:
                raise EOFError("the stream ended before a message")
            raise truncated(frame_reader.where(), None)
        span[:received] = data
        frames = frame_reader.received(received)
        if frames is not None:
            # Zero-copy: the frames are slices of the one buffer the bytes were copied into.
            return decoder.loads(frames)
