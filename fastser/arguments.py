"""Type checks of public arguments, written out because the compiled build makes them at
the call: mypyc's signature of a function raises TypeError for an argument of the wrong
type before the body runs, and the pure-Python build, which checks nothing at the call,
must raise the same. Compiled, these see only arguments of the right type. A bool is an
int here, as it is to compiled code. Sits on nothing.
"""


def check_int(value: object, name: str) -> None:
    if not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__qualname__}")


def check_bool(value: object, name: str) -> None:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, got {type(value).__qualname__}")


def check_str(value: object, name: str) -> None:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, got {type(value).__qualname__}")


def check_optional(value: object, kind: type, name: str) -> None:
    if value is not None and not isinstance(value, kind):
        raise TypeError(f"{name} must be a {kind.__qualname__} or None, "
                        f"got {type(value).__qualname__}")
