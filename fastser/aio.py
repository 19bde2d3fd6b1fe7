"""Messages over asyncio streams: write_msg writes the prelude and frames to a StreamWriter,
read_msg reads one message from a StreamReader. Sits on _framing and _codec.

Rule: the prelude is checked against the decoder's Limits before anything is read or
allocated for what it announces.
"""

import asyncio
import struct
from typing import Any, Final, Optional

from ._codec import DEFAULT_DECODER, DEFAULT_ENCODER
from ._decoder import Decoder
from ._encoder import Encoder
from ._errors import FrameError, chained
from ._framing import (COUNT, WORD, check_count, check_lengths, coalesce, frame_holding,
                       pack_frames_prelude, slice_frames)

# write_msg waits for the transport to drain once this many bytes were handed to it (after
# each frame of this size or more, at the latest), so the transport buffers about one large
# frame at a time.
DRAIN_BYTES: Final = 2**20


async def write_msg(writer: asyncio.StreamWriter, msg: Any,
                    encoder: Optional[Encoder] = None) -> int:
    """Encode `msg` and write it to `writer` as one framed message.

    Parameters: `writer`, an asyncio StreamWriter; `msg`, any message; `encoder` (default:
    the shared encoder of `fastser.dumps`).
    Returns: the bytes written, prelude included, once the transport has taken them all
    (after a final drain).
    Raises: SerializationError from the encoder; the transport's errors (for example
    ConnectionResetError) from drain.

    Frames are written one by one with `writer.write` (never joined, except runs of small
    ones), and the writer is drained after every frame of 1 MiB or more (and after every
    MiB of smaller ones), so memory stays bounded. The transport may keep views of the
    frames until it has sent them: the message's buffers must not be changed before
    write_msg returns.
    """
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
    """Read one framed message from `reader` and decode it.

    Parameters: `reader`, an asyncio StreamReader; `decoder` (default: the shared decoder of
    `fastser.loads`), whose Limits bound the prelude.
    Returns: the message. All its frames arrive in one bytes object (read with a single
    readexactly): the StreamReader copies each payload once, and nothing copies it again —
    so received numpy arrays and memoryviews are read-only views of that bytes object, and
    the pieces of a split payload are joined without a copy; bytes and bytearray values are
    copied out of it, as their types require.
    Raises: EOFError if the stream ended before the first byte of a message; FrameError if
    it ended (or the connection was reset) inside a message, with the cause kept, or if the
    prelude exceeds the decoder's Limits (checked before anything is read or allocated for
    it); DeserializationError from the decoder; other errors of the stream as they are (a
    reset while the frame count is read among them: the StreamReader then raises before
    saying whether part of a message had arrived).
    """
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
    lengths: tuple[int, ...] = ()
    try:
        if count:
            size = WORD * count  # bounded by Limits.max_frames, checked above
            try:
                raw = await reader.readexactly(size)
            except asyncio.IncompleteReadError as exc:
                raise chained(FrameError(
                    f"the stream ended inside the prelude: {WORD + len(exc.partial)} of "
                    f"{WORD + size} bytes received ({count} frame lengths announced)"), exc)
            lengths = struct.unpack_from(f"<{count}Q", raw, 0)
        total = check_lengths(lengths, limits)
        try:
            data = await reader.readexactly(total)
        except asyncio.IncompleteReadError as exc:
            got = len(exc.partial)
            raise chained(FrameError(f"the stream ended inside {frame_holding(lengths, got)}: "
                                     f"{got} of the {total} frame bytes received"), exc)
    except ConnectionResetError as exc:
        raise chained(FrameError("the connection was reset inside a message"), exc)
    # Zero-copy: the frames are slices of the one bytes object the StreamReader returned.
    return decoder.loads(slice_frames(memoryview(data), 0, lengths))
