"""The documented public functions, and the docstrings of the compiled public classes.

Not compiled, on purpose: mypyc drops the docstrings of compiled functions and classes
(https://github.com/mypyc/mypyc/issues/437). Each function here is a thin call into the
compiled code, except dumps and loads, the hot ones, whose names are bound to the compiled
functions themselves behind a partial that carries their docs (compiled_as); class
docstrings are attached to the compiled classes at import.
"""

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Optional, TypeVar, cast

from fastser.arguments import check_instance, check_optional
from fastser.codec import dumps_loads as _codec, extract as _walk
from fastser.codec.decoder import Decoder
from fastser.codec.encoder import DEFAULT_SPLIT_SIZE, Encoder
from fastser.families import registry as _registry, serialize as _serialize
from fastser.families.serialize import OnError
from fastser.frame_types import Frame, Header
from fastser.frames import stream as _framing
from fastser.frames.adaptive import LinkRate
from fastser.frames.stream import FrameReader
from fastser.limits import Limits
from fastser.wrappers import Pickled, Serialize, Serialized, ToPickle

Function = TypeVar("Function", bound=Callable[..., Any])


def compiled_as(compiled: Callable[..., Any]) -> Callable[[Function], Function]:
    """Decorate a documented public function so that its name is bound to `compiled`, the
    compiled function of the same signature, called through a functools.partial that
    carries the decorated function's name and docstring, and its annotated signature
    through __wrapped__ (for inspect, pydoc and IDEs); mypy sees the decorated one.

    Why: a compiled function has no docstring of its own, and a wrapper in Python costs an
    interpreted frame per call: ~0.1 µs with keyword handling, 7% of encoding a control
    message. A partial with nothing bound passes the call on in C for ~10 ns. The price:
    pydoc lists it as data (`dumps = functools.partial(<built-in function dumps>)`, then
    the docstring); inspect.signature and IDEs see the documented signature.
    """
    def decorate(full: Function) -> Function:
        public = functools.update_wrapper(functools.partial(compiled), full)
        # Pickled and copied by reference, as a function is: object.__reduce_ex__ looks
        # __reduce__ up on the instance, and a str names a module attribute. (A partial
        # would pickle its __dict__: the docstring, and a __wrapped__ pickle cannot find.)
        name = full.__name__
        vars(public)["__reduce__"] = lambda: name
        return cast(Function, public)
    return decorate


@compiled_as(_codec.dumps)
def dumps(msg: Any, *, serializers: Optional[Sequence[str]] = None,
          on_error: OnError = "raise", context: Optional[Mapping[str, Any]] = None,
          frame_split_size: int = DEFAULT_SPLIT_SIZE,
          compression: Optional[str] = None) -> list[Frame]:
    """Turn a message into frames: a msgpack header frame, then payload frames.

    Parameters
    ----------
    msg: any nesting of None, bool, int, float, str, bytes, bytearray, memoryview, list,
        tuple, dict, set and frozenset, with Serialize/ToPickle/Serialized/Pickled wrappers
        and other objects anywhere inside. Every value comes back from loads with its type.
    serializers: families tried in order for Serialize payloads (default
        ("dispatch", "pickle")). Objects that are not message types are pickled when
        "pickle" is among them, and refused otherwise.
    on_error: "raise" (SerializationError) or "message" (the payload becomes an "error"
        record that raises DeserializationError on receipt). Applies to Serialize and
        ToPickle payloads and to the pickle fallback alike.
    context: passed to every family's dumps as it is.
    frame_split_size: payload frames larger than this are split into views (no copy), each
        a multiple of 16 bytes but the last (fastser's readers then keep them adjacent);
        loads joins them, without a copy when they arrive adjacent in one buffer. At least
        64: smaller pieces make messages that fastser's readers refuse.
    compression: None (default), "auto" (lz4, else zstd, else none), "lz4", "zstd",
        "zlib", or "adaptive" (an Encoder's choice per frame for a link it is told the rate
        of, see LinkRate; without one, as "auto"). Payload frames (of Serialize/ToPickle
        payloads and of bytes-likes of 64 KiB or more) under 10,000 bytes, or whose sample
        does not shrink by 30 %, are left as they are. lz4 and zstd need the extras
        fastser[lz4] / fastser[zstd].

    Returns
    -------
    list of frames. Bytes-likes of 64 KiB or more, and the large buffers of serialized
    payloads (numpy arrays, pickle buffers), are frames that alias the caller's memory:
    nothing large is copied. Do not mutate them until the frames are sent.

    Raises
    ------
    SerializationError naming the object's type and its path in msg, e.g. msg['tasks'][2],
    for a message nested deeper than Limits().max_depth (256), and for a dict key or set
    item holding a Serialize or ToPickle that opens to a value equal to another beside it,
    or that is written as the same bytes as another though not equal to it (two NaNs):
    loads would merge the two.
    ValueError for an unknown serializer family, on_error value or compression, a
    compression whose package is not installed, or a frame_split_size under 64;
    TypeError for serializers given as one str, and for an argument of the wrong type.
    """
    return _codec.dumps(msg, serializers=serializers, on_error=on_error, context=context,
                        frame_split_size=frame_split_size, compression=compression)


