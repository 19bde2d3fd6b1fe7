"""One object to (header, frames) and back through the serializer families; the "msgpack"
and "error" families. Sits on the registry and the family modules.
"""

import traceback
from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal, Optional

import msgpack

from fastser.arguments import check_str
from fastser.errors import (DeserializationError, FastserError, RefusedFamilyError, SenderError,
                            SerializationError, chained, shown)
from fastser.families.dispatch import register_builtin_types
from fastser.families.pickle import register_pickle_family
from fastser.families.registry import REGISTRY, register_serialization_family
from fastser.frame_types import Frame, Header, MEMORYVIEW, byte_view
from fastser.frames.compression import decompress_frames
from fastser.headers import HEADER_COMPRESSION, HEADER_SERIALIZER, PICKLE_FAMILY
from fastser.limits import DEFAULT_LIMITS
from fastser.wrappers import Pickled, Serialize, Serialized, ToPickle

OnError = Literal["raise", "message"]
DISPATCH_FAMILY: Final = "dispatch"
DEFAULT_SERIALIZERS: Final = (DISPATCH_FAMILY, PICKLE_FAMILY)
# What a process that must never unpickle should pass as `deserializers`.
SAFE_DESERIALIZERS: Final = ("dispatch", "msgpack", "error")
ERROR_FAMILY: Final = "error"
ERROR_TEXT_BYTES: Final = 64 * 1024  # of an "error" payload's text, the most shown


def check_on_error(on_error: str) -> None:
    check_str(on_error, "on_error")
    if on_error != "raise" and on_error != "message":
        raise ValueError(f"on_error must be 'raise' or 'message', got {on_error!r}")


def check_families(names: Sequence[str], what: str) -> tuple[str, ...]:
    if isinstance(names, str):
        raise TypeError(f"{what} must be a sequence of family names, not a str")
    for name in names:
        check_str(name, f"each of {what}")
        REGISTRY.family(name)
    return tuple(names)


def serialize(obj: Any, serializers: Optional[Sequence[str]] = None, *,
              on_error: OnError = "raise",
              context: Optional[Mapping[str, Any]] = None) -> tuple[Header, list[Frame]]:
    check_on_error(on_error)
    if isinstance(obj, (Serialized, Pickled)):
        return obj.header, obj.frames
    if isinstance(obj, Serialize):
        obj = obj.data
    elif isinstance(obj, ToPickle):
        serializers = ("pickle",)
        obj = obj.data
    names = DEFAULT_SERIALIZERS if serializers is None else serializers
    return serialize_with(obj, names, on_error, context)


def serialize_with(obj: Any, names: Sequence[str], on_error: str,
                   context: Optional[Mapping[str, Any]]) -> tuple[Header, list[Frame]]:
    """Try each family in turn; the first that does not raise NotImplementedError wins."""
    failure: Optional[BaseException] = None
    for name in names:
        family = REGISTRY.family(name)
        if family.accepts is not None and not family.accepts(obj):
            continue
        try:
            result: object = family.dumps(obj, context)
        except NotImplementedError:
            continue
        except Exception as exc:
            failure = exc
            continue
        header, frames = family_result(name, result)
        header[HEADER_SERIALIZER] = name
        return header, frames
    reason = f": {type(failure).__name__}: {failure}" if failure is not None else ""
    message = (f"cannot serialize object of type {type(obj).__qualname__} "
               f"with serializers {list(names)}{reason}")
    if on_error == "message":
        return error_payload(message, failure)
    raise chained(SerializationError(message), failure)


def family_result(name: str, result: object) -> tuple[Header, list[Frame]]:
    """A family's (header, frames), checked where a registered family hands them over: a
    header dict, and frames that are bytes-likes (another object with a buffer, such as a
    numpy array, as a 1-d byte view of it, uncopied)."""
    if type(result) is not tuple or len(result) != 2 or type(result[0]) is not dict or \
            not isinstance(result[1], (list, tuple)):
        raise SerializationError(f"the {name!r} family's dumps returned "
                                 f"{type(result).__qualname__}, not (header dict, frames)")
    frames: list[Frame] = []
    for frame in result[1]:
        t = type(frame)
        if t is bytes or t is bytearray or t is MEMORYVIEW:
            frames.append(frame)
            continue
        try:
            frames.append(byte_view(frame))
        except (TypeError, ValueError, BufferError) as exc:
            raise chained(SerializationError(
                f"the {name!r} family returned a frame of type {t.__qualname__}, which is "
                f"not bytes-like"), exc)
    return result[0], frames


