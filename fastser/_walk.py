"""extract_serialize: the walk of the seed design, kept as a public tool.

Returns a copy of a message without its wrappers and large bytes-likes, and where they were.
Paths are built only for what is removed, from the tuple path of the enclosing container.
"""

from typing import Any

from ._types import MEMORYVIEW
from .wrappers import Pickled, Serialize, Serialized, ToPickle


class Extractor:
    def __init__(self, bytes_threshold: int) -> None:
        self.bytes_threshold = bytes_threshold
        self.extracted: dict[tuple[Any, ...], Any] = {}
        # Paths of the bytes-likes extracted while only bytes-likes were: the usual case,
        # where the set is built from the dict at the end, reusing its stored hashes
        # (hashing the path tuples again was a fifth of the walk).
        self.only_bytes = True
        self.bytes_paths: set[tuple[Any, ...]] = set()
        # The path of the container being walked, as a tuple: rebuilt once per container
        # entered, so a removed value's path costs one tuple concatenation.
        self.prefix: tuple[Any, ...] = ()

    def take(self, key: Any, value: object) -> bool:
        """Record `value` under prefix + key if it is to be removed; say whether it was."""
        t = type(value)
        if t is bytes or t is bytearray or t is MEMORYVIEW:
            buffer: Any = value
            size = buffer.nbytes if t is MEMORYVIEW else len(buffer)
            if size < self.bytes_threshold:
                return False
            path = self.prefix + (key,)
            if not self.only_bytes:
                self.bytes_paths.add(path)
        elif isinstance(value, (Serialize, Serialized, ToPickle, Pickled)):
            path = self.prefix + (key,)
            if self.only_bytes:
                self.only_bytes = False
                self.bytes_paths = set(self.extracted)
        else:
            return False
        self.extracted[path] = value
        return True

    def walk(self, obj: object) -> object:
        if type(obj) is dict:
            return self.walk_dict(obj)
        if type(obj) is list:
            return self.walk_list(obj)
        if type(obj) is tuple:
            return tuple(self.walk_list(list(obj)))
        return obj

    def walk_child(self, key: Any, value: object) -> object:
        prefix = self.prefix
        self.prefix = prefix + (key,)
        out = self.walk(value)
        self.prefix = prefix
        return out

    def walk_dict(self, obj: dict[Any, Any]) -> dict[Any, Any]:
        out: dict[Any, Any] = {}
        for key, value in obj.items():
            if self.take(key, value):
                continue
            t = type(value)
            if t is dict or t is list or t is tuple:
                out[key] = self.walk_child(key, value)
            else:
                out[key] = value
        return out

    def walk_list(self, obj: list[Any]) -> list[Any]:
        out: list[Any] = []
        index = 0
        for value in obj:
            if self.take(index, value):
                out.append(None)
            else:
                t = type(value)
                if t is dict or t is list or t is tuple:
                    out.append(self.walk_child(index, value))
                else:
                    out.append(value)
            index += 1
        return out


def extract_serialize(msg: Any, *, bytes_threshold: int = 65536
                      ) -> tuple[Any, dict[tuple[Any, ...], Any], set[tuple[Any, ...]]]:
    extractor = Extractor(bytes_threshold)
    if extractor.take("", msg):
        # The message itself is a payload: nothing is left of it, and its path is ().
        value = extractor.extracted.pop(("",))
        kind = type(value)
        paths = {()} if kind is bytes or kind is bytearray or kind is MEMORYVIEW else set()
        return None, {(): value}, paths
    out = extractor.walk(msg)
    if extractor.only_bytes:
        extractor.bytes_paths = set(extractor.extracted)
    return out, extractor.extracted, extractor.bytes_paths
