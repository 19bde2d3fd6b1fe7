"""Message -> frames: the one-pass walk that turns a message into a msgpack header with
extension-type placeholders plus out-of-band payload frames.

Strategy: the walk returns each value unchanged when msgpack can encode it as is (exact
str/int/float/bool/None, small bytes, dicts and lists of such), and builds a new container
only on the path to a value it had to replace, so a plain control message is walked but
never copied. Tuples become arrays led by the int TUPLE_LEAD; sets, frozensets and lists
led by that int, arrays led by an empty extension type that marks them; big ints, small
bytearrays and memoryviews extension types; bytes-likes of OUT_OF_BAND_BYTES or more leave
as frames of their own (never copied); wrappers and other objects become serialized records
in the same pass. The path of an object that fails is searched for only after the failure,
so the walk carries none.
"""

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final, Never, Optional, TypedDict, Unpack, cast

from fastser.arguments import (check_names, int_option, optional_option, str_option,
                               too_many_positional)
from fastser.codec.array_records import short_record
from fastser.codec.packing import (BYTEARRAY_FRAME_REFS, BYTES_FRAME_REFS, LIST_MARK,
                                   MEMORYVIEW_FRAME_REFS, PICKLED_MARK, Packers,
                                   SERIALIZED_MARK, ext)
from fastser.codec.paths import find_path
from fastser.codec.payload_frames import OBJECT_FAMILY, add_frame, frame_refs
from fastser.codec.tuple_leads import escaped_header, leads_like_a_tuple
from fastser.codec.wire import (EXT_BIGINT, EXT_BYTEARRAY, EXT_BYTEARRAY_FRAME, EXT_BYTES_FRAME,
                                EXT_MEMORYVIEW, EXT_MEMORYVIEW_FRAME, EXT_PICKLED, EXT_SERIALIZED,
                                WIRE_VERSION)
from fastser.errors import SerializationError, UnencodableError, chained, shown
from fastser.families.dispatch import memoryview_frame
from fastser.families.serialize import (DEFAULT_SERIALIZERS, ERROR_FAMILY, OnError,
                                        check_families, check_on_error, error_payload,
                                        serialize_with)
from fastser.frame_types import Frame, Header, MEMORYVIEW, OUT_OF_BAND_BYTES, nbytes
from fastser.frames.adaptive import LinkRate
from fastser.frames.compression import (FrameCompressor, check_compression, compress_payload,
                                        compressor_choices)
from fastser.headers import HEADER_COMPRESSION, HEADER_SERIALIZER
from fastser.limits import DEFAULT_MAX_DEPTH, object_inflate_bound
from fastser.wrappers import Pickled, Serialize, Serialized, ToPickle

MIN_INT64: Final = -(2**63)
MAX_UINT64: Final = 2**64 - 1
# mypyc keeps ints in [-2**62, 2**62) unboxed and compares them inline; a comparison with
# MIN_INT64 or MAX_UINT64 (boxed) costs ~150 ns, so those are tried only outside this range.
MIN_SHORT_INT: Final = -4611686018427387904
MAX_SHORT_INT: Final = 4611686018427387903
DEFAULT_SPLIT_SIZE: Final = 64 * 2**20
# fastser's readers refuse a message whose frames, with their 8-byte prelude lengths, average
# under 64 bytes (frames.stream.check_views: BYTES_PER_FRAME). Pieces are cut to multiples of
# 16 bytes, so a split size of 56 to 63 still cuts 48-byte pieces; 64 is the least whose
# pieces (64 + 8 bytes) pass however many there are.
MIN_SPLIT_SIZE: Final = 64
PICKLE_ONLY: Final = ("pickle",)
VERSION_BYTE: Final = bytes([WIRE_VERSION])
# Packers are not thread-safe; list.pop/append are atomic, so each dumps call takes its own
# from this pool, shared by every Encoder: an Encoder made per connection (fastser.dask's)
# costs no buffers of its own, and the pool holds as many pairs as calls ever ran at once.
PACKERS: Final[list[Packers]] = []


