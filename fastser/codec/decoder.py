"""Frames -> message: one msgpack decode whose extension hook rebuilds every placeholder.

Strategy: placeholders are resolved inside msgpack's hooks as the header is decoded, so there
is no second walk over the result: ext_hook rebuilds payloads and turns a mark into a
sentinel (codec.marks), and list_hook (DecodeState.__call__) turns an array led by a sentinel into
its list, set or frozenset, record or numpy array (a short record, built
without its header where fastser's own numpy entry would read it), and one led by the int
TUPLE_LEAD into a tuple.
Every index, count and length read from the wire is checked before it is used; Limits are
checked before decoding starts; a sentinel anywhere but first in an array is refused.
What a peer's bytes buy is bounded: every byte msgpack turns into objects (the header's, and
each msgpack-family payload's once inflated) counts against Limits.max_header_bytes, and the
hashes of the values that may become keys are counted (codec.collisions) before msgpack
inserts them.
"""

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, Never, Optional, TypedDict, Unpack, cast

from fastser.arguments import bool_option, check_names, optional_option, too_many_positional
from fastser.codec.array_records import DirectLoads, check_short_record, header_of
from fastser.codec.collisions import COUNT_AFTER, HashCounter
from fastser.codec.depth import (KEYS_TOO_DEEP, SCAN_DEPTH, deeper_than, float_key_hashes,
                                 header_nests_deeper, holds_ext_minus_1, is_container,
                                 many_float_bytes)
from fastser.codec.header import frame_list_of, header_body
from fastser.codec.marks import (ARRAY_MARK, LIST_MARK, MARKS, Mark, PICKLED_MARK,
                                 SERIALIZED_MARK, SET_MARK, unpack, unpack_plain, unpack_ref)
from fastser.codec.payload_frames import OBJECT_FAMILY, PayloadFrames, where
from fastser.codec.wire import (ARRAY_FORTRAN_FLAG, ARRAY_WRITEABLE_FLAG, EXT_BIGINT,
                                EXT_BYTEARRAY, EXT_BYTEARRAY_FRAME, EXT_BYTES_FRAME,
                                EXT_MEMORYVIEW, EXT_MEMORYVIEW_FRAME, EXT_PICKLED, EXT_SERIALIZED,
                                TUPLE_LEAD)
from fastser.errors import DeserializationError, FastserError, chained, located, shown
from fastser.families.serialize import check_families, deserialize_within
from fastser.frame_types import Frame, Header, MEMORYVIEW, byte_view, bytes_of
from fastser.headers import HEADER_SERIALIZER, PICKLE_FAMILY
from fastser.limits import DEFAULT_LIMITS, Limits
from fastser.wrappers import Pickled, Serialized

SerializedFactory = Callable[[Header, list[Frame]], Any]


class LoadsOptions(TypedDict, total=False):
    """The keywords of loads (docstring in api.py), as the type checker sees them."""
    deserialize: bool
    deserializers: Optional[Sequence[str]]
    limits: Optional[Limits]


class DecoderOptions(LoadsOptions, total=False):
    """The keywords of Decoder: those of loads, and three for fastser.dask and its kin."""
    open_pickled: bool
    serialized_factory: Optional[SerializedFactory]
    lists_as_tuples: bool


# Spelled out: mypyc's TypedDict classes lack their bases' keys at run time.
LOADS_OPTIONS: Final = frozenset({"deserialize", "deserializers", "limits"})
DECODER_OPTIONS: Final = LOADS_OPTIONS | {"open_pickled", "serialized_factory", "lists_as_tuples"}


def check_options(where: str, options: Mapping[str, object], names: frozenset[str]) -> None:
    """Raise TypeError, naming `where` and the keyword, for a keyword not in `names` or a
    value of the wrong type: the same in both builds (fastser/arguments.py, "Options")."""
    check_names(where, options, names)
    for name in ("deserialize", "open_pickled", "lists_as_tuples"):
        bool_option(where, options, name, name == "deserialize")
    optional_option(where, options, "limits", Limits)


