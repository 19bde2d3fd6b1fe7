"""The bridge between fastser's and distributed's payloads, for fastser.dask: a payload
crossing between fastser:// and tcp:// keeps its frames. A fastser header travels on tcp://
inside the distributed-side family "fastser", a distributed header on fastser:// inside the
fastser-side family "distributed"; both families are registered when this is imported.
distributed's four wrappers map onto fastser's (the Encoder's default=) and back (the
Decoder's serialized_factory=).

Uncompiled, as fastser.dask is: it subclasses distributed's Serialized, and distributed is
not a build dependency.
"""

from collections.abc import Mapping, Sequence
from typing import Any, Final, Optional

from distributed.protocol.compression import decompress as distributed_decompress
from distributed.protocol.serialize import Pickled as DPickled
from distributed.protocol.serialize import Serialize as DSerialize
from distributed.protocol.serialize import Serialized as DSerialized
from distributed.protocol.serialize import ToPickle as DToPickle
from distributed.protocol.serialize import merge_and_deserialize
from distributed.protocol.serialize import (
    register_serialization_family as register_distributed_family)

from fastser.api import deserialize, register_serialization_family, serialize
from fastser.errors import DeserializationError, RefusedFamilyError, SerializationError
from fastser.frame_types import Frame, Header
from fastser.limits import DEFAULT_LIMITS
from fastser.wrappers import Pickled, Serialize, Serialized, ToPickle

# The bridge families and the header keys that carry the other codec's header.
DISTRIBUTED_FAMILY: Final = "distributed"  # fastser-side: holds a distributed header
DISTRIBUTED_HEADER: Final = "distributed-header"
FASTSER_FAMILY: Final = "fastser"  # distributed-side: holds a fastser header
FASTSER_HEADER: Final = "fastser-header"
# distributed's names for families, as fastser families (for Comm.write(serializers=)
# and Comm.read(deserializers=)). Unknown names are ignored.
FAMILY_NAMES: Final[Mapping[str, tuple[str, ...]]] = {
    "dask": ("dispatch",), "pickle": ("pickle", DISTRIBUTED_FAMILY),
    "msgpack": ("msgpack",), "error": ("error",),
    FASTSER_FAMILY: ("dispatch", "pickle", "msgpack", "error"),
}


def retyped(obj: Any, sequence: type, depth: int = 0) -> Any:
    """`obj` with every list and tuple inside dicts, lists and tuples made `sequence`:
    the tuples distributed's msgpack makes from a fastser header become lists again, and
    a distributed header decoded by fastser gets the tuples distributed would have seen."""
    if depth > DEFAULT_LIMITS.max_depth:
        raise DeserializationError(
            f"a bridged header nests deeper than Limits.max_depth={DEFAULT_LIMITS.max_depth}")
    if type(obj) is dict:
        return {key: retyped(value, sequence, depth + 1) for key, value in obj.items()}
    if type(obj) is list or type(obj) is tuple:
        return sequence(retyped(item, sequence, depth + 1) for item in obj)
    return obj


class FastserSerialized(DSerialized):
    """distributed's Serialized for a payload fastser encoded, as the scheduler keeps it:
    its header is the distributed-side family "fastser" (so tcp:// peers can open it), and
    the fastser header is kept as it arrived, to be forwarded on fastser:// unchanged."""

    def __init__(self, header: Header, frames: list[Frame]) -> None:
        super().__init__({"serializer": FASTSER_FAMILY, FASTSER_HEADER: header}, frames)
        self.fastser_header = header


def fastser_to_distributed(header: Header, frames: list[Frame]) -> DSerialized:
    """Decoder(serialized_factory=): a payload kept by the scheduler, as distributed's
    Serialized. A bridged distributed header comes back as distributed had it."""
    if header.get("serializer") == DISTRIBUTED_FAMILY:
        inner = header.get(DISTRIBUTED_HEADER)
        if type(inner) is not dict:
            raise DeserializationError(f"a {DISTRIBUTED_FAMILY!r} payload has no header")
        return DSerialized(retyped(inner, tuple), frames)
    return FastserSerialized(header, frames)


