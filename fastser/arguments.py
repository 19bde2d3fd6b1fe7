"""Type checks of public arguments, written out because the compiled build makes them at
the call: mypyc's signature of a function raises TypeError for an argument of the wrong
type before the body runs, and the pure-Python build, which checks nothing at the call,
must raise the same. Compiled, these see only arguments of the right type. A bool is an
int here, as it is to compiled code. Sits on nothing.

Options: Encoder, Decoder, Limits, dumps and loads take their options as
`**options: Unpack[SomeOptions]` (a TypedDict): the type checker sees each keyword with its
type, while at run time both builds receive a plain dict and check it here. mypyc's own
checks of a precise signature would word the error differently and name neither the class
nor the parameter ("str or None object expected; got bool"), and mypyc cannot compile an
overloaded __init__ (https://github.com/mypyc/mypyc/issues/961). The words are Python's
own: "Encoder() got an unexpected keyword argument 'compresion'", and Argument Clinic's
"Encoder() argument 'compression' must be str or None, not bool".

Positional arguments: mypyc words a call with too many its own way ("dumps() takes exactly 1
positional argument (2 given)", "__init__() takes no positional arguments"), so the same
callables gather them as `*args: Never` (the type checker refuses any, and mypyc, unlike
for `*args: Unpack[tuple[()]]`, keeps those given) and refuse them here in Python's words.
FrameReader takes its one optional positional, limits, as `*args: Optional[Limits]`.
"""

from collections.abc import Collection, Mapping
from typing import Optional, TypeVar

T = TypeVar("T")


def check_int(value: object, name: str) -> None:
    if not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__qualname__}")


def check_bool(value: object, name: str) -> None:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, got {type(value).__qualname__}")


def check_str(value: object, name: str) -> None:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, got {type(value).__qualname__}")


def wrong_type(where: str, name: str, expected: str, value: object) -> TypeError:
    return TypeError(f"{where}() argument {name!r} must be {expected}, "
                     f"not {type(value).__qualname__}")


def check_instance(where: str, value: object, kind: type, name: str) -> None:
    if not isinstance(value, kind):
        raise wrong_type(where, name, kind.__qualname__, value)


def check_optional(where: str, value: object, kind: type, name: str) -> None:
    if value is not None and not isinstance(value, kind):
        raise wrong_type(where, name, f"{kind.__qualname__} or None", value)


def too_many_positional(where: str, least: int, most: int, given: int) -> TypeError:
    """Python's words for a call of `where`, which takes `least` to `most` positional
    arguments, given `given` of them."""
    if least == most:
        takes = f"{most} positional argument{'' if most == 1 else 's'}"
    else:
        takes = f"from {least} to {most} positional arguments"
    return TypeError(f"{where}() takes {takes} but {given} {'was' if given == 1 else 'were'} "
                     "given")


def check_names(where: str, options: Mapping[str, object], names: Collection[str]) -> None:
    """Raise TypeError for the first keyword in `options` that is not one of `names`."""
    for name in options:
        if name not in names:
            raise TypeError(f"{where}() got an unexpected keyword argument {name!r}")


def int_option(where: str, options: Mapping[str, object], name: str, default: int) -> int:
    value = options.get(name, default)
    if not isinstance(value, int):
        raise wrong_type(where, name, "int", value)
    return value


def bool_option(where: str, options: Mapping[str, object], name: str, default: bool) -> bool:
    value = options.get(name, default)
    if not isinstance(value, bool):
        raise wrong_type(where, name, "bool", value)
    return value


def str_option(where: str, options: Mapping[str, object], name: str, default: str) -> str:
    value = options.get(name, default)
    if not isinstance(value, str):
        raise wrong_type(where, name, "str", value)
    return value


def optional_option(where: str, options: Mapping[str, object], name: str,
                    kind: type[T]) -> Optional[T]:
    """options[name] (default None), which must be None or an instance of `kind`."""
    value = options.get(name)
    if value is None:
        return None
    if not isinstance(value, kind):
        raise wrong_type(where, name, f"{kind.__qualname__} or None", value)
    return value
