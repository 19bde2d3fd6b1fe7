"""The four wrapper classes that mark payloads inside a message.

They live alone in this small module, compiled in the same mypyc group as the walk, so that
compiled code tests them with a pointer compare and interpreted callers share one class
identity with it. Docstrings are attached by the facade (mypyc drops class docstrings —
https://github.com/mypyc/mypyc/issues/437).
"""

from collections.abc import Iterable
from typing import Any

from mypy_extensions import mypyc_attr

from fastser.frame_types import Frame, Header


def _as_header(header: Any) -> Header:
    # Both builds accept any mapping; the compiled build would otherwise reject what the
    # pure build takes, since mypyc enforces annotations at run time.
    return header if type(header) is dict else dict(header)


def _as_frames(frames: Iterable[Frame]) -> list[Frame]:
    return frames if type(frames) is list else list(frames)


def _frames_summary(frames: list[Frame]) -> str:
    total = sum(memoryview(frame).nbytes for frame in frames)
    return f"<{len(frames)} frames, {total} bytes>"


def _frames_hash(header: Header, frames: list[Frame]) -> int:
    # Equal wrappers have equal frame contents, so hashing the contents keeps hash and ==
    # consistent; needed when a forwarded payload is a dict key.
    return hash((str(header.get("serializer")), b"".join(frames)))


# mypyc: interpreted subclasses of a compiled class fail at instantiation without
# allow_interpreted_subclasses, on every compiled base too (docs/design.md, "The mypyc rules").
@mypyc_attr(allow_interpreted_subclasses=True)
class _DataWrapper:
    """Base of Serialize and ToPickle: an object still to be serialized."""

    def __init__(self, data: Any) -> None:
        self.data = data

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.data!r})"

    def __hash__(self) -> int:
        return hash(self.data)

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.data,))


@mypyc_attr(allow_interpreted_subclasses=True)
class _FramesWrapper:
    """Base of Serialized and Pickled: an object already turned into header and frames."""

    def __init__(self, header: Header, frames: Iterable[Frame]) -> None:
        self.header: Header = _as_header(header)
        self.frames: list[Frame] = _as_frames(frames)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.header!r}, {_frames_summary(self.frames)})"

    def __hash__(self) -> int:
        return _frames_hash(self.header, self.frames)

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.header, self.frames))


# Each class defines its own __eq__ (and so must restate __hash__): a Serialize never equals
# a ToPickle of the same data, since they travel and come back differently.
@mypyc_attr(allow_interpreted_subclasses=True)
class Serialize(_DataWrapper):
    def __eq__(self, other: object) -> bool:
        return isinstance(other, Serialize) and bool(self.data == other.data)

    def __hash__(self) -> int:
        return hash(self.data)


@mypyc_attr(allow_interpreted_subclasses=True)
class ToPickle(_DataWrapper):
    def __eq__(self, other: object) -> bool:
        return isinstance(other, ToPickle) and bool(self.data == other.data)

    def __hash__(self) -> int:
        return hash(self.data)


@mypyc_attr(allow_interpreted_subclasses=True)
class Serialized(_FramesWrapper):
    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Serialized) and self.header == other.header
                and self.frames == other.frames)

    def __hash__(self) -> int:
        return _frames_hash(self.header, self.frames)


@mypyc_attr(allow_interpreted_subclasses=True)
class Pickled(_FramesWrapper):
    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Pickled) and self.header == other.header
                and self.frames == other.frames)

    def __hash__(self) -> int:
        return _frames_hash(self.header, self.frames)
