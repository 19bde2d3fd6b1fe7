"""fastser: fast, typed, compiled serialization of messages into zero-copy frames.

Not compiled (the facade): it re-exports the public names and says which build is loaded.
"""

from fastser.api import attach_class_docs as _attach_class_docs
from fastser.api import (deserialize, dumps, extract_serialize, loads, pack_frames,
                         pack_frames_prelude, register_serialization,
                         register_serialization_family, register_serialization_lazy, serialize,
                         unpack_frames)
from fastser.codec import dumps_loads as _codec
from fastser.codec.decoder import Decoder
from fastser.codec.encoder import Encoder
from fastser.errors import DeserializationError, FastserError, FrameError, SerializationError
from fastser.families.serialize import SAFE_DESERIALIZERS
from fastser.frame_types import Frame, Header
from fastser.frames.adaptive import LinkRate
from fastser.frames.stream import FrameReader
from fastser.limits import Limits
from fastser.wrappers import Pickled, Serialize, Serialized, ToPickle

__version__ = "0.1.0"

# True when the mypyc-compiled modules are loaded (their files are extension modules).
COMPILED: bool = not _codec.__file__.endswith(".py")

# The compiled classes lose their docstrings (docs/design.md, "The mypyc rules the code
# follows"): put them back once, at import.
_attach_class_docs()
del _attach_class_docs

# The public names, one a line; everything else here is private.
__all__ = [
    "COMPILED",
    "Decoder",
    "DeserializationError",
    "Encoder",
    "FastserError",
    "Frame",
    "FrameError",
    "FrameReader",
    "Header",
    "Limits",
    "LinkRate",
    "Pickled",
    "SAFE_DESERIALIZERS",
    "Serialize",
    "SerializationError",
    "Serialized",
    "ToPickle",
    "deserialize",
    "dumps",
    "extract_serialize",
    "loads",
    "pack_frames",
    "pack_frames_prelude",
    "register_serialization",
    "register_serialization_family",
    "register_serialization_lazy",
    "serialize",
    "unpack_frames",
]
