"""extract_serialize: the walk of the seed design, kept as a public tool.

Returns a copy of a message without its wrappers and large bytes-likes, and where they were.
Paths are built only for what is removed, from the keys of the enclosing containers.
"""

from typing import Any

from fastser.frame_types import MEMORYVIEW
from fastser.wrappers import Pickled, Serialize, Serialized, ToPickle


class Extractor:
    def __init__(self, bytes_threshold: int) -> None:
        self.bytes_threshold = bytes_threshold
        self.extracted: dict[tuple[Any, ...], Any] = {}
        # Paths of the bytes-likes extracted while only bytes-likes were: the usual case,
        # where the set is built from the dict at the end, reusing its stored hashes
        # (hashing the path tuples again was a fifth of the walk).
        self.only_bytes = True
        self.bytes_paths: set[tuple[Any, ...]] = set()
        # The keys from the message down to the container being walked. A list, pushed and
        # popped per container: a removed value's path is one tuple made from it, where a
        # tuple prefix cost a 1-tuple and a concatenation per path and one per container.
        self.prefix: list[Any] = []

    def take(self, key: Any, value: object) -> bool:
        """Record `value` under prefix + key if it is to be removed; say whether it was."""
        t = type(value)
        if t is bytes or t is bytearray or t is MEMORYVIEW:
            buffer: Any = value
            size: int = buffer.nbytes if t is MEMORYVIEW else len(buffer)  # a native compare
            if size < self.bytes_threshold:
                return False
            path = self.path_to(key)
            if not self.only_bytes:
                self.bytes_paths.add(path)
        elif isinstance(value, (Serialize, Serialized, ToPickle, Pickled)):
            path = self.path_to(key)
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

    def path_to(self, key: Any) -> tuple[Any, ...]:
        prefix = self.prefix
        prefix.append(key)
        path = tuple(prefix)
        prefix.pop()
        return path

    def walk_child(self, key: Any, value: object) -> object:
        self.prefix.append(key)
        out = self.walk(value)
        self.prefix.pop()
        return out

    # Containers are told apart first: take() would only check them against the four
    # wrapper classes (a subtype walk each) to find they are not payloads.
    def walk_dict(self, obj: dict[Any, Any]) -> dict[Any, Any]:
        out: dict[Any, Any] = {}
        for key, value in obj.items():
            t = type(value)
            if t is dict or t is list or t is tuple:
                out[key] = self.walk_child(key, value)
            elif not self.take(key, value):
                out[key] = value
        return out

    def walk_list(self, obj: list[Any]) -> list[Any]:
        out: list[Any] = []
        index = 0
        for value in obj:
            t = type(value)
            if t is dict or t is list or t is tuple:
                out.append(self.walk_child(index, value))
            elif self.take(index, value):
                out.append(None)
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
