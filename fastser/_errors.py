"""The one exception family of fastser. Foreign exceptions are translated at the entry points.

Not compiled: mypyc native classes cannot inherit from two built-in exception types, and
nothing here is on a hot path.
"""

import reprlib
from typing import Final, Optional, TypeVar


class FastserError(Exception):
    """Base class of every error fastser raises on purpose."""


class SerializationError(FastserError, TypeError):
    """An object in a message could not be serialized; the text names its type and path."""


class DeserializationError(FastserError, ValueError):
    """Frames could not be turned back into a message: bad, hostile or refused input."""


class FrameError(DeserializationError):
    """A byte stream or frame list is malformed, truncated, or exceeds the Limits."""


class UnencodableError(SerializationError):
    """Raised inside the encoder's walk; dumps re-raises it as a SerializationError that
    adds the path of `obj` to `reason` (the walk itself carries no path)."""

    def __init__(self, obj: object, reason: str) -> None:
        super().__init__(reason)
        self.obj = obj
        self.reason = reason


Raised = TypeVar("Raised", bound=BaseException)


def chained(error: Raised, cause: Optional[BaseException]) -> Raised:
    """`error` with `cause` as its __cause__: write `raise chained(X, exc)` in compiled
    modules where Python code would write `raise X from exc`."""
    # mypyc: `raise X from Y` drops Y in compiled code (mypyc 2.4.1 compiles only the
    # expression after `raise`), so compiled modules set the cause through this function.
    error.__cause__ = cause
    return error


# Received values shown in error messages are input: a ref nested 1,000 deep made repr()
# raise RecursionError, a large int raises ValueError (CPython's digit limit), and a long
# list made a message of megabytes. reprlib bounds depth and width.
SHOW: Final = reprlib.Repr()
SHOW.maxlevel = 4
SHOW.maxtuple = SHOW.maxlist = SHOW.maxdict = SHOW.maxset = SHOW.maxfrozenset = 8
SHOW.maxstring = SHOW.maxother = SHOW.maxlong = 80
MAX_SHOWN_CHARS: Final = 200


def shown(value: object) -> str:
    """A short repr of a received value, for an error message: any value, any size."""
    try:
        text = SHOW.repr(value)
    except (RecursionError, ValueError):  # objects reprlib hands to repr(): a deep Serialized
        return f"<{type(value).__qualname__} too large to show>"
    return text if len(text) <= MAX_SHOWN_CHARS else text[:MAX_SHOWN_CHARS] + "..."
