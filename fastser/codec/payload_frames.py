"""Payload frames and the refs a header names them by. On the way out, each frame is inlined
in the header or appended to the message (split if large) and its ref returned; on the way
in, each ref is resolved and checked (an index, a split frame's pieces joined, a compressed
frame inflated within Limits), each frame named at most once. Sits on frames.compression,
frames.split and limits; the encoder and the decoder each hold a message's frames.
"""

from typing import Any, Final, Optional, Union

from fastser.errors import DeserializationError, shown
from fastser.frame_types import Frame, Header, OUT_OF_BAND_BYTES, nbytes
from fastser.frames.compression import compression_names, decompress
from fastser.frames.split import merge_frames, split_frames
from fastser.headers import HEADER_COMPRESSION, HEADER_SERIALIZER
from fastser.limits import Limits, object_inflate_bound

# The family whose payloads msgpack turns into objects: they share the header's budget.
OBJECT_FAMILY: Final = "msgpack"


# A frame ref in a serialized record: the frame inline, an index, or [start, count].
FrameRef = Union[Frame, int, list[int]]


def add_frame(frame: Frame, frames: list[Frame], split_size: int) -> FrameRef:
    """Append an out-of-band frame to the message's `frames` (split into views if larger
    than `split_size`) and return its ref."""
    if nbytes(frame) > split_size:
        pieces = split_frames(frame, split_size)
        start = len(frames)
        frames.extend(pieces)
        return [start, len(pieces)]
    frames.append(frame)
    return len(frames) - 1


def frame_refs(payload: list[Frame], frames: list[Frame], split_size: int) -> list[FrameRef]:
    """The refs of a payload's frames: small ones inline in the header (msgpack copies
    them there), the others appended to `frames` by add_frame."""
    refs: list[FrameRef] = []
    for frame in payload:
        if nbytes(frame) < OUT_OF_BAND_BYTES:
            refs.append(frame)
        else:
            refs.append(add_frame(frame, frames, split_size))
    return refs


def where(refs: list[Any]) -> str:
    """Where a payload's frames are, for an error message: "in frames 2, 3..5"."""
    places = []
    for ref in refs:
        if type(ref) is int:
            places.append(str(ref))
        elif type(ref) is list and len(ref) == 2:
            places.append(f"{ref[0]}..{ref[0] + ref[1] - 1}")
    if not places:
        return "inline in the header" if refs else "without frames"
    inline = " and inline in the header" if len(places) < len(refs) else ""
    return f"in frame{'s' if len(places) > 1 else ''} {', '.join(places)}{inline}"


