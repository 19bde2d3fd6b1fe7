"""fastser: fast, typed, compiled serialization of messages into zero-copy frames.

Not compiled (the facade): it re-exports the public names and says which build is loaded.
"""

from . import _codec
from ._decoder import Decoder
from ._encoder import Encoder
from ._errors import DeserializationError, FastserError, FrameError, SerializationError
from ._facade import (attach_class_docs, deserialize, dumps, extract_serialize, loads,
                      pack_frames, pack_frames_prelude, register_serialization,
                      register_serialization_family, register_serialization_lazy, serialize,
                      unpack_frames)
from ._framing import FrameReader
from ._limits import Limits
from ._serialize import SAFE_DESERIALIZERS
from ._types import Frame, Header
from .wrappers import Pickled, Serialize, Serialized, ToPickle

__version__ = "0.1.0"

# True when the mypyc-compiled modules are loaded (their files are extension modules).
COMPILED: bool = not _codec.__file__.endswith(".py")

attach_class_docs()

__all__ = [
    "COMPILED", "Decoder", "DeserializationError", "Encoder", "FastserError", "Frame",
    "FrameError", "FrameReader", "pack_frames", "pack_frames_prelude", "unpack_frames", "Header", "Limits", "Pickled", "SAFE_DESERIALIZERS", "Serialize",
    "SerializationError", "Serialized", "ToPickle", "deserialize", "dumps",
    "extract_serialize", "loads", "register_serialization", "register_serialization_family",
    "register_serialization_lazy", "serialize",
]
