"""Messages over asyncio streams, compiled: write_msg writes the prelude and frames to a
StreamWriter, read_msg reads one message from a StreamReader. Sits on frames.stream and codec.defaults;
the public fastser.aio (not compiled) documents and calls these.

Rule: the prelude is checked against the decoder's Limits before anything is read or
allocated for what it announces.
"""

import asyncio
from typing import Any, Final, Optional

from fastser.arguments import check_optional
from fastser.codec.decoder import Decoder
from fastser.codec.defaults import DEFAULT_DECODER, DEFAULT_ENCODER
from fastser.codec.encoder import Encoder
from fastser.errors import FrameError, chained
from fastser.frames.stream import (COUNT, WORD, check_count, coalesce, frame_holding,
                                   frame_runs, pack_frames_prelude, prelude_lengths,
                                   slice_runs)

# write_msg waits for the transport to drain once this many bytes were handed to it (after
# each frame of this size or more, at the latest), so the transport buffers about one large
# frame at a time.
DRAIN_BYTES: Final = 2**20


async def write_msg(writer: asyncio.StreamWriter, msg: Any,
                    encoder: Optional[Encoder] = None) -> int:
    # Documented in aio.py (not compiled): mypyc drops function docstrings.
    check_optional(encoder, Encoder, "encoder")
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
    check_optional(decoder, Decoder, "decoder")
    decoder = DEFAULT_DECODER if decoder is None else decoder
    limits = decoder.limits
    try:
        head = await reader.readexactly(WORD)
    except asyncio.IncompleteReadError as exc:
        if not exc.partial:
            raise chained(EOFError("the stream ended before a message"), exc)
        raise chained(FrameError(f"the stream ended inside the prelude: {len(exc.partial)} of "
                                 f"the {WORD} bytes of the frame count received"), exc)
    count = check_count(COUNT.unpack_from(head, 0)[0], limits)
    try:
        raw = b""
        if count:
            size = WORD * count  # bounded by Limits.max_frames, checked above
            try:
                raw = await reader.readexactly(size)
            except asyncio.IncompleteReadError as exc:
                raise chained(FrameError(
                    f"the stream ended inside the prelude: {WORD + len(exc.partial)} of "
                    f"{WORD + size} bytes received ({count} frame lengths announced)"), exc)
        lengths, total = prelude_lengths(raw, 0, count, limits)
        received: list[bytes] = []
        got = 0
        for start, stop in frame_runs(lengths):
            # One bytes object per run of frames: each starts 16-byte aligned in memory.
            try:
                received.append(await reader.readexactly(stop - start))
            except asyncio.IncompleteReadError as exc:
                got += len(exc.partial)
                raise chained(FrameError(
                    f"the stream ended inside {frame_holding(lengths, got)}: "
                    f"{got} of the {total} frame bytes received"), exc)
            got += stop - start
    except ConnectionResetError as exc:
        raise chained(FrameError("the connection was reset inside a message"), exc)
    # Zero-copy: the frames are the bytes objects the StreamReader returned, or slices of them.
    return decoder.loads(slice_runs(received, lengths))
