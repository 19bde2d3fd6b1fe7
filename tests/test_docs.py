"""The docs match the code: every public name is in docs/api.md with the signature the code
has, every public function and class keeps a docstring in this build, and every ```python
block of README.md and docs/api.md runs.

The docs are read from the source tree next to this directory (tests/../docs), never from
the installed package, so this runs against either installed build.
"""

import ast
import functools
import inspect
import pathlib
import re
import typing
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest

import fastser
import fastser.__main__
from fastser import aio, sock

ROOT = pathlib.Path(__file__).resolve().parent.parent
API = ROOT / "docs" / "api.md"
README = ROOT / "README.md"
ADAPTERS = (sock, aio)
# Methods of public classes that are part of the API (the classes' other methods are not).
METHODS = ["Encoder.dumps", "Decoder.loads", "FrameReader.feed", "FrameReader.pending"]
HEADING = re.compile(r"^### (.+?)\s*$", re.MULTILINE)
FENCE = re.compile(r"^```(\S*)\n(.*?)^```\s*$", re.MULTILINE | re.DOTALL)


def public_functions(module: ModuleType) -> list[str]:
    """The functions a module defines itself, without a leading underscore."""
    return sorted(name for name, obj in vars(module).items()
                  if not name.startswith("_") and inspect.isfunction(obj)
                  and obj.__module__ == module.__name__)


def required_names() -> list[str]:
    names = [f"fastser.{name}" for name in fastser.__all__]
    names += [f"fastser.{name}" for name in METHODS]
    for module in ADAPTERS:
        names += [f"{module.__name__}.{name}" for name in public_functions(module)]
    return sorted(names)


def cli_commands() -> list[str]:
    """The commands of `python -m fastser`, from its usage line ("demo | inspect FILE | ...")."""
    usage = fastser.__main__.USAGE.split("python -m fastser", 1)[1]
    return [part.split()[0] for part in usage.split("|")]


def entries() -> dict[str, str]:
    """docs/api.md: each `### name` heading with the text up to the next heading."""
    text = API.read_text(encoding="utf-8")
    parts = HEADING.split(text)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts), 2)}


def resolve(dotted: str) -> Any:
    """The object a documented name stands for: fastser.X, fastser.sock.X, fastser.X.method."""
    module_name, _, rest = dotted.partition(".")
    assert module_name == "fastser", dotted
    obj: Any = fastser
    for part in rest.split("."):
        obj = inspect.getattr_static(obj, part) if inspect.isclass(obj) else getattr(obj, part)
    return obj


def declaration(body: str) -> str:
    """The first ```signature block of an entry, on one line."""
    for language, code in FENCE.findall(body):
        if language == "signature":
            return " ".join(code.split())
    raise AssertionError("no ```signature block")


def bare(signature: inspect.Signature, drop_first: bool) -> inspect.Signature:
    """A signature without annotations (the docs state types in prose), and without `self`."""
    params = list(signature.parameters.values())[1 if drop_first else 0:]
    return inspect.Signature([param.replace(annotation=inspect.Parameter.empty)
                              for param in params])


def evaluate(node: ast.expr) -> Any:
    # The docs are ours: their defaults are plain expressions such as 64 * 2**20.
    return eval(compile(ast.Expression(node), str(API), "eval"), {"Any": Any, **vars(typing)})


def documented_signature(params: str) -> inspect.Signature:
    """The signature written as `name(params)` in the docs, defaults evaluated."""
    tree = ast.parse(f"def f({params}): pass").body[0]
    assert isinstance(tree, ast.FunctionDef)
    args = tree.args
    kind = inspect.Parameter
    positional: list[tuple[ast.arg, inspect._ParameterKind]] = [
        (a, kind.POSITIONAL_ONLY) for a in args.posonlyargs]
    positional += [(a, kind.POSITIONAL_OR_KEYWORD) for a in args.args]
    defaults: list[Any] = [kind.empty] * (len(positional) - len(args.defaults))
    defaults += [evaluate(d) for d in args.defaults]
    out = [kind(a.arg, k, default=d) for (a, k), d in zip(positional, defaults)]
    if args.vararg:
        out.append(kind(args.vararg.arg, kind.VAR_POSITIONAL))
    for a, d in zip(args.kwonlyargs, args.kw_defaults):
        out.append(kind(a.arg, kind.KEYWORD_ONLY,
                        default=kind.empty if d is None else evaluate(d)))
    if args.kwarg:
        out.append(kind(args.kwarg.arg, kind.VAR_KEYWORD))
    return inspect.Signature(out)