class Decoder:
    def __init__(self, *args: Never, **options: Unpack[DecoderOptions]) -> None:
        if args:  # in Python's words (fastser/arguments.py, "Positional arguments")
            raise too_many_positional("Decoder", 0, 0, len(args))
        check_options("Decoder", options, DECODER_OPTIONS)
        deserialize = options.get("deserialize", True)
        deserializers = options.get("deserializers")
        limits = options.get("limits")
        open_pickled = options.get("open_pickled", False)
        serialized_factory = options.get("serialized_factory")
        lists_as_tuples = options.get("lists_as_tuples", False)
        self.deserialize = deserialize
        self.deserializers: Optional[tuple[str, ...]] = (
            None if deserializers is None else check_families(deserializers, "deserializers"))
        self.limits: Limits = DEFAULT_LIMITS if limits is None else limits
        self.open_pickled = open_pickled
        self.serialized_factory = serialized_factory
        # The header's lists as tuples, as msgpack's use_list=False (distributed's tcp://)
        # makes them: fastser.dask, whose peers (distributed itself) rely on it.
        self.lists_as_tuples = lists_as_tuples
        self.pickle_allowed: bool = (self.deserializers is None
                                     or PICKLE_FAMILY in self.deserializers)
        self.direct_loads = DirectLoads(self.deserializers)

    def loads(self, frames: Sequence[Frame]) -> Any:
        frame_list = frame_list_of(frames)
        size, body = header_body(frame_list, self.limits)
        # The bytes of a large header (a view) are copied for the scans below: with the
        # memchr of holds_ext_minus_1, in the noise of loads on the suite's control-message
        # and batch-of-1000 workloads.
        data = bytes_of(cast(Frame, body))
        if holds_ext_minus_1(data, 0):
            raise DeserializationError(
                "unknown extension type code -1 (msgpack's timestamp) in the header frame")
        state = DecodeState(self, frame_list, size)
        # Float keys are made by msgpack, out of any hook's reach: their hashes are counted
        # from the bytes first, where enough floats may stand to collide.
        deepest = state.count_float_keys(data)
        try:
            msg = unpack(body, state, state)
        except FastserError:
            raise
        except Exception as exc:
            raise chained(DeserializationError(
                f"corrupt header frame (frame 0, {size} bytes): {type(exc).__name__}: {exc}"),
                exc)
        if state.marks:
            raise DeserializationError(
                "a mark stands elsewhere than first in an array (of a set, record or numpy "
                "array)")
        if len(frame_list) > 1:
            state.payload().check_all_named()
        max_depth = self.limits.max_depth
        # A level of nesting takes at least one byte of header if it is an array, two if
        # it is a map (its header, and the other half of the entry the path does not take),
        # so a header of N bytes holding A arrays nests at most (N + A) // 2 deep. Past
        # that bound, the header's bytes are scanned (a bound too, cheaper than the walk on
        # maps of scalars; the float key scan, where it ran, has measured it already), and
        # only a header they say may nest too deep is walked. An
        # opened payload is one leaf, as dumps counts it: its family made it and bounds it
        # (msgpack stops at 1024 levels, pickle is trusted or refused), and what tcp://
        # carries (a pickled object nested 300 deep) must load. The walk stops at opened
        # payloads only by their types, so a message holding one is walked no deeper than
        # its header reaches: opened containers are not descended (state.opened_payloads).
        if is_container(msg) and \
                (size + state.arrays) // 2 > max_depth and \
                (deepest > max_depth or deepest == -1 if deepest != -2
                 else header_nests_deeper(data, max_depth)) \
                and deeper_than(msg, max_depth, state.collections > 0,
                                 state.opened_payloads):
            raise DeserializationError(
                f"message nested deeper than Limits.max_depth={max_depth}")
        return msg