def error_payload(message: str, failure: Optional[BaseException]) -> tuple[Header, list[Frame]]:
    """The "error" family's record: message and traceback text, raised again on receipt."""
    trace = "".join(traceback.format_exception(failure)) if failure is not None else ""
    return {HEADER_SERIALIZER: ERROR_FAMILY}, [message.encode(), trace.encode()]


def deserialize(header: Header, frames: Sequence[Frame],
                deserializers: Optional[Sequence[str]] = None) -> Any:
    if not isinstance(header, dict):
        raise TypeError(f"header must be a dict, got {type(header).__qualname__}")
    if type(header) is not dict:
        header = dict(header)  # a subclass, by its items (a received header never is one)
    # Any sequence of frames, in both builds (compiled code would refuse a tuple here).
    frame_list = frames if type(frames) is list else list(frames)
    return deserialize_within(header, frame_list, deserializers,
                              DEFAULT_LIMITS.max_frame_bytes)


def deserialize_within(header: Header, frames: list[Frame],
                       deserializers: Optional[Sequence[str]], max_frame_bytes: int) -> Any:
    """deserialize(), with each decompressed frame bounded by `max_frame_bytes`."""
    name = header.get(HEADER_SERIALIZER) if type(header) is dict else None
    if type(name) is not str:
        raise DeserializationError(f"a payload header needs a str {HEADER_SERIALIZER!r}")
    # An "error" payload is always read: it only raises the sender's text, which says more
    # than a refusal would, and runs nothing.
    if deserializers is not None and name not in deserializers and name != ERROR_FAMILY:
        raise RefusedFamilyError(
            f"payload of serializer family {shown(name)} refused: not in deserializers "
            f"{list(deserializers)}")
    family = REGISTRY.families.get(name)
    if family is None:
        raise DeserializationError(f"payload of unknown serializer family {shown(name)}")
    compression = header.get(HEADER_COMPRESSION)
    if compression is not None:
        # deserialize() called on its own: loads inflates a payload before this (in
        # codec.payload_frames, within what is left of the message's budget), and drops
        # "compression" from the header it passes here.
        frames = decompress_frames(compression, frames, max_frame_bytes)
    try:
        return family.loads(header, frames)
    except FastserError:
        raise
    except Exception as exc:
        raise chained(DeserializationError(
            f"the {name!r} family failed to deserialize a payload: "
            f"{type(exc).__name__}: {exc}"), exc)


def msgpack_dumps(obj: Any, context: Optional[Mapping[str, Any]]) -> tuple[Header, list[Frame]]:
    try:
        return {}, [msgpack.packb(obj, use_bin_type=True)]
    except Exception as exc:
        raise chained(NotImplementedError(f"msgpack cannot encode {type(obj).__qualname__}"),
                      exc)


def msgpack_loads(header: Header, frames: list[Frame]) -> Any:
    if len(frames) != 1:
        raise DeserializationError(f"a msgpack payload has one frame, got {len(frames)}")
    return msgpack.unpackb(frames[0], raw=False, strict_map_key=False)


def error_dumps(obj: Any, context: Optional[Mapping[str, Any]]) -> tuple[Header, list[Frame]]:
    raise NotImplementedError("the error family only carries failures of other families")


def error_loads(header: Header, frames: list[Frame]) -> Any:
    # Always opened, even by a safe decoder: its text is cut at ERROR_TEXT_BYTES, so a
    # peer's error costs the bytes it sent and no more than a bounded str and exception.
    parts: list[bytes] = []
    left = ERROR_TEXT_BYTES
    total = 0
    for frame in frames:
        view = byte_view(frame)
        total += view.nbytes
        parts.append(bytes(view[:left]))
        left -= len(parts[-1])
    text = b"\n".join(parts).decode("utf-8", "replace")
    if total > ERROR_TEXT_BYTES:
        text += f" [... {total - ERROR_TEXT_BYTES} more bytes]"
    raise SenderError(f"the sender could not serialize this payload: {text}")


def register_builtin_families() -> None:
    register_builtin_types()
    register_pickle_family()
    register_serialization_family("msgpack", msgpack_dumps, msgpack_loads)
    register_serialization_family(ERROR_FAMILY, error_dumps, error_loads)


register_builtin_families()

# The dispatch family as registered above: a family registered again under the same name
# (register_serialization_family) replaces it, and turns off the short records' direct path.
BUILTIN_DISPATCH: Final = REGISTRY.families[DISPATCH_FAMILY]
