"""The one exception family of fastser. Foreign exceptions are translated at the entry points.

Not compiled: mypyc native classes cannot inherit from two built-in exception types, and
nothing here is on a hot path.
"""

from typing import Final, Optional, TypeVar


class FastserError(Exception):
    """Base class of every error fastser raises on purpose."""


class SerializationError(FastserError, TypeError):
    """An object in a message could not be serialized; the text names its type and path."""


class DeserializationError(FastserError, ValueError):
    """Frames could not be turned back into a message: bad, hostile or refused input."""


class FrameError(DeserializationError):
    """A byte stream or frame list is malformed, truncated, or exceeds the Limits."""


class RefusedFamilyError(DeserializationError):
    """A payload's serializer family is not in the decoder's deserializers."""


class SenderError(DeserializationError):
    """An "error" payload: the sender could not serialize this value (its text says why)."""


class UnencodableError(SerializationError):
    """Raised inside the encoder's walk; dumps re-raises it as a SerializationError that
    adds the path of `obj` to `reason` (the walk itself carries no path)."""

    def __init__(self, obj: object, reason: str) -> None:
        super().__init__(reason)
        self.obj = obj
        self.reason = reason


Raised = TypeVar("Raised", bound=BaseException)
Located = TypeVar("Located", bound=DeserializationError)


def chained(error: Raised, cause: Optional[BaseException]) -> Raised:
    """`error` with `cause` as its __cause__: write `raise chained(X, exc)` in compiled
    modules where Python code would write `raise X from exc`."""
    # mypyc: `raise X from Y` drops Y in compiled code (mypyc 2.4.1 compiles only the
    # expression after `raise`), so compiled modules set the cause through this function.
    error.__cause__ = cause
    return error


def located(error: Located, where: str) -> Located:
    """`error` again, of the same class, with where in the message it happened: callers
    (fastser.dask) tell a refused family or a sender's error from corrupt input by class."""
    return chained(type(error)(f"{error} ({where})"), error)


# Received values shown in error messages are input: a ref nested 1,000 deep made repr()
# raise RecursionError, a large int raises ValueError (CPython's digit limit), and a long
# list or bytes value made a message of megabytes. shown() looks at a bounded part of any
# value (reprlib does not: it reprs bytes whole, and picks its handlers by class name).
MAX_SHOWN_CHARS: Final = 200
MAX_SHOWN_LEVELS: Final = 4
MAX_SHOWN_ITEMS: Final = 8
MAX_SHOWN_DIGITS: Final = 40


def shown(value: object) -> str:
    """A short repr of a received value, for an error message: any value, any size."""
    text = _shown(value, MAX_SHOWN_LEVELS)
    return text if len(text) <= MAX_SHOWN_CHARS else text[:MAX_SHOWN_CHARS] + "..."


def _shown(value: object, levels: int) -> str:
    if value is None or isinstance(value, (bool, float)):
        return repr(value)
    if isinstance(value, int):
        if value.bit_length() > MAX_SHOWN_DIGITS * 3:
            return f"<int of {value.bit_length()} bits>"
        return repr(int(value))
    if isinstance(value, (str, bytes, bytearray)):
        # Sliced before repr: repr() of the whole would be as long as the value.
        cut = value[:MAX_SHOWN_CHARS]
        return repr(cut) + ("..." if len(value) > len(cut) else "")
    if isinstance(value, memoryview):
        return f"<memoryview of {value.nbytes} bytes>"
    if isinstance(value, (list, tuple, set, frozenset, dict)):
        if isinstance(value, list):
            opening, closing = "[", "]"
        elif isinstance(value, tuple):
            opening, closing = "(", ",)" if len(value) == 1 else ")"
        else:
            opening, closing = "{", "}"
        parts: list[str] = []
        if value and not levels:
            parts.append("...")
        elif value:
            for item in value.items() if isinstance(value, dict) else value:
                if len(parts) == MAX_SHOWN_ITEMS:
                    parts.append("...")
                    break
                if isinstance(value, dict):
                    key, item = item
                    parts.append(f"{_shown(key, levels - 1)}: {_shown(item, levels - 1)}")
                else:
                    parts.append(_shown(item, levels - 1))
        inner = f"{opening}{', '.join(parts)}{closing}"
        if type(value) in (list, tuple, dict) or (type(value) is set and value):
            return inner
        # set(), frozenset({...}), and subclasses: ExtType((7, b'...'))
        return f"{type(value).__name__}({inner if value else ''})"
    # Anything else (a Serialized, an ExtType's kin): its type, not a repr of its contents.
    return f"<{type(value).__name__}>"