class EncodeState:
    """What one dumps call accumulates: the frame list, its packers, and the records made
    (searched only when the message fails to pack, to name the payload at fault)."""

    def __init__(self, packers: Packers) -> None:
        self.frames: list[Frame] = [b""]  # frames[0], the header, is written last
        self.packers = packers
        self.records: list[tuple[Header, object]] = []
        # > 0 while a dict key or set item is walked: what is made there must be hashable.
        self.hashable = 0

    def pack_nested(self, obj: object) -> bytes:
        return cast(bytes, self.packers.record.pack(obj))


class DumpsOptions(TypedDict, total=False):
    """The keywords of dumps (docstring in api.py), as the type checker sees them."""
    serializers: Optional[Sequence[str]]
    on_error: OnError
    context: Optional[Mapping[str, Any]]
    frame_split_size: int
    compression: Optional[str]


class EncoderOptions(DumpsOptions, total=False):
    """The keywords of Encoder: those of dumps, a default for unknown objects, and the link
    whose rate decides compression."""
    default: Optional[Callable[[Any], Any]]
    link: Optional[LinkRate]


# Spelled out: mypyc's TypedDict classes lack their bases' keys at run time.
DUMPS_OPTIONS: Final = frozenset(
    {"serializers", "on_error", "context", "frame_split_size", "compression"})
ENCODER_OPTIONS: Final = DUMPS_OPTIONS | {"default", "link"}


def check_options(where: str, options: Mapping[str, object], names: frozenset[str]) -> None:
    """Raise TypeError, naming `where` and the keyword, for a keyword not in `names` or a
    value of the wrong type: the same in both builds (fastser/arguments.py, "Options")."""
    check_names(where, options, names)
    str_option(where, options, "on_error", "raise")
    int_option(where, options, "frame_split_size", DEFAULT_SPLIT_SIZE)
    optional_option(where, options, "compression", str)
    optional_option(where, options, "link", LinkRate)