def check_declaration(dotted: str, obj: Any, line: str) -> None:
    """`line`, from the docs, against the object:
    `[async ]name(params)`      a callable's signature (a method's without self);
    `class Name(Base, ...)`     an exception class's bases;
    `Name = expression`         a constant's value;
    `Name: type`                a module attribute's type;
    `name: type` (a property)   a property of a class."""
    name = dotted.rsplit(".", 1)[1]
    if isinstance(obj, property) or inspect.isgetsetdescriptor(obj):  # pure, compiled
        assert line.partition(": ")[0] == name, f"{dotted}: expected '{name}: type'"
        return
    if line.startswith("class "):
        match = re.fullmatch(rf"class {name}\((.*)\)", line)
        assert match, f"{dotted}: expected 'class {name}(bases)', got {line!r}"
        bases = [base.strip() for base in match.group(1).split(",")]
        assert bases == [base.__name__ for base in obj.__bases__], dotted
        return
    match = re.fullmatch(rf"{name} = (.*)", line)
    if match:
        assert evaluate(ast.parse(match.group(1), mode="eval").body) == obj, dotted
        return
    match = re.fullmatch(rf"{name}: (\w+)", line)
    if match:
        assert type(obj).__name__ == match.group(1), dotted
        return
    match = re.fullmatch(rf"(async )?{name}\((.*)\)", line)
    assert match, f"{dotted}: expected '{name}(params)', got {line!r}"
    assert bool(match.group(1)) is inspect.iscoroutinefunction(obj), f"{dotted}: async?"
    documented = documented_signature(match.group(2))
    is_method = dotted.count(".") == 2 and inspect.isclass(resolve(dotted.rsplit(".", 1)[0]))
    actual = bare(inspect.signature(obj), drop_first=is_method)
    assert documented == actual, f"{dotted}: docs say {documented}, the code has {actual}"


def test_api_documents_every_public_name() -> None:
    documented = set(entries())
    missing = [name for name in required_names() if name not in documented]
    assert not missing, f"not in docs/api.md: {missing}"


def test_api_documents_every_command() -> None:
    documented = set(entries())
    missing = [c for c in cli_commands() if f"python -m fastser {c}" not in documented]
    assert not missing, f"commands not in docs/api.md: {missing}"


def test_every_documented_name_exists() -> None:
    for dotted in entries():
        if dotted.startswith("fastser"):
            resolve(dotted)  # raises AttributeError for a stale entry


@pytest.mark.parametrize("dotted", required_names())
def test_documented_signature_matches_the_code(dotted: str) -> None:
    body = entries().get(dotted)
    if body is None:
        pytest.fail(f"{dotted} is not in docs/api.md")
    check_declaration(dotted, resolve(dotted), declaration(body))


def is_function(obj: object) -> bool:
    """A function, or one of the compiled functions published behind a documented partial
    (dumps, loads: _facade.compiled_as)."""
    return inspect.isfunction(obj) or isinstance(obj, functools.partial)


def documented_objects() -> Iterator[tuple[str, Any]]:
    for name in fastser.__all__:
        obj = getattr(fastser, name)
        if inspect.isclass(obj) or is_function(obj) or inspect.isbuiltin(obj):
            yield f"fastser.{name}", obj
    for module in ADAPTERS:
        for name in public_functions(module):
            yield f"{module.__name__}.{name}", getattr(module, name)


@pytest.mark.parametrize("dotted,obj", list(documented_objects()))
def test_public_functions_and_classes_have_docstrings(dotted: str, obj: Any) -> None:
    doc = inspect.getdoc(obj)
    assert doc and doc.strip(), f"{dotted} has no docstring in this build"
    if is_function(obj):
        for section in ("Parameters", "Returns", "Raises"):
            assert f"\n{section}\n" in doc, f"{dotted}: no {section} section"


# ---- every ```python block of README.md and docs/api.md runs


def python_blocks(path: pathlib.Path) -> list[tuple[int, str]]:
    """(line number of the fence, code) of each ```python block; other fences, such as
    ```python-fragment for code that cannot run alone, are skipped."""
    text = path.read_text(encoding="utf-8")
    blocks = []
    for match in FENCE.finditer(text):
        if match.group(1) == "python":
            blocks.append((text.count("\n", 0, match.start()) + 1, match.group(2)))
    return blocks


def examples() -> list[Any]:
    # Each block is compiled as if at its place in the file, so a traceback names the line.
    return [pytest.param(path, "\n" * line + code, id=f"{path.name}:{line}")
            for path in (README, API) for line, code in python_blocks(path)]


def has_module(name: str) -> bool:
    try:
        __import__(name)
    except ImportError:
        return False
    return True


@pytest.mark.parametrize("path,code", examples())
def test_example_runs(path: pathlib.Path, code: str, tmp_path: pathlib.Path,
                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Each block runs alone, in a fresh namespace, as a reader would paste it."""
    for module in ("numpy", "lz4"):
        if re.search(rf"^\s*(import|from) {module}\b", code, re.MULTILINE) \
                and not has_module(module):
            pytest.skip(f"the example needs {module}")
    monkeypatch.chdir(tmp_path)  # an example that writes a file writes it here
    namespace: dict[str, Any] = {"__name__": "__fastser_docs_example__"}
    exec(compile(code, str(path), "exec"), namespace)


def test_examples_exist() -> None:
    assert len(python_blocks(README)) >= 3 and len(python_blocks(API)) >= 3
