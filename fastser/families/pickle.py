"""The "pickle" family: pickle protocol 5 with out-of-band buffers, cloudpickle for what stdlib
pickle cannot do. The only module that imports pickle or cloudpickle.
"""

import pickle
from collections.abc import Collection, Iterator, Mapping
from typing import Any, Final, Optional

import cloudpickle

from fastser.errors import DeserializationError
from fastser.families.registry import register_serialization_family
from fastser.frame_types import Frame, Header

PICKLE_PROTOCOL: Final = 5
# stdlib pickle stores functions and classes of __main__, and of modules registered with
# cloudpickle.register_pickle_by_value, by reference, which the receiving process cannot
# resolve; cloudpickle stores them by value.
MAIN_MODULE_MARK: Final = b"__main__"
# mypyc looks a module attribute up by name at every use; Final copies are statics.
PICKLE_DUMPS: Final = pickle.dumps
PICKLE_LOADS: Final = pickle.loads
# How a pickle names a module (protocol 4 and 5 opcodes: a str of under 256 bytes, or longer).
SHORT_BINUNICODE: Final = b"\x8c"
BINUNICODE: Final = b"X"
# [cloudpickle's set of modules registered to be pickled by value], bound once at import.
BY_VALUE_REGISTRY: Final[list[Collection[str]]] = [frozenset()]


class PublicRegistry:
    """cloudpickle's by-value registry read through its public function, a copy per read:
    used only if cloudpickle stops keeping the set this module binds directly."""

    def __contains__(self, name: object) -> bool:
        return name in cloudpickle.list_registry_pickle_by_value()

    def __len__(self) -> int:
        return len(cloudpickle.list_registry_pickle_by_value())

    def __iter__(self) -> Iterator[str]:
        return iter(cloudpickle.list_registry_pickle_by_value())


def bind_by_value_registry() -> None:
    # The live set behind cloudpickle.register_pickle_by_value (cloudpickle 2.0 to 3.1):
    # reading it costs nothing while it is empty, which it is unless the user registered.
    live = getattr(cloudpickle.cloudpickle, "_PICKLE_BY_VALUE_MODULES", None)
    BY_VALUE_REGISTRY[0] = live if isinstance(live, set) else PublicRegistry()


def names_by_value_module(data: bytes) -> bool:
    """Whether a stdlib pickle names a module registered to be pickled by value, or one of
    its submodules: the name as a whole pickled string, or followed by a dot (a rare false
    alarm only costs a cloudpickle call). Not seen: a registered module that sys.modules
    also holds under another name, when an object names it by that other name."""
    registry = BY_VALUE_REGISTRY[0]
    if not registry:
        return False
    for name in registry:
        encoded = name.encode()
        size = len(encoded)
        whole = (SHORT_BINUNICODE + bytes((size,)) if size < 256 else
                 BINUNICODE + size.to_bytes(4, "little")) + encoded
        if whole in data or encoded + b"." in data:
            return True
    return False


def pickle_dumps(obj: Any, context: Optional[Mapping[str, Any]] = None
                 ) -> tuple[Header, list[Frame]]:
    """Pickle `obj`; frames[0] is the pickle, frames[1:] its out-of-band buffers (aliasing
    the object's memory, not copied)."""
    buffers: list[pickle.PickleBuffer] = []
    try:
        data = PICKLE_DUMPS(obj, protocol=PICKLE_PROTOCOL, buffer_callback=buffers.append)
        if MAIN_MODULE_MARK in data or names_by_value_module(data):
            buffers.clear()
            data = cloudpickle.dumps(obj, protocol=PICKLE_PROTOCOL, buffer_callback=buffers.append)
    except Exception:
        # Lambdas, closures, local classes: stdlib pickle refuses them, cloudpickle does not.
        buffers.clear()
        data = cloudpickle.dumps(obj, protocol=PICKLE_PROTOCOL, buffer_callback=buffers.append)
    frames: list[Frame] = [data]
    for buffer in buffers:
        frames.append(buffer.raw())
    return {}, frames


def pickle_loads(header: Header, frames: list[Frame]) -> Any:
    """Unpickle frames made by pickle_dumps. Runs whatever code the pickle names: only for
    trusted input, and only when the caller allows the "pickle" family."""
    if not frames:
        raise DeserializationError("a pickle payload needs at least one frame")
    if len(frames) == 1:  # no out-of-band buffers: a call without keywords costs less
        return PICKLE_LOADS(frames[0])
    return PICKLE_LOADS(frames[0], buffers=frames[1:])


def register_pickle_family() -> None:
    bind_by_value_registry()
    register_serialization_family("pickle", pickle_dumps, pickle_loads)