class Encoder:
    def __init__(self, *args: Never, **options: Unpack[EncoderOptions]) -> None:
        if args:  # in Python's words (fastser/arguments.py, "Positional arguments")
            raise too_many_positional("Encoder", 0, 0, len(args))
        check_options("Encoder", options, ENCODER_OPTIONS)
        on_error = options.get("on_error", "raise")
        check_on_error(on_error)
        frame_split_size = options.get("frame_split_size", DEFAULT_SPLIT_SIZE)
        if frame_split_size < MIN_SPLIT_SIZE:
            raise ValueError(f"frame_split_size must be at least {MIN_SPLIT_SIZE} bytes (smaller "
                             f"pieces make messages that readers refuse), got {frame_split_size!r}")
        serializers = options.get("serializers")
        names = DEFAULT_SERIALIZERS if serializers is None else serializers
        self.serializers: tuple[str, ...] = check_families(names, "serializers")
        self.on_error: str = on_error
        self.context = options.get("context")
        self.frame_split_size = frame_split_size
        # "auto" is resolved once, here: None, or the name of an installed compressor.
        compression = options.get("compression")
        self.compression: Optional[str] = check_compression(compression)
        link = options.get("link")
        self.compressor: Optional[FrameCompressor] = None
        if self.compression is not None:
            if compression == "adaptive" and link is None:
                link = LinkRate()
            self.compressor = FrameCompressor(compressor_choices(compression), link)
        elif link is not None and compression is None:
            raise ValueError("link= takes effect only with a compression: use "
                             "compression='adaptive' (or name one)")
        self.default = options.get("default")
        self.pickle_fallback: bool = "pickle" in self.serializers
        self.max_depth: int = DEFAULT_MAX_DEPTH

    def dumps(self, msg: Any) -> list[Frame]:
        try:
            packers = PACKERS.pop()  # atomic; a check first could race another thread
        except IndexError:
            packers = Packers()
        state = EncodeState(packers)
        try:
            body = self.encode(msg, 0, state)
            try:
                state.frames[0] = VERSION_BYTE + packers.body.pack(body)
            except (TypeError, ValueError, OverflowError) as exc:
                raise self.unpackable(state, exc)
        except UnencodableError as exc:
            where = find_path(msg, exc.obj)
            raise chained(SerializationError(f"{exc.reason} at {where}"), exc.__cause__)
        finally:
            # A Packer with autoreset empties its buffer after a failed pack() too.
            PACKERS.append(packers)
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
            return ext(EXT_BIGINT, value.to_bytes((value.bit_length() + 8) // 8,
                                                      "little", signed=True))
        # Containers count towards max_depth, as the decoder counts them; a bytes-like or a
        # record is a leaf at any depth.
        if type(obj) is dict:
            self.check_depth(obj, depth)
            return self.encode_dict(obj, depth + 1, state)
        if type(obj) is list:
            self.check_depth(obj, depth)
            return self.encode_list(obj, depth + 1, state)
        if type(obj) is bytes:
            if len(obj) < OUT_OF_BAND_BYTES:
                return obj
            return self.out_of_band(obj, state, EXT_BYTES_FRAME, BYTES_FRAME_REFS)
        if t is tuple or t is set or t is frozenset:
            self.check_depth(obj, depth)
            return self.encode_collection(obj, depth, state)
        if type(obj) is bytearray:
            if len(obj) < OUT_OF_BAND_BYTES:
                return ext(EXT_BYTEARRAY, bytes(obj))
            return self.out_of_band(obj, state, EXT_BYTEARRAY_FRAME, BYTEARRAY_FRAME_REFS)
        if type(obj) is MEMORYVIEW:
            view = memoryview_frame(obj)
            # A key or set item stays inline, whatever its size: received out of band into
            # a writeable buffer it would be a writeable memoryview, which cannot be hashed.
            if nbytes(view) < OUT_OF_BAND_BYTES or state.hashable:
                return ext(EXT_MEMORYVIEW, bytes(view))
            return self.out_of_band(view, state, EXT_MEMORYVIEW_FRAME, MEMORYVIEW_FRAME_REFS)
        return self.encode_object(obj, depth, state)

    def check_depth(self, obj: object, depth: int) -> None:
        """UnencodableError if a container inside `depth` others nests deeper than max_depth."""
        if depth >= self.max_depth:
            raise UnencodableError(obj, f"message nested deeper than max_depth={self.max_depth}")

    def encode_dict(self, obj: dict[Any, Any], depth: int, state: EncodeState) -> object:
        out: Optional[dict[Any, Any]] = None
        opened_keys: Optional[set[object]] = None
        unchanged = 0
        for key, value in obj.items():
            new_key: object
            if type(key) is str:
                new_key = key
            else:
                state.hashable += 1
                new_key = self.encode(key, depth, state)
                state.hashable -= 1
                if new_key is not key:  # only a replaced key can hold a wrapper
                    opened_keys = check_opened(key, obj, opened_keys)
                    # Keys that differ and are written alike (two NaN payloads): `out` and
                    # loads would merge them. (Only replaced keys become records.)
                    if out is not None and new_key in out:
                        raise UnencodableError(key, WRITTEN_ALIKE)
            # The common scalars are checked here, saving a call of encode() for each.
            t = type(value)
            if t is str or t is float or t is bool or value is None or (
                    t is int and MIN_SHORT_INT <= cast(int, value) <= MAX_SHORT_INT):
                new_value = value
            else:
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
        # A list that may read back led by TUPLE_LEAD is led by LIST_MARK.
        out: Optional[list[Any]] = [LIST_MARK] if leads_like_a_tuple(obj) else None
        index = 0
        for item in obj:
            t = type(item)
            if t is str or t is float or t is bool or item is None or (
                    t is int and MIN_SHORT_INT <= cast(int, item) <= MAX_SHORT_INT):
                new_item = item  # the common scalars, without a call of encode()
            else:
                new_item = self.encode(item, depth, state)
            if out is not None:
                out.append(new_item)
            elif new_item is not item:
                out = obj[:index]
                out.append(new_item)
            index += 1
        return obj if out is None else out

    def encode_collection(self, obj: object, depth: int, state: EncodeState) -> object:
        """Tuples, sets and frozensets: returned as they are when no item needed a change
        (mark_collection marks them when they are packed), else a new one of the same type
        holding the encoded items (which are hashable where the originals were)."""
        t = type(obj)
        items: Optional[list[object]] = None
        opened_items: Optional[set[object]] = None
        index = 0
        in_set = t is not tuple
        if in_set:
            state.hashable += 1
        for item in cast(Iterable[Any], obj):
            it = type(item)
            if it is str or it is float or it is bool or item is None or (
                    it is int and MIN_SHORT_INT <= cast(int, item) <= MAX_SHORT_INT):
                new_item = item  # the common scalars (keys like ("x", 0)), without a call
            else:
                new_item = self.encode(item, depth + 1, state)
                if in_set and new_item is not item:
                    opened_items = check_opened(item, obj, opened_items)
            if items is not None:
                items.append(new_item)
            elif new_item is not item:
                items = list(cast(Iterable[Any], obj))[:index]
                items.append(new_item)
            index += 1
        if in_set:
            state.hashable -= 1
        if items is None:
            return obj
        if not in_set:
            return tuple(items)
        written = set(items) if t is set else frozenset(items)
        if len(written) != len(items):
            raise written_alike(cast(Iterable[Any], obj), items)
        return written

    def out_of_band(self, frame: Frame, state: EncodeState, code: int,
                    made: list[object]) -> object:
        """The extension type `code` for a large bytes-like's own frame, its data the packed
        ref of the frame, never copied; or, when compression pays, [ref of the compressed
        frame, compression name]. `made`: the ones for frames 1..127, made beforehand."""
        if self.compressor is not None:
            name, compressed = self.compressor.compress_frame(frame)
            if name is not None:
                return ext(code, state.pack_nested(
                    [frame_refs([compressed], state.frames, self.frame_split_size)[0], name]))
        ref = add_frame(frame, state.frames, self.frame_split_size)
        if type(ref) is int and ref < 128:
            return made[ref]
        return ext(code, state.pack_nested(ref))

    def record(self, code: int, header: Header, payload: list[Frame], state: EncodeState,
               obj: object) -> object:
        """A serialized or pickled record, inline in the message: [mark, header, refs]; for
        a numpy array with the dispatch family's header, the short record."""
        if code == EXT_SERIALIZED and len(payload) == 1 and not state.hashable:
            short = short_record(header)  # a numpy array's
            if short is not None:
                state.records.append((header, obj))  # names it if msgpack refuses its dtype
                short[3] = frame_refs(payload, state.frames, self.frame_split_size)[0]
                return short
        state.records.append((header, obj))
        refs = frame_refs(payload, state.frames, self.frame_split_size)
        if state.hashable:
            # A dict key or set item: an array cannot be hashed there, an extension type
            # (EXT_SERIALIZED or EXT_PICKLED) can. Its data is read as plain msgpack, where
            # an ExtType or a key packed as an array cannot stand either: escaped_header
            # refuses them (its copy is not needed: no -32 lead is read there).
            escaped_header(header, obj)
            return ext(code, state.pack_nested([header, refs]))
        mark = SERIALIZED_MARK if code == EXT_SERIALIZED else PICKLED_MARK
        return [mark, escaped_header(header, obj), refs]

    def unpackable(self, state: EncodeState, exc: Exception) -> SerializationError:
        """The error for a message msgpack refused: the walk let through only what msgpack
        takes, so a record header is at fault; find which, to name its payload's path."""
        for header, obj in state.records:
            try:
                state.packers.record.pack(header)
            except (TypeError, ValueError, OverflowError) as cause:
                reason = (f"the header of a {type(obj).__qualname__} payload is not "
                          f"msgpack-encodable: {cause}")
                return chained(UnencodableError(obj, reason), cause)
        return chained(SerializationError(f"the message is not msgpack-encodable: {exc}"), exc)

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
            # A replacement counts as a level: that bounds a `default` that keeps returning
            # new objects.
            self.check_depth(obj, depth)
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
        # names: self.serializers for Serialize, PICKLE_ONLY for ToPickle and the fallback.
        try:
            header, payload = serialize_with(data, names, self.on_error, self.context)
        except SerializationError as exc:
            raise chained(UnencodableError(obj, str(exc)), exc.__cause__)
        # ToPickle and the fallback travel as pickled records, so a decoder that refuses
        # pickle can still forward them unopened; a failure (on_error="message") travels as
        # a serialized "error" record, which raises on receipt.
        if header.get(HEADER_SERIALIZER) == ERROR_FAMILY:
            code = EXT_SERIALIZED
        elif self.compressor is not None and HEADER_COMPRESSION not in header:
            # A msgpack payload stays uncompressed where a decoder would refuse to inflate
            # it (each inflated byte becomes objects): fastser never writes what it refuses.
            bound = object_inflate_bound if header.get(HEADER_SERIALIZER) == OBJECT_FAMILY \
                else None
            payload = compress_payload(header, payload, self.compressor, bound)
        return self.record(code, header, payload, state, obj)