class DecodeState:
    """What one loads call needs inside msgpack's hooks (the state is both)."""

    def __init__(self, decoder: Decoder, frames: list[Frame], header_bytes: int) -> None:
        self.decoder = decoder
        self.lists_as_tuples = decoder.lists_as_tuples
        self.header_bytes = header_bytes
        self.marks = 0  # marks made by ext_hook that list_hook has not yet consumed
        # Record marks (serialized, pickled, numpy) whose array is still being decoded:
        # inside one, lists_as_tuples leaves arrays lists, so a payload's header and refs
        # read as the sender wrote them (a kept payload forwards byte for byte).
        self.records_open = 0
        self.collections = 0  # tuples, sets and frozensets made (they may be dict keys)
        # The containers that payloads were opened to, by id: leaves to the depth walk
        # (held, so that no other container can take the id of one a duplicate key freed).
        self.opened_payloads: Optional[dict[int, Any]] = None
        self.arrays = 0  # arrays decoded, each seen by list_hook
        # Values that may become keys made so far; their hashes counted from COUNT_AFTER on,
        # in a HashCounter made then (a control message makes fewer, and no table).
        self.made = 0
        self.counter: Optional[HashCounter] = None
        self.frames = frames
        # Made on the first frame ref: most messages (control messages) have none.
        self.payload_frames: Optional[PayloadFrames] = None

    def as_tuple(self, items: list[Any]) -> Any:
        """A plain array under lists_as_tuples: a tuple, as msgpack's use_list=False makes
        it (what payloads hold is not decoded here, so it keeps its lists); a list inside
        a record, as the sender wrote it."""
        if self.records_open > 0:
            return items
        made = tuple(items)
        self.collections += 1  # a tuple may be a dict key: the depth walk looks at keys
        self.made += 1
        if self.made > COUNT_AFTER:
            return self.hashes().count_tuple(made)
        return made

    def hashes(self) -> HashCounter:
        counter = self.counter
        if counter is None:
            counter = self.counter = HashCounter(self.header_bytes)
        return counter

    def count(self, value: Any) -> None:
        """Count the hash of a value that may become a dict key or set item."""
        self.made += 1
        if self.made > COUNT_AFTER:
            self.hashes().count(value)

    def payload(self) -> PayloadFrames:
        """The message's payload frames, as the header's refs name them."""
        found = self.payload_frames
        if found is None:
            found = self.payload_frames = PayloadFrames(self.frames, self.decoder.limits,
                                                        self.header_bytes)
        return found

    def __call__(self, items: Any, data: Any = None) -> Any:
        """msgpack's list_hook, called for every array (`items`), and its ext_hook, called
        with an extension type's code and data: the state itself is both hooks, as a bound
        method made per loads cost ~0.3k instructions (0.08 µs, 3% of a control message's
        loads), and each call through it one more indirection."""
        if data is not None:
            return self.ext_hook(items, data)
        return self.array(items)

    def array(self, items: list[Any]) -> Any:
        """A decoded array: a list, or what its lead (a mark, or a tuple's int) makes it."""
        self.arrays += 1
        if not items:
            return self.as_tuple(items) if self.lists_as_tuples else items
        first = items[0]
        if type(first) is not Mark:
            if type(first) is int and first == TUPLE_LEAD:
                self.collections += 1
                # A slice, then a tuple of it: natively, where `del items[0]` is a generic
                # item deletion (~0.1k instructions more per tuple).
                made = tuple(items[1:])
                self.made += 1
                if self.made > COUNT_AFTER:
                    return self.hashes().count_tuple(made)
                return made
            return self.as_tuple(items) if self.lists_as_tuples else items
        self.marks -= 1
        if first is SERIALIZED_MARK or first is PICKLED_MARK or first is ARRAY_MARK:
            self.records_open -= 1
        if first is SERIALIZED_MARK or first is PICKLED_MARK:
            header, refs, frames = self.record_parts(items)
            try:
                if first is SERIALIZED_MARK:
                    return self.serialized_record(header, frames)
                return self.pickled_record(header, frames)
            except DeserializationError as exc:
                raise located(exc, f"the payload {where(refs)}")
        if first is ARRAY_MARK:
            check_short_record(items)
            ref = items[3]
            frame = self.payload().frame_at(ref)
            decoder = self.decoder
            direct = decoder.direct_loads.get() if decoder.deserialize else None
            try:
                if direct is not None:
                    try:
                        flags: int = items[2]
                        array = direct(items[1], items[4:],
                                       "F" if flags & ARRAY_FORTRAN_FLAG else "C",
                                       flags & ARRAY_WRITEABLE_FLAG != 0, frame)
                    except DeserializationError:
                        raise  # as the general way would raise it (numpy's checks are one)
                    except Exception:
                        pass  # the general way raises it again, with the family's context
                    else:
                        return array  # a leaf: no nesting the depth scan could miss
                return self.serialized_record(header_of(items), [frame])
            except DeserializationError as exc:
                raise located(exc, f"the payload {where([ref])}")
        del items[0]
        if first is LIST_MARK:
            return self.as_tuple(items) if self.lists_as_tuples else items
        self.collections += 1
        # Its floats' hashes counted before the set probes among them (its tuples, big ints
        # and frozensets were counted when they were made; other ints cannot collide much).
        for item in items:
            if type(item) is float:
                self.count(item)
        if first is SET_MARK:
            return set(items)
        frozen = frozenset(items)
        counter = self.counter
        if counter is not None:
            counter.drop_items(items)  # a tuple made later finds its own items on top
        self.count(frozen)
        return frozen

    def ext_hook(self, code: int, data: bytes) -> Any:
        mark = MARKS.get(code)
        if mark is not None:
            if data:
                raise DeserializationError(f"extension type {code} (a mark) carries data")
            self.marks += 1
            if mark is SERIALIZED_MARK or mark is PICKLED_MARK or mark is ARRAY_MARK:
                self.records_open += 1
            return mark
        if code == EXT_SERIALIZED or code == EXT_PICKLED:
            # A record in a dict key or set item: what it reads back as is a key, its hash
            # counted (a Pickled or Serialized hashes by its family and frames alone).
            header, frames = self.record(data)
            if code == EXT_SERIALIZED:
                value = self.serialized_record(header, frames)
            else:
                value = self.pickled_record(header, frames)
            self.count(value)
            return value
        if code == EXT_BYTES_FRAME:
            frame = self.payload().raw_frame(unpack_ref(data), False)
            return bytes_of(frame)
        if code == EXT_BIGINT:
            value = int.from_bytes(data, "little", signed=True)
            self.count(value)
            return value
        if code == EXT_BYTEARRAY:
            return bytearray(data)
        if code == EXT_MEMORYVIEW:
            return MEMORYVIEW(data)
        if code == EXT_BYTEARRAY_FRAME:
            frame = self.payload().raw_frame(unpack_ref(data), True)
            return frame if type(frame) is bytearray else bytearray(frame)
        if code == EXT_MEMORYVIEW_FRAME:
            return byte_view(self.payload().raw_frame(unpack_ref(data), True))
        raise DeserializationError(f"unknown extension type code {code} in the header frame")

    def record(self, data: bytes) -> tuple[Header, list[Frame]]:
        """A record in a dict key or set item: an extension type holding msgpack [header,
        refs] (an array cannot be hashed there)."""
        # Its header's float keys, which msgpack makes unseen, counted as the header's are.
        self.count_float_keys(data)
        record = unpack_plain(data)
        if type(record) is not list or len(record) != 2 or type(record[0]) is not dict \
                or type(record[1]) is not list:
            raise DeserializationError("a payload placeholder is not [header, frames]")
        payload = self.payload()
        return record[0], [payload.frame_at(ref) for ref in record[1]]

    def record_parts(self, items: list[Any]) -> tuple[Header, list[Any], list[Frame]]:
        """A record, the array [mark, header, refs] decoded with the message: its header,
        its refs and the frames they name."""
        if len(items) != 3:
            raise DeserializationError("a payload record is not [mark, header, frames]")
        header, refs = items[1], items[2]
        if type(header) is not dict or type(refs) is not list:
            raise DeserializationError("a payload record is not [mark, header, frames]")
        payload = self.payload()
        return header, refs, [payload.frame_at(ref) for ref in refs]

    def serialized_record(self, header: Header, frames: list[Frame]) -> Any:
        """A Serialize record as it reads back: its object, opened by its family; what the
        decoder's serialized_factory makes of it; or a Serialized."""
        decoder = self.decoder
        if decoder.deserialize:
            header, frames = self.payload().inflate_payload(header, frames)
            if header.get(HEADER_SERIALIZER) == OBJECT_FAMILY:
                # Its map keys are made by msgpack as the header's are: floats counted.
                for frame in frames:
                    self.count_float_keys(bytes_of(frame))
            return self.opened(deserialize_within(header, frames, decoder.deserializers,
                                                  decoder.limits.max_frame_bytes))
        if decoder.serialized_factory is not None:
            return self.opened(decoder.serialized_factory(header, frames))
        return Serialized(header, frames)

    def pickled_record(self, header: Header, frames: list[Frame]) -> Any:
        """A pickled record as it reads back: unpickled only where the decoder allows pickle
        and opens payloads (or pickled ones alone), else a Pickled holding its bytes."""
        decoder = self.decoder
        if decoder.pickle_allowed and (decoder.deserialize or decoder.open_pickled):
            family = header.get(HEADER_SERIALIZER)
            if family != PICKLE_FAMILY:
                raise DeserializationError(
                    f"a pickled placeholder names the family {shown(family)}")
            header, frames = self.payload().inflate_payload(header, frames)
            return self.opened(deserialize_within(header, frames, decoder.deserializers,
                                                  decoder.limits.max_frame_bytes))
        # Never unpickled here: forwarded as it arrived.
        return Pickled(header, frames)

    def count_float_keys(self, data: bytes) -> int:
        """Count the hashes of the float map keys in msgpack `data` (a header, a record's
        data or a msgpack payload), which msgpack makes and inserts with no hook between;
        fewer float bytes than can collide are not looked for (FLOAT_KEYS_WORTH_COUNTING).
        Returns how deep its containers nest (depth.float_key_hashes), or -2 unscanned."""
        if not many_float_bytes(data):
            return -2
        deepest = float_key_hashes(data, self.hashes())
        if deepest == KEYS_TOO_DEEP:
            raise DeserializationError(
                f"msgpack nested deeper than the {SCAN_DEPTH} levels where float keys are "
                f"counted, with many floats")
        return deepest

    def opened(self, value: Any) -> Any:
        """An opened payload's value: one leaf to the depth walk, as to dumps (a container
        is remembered by id, for the walk to stop at); its hash counted, as it may be a key
        (a record in a dict key or set item)."""
        if is_container(value):
            opened = self.opened_payloads
            if opened is None:
                opened = self.opened_payloads = {}
            opened[id(value)] = value
        # Only a value of a hashable type: hash() raising TypeError for an array or a
        # Counter, caught, cost a scatter's or a heartbeat's loads ~20 %.
        t = type(value)
        if t is not str and t is not bytes and t.__hash__ is not None:
            self.count(value)
        return value
