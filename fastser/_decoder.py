"""Frames -> message: one msgpack decode whose extension hook rebuilds every placeholder.

Strategy: placeholders are resolved inside msgpack's hooks as the header is decoded, so there
is no second walk over the result: ext_hook rebuilds payloads and turns a tuple/set mark into
a sentinel, and list_hook turns an array led by a sentinel into its tuple, set or frozenset.
Every index, count and length read from the wire is checked before it is used; Limits are
checked before decoding starts; a sentinel anywhere but first in an array is refused.
Version 1 headers (tuples as nested extension payloads) are still read; their nesting is
bounded by MAX_NESTED_EXT, as each level costs a nested msgpack call on the C stack.
"""

from collections.abc import Callable, Sequence
from typing import Any, Final, Optional

import msgpack

from ._errors import DeserializationError, FastserError, chained
from ._limits import DEFAULT_LIMITS, Limits
from ._compression import compression_names, decompress
from ._depth import deeper_than, is_container
from ._serialize import (builtin_pickle, check_families, deserialize_within,
                         unpickle_directly)
from ._task import TaskNames, build_task, tail_start
from ._split import merge_frames
from ._types import Frame, Header, byte_view, nbytes
from ._wire import (EXT_BIGINT, EXT_BYTEARRAY, EXT_BYTEARRAY_FRAME, EXT_BYTES_FRAME,
                    EXT_FROZENSET, EXT_FROZENSET_MARK, EXT_MEMORYVIEW, EXT_MEMORYVIEW_FRAME,
                    EXT_PICKLE_PICKLED, EXT_PICKLE_SERIALIZED, EXT_PICKLED, EXT_PICKLED_MARK,
                    EXT_SERIALIZED, EXT_SERIALIZED_MARK, EXT_SET, EXT_SET_MARK,
                    EXT_TASK_PICKLED_MARK, EXT_TASK_SERIALIZED_MARK, EXT_TUPLE, EXT_TUPLE_MARK,
                    FORM_TASK, HEADER_COMPRESSION, HEADER_FORM, HEADER_SERIALIZER,
                    MAX_NESTED_EXT, OLDEST_READABLE_VERSION, PICKLE_FAMILY, WIRE_VERSION)
from .wrappers import Pickled, Serialized

SerializedFactory = Callable[[Header, list[Frame]], Any]
SMALL_HEADER_BYTES: Final = 4096


# mypyc looks a module attribute up by name on every use; a Final copy is a static.
UNPACKB: Final = msgpack.unpackb


def unpack(data: Any, ext_hook: Any, list_hook: Any) -> Any:
    return UNPACKB(data, ext_hook=ext_hook, list_hook=list_hook, raw=False,
                           strict_map_key=False, use_list=True)


class Mark:
    """What ext_hook returns for a tuple, set or frozenset mark, until list_hook sees it."""


TUPLE_MARK: Final = Mark()
SET_MARK: Final = Mark()
FROZENSET_MARK: Final = Mark()
SERIALIZED_MARK: Final = Mark()
PICKLED_MARK: Final = Mark()
TASK_SERIALIZED_MARK: Final = Mark()
TASK_PICKLED_MARK: Final = Mark()


def unpack_ref(data: bytes) -> Any:
    """A frame ref from an extension type's data; a one-byte positive fixint (the common
    case: payload frames 1..127) is read without calling msgpack."""
    if len(data) == 1 and data[0] < 128:
        return data[0]
    return unpack_plain(data)


def unpack_plain(data: Any) -> Any:
    # Records and refs hold no extension types; without a hook there is no recursion.
    return UNPACKB(data, raw=False, strict_map_key=False, use_list=True)