def opened(obj: object) -> object:
    """What a dict key or set item reads back as: its Serialize and ToPickle wrappers
    opened, through tuples and frozensets; obj itself when it holds none. (Serialized and
    Pickled are not opened: what they stand for is known only by deserializing them.)"""
    if isinstance(obj, (Serialize, ToPickle)):
        return obj.data
    t = type(obj)
    if t is tuple or t is frozenset:
        items = [opened(item) for item in cast(Iterable[Any], obj)]
        if all(new is old for new, old in zip(items, cast(Iterable[Any], obj))):
            return obj
        return tuple(items) if t is tuple else frozenset(items)
    return obj


# Two wrappers whose payloads serialize to the same bytes, though they are not equal (NaN
# is equal to nothing; an object without __eq__ only to itself), make equal records.
WRITTEN_ALIKE: Final = ("a dict key or set item is written as the same bytes as another "
                        "beside it, although the two are not equal (as two NaNs): loads would "
                        "merge the two")


def written_alike(originals: Iterable[Any], items: list[object]) -> UnencodableError:
    """The error naming the first set item whose record equals an earlier one's."""
    seen: set[object] = set()
    for original, item in zip(originals, items):
        if item in seen:
            return UnencodableError(original, WRITTEN_ALIKE)
        seen.add(item)
    return UnencodableError(originals, WRITTEN_ALIKE)


def check_opened(key: object, container: object, seen: Optional[set[object]]
                 ) -> Optional[set[object]]:
    """UnencodableError if `key`, a dict key or set item of `container` the walk replaced,
    holds wrappers and, opened, equals another of its keys or one opened before (`seen`,
    made at the first, returned): loads would merge them into one, losing a value.
    Called only for replaced keys, so plain dicts and sets pay nothing."""
    value = opened(key)
    if value is key:
        return seen
    try:
        merges = value in cast(Any, container) or (seen is not None and value in seen)
    except TypeError as exc:  # a wrapper subclass hashable where its data is not
        raise chained(UnencodableError(key, f"a dict key or set item opens to an unhashable "
                                            f"{type(value).__qualname__}"), exc)
    if merges:
        raise UnencodableError(key, f"a dict key or set item opens to {shown(value)}, equal to "
                                    f"another beside it: loads would merge the two")
    if seen is None:
        seen = set()
    seen.add(value)
    return seen
