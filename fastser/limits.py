"""Bounds applied to every reader and Decoder before anything is allocated."""

from dataclasses import dataclass
from typing import Any, Final, Never, TypedDict, Unpack

from fastser.arguments import check_names, int_option, too_many_positional
from fastser.errors import DeserializationError, chained
from fastser.frame_types import MEMORYVIEW, nbytes

# Defaults: generous enough for real clusters (a 1 GiB frame, 4 GiB per message, a
# million frames), small enough that a hostile 24-byte prelude cannot reserve more.
# Each received frame is a memoryview object (~190 bytes) while its length field is 8 bytes:
# the readers bound that cost by the bytes given, refusing a message whose frames are too
# small on average to pay for their views (frames.stream.check_views), not by max_frames.
DEFAULT_MAX_FRAMES: Final = 1_048_576
DEFAULT_MAX_FRAME_BYTES: Final = 2**30
DEFAULT_MAX_MESSAGE_BYTES: Final = 2**32
DEFAULT_MAX_HEADER_BYTES: Final = 64 * 2**20
# Deeper than any real message, far below what overflows the C stack anywhere.
DEFAULT_MAX_DEPTH: Final = 256
# A compressed payload that msgpack turns into objects (the msgpack family's) may inflate
# to at most 3/2 of its size: each inflated byte can become ~100 bytes of objects (maps of
# one int key nested in each other), so a compressed byte buys at most ~150, as a header byte
# may. No allowance beyond that, not even per message: a fixed one buys a fixed amount of
# objects for a few wire bytes. fastser's encoder leaves such a frame uncompressed where
# compressing it would pass 3/2.


def object_inflate_bound(compressed_bytes: int) -> int:
    """How many bytes a compressed msgpack-family frame may inflate to."""
    return compressed_bytes * 3 // 2


class LimitsOptions(TypedDict, total=False):
    """The keywords of Limits, as the type checker sees them."""
    max_frames: int
    max_frame_bytes: int
    max_message_bytes: int
    max_header_bytes: int
    max_depth: int


# Spelled out, as the codec's option names are (mypyc's TypedDicts lack their keys).
LIMITS_OPTIONS: Final = frozenset(
    {"max_frames", "max_frame_bytes", "max_message_bytes", "max_header_bytes", "max_depth"})


# init=False: the bounds are taken as **limits and checked here, so that both builds name
# the bound in the same words (fastser/arguments.py, "Options").
@dataclass(frozen=True, init=False)
class Limits:
    max_frames: int
    max_frame_bytes: int
    max_message_bytes: int
    max_header_bytes: int
    max_depth: int

    def __init__(self, *args: Never, **limits: Unpack[LimitsOptions]) -> None:
        if args:  # in Python's words (fastser/arguments.py, "Positional arguments")
            raise too_many_positional("Limits", 0, 0, len(args))
        check_names("Limits", limits, LIMITS_OPTIONS)
        for name, default in (("max_frames", DEFAULT_MAX_FRAMES),
                              ("max_frame_bytes", DEFAULT_MAX_FRAME_BYTES),
                              ("max_message_bytes", DEFAULT_MAX_MESSAGE_BYTES),
                              ("max_header_bytes", DEFAULT_MAX_HEADER_BYTES),
                              ("max_depth", DEFAULT_MAX_DEPTH)):
            value = int_option("Limits", limits, name, default)
            if value < 1:
                raise ValueError(f"Limits.{name} must be a positive int, got {value!r}")
            object.__setattr__(self, name, value)  # frozen: as dataclass's own __init__ does

    # mypyc: a compiled frozen dataclass cannot be pickled or copied without __reduce__
    # (FrozenInstanceError from the default protocol; docs/design.md, "The mypyc rules").
    def __reduce__(self) -> tuple[Any, ...]:
        return (limits_of, (self.max_frames, self.max_frame_bytes, self.max_message_bytes,
                            self.max_header_bytes, self.max_depth))


def limits_of(max_frames: int, max_frame_bytes: int, max_message_bytes: int,
              max_header_bytes: int, max_depth: int) -> Limits:
    """Limits rebuilt by pickle and copy (Limits.__reduce__): its keywords by position."""
    return Limits(max_frames=max_frames, max_frame_bytes=max_frame_bytes,
                  max_message_bytes=max_message_bytes, max_header_bytes=max_header_bytes,
                  max_depth=max_depth)


DEFAULT_LIMITS: Final = Limits()


def check_frames(frames: list[Any], limits: Limits) -> int:
    """Raise DeserializationError unless `frames` is a list of bytes-like frames within
    `limits` (count, each frame, the header frame, the message): checked before decoding.
    Returns the size of the header frame in bytes."""
    # list[Any], not list[Frame]: compiled code would raise TypeError on a non-frame item
    # before the check below could name it.
    count = len(frames)
    if count == 0:
        raise DeserializationError("no frames: a message has at least its header frame")
    if count > limits.max_frames:
        raise DeserializationError(f"{count} frames exceed Limits.max_frames={limits.max_frames}")
    total = 0
    header_size = 0
    for index, frame in enumerate(frames):
        if type(frame) is not bytes and type(frame) is not bytearray and \
                type(frame) is not MEMORYVIEW:
            raise DeserializationError(
                f"frame {index} is of type {type(frame).__qualname__}, not a bytes-like frame")
        try:
            size = nbytes(frame)
        except ValueError as exc:  # the only frame that cannot say its size
            raise chained(DeserializationError(f"frame {index} is a released memoryview"), exc)
        if size > limits.max_frame_bytes:
            raise DeserializationError(f"frame {index} of {size} bytes exceeds "
                                       f"Limits.max_frame_bytes={limits.max_frame_bytes}")
        if index == 0:
            if size > limits.max_header_bytes:
                raise DeserializationError(f"header frame of {size} bytes exceeds "
                                           f"Limits.max_header_bytes={limits.max_header_bytes}")
            header_size = size
        total += size
    if total > limits.max_message_bytes:
        raise DeserializationError(f"message of {total} bytes exceeds "
                                   f"Limits.max_message_bytes={limits.max_message_bytes}")
    return header_size