class PayloadFrames:
    """One message's frames, as its header's refs name them."""

    def __init__(self, frames: list[Frame], limits: Limits, header_bytes: int) -> None:
        self.frames = frames
        self.limits = limits
        self.inflated = 0  # bytes decompressed so far in this message
        # Bytes msgpack turns into objects: the header's, then each msgpack-family
        # payload's (inflated), within Limits.max_header_bytes together.
        self.object_bytes = header_bytes
        # Which payload frames a ref has named. A list: compiled code indexes a list[bool]
        # inline, a bytearray through the generic item protocol (~1.5% of the suite's
        # raw-bytes loads).
        self.used: Optional[list[bool]] = None

    def raw_frame(self, ref: Any, writeable: bool) -> Frame:
        """The frame of an out-of-band bytes-like: a frame ref, or [frame ref, compression]."""
        if type(ref) is list and len(ref) == 2 and type(ref[1]) is str:
            return self.inflate(ref[1], self.frame_at(ref[0]), writeable)
        return self.frame_at(ref)

    def inflate(self, name: Any, frame: Frame, writeable: bool,
                object_bound: int = -1) -> Frame:
        """Decompress one frame, within Limits.max_frame_bytes and what the message's
        earlier decompressed frames left of Limits.max_message_bytes: a header of many
        small compressed frames cannot make one loads inflate more than that. With an
        `object_bound` (a msgpack-family frame), within that too."""
        limits = self.limits
        left = limits.max_message_bytes - self.inflated
        if 0 <= object_bound < min(left, limits.max_frame_bytes):
            out = decompress(name, frame, object_bound, writeable,
                             f"the {object_bound} bytes a compressed msgpack payload of "
                             f"{nbytes(frame)} bytes may inflate to (3/2 of its size, within "
                             f"what the header left of Limits.max_header_bytes="
                             f"{limits.max_header_bytes})")
        elif left < limits.max_frame_bytes:
            out = decompress(name, frame, left, writeable,
                             f"the {left} bytes that earlier frames left of "
                             f"Limits.max_message_bytes={limits.max_message_bytes}")
        else:
            out = decompress(name, frame, limits.max_frame_bytes, writeable)
        self.inflated += nbytes(out)
        return out

    def inflate_payload(self, header: Header, frames: list[Frame]) -> tuple[Header,
                                                                          list[Frame]]:
        """A compressed payload's frames decompressed, and its header without
        "compression" (so the family sees what it wrote)."""
        compression = header.get(HEADER_COMPRESSION)
        objects = header.get(HEADER_SERIALIZER) == OBJECT_FAMILY
        if compression is None:
            if objects:
                for frame in frames:
                    self.charge_objects(nbytes(frame))
            return header, frames
        out: list[Frame] = []
        for name, frame in zip(compression_names(compression, len(frames)), frames):
            if name is None:
                inflated = frame
            elif objects:
                bound = min(object_inflate_bound(nbytes(frame)),
                            self.limits.max_header_bytes - self.object_bytes)
                inflated = self.inflate(name, frame, True, max(bound, 0))
            else:
                inflated = self.inflate(name, frame, True)
            if objects:
                self.charge_objects(nbytes(inflated))
            out.append(inflated)
        return {key: value for key, value in header.items() if key != HEADER_COMPRESSION}, out

    def charge_objects(self, size: int) -> None:
        """Count a msgpack-family frame's bytes against Limits.max_header_bytes, which
        bounds all that msgpack turns into objects in one message."""
        self.object_bytes += size
        limit = self.limits.max_header_bytes
        if self.object_bytes > limit:
            raise DeserializationError(
                f"the header and its msgpack payloads hold {self.object_bytes} bytes or more "
                f"for msgpack to decode, exceeding Limits.max_header_bytes={limit}")

    def frame_at(self, ref: Any) -> Frame:
        """The payload frame a ref names: inline bytes, an index, or [start, count] pieces.
        Each payload frame may be named once: a header naming one frame many times would
        otherwise make every copy of it (bytes(), a join) a hostile amplification."""
        if type(ref) is bytes:
            return ref
        count = len(self.frames)
        if type(ref) is int:
            if not 0 < ref < count:
                raise DeserializationError(
                    f"the header names payload frame {ref}, but the message has "
                    f"{count} frames (0 is the header)")
            self.claim(ref, 1)
            return self.frames[ref]
        if type(ref) is list and len(ref) == 2 and type(ref[0]) is int and type(ref[1]) is int:
            start, pieces = ref[0], ref[1]
            parts = self.run(start, pieces)
            size = 0
            for part in parts:
                size += nbytes(part)
            limit = self.limits.max_frame_bytes
            if size > limit:
                raise DeserializationError(
                    f"frames {start}..{start + pieces - 1} join to {size} bytes, exceeding "
                    f"Limits.max_frame_bytes={limit}")
            return merge_frames(parts)
        raise DeserializationError(f"bad frame reference {shown(ref)}")

    def run(self, start: int, count: int) -> list[Frame]:
        """The `count` payload frames from `start` on (the pieces of a split frame), each
        claimed."""
        frames = self.frames
        if not (0 < start and 0 < count and start + count <= len(frames)):
            raise DeserializationError(
                f"the header names {count} frames from payload frame {start}, but the "
                f"message has {len(frames)} frames (0 is the header)")
        self.claim(start, count)
        return frames[start:start + count]

    def check_all_named(self) -> None:
        """Raise unless the header named every payload frame: the frames of two messages
        run together, or a frame sent too many, would otherwise be dropped without a word."""
        count = len(self.frames)
        if count == 1:
            return
        used = self.used
        named = 0 if used is None else used.count(True)
        if named == count - 1:
            return
        first = 1
        while used is not None and used[first]:
            first += 1
        raise DeserializationError(
            f"{count - 1 - named} of {count - 1} payload frames are not named by the header "
            f"(the first is frame {first}): the frames are not one message")

    def claim(self, start: int, count: int) -> None:
        used = self.used
        if used is None:
            used = self.used = [False] * len(self.frames)
        for index in range(start, start + count):
            if used[index]:
                raise DeserializationError(f"frame {index} is referenced twice in the header")
            used[index] = True