@compiled_as(_codec.loads)
def loads(frames: Sequence[Frame], *, deserialize: bool = True,
          deserializers: Optional[Sequence[str]] = None,
          limits: Optional[Limits] = None) -> Any:
    """Turn frames made by dumps back into the message.

    Parameters
    ----------
    frames: the frame list, header first.
    deserialize: if False, Serialize payloads come back as Serialized(header, frames) and
        pickled ones as Pickled, as they arrived; dumps forwards them unchanged.
    deserializers: the families allowed to run (default: all registered). Without
        "pickle", nothing is ever unpickled: pickled payloads come back as Pickled.
    limits: bounds on frame count, frame and message sizes, header size and nesting depth
        (default Limits()).

    Returns
    -------
    The message. Large bytes/bytearray values are the received frame objects themselves
    when their type matches; numpy arrays are views of the received frames.

    Raises
    ------
    DeserializationError for bad, truncated, hostile or refused input: a frame list beyond
    limits, a corrupt header, a payload frame the header does not name, a Serialize payload
    whose family is not in deserializers or fails.
    ValueError for an unknown family in deserializers; TypeError for deserializers given as
    one str, and for an argument of the wrong type (deserialize must be a bool).
    """
    return _codec.loads(frames, deserialize=deserialize, deserializers=deserializers,
                        limits=limits)


def serialize(obj: Any, serializers: Optional[Sequence[str]] = None, *,
              on_error: OnError = "raise",
              context: Optional[Mapping[str, Any]] = None) -> tuple[Header, list[Frame]]:
    """Serialize one object with the first family that takes it.

    Parameters
    ----------
    obj: the object. A Serialized or Pickled is returned as it is; a Serialize is
        unwrapped; a ToPickle is pickled whatever serializers says.
    serializers: the families to try, in order (default ("dispatch", "pickle")); a
        family's dumps raises NotImplementedError to pass the object on.
    on_error: "raise", or "message" to return an "error" record instead of raising.
    context: passed to every family's dumps as it is.

    Returns
    -------
    (header, frames); header["serializer"] names the family. Frames may alias the
    object's memory (numpy arrays, bytes-likes, pickle buffers): no copy.

    Raises
    ------
    SerializationError naming the type when no family takes it (unless on_error is
    "message"). ValueError for an unknown family or on_error value.
    """
    check_instance("serialize", on_error, str, "on_error")  # named, in both builds
    return _serialize.serialize(obj, serializers, on_error=on_error, context=context)


def deserialize(header: Header, frames: Sequence[Frame],
                deserializers: Optional[Sequence[str]] = None) -> Any:
    """Rebuild one object from (header, frames) with the family header["serializer"] names.

    Parameters
    ----------
    header: the header serialize returned (or a Serialized's header).
    frames: its frames (a list or any sequence). Frames that header["compression"] names are
        decompressed first (each at most Limits().max_frame_bytes).
    deserializers: the families allowed to run (default: all registered families).

    Returns
    -------
    The object. A numpy array is a view of its frame (no copy) unless it was compressed.

    Raises
    ------
    DeserializationError when the family is unknown, not in deserializers, or fails
    (whatever it raised is the cause), or a frame does not decompress.
    """
    return _serialize.deserialize(header, frames, deserializers)


def extract_serialize(msg: Any, *, bytes_threshold: int = 65536
                      ) -> tuple[Any, dict[tuple[Any, ...], Any], set[tuple[Any, ...]]]:
    """Split a message into its plain part and its payloads (the seed design's walk).

    Parameters
    ----------
    msg: a message. The walk descends into exact dict, list and tuple; it does not modify
        msg.
    bytes_threshold: bytes-likes of at least this many bytes are taken out.

    Returns
    -------
    (plain, payloads, bytes_paths): a copy of msg without wrappers (all four kinds) and
    large bytes-likes (a dict loses the key, a list or tuple keeps None in the slot); a dict
    from path (a tuple of keys and indices) to each removed object, the object itself (no
    copy); and the set of paths that were plain bytes-likes.

    Raises
    ------
    Nothing of its own: it only walks containers.
    """
    check_instance("extract_serialize", bytes_threshold, int, "bytes_threshold")  # named
    return _walk.extract_serialize(msg, bytes_threshold=bytes_threshold)