class Decoder:
    def __init__(self, *, deserialize: bool = True,
                 deserializers: Optional[Sequence[str]] = None,
                 limits: Optional[Limits] = None, open_pickled: bool = False,
                 serialized_factory: Optional[SerializedFactory] = None) -> None:
        self.deserialize = bool(deserialize)
        self.deserializers: Optional[tuple[str, ...]] = (
            None if deserializers is None else check_families(deserializers, "deserializers"))
        self.limits: Limits = DEFAULT_LIMITS if limits is None else limits
        self.open_pickled = bool(open_pickled)
        self.serialized_factory = serialized_factory
        self.pickle_allowed: bool = self.deserializers is None or PICKLE_FAMILY in self.deserializers

    def loads(self, frames: Sequence[Frame]) -> Any:
        given: object = frames  # untrusted: checked, not assumed, to be a frame sequence
        if type(given) is list:
            frame_list: list[Any] = given
        elif type(given) is tuple or (isinstance(given, Sequence) and
                                      not isinstance(given, (bytes, bytearray, str))):
            frame_list = list(given)
        else:
            raise DeserializationError(
                f"frames must be a list of bytes-like frames, not {type(given).__qualname__}")
        self.check_limits(frame_list)
        header = frame_list[0]
        body: object
        if type(header) is bytes and 0 < len(header) <= SMALL_HEADER_BYTES:
            # A small copy costs less than the two memoryviews that avoid it.
            size = len(header)
            version = header[0]
            body = header[1:]
        else:
            view = byte_view(header)
            size = view.nbytes
            version = view[0] if size else -1
            body = view[1:]
        if not OLDEST_READABLE_VERSION <= version <= WIRE_VERSION:
            found = version if size else "nothing"
            raise DeserializationError(
                f"frame 0 is not a fastser header of wire version {WIRE_VERSION} or earlier "
                f"(first byte: {found})")
        state = DecodeState(self, frame_list)
        try:
            msg = unpack(body, state.ext_hook, state.list_hook)
        except FastserError:
            raise
        except Exception as exc:
            raise chained(DeserializationError(
                f"corrupt header frame (frame 0, {size} bytes): {type(exc).__name__}: {exc}"),
                exc)
        if state.marks:
            raise DeserializationError(
                "a tuple or set mark stands elsewhere than first in an array")
        max_depth = self.limits.max_depth
        # A level of nesting takes at least one byte of header if it is an array, two if
        # it is a map (its header, and the other half of the entry the path does not take),
        # so a header of N bytes holding A arrays nests at most (N + A) // 2 deep; only a
        # header that could nest deeper is walked. msgpack itself stops at 1024 levels.
        if (size + state.arrays) // 2 > max_depth and is_container(msg) and \
                deeper_than(msg, max_depth, state.collections > 0):
            raise DeserializationError(
                f"message nested deeper than Limits.max_depth={max_depth}")
        return msg

    def check_limits(self, frames: list[Any]) -> None:
        # list[Any], not list[Frame]: compiled code would raise TypeError on a non-frame
        # item before the check below could name it.
        limits = self.limits
        count = len(frames)
        if count == 0:
            raise DeserializationError("no frames: a message has at least its header frame")
        if count > limits.max_frames:
            raise DeserializationError(
                f"{count} frames exceed Limits.max_frames={limits.max_frames}")
        total = 0
        for index, frame in enumerate(frames):
            if type(frame) is not bytes and type(frame) is not bytearray and type(frame) is not memoryview:
                raise DeserializationError(
                    f"frame {index} is of type {type(frame).__qualname__}, not a bytes-like frame")
            size = nbytes(frame)
            if size > limits.max_frame_bytes:
                raise DeserializationError(
                    f"frame {index} of {size} bytes exceeds "
                    f"Limits.max_frame_bytes={limits.max_frame_bytes}")
            total += size
        if nbytes(frames[0]) > limits.max_header_bytes:
            raise DeserializationError(
                f"header frame of {nbytes(frames[0])} bytes exceeds "
                f"Limits.max_header_bytes={limits.max_header_bytes}")
        if total > limits.max_message_bytes:
            raise DeserializationError(
                f"message of {total} bytes exceeds "
                f"Limits.max_message_bytes={limits.max_message_bytes}")


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