def distributed_to_fastser(obj: Any) -> Any:
    """Encoder(default=): distributed's wrappers as fastser's, anything else as ToPickle
    (distributed pickles what msgpack cannot take, whatever the serializers)."""
    if isinstance(obj, DSerialize):
        return Serialize(obj.data)
    if type(obj) is FastserSerialized:
        return Serialized(obj.fastser_header, obj.frames)
    if isinstance(obj, DSerialized):
        header = obj.header
        if header.get("serializer") == FASTSER_FAMILY and type(header.get(FASTSER_HEADER)) is dict:
            return Serialized(retyped(header[FASTSER_HEADER], list), list(obj.frames))
        return Serialized({"serializer": DISTRIBUTED_FAMILY, DISTRIBUTED_HEADER: header},
                          list(obj.frames))
    if isinstance(obj, DToPickle):
        return ToPickle(obj.data)
    if isinstance(obj, DPickled):
        # distributed's layout: the pickle in the header, its buffers as the frames.
        frames = list(obj.frames)
        if "compression" in obj.header:
            frames = distributed_decompress(obj.header, frames)
        return Pickled({"serializer": "pickle"}, [obj.header["pickled-obj"], *frames])
    return ToPickle(obj)


def refuse_dumps(obj: Any, context: Optional[Mapping[str, Any]]) -> tuple[Header, list[Frame]]:
    raise NotImplementedError(f"the {DISTRIBUTED_FAMILY!r} family only carries payloads "
                              "that distributed serialized")


def distributed_loads(header: Header, frames: list[Frame]) -> Any:
    """The fastser-side family "distributed": what distributed's tcp:// reader would do."""
    return open_distributed(header, frames, None)


def open_distributed(header: Header, frames: list[Frame],
                     deserializers: Optional[Sequence[str]]) -> Any:
    """A "distributed" payload opened as distributed's tcp:// reader would open it with
    `deserializers` (distributed's names): a family they leave out is RefusedFamilyError."""
    inner = header.get(DISTRIBUTED_HEADER)
    if type(inner) is not dict:
        raise DeserializationError(f"a {DISTRIBUTED_FAMILY!r} payload has no header")
    inner = retyped(inner, tuple)
    if deserializers is not None:
        refused = refused_family(inner, deserializers)
        if refused is not None:
            raise RefusedFamilyError(
                f"payload of serializer family {refused!r} (from tcp://) refused: not in "
                f"deserializers {list(deserializers)}")
    if "compression" in inner:
        frames = distributed_decompress(inner, frames)
    return merge_and_deserialize(inner, frames, deserializers=deserializers)


def refused_family(header: Mapping[str, Any], deserializers: Sequence[str],
                   depth: int = 0) -> Optional[str]:
    """The first family in a distributed header (its collection's sub-headers included)
    that `deserializers` leave out, as distributed's deserialize() checks them."""
    if depth > DEFAULT_LIMITS.max_depth:
        raise DeserializationError(
            f"a bridged header nests deeper than Limits.max_depth={DEFAULT_LIMITS.max_depth}")
    if "is-collection" in header:
        subs = header.get("sub-headers")
        for sub in subs if type(subs) is tuple else ():
            found = refused_family(sub, deserializers, depth + 1) if type(sub) is dict else None
            if found is not None:
                return found
        return None
    name = header.get("serializer")
    return None if name in deserializers else str(name)


def fastser_dumps(obj: Any, context: Optional[Mapping[str, Any]] = None
                  ) -> tuple[dict[str, Any], list[Frame]]:
    """The distributed-side family "fastser" (usable on plain tcp:// too)."""
    try:
        header, frames = serialize(obj, context=context)
    except SerializationError as exc:
        raise NotImplementedError(str(exc)) from exc
    return {FASTSER_HEADER: header}, frames


def fastser_loads(header: dict[str, Any], frames: Sequence[Frame]) -> Any:
    inner = header.get(FASTSER_HEADER)
    if type(inner) is not dict:
        raise DeserializationError(f"a {FASTSER_FAMILY!r} payload has no header")
    return deserialize(retyped(inner, list), list(frames))


def families(names: Optional[Sequence[str]]) -> Optional[tuple[str, ...]]:
    """distributed's family names as fastser's (None stays None: all families)."""
    if names is None:
        return None
    out: list[str] = []
    for name in names:
        for family in FAMILY_NAMES.get(name, ()):
            if family not in out:
                out.append(family)
    return tuple(out)


register_serialization_family(DISTRIBUTED_FAMILY, refuse_dumps, distributed_loads)
register_distributed_family(FASTSER_FAMILY, fastser_dumps, fastser_loads)
