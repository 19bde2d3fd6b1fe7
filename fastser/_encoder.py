"""Message -> frames: the one-pass walk that turns a message into a msgpack header with
extension-type placeholders plus out-of-band payload frames.

Strategy: the walk returns each value unchanged when msgpack can encode it as is (exact
str/int/float/bool/None, small bytes, dicts and lists of such), and builds a new container
only on the path to a value it had to replace, so a plain control message is walked but
never copied. Tuples, sets, big ints, bytearrays and memoryviews become extension types;
bytes-likes of OUT_OF_BAND_BYTES or more leave as frames of their own (never copied);
wrappers and other objects become serialized records in the same pass. The path of an
object that fails is searched for only after the failure, so the walk carries none.
"""

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final, Optional, Union, cast

import msgpack

from ._compression import check_compression, maybe_compress
from ._dispatch import memoryview_frame
from ._errors import SerializationError, UnencodableError, chained
from ._limits import DEFAULT_MAX_DEPTH
from ._paths import find_path
from ._serialize import (DEFAULT_SERIALIZERS, ERROR_FAMILY, OnError, check_families,
                         check_on_error, error_payload, serialize_with)
from ._split import split_frames
from ._types import Frame, Header, nbytes
from ._wire import (EXT_BIGINT, EXT_BYTEARRAY, EXT_BYTEARRAY_FRAME, EXT_BYTES_FRAME,
                    EXT_FROZENSET, EXT_MEMORYVIEW, EXT_MEMORYVIEW_FRAME, EXT_PICKLED,
                    EXT_SERIALIZED, EXT_SET, EXT_TUPLE, HEADER_COMPRESSION, HEADER_SERIALIZER,
                    MAX_NESTED_EXT,
                    OUT_OF_BAND_BYTES, WIRE_VERSION)
from .wrappers import Pickled, Serialize, Serialized, ToPickle

ExtType: Final = msgpack.ExtType
MIN_INT64: Final = -(2**63)
MAX_UINT64: Final = 2**64 - 1
# mypyc keeps ints in [-2**62, 2**62) unboxed and compares them inline; a comparison with
# MIN_INT64 or MAX_UINT64 (boxed) costs ~150 ns, so those are tried only outside this range.
MIN_SHORT_INT: Final = -4611686018427387904
MAX_SHORT_INT: Final = 4611686018427387903
DEFAULT_SPLIT_SIZE: Final = 64 * 2**20
PICKLE_ONLY: Final = ("pickle",)

# A frame ref in a serialized record: the frame inline, an index, or [start, count].
FrameRef = Union[Frame, int, list[int]]


def new_packer() -> Any:
    return msgpack.Packer(autoreset=False, use_bin_type=True)


class EncodeState:
    """What one dumps call accumulates: the frame list, its packer, and how many tuples,
    sets and frozensets enclose the value being walked."""

    def __init__(self, packer: Any) -> None:
        self.frames: list[Frame] = [b""]  # frames[0], the header, is written last
        self.packer = packer
        self.nested_ext = 0

    def pack_nested(self, obj: object) -> bytes:
        # The walk finishes every nested payload before the top-level pack starts, so one
        # packer serves both; its buffer is reset after each nested payload.
        self.packer.pack(obj)
        data: bytes = self.packer.bytes()
        self.packer.reset()
        return data