def register_serialization(cls: type, serialize_fn: Callable[[Any], tuple[Header, list[Frame]]],
                           deserialize_fn: Callable[[Header, list[Frame]], Any], *,
                           name: Optional[str] = None) -> None:
    """Register per-type functions with the "dispatch" family.

    Parameters
    ----------
    cls: the type, looked up by exact type on the way out (subclasses are not covered).
    serialize_fn: serialize_fn(obj) -> (header, frames); frames may alias obj's memory.
    deserialize_fn: deserialize_fn(header, frames) -> obj.
    name: the name sent in the header and looked up on the way in (default
        "module.QualName" of cls). It is part of the wire format between the two ends.

    Returns
    -------
    None. A later registration of the same type or name replaces the earlier one.

    Raises
    ------
    Nothing at registration; errors of the functions surface in dumps/loads.
    """
    _registry.register_serialization(cls, serialize_fn, deserialize_fn, name=name)


def register_serialization_lazy(toplevel_module: str, register: Callable[[], None]) -> None:
    """Defer a registration until the module it concerns is used.

    Parameters
    ----------
    toplevel_module: a top-level module name, e.g. "numpy".
    register: called (once) the first time an object of a type from that module is
        serialized through "dispatch", or a dispatch name under it is received, so that the
        module is imported only when used.

    Returns
    -------
    None.

    Raises
    ------
    Nothing at registration; what register() raises surfaces in dumps/loads.
    """
    _registry.register_serialization_lazy(toplevel_module, register)


def register_serialization_family(
        name: str, dumps: Callable[[Any, Optional[Mapping[str, Any]]], tuple[Header, list[Frame]]],
        loads: Callable[[Header, list[Frame]], Any]) -> None:
    """Register a serializer family under a name usable in serializers/deserializers.

    Parameters
    ----------
    name: the family's name, sent as header["serializer"].
    dumps: dumps(obj, context) -> (header, frames); raises NotImplementedError to pass
        the object to the next family. context is the caller's mapping or None.
    loads: loads(header, frames) -> obj.

    Returns
    -------
    None. Registering an existing name replaces that family.

    Raises
    ------
    Nothing at registration.
    """
    _registry.register_serialization_family(name, dumps, loads)


def pack_frames_prelude(frames: Sequence[Frame]) -> bytes:
    """The prelude for frames: their count, then each length in bytes.

    Parameters
    ----------
    frames: the frames of one message (as dumps returns them): bytes, bytearray or
        memoryview objects. Other objects are not checked; their len() is taken as their
        size, which is wrong for a numpy array or a str.

    Returns
    -------
    8 * (1 + len(frames)) bytes of little-endian uint64s. Write it and then the frames
    themselves for a scatter-gather send (no join, no copy of the frames).

    Raises
    ------
    TypeError if a frame has no len(), naming the first frame (index and type) that is not
    bytes-like; ValueError for a released memoryview.
    """
    return _framing.pack_frames_prelude(frames)


def pack_frames(frames: Sequence[Frame]) -> bytes:
    """The prelude followed by all frames, joined into one bytes object.

    Parameters
    ----------
    frames: the frames of one message (as dumps returns them): bytes, bytearray or
        memoryview objects.

    Returns
    -------
    bytes that unpack_frames or a FrameReader reads back. Every frame is copied; for large
    frames prefer pack_frames_prelude and a scatter-gather write.

    Raises
    ------
    TypeError naming the first frame (index and type) that is not bytes-like, not
    C-contiguous, or whose len() is not its size in bytes (a numpy array of items wider than
    a byte: pass memoryview(frame).cast("B")), or if frames is an iterator; ValueError for a
    released memoryview.
    """
    return _framing.pack_frames(frames)


