"""The docs match the code: every public name has an entry in the API reference
(docs/api.md, whose entries mkdocstrings generates from the source), the signature the site
reads from the source is the one this build has, every public function and class keeps a
docstring in this build, every command of `python -m fastser` is described, and every
```python block of README.md and of the site's pages runs.

The docs are read from the source tree next to this directory (tests/../docs), never from
the installed package, so this runs against either installed build.
"""

import ast
import functools
import importlib
import inspect
import pathlib
import re
from collections.abc import Iterator
from types import ModuleType
from typing import Any, Optional

import pytest

import fastser
import fastser.__main__
from fastser import aio, sock

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
API = DOCS / "api.md"
SOURCE = ROOT / "fastser"
README = ROOT / "README.md"
# Pages whose examples need more than this process: a Dask cluster, a scheduler's address.
NOT_RUN = {DOCS / "dask.md"}
ADAPTERS = (sock, aio)
# Methods of public classes that are part of the API (the classes' other methods are not).
METHODS = ["Encoder.dumps", "Decoder.loads", "FrameReader.feed", "FrameReader.pending"]
HEADING = re.compile(r"^### (.+?)\s*$", re.MULTILINE)
FENCE = re.compile(r"^```(\S*)\n(.*?)^```\s*$", re.MULTILINE | re.DOTALL)
# A mkdocstrings entry: `::: fastser.Name`, then its indented options (`members: [a, b]`).
DIRECTIVE = re.compile(r"^::: (\S+)\n((?:[ \t]+\S.*\n)*)", re.MULTILINE)
MEMBERS = re.compile(r"^\s+members: \[(.*)\]\s*$", re.MULTILINE)


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


def documented_names() -> set[str]:
    """docs/api.md: the name of each `::: name` entry, and `name.member` for each member
    it lists."""
    names: set[str] = set()
    for match in DIRECTIVE.finditer(API.read_text(encoding="utf-8")):
        names.add(match.group(1))
        members = MEMBERS.search(match.group(2))
        if members:
            names.update(f"{match.group(1)}.{member.strip()}"
                         for member in members.group(1).split(","))
    return names


def headings() -> set[str]:
    """docs/api.md's `### ...` headings (the commands of `python -m fastser`)."""
    return set(HEADING.findall(API.read_text(encoding="utf-8")))


def resolve(dotted: str) -> Any:
    """The object a documented name stands for: fastser.X, fastser.sock.X, fastser.X.method."""
    module_name, _, rest = dotted.partition(".")
    assert module_name == "fastser", dotted
    obj: Any = fastser
    for part in rest.split("."):
        obj = inspect.getattr_static(obj, part) if inspect.isclass(obj) else getattr(obj, part)
    return obj


def bare(signature: inspect.Signature, drop_first: bool) -> inspect.Signature:
    """A signature without annotations (both builds must agree on names, kinds and
    defaults; the compiled one reports no annotations), and without `self`."""
    params = list(signature.parameters.values())[1 if drop_first else 0:]
    return inspect.Signature([param.replace(annotation=inspect.Parameter.empty,
                                            kind=(inspect.Parameter.POSITIONAL_OR_KEYWORD
                                                  if param.kind is inspect.Parameter.POSITIONAL_ONLY
                                                  else param.kind))
                              for param in params])


def module_tree(module: str) -> ast.Module:
    """The source of a fastser module, parsed (never its compiled file)."""
    path = SOURCE.parent / module.replace(".", "/")
    path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
    return ast.parse(path.read_text(encoding="utf-8"))


def find(body: list[ast.stmt], name: str, kind: type | tuple[type, ...]) -> Any:
    """The def or class `name` among the statements of a body, or None."""
    return next((node for node in body
                 if isinstance(node, kind) and getattr(node, "name", None) == name), None)


def signature_of(args: ast.arguments, namespace: dict[str, Any]) -> inspect.Signature:
    """The signature a def declares, its defaults evaluated in its module's namespace."""
    kind = inspect.Parameter

    def value(node: ast.expr) -> Any:
        return eval(compile(ast.Expression(node), "<default>", "eval"), dict(namespace))

    positional: list[tuple[ast.arg, inspect._ParameterKind]] = [
        (a, kind.POSITIONAL_ONLY) for a in args.posonlyargs]
    positional += [(a, kind.POSITIONAL_OR_KEYWORD) for a in args.args]
    defaults: list[Any] = [kind.empty] * (len(positional) - len(args.defaults))
    defaults += [value(d) for d in args.defaults]
    out = [kind(a.arg, k, default=d) for (a, k), d in zip(positional, defaults)]
    if args.vararg:
        out.append(kind(args.vararg.arg, kind.VAR_POSITIONAL))
    for a, d in zip(args.kwonlyargs, args.kw_defaults):
        out.append(kind(a.arg, kind.KEYWORD_ONLY, default=kind.empty if d is None else value(d)))
    if args.kwarg:
        out.append(kind(args.kwarg.arg, kind.VAR_KEYWORD))
    return inspect.Signature(out)


def bare_self(signature: inspect.Signature) -> inspect.Signature:
    return signature.replace(parameters=list(signature.parameters.values())[1:])