class DecodeState:
    """What one loads call needs inside msgpack's ext_hook."""

    def __init__(self, decoder: Decoder, frames: list[Frame]) -> None:
        self.decoder = decoder
        self.frames = frames
        self.nested_ext = 0
        self.max_nested = min(MAX_NESTED_EXT, decoder.limits.max_depth)
        self.marks = 0  # marks made by ext_hook that list_hook has not yet consumed
        self.collections = 0  # tuples, sets and frozensets made (v1 and v2)
        self.arrays = 0  # arrays decoded, each seen by list_hook
        self.inflated = 0  # bytes decompressed so far in this message
        self.used: Optional[bytearray] = None  # which payload frames a ref has named
        self.task_packer: Any = None  # made for the first task kept unopened
        self.task_names: Optional[TaskNames] = None  # made for the first task
        self.builtin_pickle = -1  # whether "pickle" is fastser's own: 1, 0, or not asked yet

    def list_hook(self, items: list[Any]) -> Any:
        self.arrays += 1
        if not items:
            return items
        first = items[0]
        if type(first) is not Mark:
            return items
        self.marks -= 1
        if first is TASK_SERIALIZED_MARK or first is TASK_PICKLED_MARK:
            del items[0]
            try:
                return self.task(first is TASK_SERIALIZED_MARK, items)
            except DeserializationError as exc:
                raise chained(DeserializationError(f"{exc} (a task inline in the header)"),
                              exc)
        if first is SERIALIZED_MARK or first is PICKLED_MARK:
            header, frames = self.record_parts(items)
            try:
                if first is SERIALIZED_MARK:
                    return self.open_serialized(header, frames)
                return self.open_pickled(header, frames)
            except DeserializationError as exc:
                raise chained(DeserializationError(f"{exc} (the payload {where(items[2])})"),
                              exc)
        self.collections += 1
        del items[0]
        if first is TUPLE_MARK:
            return tuple(items)
        if first is SET_MARK:
            return set(items)
        return frozenset(items)

    def task(self, serialized: bool, fields: list[Any]) -> Any:
        """A version 5 task ([mark, kind, function, *tail] without its mark): built here
        when the pickle family would build it, else the record of its fields."""
        start = tail_start(fields)
        names = self.task_names
        if names is None:
            names = self.task_names = TaskNames()
        index = names.index_of(fields)
        decoder = self.decoder
        if decoder.deserialize and decoder.pickle_allowed and self.pickle_is_builtin():
            try:
                task = build_task(fields, names.function(index), start)
            except FastserError:
                raise
            except Exception:
                pass  # the general way below raises it again, with its context
            else:
                self.collections += 1  # a tuple, perhaps
                return task
        header: Header = {HEADER_SERIALIZER: PICKLE_FAMILY, HEADER_FORM: FORM_TASK}
        packer = self.task_packer
        if packer is None:
            packer = self.task_packer = msgpack.Packer(autoreset=True, use_bin_type=True)
        frames: list[Frame] = [packer.pack(names.self_contained(fields, index, start))]
        if serialized:
            return self.open_serialized(header, frames)
        return self.open_pickled(header, frames)

    def pickle_is_builtin(self) -> bool:
        """builtin_pickle(), asked once per message."""
        builtin = self.builtin_pickle
        if builtin < 0:
            builtin = self.builtin_pickle = int(builtin_pickle())
        return builtin == 1

    def ext_hook(self, code: int, data: bytes) -> Any:
        if EXT_TUPLE_MARK <= code <= EXT_PICKLED_MARK or \
                code == EXT_TASK_SERIALIZED_MARK or code == EXT_TASK_PICKLED_MARK:
            if data:
                raise DeserializationError(f"extension type {code} (a mark) carries data")
            self.marks += 1
            return (TUPLE_MARK if code == EXT_TUPLE_MARK else
                    SET_MARK if code == EXT_SET_MARK else
                    FROZENSET_MARK if code == EXT_FROZENSET_MARK else
                    SERIALIZED_MARK if code == EXT_SERIALIZED_MARK else
                    PICKLED_MARK if code == EXT_PICKLED_MARK else
                    TASK_SERIALIZED_MARK if code == EXT_TASK_SERIALIZED_MARK else
                    TASK_PICKLED_MARK)
        if code == EXT_PICKLE_SERIALIZED or code == EXT_PICKLE_PICKLED:
            return self.pickle_record(code, data)
        if code == EXT_TUPLE:
            return tuple(self.nested_items(data))
        if code == EXT_SERIALIZED:
            return self.serialized(data)
        if code == EXT_PICKLED:
            return self.pickled(data)
        if code == EXT_BYTES_FRAME:
            frame = self.raw_frame(unpack_ref(data), False)
            return frame if type(frame) is bytes else bytes(frame)
        if code == EXT_BIGINT:
            return int.from_bytes(data, "little", signed=True)
        if code == EXT_SET:
            return set(self.nested_items(data))
        if code == EXT_FROZENSET:
            return frozenset(self.nested_items(data))
        if code == EXT_BYTEARRAY:
            return bytearray(data)
        if code == EXT_MEMORYVIEW:
            return memoryview(data)
        if code == EXT_BYTEARRAY_FRAME:
            frame = self.raw_frame(unpack_ref(data), True)
            return frame if type(frame) is bytearray else bytearray(frame)
        if code == EXT_MEMORYVIEW_FRAME:
            return byte_view(self.raw_frame(unpack_ref(data), True))
        raise DeserializationError(f"unknown extension type code {code} in the header frame")

    def pickle_record(self, code: int, data: bytes) -> Any:
        """A version 4 record of one inline pickle: as [mark, {"serializer": "pickle"},
        [data]], with a header of its own (a Serialized or Pickled may be changed by its
        receiver)."""
        decoder = self.decoder
        if decoder.deserialize and decoder.pickle_allowed:
            found, value = unpickle_directly(data)  # a task, without the family call
            if found:
                return value
        header: Header = {HEADER_SERIALIZER: PICKLE_FAMILY}
        try:
            if code == EXT_PICKLE_SERIALIZED:
                return self.open_serialized(header, [data])
            return self.open_pickled(header, [data])
        except DeserializationError as exc:
            raise chained(DeserializationError(f"{exc} (the payload inline in the header)"),
                          exc)

    def nested_items(self, data: bytes) -> list[Any]:
        if self.nested_ext >= self.max_nested:
            raise DeserializationError(
                f"tuples, sets and frozensets nested more than {self.max_nested} deep")
        self.nested_ext += 1
        self.collections += 1
        items = unpack(data, self.ext_hook, self.list_hook)
        self.nested_ext -= 1
        if type(items) is not list:
            raise DeserializationError("a tuple or set placeholder does not hold an array")
        return items

    def raw_frame(self, ref: Any, writeable: bool) -> Frame:
        """The frame of an out-of-band bytes-like: a frame ref, or [frame ref, compression]."""
        if type(ref) is list and len(ref) == 2 and type(ref[1]) is str:
            return self.inflate(ref[1], self.frame_at(ref[0]), writeable)
        return self.frame_at(ref)

    def inflate(self, name: Any, frame: Frame, writeable: bool) -> Frame:
        """Decompress one frame, within Limits.max_frame_bytes and what the message's
        earlier decompressed frames left of Limits.max_message_bytes: a header of many
        small compressed frames cannot make one loads inflate more than that."""
        limits = self.decoder.limits
        left = limits.max_message_bytes - self.inflated
        if left < limits.max_frame_bytes:
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
        if compression is None:
            return header, frames
        out: list[Frame] = []
        for name, frame in zip(compression_names(compression, len(frames)), frames):
            out.append(frame if name is None else self.inflate(name, frame, True))
        return {key: value for key, value in header.items() if key != HEADER_COMPRESSION}, out

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
            if not (0 < start and 0 < pieces and start + pieces <= count):
                raise DeserializationError(
                    f"the header names {pieces} pieces from payload frame {start}, but the "
                    f"message has {count} frames (0 is the header)")
            self.claim(start, pieces)
            parts = self.frames[start:start + pieces]
            size = 0
            for part in parts:
                size += nbytes(part)
            limit = self.decoder.limits.max_frame_bytes
            if size > limit:
                raise DeserializationError(
                    f"frames {start}..{start + pieces - 1} join to {size} bytes, exceeding "
                    f"Limits.max_frame_bytes={limit}")
            return merge_frames(parts)
        raise DeserializationError(f"bad frame reference {ref!r}")

    def claim(self, start: int, count: int) -> None:
        used = self.used
        if used is None:
            used = self.used = bytearray(len(self.frames))
        for index in range(start, start + count):
            if used[index]:
                raise DeserializationError(f"frame {index} is referenced twice in the header")
            used[index] = 1

    def record(self, data: bytes) -> tuple[Header, list[Frame]]:
        """A version 1/2 record: its own msgpack payload inside an extension type."""
        record = unpack_plain(data)
        if type(record) is not list or len(record) != 2 or type(record[0]) is not dict \
                or type(record[1]) is not list:
            raise DeserializationError("a payload placeholder is not [header, frames]")
        return record[0], [self.frame_at(ref) for ref in record[1]]

    def record_parts(self, items: list[Any]) -> tuple[Header, list[Frame]]:
        """A version 3 record: the array [mark, header, refs], decoded with the message."""
        if len(items) != 3 or type(items[1]) is not dict or type(items[2]) is not list:
            raise DeserializationError("a payload record is not [mark, header, frames]")
        refs: list[Any] = items[2]
        return items[1], [self.frame_at(ref) for ref in refs]

    def serialized(self, data: bytes) -> Any:
        header, frames = self.record(data)
        return self.open_serialized(header, frames)

    def pickled(self, data: bytes) -> Any:
        header, frames = self.record(data)
        return self.open_pickled(header, frames)

    def open_serialized(self, header: Header, frames: list[Frame]) -> Any:
        decoder = self.decoder
        if decoder.deserialize:
            header, frames = self.inflate_payload(header, frames)
            return deserialize_within(header, frames, decoder.deserializers,
                                      decoder.limits.max_frame_bytes)
        if decoder.serialized_factory is not None:
            return decoder.serialized_factory(header, frames)
        return Serialized(header, frames)

    def open_pickled(self, header: Header, frames: list[Frame]) -> Any:
        decoder = self.decoder
        if decoder.pickle_allowed and (decoder.deserialize or decoder.open_pickled):
            if header.get(HEADER_SERIALIZER) != PICKLE_FAMILY:
                raise DeserializationError(
                    f"a pickled placeholder names the family {header.get(HEADER_SERIALIZER)!r}")
            header, frames = self.inflate_payload(header, frames)
            return deserialize_within(header, frames, decoder.deserializers,
                                      decoder.limits.max_frame_bytes)
        # Never unpickled here: forwarded as it arrived.
        return Pickled(header, frames)