def unpack_frames(buf: Frame, *, limits: Optional[Limits] = None) -> list[memoryview]:
    """The frames of the one message in buf, as 1-d byte memoryviews.

    Parameters
    ----------
    buf: bytes written by pack_frames (one message, nothing more).
    limits: bounds on the frame count and sizes (default Limits()).

    Returns
    -------
    A list of views into buf (no copy): they alias its memory, writeable when buf is.

    Raises
    ------
    FrameError unless buf holds exactly one complete message within limits, of at most
    1,024 frames plus one per 64 bytes of it (so that the views cost a few times its
    bytes); counts and lengths are checked before anything is allocated.
    """
    check_optional("unpack_frames", limits, Limits, "limits")  # named, in both builds
    return _framing.unpack_frames(buf, limits=limits)


CLASS_DOCS: dict[type, str] = {
    Serialize: """Serialize(data): serialize data out of band with the configured families.

    In a message, comes back from loads as data (or as Serialized with deserialize=False).""",
    Serialized: """Serialized(header, frames): an object already serialized.

    Sent as it is: never re-encoded or re-compressed. Frames may alias received memory.""",
    ToPickle: """ToPickle(data): pickle data (protocol 5, buffers out of band).

    Comes back as data when "pickle" is allowed, else as Pickled, unopened.""",
    Pickled: """Pickled(header, frames): an object already pickled; sent as it is.""",
    Encoder: """Encoder(*, serializers=None, on_error="raise", context=None,
    frame_split_size=64 MiB, compression=None, default=None, link=None)

    A reusable dumps with fixed options; .dumps(msg) -> list of frames (see fastser.dumps).
    default(obj), if given, is tried for objects that are neither message types nor
    wrappers, before the pickle fallback; it returns a replacement (a wrapper, say) or
    raises NotImplementedError. link, a LinkRate that the caller's transport feeds: a
    frame is then compressed only where that makes it arrive sooner on that link, with the
    compressor that makes it soonest; compression="adaptive" chooses so among lz4 and zstd
    (those installed), with a LinkRate of its own (.compressor.link) unless one is given.
    Options are checked here: ValueError (TypeError for serializers given as one str) as
    for dumps; ValueError for a link without a compression. Safe to share between
    threads.""",
    Decoder: """Decoder(*, deserialize=True, deserializers=None, limits=None,
    open_pickled=False, serialized_factory=None, lists_as_tuples=False)

    A reusable loads with fixed options; .loads(frames) -> message (see fastser.loads).
    open_pickled: with deserialize=False, still unpickle ToPickle/Pickled payloads when
    "pickle" is allowed. serialized_factory(header, frames) builds what a kept Serialize
    payload becomes (default Serialized). lists_as_tuples: the message's lists come back
    as tuples (as msgpack's use_list=False makes them; payloads keep theirs). Options are
    checked here: ValueError (TypeError for deserializers given as one str) as for loads.
    Safe to share between threads.""",
    Limits: """Limits(*, max_frames=1_048_576, max_frame_bytes=2**30, max_message_bytes=2**32,
    max_header_bytes=64 MiB, max_depth=256)

    Bounds that loads, every Decoder and the frame readers check before allocating:
    frames per message, bytes per frame (also the most one frame may decompress to), bytes
    per message (also the most its frames may decompress to in all), bytes of the header
    frame, and nesting depth (dumps applies the default
    max_depth too). Frozen; raises TypeError for a bound that is not an int and ValueError
    for one under 1.""",
    LinkRate: """LinkRate(): the rate a peer takes bytes at, as a transport measures it.

    .sent(nbytes, seconds) counts nbytes taken by the peer in seconds of busy sending (the
    time the transport held bytes it could not yet hand over); .bytes_per_second is a
    running average of the last few (0.0 until one was counted). Give one to every Encoder
    that writes to one host (Encoder(link=...)): they share its link. fastser:// keeps one
    per peer host and feeds it from its large sends.""",
    FrameReader: """FrameReader(limits=None): a sans-I/O reader of a framed byte stream.

    .feed(data) takes the next bytes (any length) and returns the frames of every message
    they complete, oldest first, as writeable 1-d byte memoryviews; the frames of one
    message lie in one buffer that it owns, end to end but for a gap of under 16 bytes
    before each frame of 64 KiB or more that aligns it. The buffer grows with the bytes that
    arrive, never ahead of them, so a prelude announcing gigabytes costs nothing until they
    come. .pending is True inside an incomplete message. Limits are checked before use, and
    a message of more than 1,024 frames plus one per 64 bytes of it is refused (each frame
    costs a view of ~190 bytes); after feed has raised FrameError once, every later feed
    raises FrameError too.""",
}


def attach_class_docs() -> None:
    for cls, doc in CLASS_DOCS.items():
        cls.__doc__ = doc