def dataclass_signature(node: ast.ClassDef, namespace: dict[str, Any]) -> inspect.Signature:
    """The __init__ a @dataclass's annotated fields make."""
    kind = inspect.Parameter
    return inspect.Signature([
        kind(field.target.id, kind.POSITIONAL_OR_KEYWORD,
             default=kind.empty if field.value is None else eval(
                 compile(ast.Expression(field.value), "<default>", "eval"), dict(namespace)))
        for field in node.body
        if isinstance(field, ast.AnnAssign) and isinstance(field.target, ast.Name)])


FUNCTION_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)


def source_signature(dotted: str) -> Optional[tuple[inspect.Signature, bool]]:
    """The signature the site shows for a documented callable, read from its def in the
    source as griffe reads it (a class: its __init__, inherited or a dataclass's), and
    whether the def is async; None for what has no def in fastser's source (an exception
    class, a property, a constant)."""
    obj = resolve(dotted)
    owner = resolve(dotted.rsplit(".", 1)[0]) if dotted.count(".") == 2 else None
    if inspect.isclass(owner):  # a method
        node = find(module_tree(owner.__module__).body, owner.__name__, ast.ClassDef)
        method = find(node.body, dotted.rsplit(".", 1)[1], FUNCTION_DEFS)
        if method is None or any(isinstance(d, ast.Name) and d.id == "property"
                                 for d in method.decorator_list):
            return None
        namespace = vars(importlib.import_module(owner.__module__))
        return signature_of(method.args, namespace), isinstance(method, ast.AsyncFunctionDef)
    if inspect.isclass(obj):
        for klass in obj.__mro__:
            if not klass.__module__.startswith("fastser"):
                return None
            namespace = vars(importlib.import_module(klass.__module__))
            node = find(module_tree(klass.__module__).body, klass.__name__, ast.ClassDef)
            init = find(node.body, "__init__", FUNCTION_DEFS)
            if init is not None:  # the class's signature is its __init__'s without self
                return bare_self(signature_of(init.args, namespace)), False
            if any("dataclass" in ast.unparse(d) for d in node.decorator_list):
                return dataclass_signature(node, namespace), False
        return None
    if inspect.isfunction(obj) or isinstance(obj, functools.partial):
        module, name = obj.__module__, getattr(obj, "__name__")  # a partial's, from its def
        node = find(module_tree(module).body, name, FUNCTION_DEFS)
        assert node is not None, f"{dotted}: no def {name} in {module}"
        return (signature_of(node.args, vars(importlib.import_module(module))),
                isinstance(node, ast.AsyncFunctionDef))
    return None


def runtime_object(obj: Any) -> Any:
    """What a call runs: behind a documented partial (dumps, loads: api.compiled_as), the
    compiled function it calls, whose signature must be the documented one."""
    return obj.func if isinstance(obj, functools.partial) else obj


def test_api_documents_every_public_name() -> None:
    documented = documented_names()
    missing = [name for name in required_names() if name not in documented]
    assert not missing, f"no ::: entry in docs/api.md: {missing}"


def test_api_documents_every_command() -> None:
    documented = headings()
    missing = [c for c in cli_commands() if f"python -m fastser {c}" not in documented]
    assert not missing, f"commands not in docs/api.md: {missing}"


def test_every_documented_name_exists() -> None:
    for dotted in documented_names():
        resolve(dotted)  # raises AttributeError for a stale entry


@pytest.mark.parametrize("dotted", required_names())
def test_source_signature_matches_the_code(dotted: str) -> None:
    """The site shows the signature of the source; the loaded build must have it."""
    found = source_signature(dotted)
    if found is None:
        return
    declared, is_async = found
    obj = runtime_object(resolve(dotted))
    is_method = dotted.count(".") == 2 and inspect.isclass(resolve(dotted.rsplit(".", 1)[0]))
    actual = bare(inspect.signature(obj), drop_first=is_method)
    declared = bare(declared, drop_first=is_method)
    if list(actual.parameters)[-1:] == ["options"] and "options" not in declared.parameters:
        # dumps and loads take their options as **options, and further positional arguments
        # as *args only to refuse them (fastser/arguments.py, "Options" and "Positional
        # arguments"): the positional part must agree; tests/test_arguments.py checks each
        # keyword and the refusals.
        actual = actual.replace(parameters=[
            p for p in list(actual.parameters.values())[:-1] if p.kind is not p.VAR_POSITIONAL])
        declared = declared.replace(parameters=[
            p for p in declared.parameters.values() if p.kind is not p.KEYWORD_ONLY])
    assert declared == actual, \
        f"{dotted}: the source says {declared}, the loaded build has {actual}"
    assert is_async is inspect.iscoroutinefunction(obj), f"{dotted}: async?"


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


# ---- every ```python block of README.md and of the site's pages runs


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
    return [pytest.param(path, "\n" * line + code, id=f"{path.relative_to(ROOT)}:{line}")
            for path in pages() for line, code in python_blocks(path)]


def pages() -> list[pathlib.Path]:
    return [README] + sorted(path for path in DOCS.rglob("*.md") if path not in NOT_RUN)


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
    assert len(python_blocks(README)) >= 3
    assert sum(len(python_blocks(path)) for path in (DOCS / "guide").glob("*.md")) >= 10