class Encoder:
    def __init__(self, *, serializers: Optional[Sequence[str]] = None,
                 on_error: OnError = "raise", context: Optional[Mapping[str, Any]] = None,
                 frame_split_size: int = DEFAULT_SPLIT_SIZE, compression: Optional[str] = None,
                 default: Optional[Callable[[Any], Any]] = None) -> None:
        check_on_error(on_error)
        if type(frame_split_size) is not int or frame_split_size < 1:
            raise ValueError(f"frame_split_size must be a positive int, got {frame_split_size!r}")
        names = DEFAULT_SERIALIZERS if serializers is None else serializers
        self.serializers: tuple[str, ...] = check_families(names, "serializers")
        self.on_error: str = on_error
        self.context = context
        self.frame_split_size = frame_split_size
        # "auto" is resolved once, here: None, or the name of an installed compressor.
        self.compression: Optional[str] = check_compression(compression)
        self.default = default
        self.pickle_fallback: bool = "pickle" in self.serializers
        self.max_depth: int = DEFAULT_MAX_DEPTH
        # Packers are not thread-safe; list.pop/append are atomic, so each call takes its
        # own from this pool and a shared Encoder stays safe across threads.
        self.packers: list[Any] = []

    def dumps(self, msg: Any) -> list[Frame]:
        packer = self.packers.pop() if self.packers else new_packer()
        state = EncodeState(packer)
        try:
            body = self.encode(msg, 0, state)
            packer.pack(WIRE_VERSION)
            packer.pack(body)
            state.frames[0] = packer.bytes()
        except UnencodableError as exc:
            where = find_path(msg, exc.obj)
            raise chained(SerializationError(f"{exc.reason} at {where}"), exc.__cause__)
        finally:
            packer.reset()
            self.packers.append(packer)
        return state.frames

    def encode(self, obj: object, depth: int, state: EncodeState) -> object:
        # `type(obj) is T` (not isinstance): subclasses of message types are other objects.
        t = type(obj)
        if t is str or t is float or t is bool or obj is None:
            return obj
        if t is int:
            # mypyc: `type(obj) is int` narrows obj to a native int, and `return obj` would
            # then box a new int object — no longer `obj`, so every list of ints got copied.
            value = cast(int, obj)
            if MIN_SHORT_INT <= value <= MAX_SHORT_INT or MIN_INT64 <= value <= MAX_UINT64:
                return obj
            return ExtType(EXT_BIGINT, value.to_bytes((value.bit_length() + 8) // 8,
                                                      "little", signed=True))
        if depth >= self.max_depth:
            raise UnencodableError(obj, f"message nested deeper than max_depth={self.max_depth}")
        if type(obj) is dict:
            return self.encode_dict(obj, depth + 1, state)
        if type(obj) is list:
            return self.encode_list(obj, depth + 1, state)
        if type(obj) is bytes:
            if len(obj) < OUT_OF_BAND_BYTES:
                return obj
            return ExtType(EXT_BYTES_FRAME, self.out_of_band(obj, state))
        if t is tuple or t is set or t is frozenset:
            return self.encode_collection(obj, depth, state)
        if type(obj) is bytearray:
            if len(obj) < OUT_OF_BAND_BYTES:
                return ExtType(EXT_BYTEARRAY, bytes(obj))
            return ExtType(EXT_BYTEARRAY_FRAME, self.out_of_band(obj, state))
        if type(obj) is memoryview:
            view = memoryview_frame(obj)
            if nbytes(view) < OUT_OF_BAND_BYTES:
                return ExtType(EXT_MEMORYVIEW, bytes(view))
            return ExtType(EXT_MEMORYVIEW_FRAME, self.out_of_band(view, state))
        return self.encode_object(obj, depth, state)

    def encode_dict(self, obj: dict[Any, Any], depth: int, state: EncodeState) -> object:
        out: Optional[dict[Any, Any]] = None
        unchanged = 0
        for key, value in obj.items():
            new_key = key if type(key) is str else self.encode(key, depth, state)
            new_value = self.encode(value, depth, state)
            if out is None:
                if new_key is key and new_value is value:
                    unchanged += 1
                    continue
                out = {}
                # Copy the items before this one: they needed no change.
                for old_key, old_value in obj.items():
                    if not unchanged:
                        break
                    out[old_key] = old_value
                    unchanged -= 1
            out[new_key] = new_value
        return obj if out is None else out

    def encode_list(self, obj: list[Any], depth: int, state: EncodeState) -> object:
        out: Optional[list[Any]] = None
        index = 0
        for item in obj:
            new_item = self.encode(item, depth, state)
            if out is not None:
                out.append(new_item)
            elif new_item is not item:
                out = obj[:index]
                out.append(new_item)
            index += 1
        return obj if out is None else out

    def encode_collection(self, obj: object, depth: int, state: EncodeState) -> object:
        """Tuples, sets and frozensets: an extension type holding the packed items."""
        t = type(obj)
        code = EXT_TUPLE if t is tuple else EXT_SET if t is set else EXT_FROZENSET
        if state.nested_ext >= MAX_NESTED_EXT:
            raise UnencodableError(obj, "tuples, sets and frozensets nested more than "
                                        f"{MAX_NESTED_EXT} inside one another")
        state.nested_ext += 1
        items = [self.encode(item, depth + 1, state) for item in cast(Iterable[Any], obj)]
        state.nested_ext -= 1
        return ExtType(code, state.pack_nested(items))

    def out_of_band(self, frame: Frame, state: EncodeState) -> bytes:
        """The packed ref of a large bytes-like's own frame: the frame, never copied; or,
        when compression pays, [ref of the compressed frame, compression name]."""
        if self.compression is not None:
            name, compressed = maybe_compress(frame, self.compression)
            if name is not None:
                return state.pack_nested([self.frame_refs([compressed], state.frames)[0], name])
        return state.pack_nested(self.add_frame(frame, state.frames))

    def add_frame(self, frame: Frame, frames: list[Frame]) -> FrameRef:
        """Append an out-of-band frame (split into views if large) and return its ref."""
        if nbytes(frame) > self.frame_split_size:
            pieces = split_frames(frame, self.frame_split_size)
            start = len(frames)
            frames.extend(pieces)
            return [start, len(pieces)]
        frames.append(frame)
        return len(frames) - 1

    def frame_refs(self, payload: list[Frame], frames: list[Frame]) -> list[FrameRef]:
        refs: list[FrameRef] = []
        for frame in payload:
            if nbytes(frame) < OUT_OF_BAND_BYTES:
                refs.append(frame)  # small: inline in the header (msgpack copies it there)
            else:
                refs.append(self.add_frame(frame, frames))
        return refs

    def record(self, code: int, header: Header, payload: list[Frame], state: EncodeState,
               obj: object) -> object:
        try:
            data = state.pack_nested([header, self.frame_refs(payload, state.frames)])
        except (TypeError, ValueError, OverflowError) as exc:
            state.packer.reset()
            reason = (f"the header of a {type(obj).__qualname__} payload is not "
                      f"msgpack-encodable: {exc}")
            raise chained(UnencodableError(obj, reason), exc)
        return ExtType(code, data)

    def encode_object(self, obj: object, depth: int, state: EncodeState) -> object:
        """Wrappers, and other objects: serialized records in the same pass."""
        if isinstance(obj, Serialize):
            return self.serialized_record(EXT_SERIALIZED, obj.data, self.serializers, obj, state)
        if isinstance(obj, ToPickle):
            return self.serialized_record(EXT_PICKLED, obj.data, PICKLE_ONLY, obj, state)
        if isinstance(obj, Serialized):
            return self.record(EXT_SERIALIZED, obj.header, obj.frames, state, obj)
        if isinstance(obj, Pickled):
            return self.record(EXT_PICKLED, obj.header, obj.frames, state, obj)
        if self.default is not None:
            try:
                replacement = self.default(obj)
            except NotImplementedError:
                replacement = obj
            if replacement is not obj:
                return self.encode(replacement, depth + 1, state)
        if self.pickle_fallback:
            return self.serialized_record(EXT_PICKLED, obj, PICKLE_ONLY, obj, state)
        reason = (f"cannot serialize object of type {type(obj).__qualname__}: not a message "
                  f"type, and 'pickle' is not in serializers {list(self.serializers)}")
        if self.on_error == "message":
            header, payload = error_payload(reason, None)
            return self.record(EXT_SERIALIZED, header, payload, state, obj)
        raise UnencodableError(obj, reason)

    def serialized_record(self, code: int, data: object, names: Sequence[str], obj: object,
                          state: EncodeState) -> object:
        try:
            header, payload = serialize_with(data, names, self.on_error, self.context)
        except SerializationError as exc:
            raise chained(UnencodableError(obj, str(exc)), exc.__cause__)
        # ToPickle and the fallback travel as pickled records, so a decoder that refuses
        # pickle can still forward them unopened; a failure (on_error="message") travels as
        # a serialized "error" record, which raises on receipt.
        if header.get(HEADER_SERIALIZER) == ERROR_FAMILY:
            code = EXT_SERIALIZED
        elif self.compression is not None and HEADER_COMPRESSION not in header:
            payload = self.compress_payload(header, payload, self.compression)
        return self.record(code, header, payload, state, obj)

    def compress_payload(self, header: Header, payload: list[Frame],
                         compression: str) -> list[Frame]:
        """The payload with every frame that compresses well compressed; the header's
        "compression" lists what each frame went through (only when one did)."""
        names: list[Optional[str]] = []
        frames: list[Frame] = []
        for frame in payload:
            name, frame = maybe_compress(frame, compression)
            names.append(name)
            frames.append(frame)
        if any(name is not None for name in names):
            header[HEADER_COMPRESSION] = names
            return frames
        return payload
