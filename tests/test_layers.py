"""The package's folders are its layers (docs/design.md, "Layers"): each module imports only
from its own layer or those below, there are no import cycles, and only the pickle family
imports pickle."""

import ast
import pathlib

import pytest

SOURCE = pathlib.Path(__file__).resolve().parent.parent / "fastser"
# Bottom to top. A top-level module is in a layer by name; a folder's modules by folder.
LAYERS: list[set[str]] = [
    {"fastser.arguments", "fastser.errors", "fastser.frame_types", "fastser.headers",
     "fastser.limits", "fastser.wrappers"},
    {"fastser.frames"},
    {"fastser.families"},
    {"fastser.codec"},
    {"fastser.transport"},
    {"fastser.api", "fastser.sock", "fastser.aio", "fastser"},
    {"fastser.dask", "fastser.cli", "fastser.__main__"},
]
FOLDERS = {"fastser.frames", "fastser.families", "fastser.codec", "fastser.transport",
           "fastser.dask", "fastser.cli"}


def module_name(path: pathlib.Path) -> str:
    parts = ("fastser", *path.relative_to(SOURCE).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def layer_of(module: str) -> int:
    """The layer of `module` (a fastser module, or a name imported from one)."""
    for index, layer in enumerate(LAYERS):
        for owner in layer:
            if module == owner or (owner in FOLDERS and module.startswith(owner + ".")):
                return index
    parent = module.rpartition(".")[0]  # `from fastser.codec import wire` names a module
    if parent and parent != module:
        return layer_of(parent)
    raise AssertionError(f"module {module} is in no layer")


def fastser_imports(path: pathlib.Path) -> set[str]:
    """The fastser modules `path` imports (at any depth in the file, lazily included)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path}: relative import (the package imports absolutely)"
            if node.module and node.module.split(".")[0] == "fastser":
                for alias in node.names:
                    candidate = f"{node.module}.{alias.name}"
                    is_module = (SOURCE.parent / (candidate.replace(".", "/") + ".py")).exists() \
                        or (SOURCE.parent / candidate.replace(".", "/")).is_dir()
                    found.add(candidate if is_module else node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names
                         if alias.name.split(".")[0] == "fastser")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr == "import_module" and node.args and \
                isinstance(node.args[0], ast.Constant) and str(node.args[0].value).startswith(
                    "fastser."):
            found.add(str(node.args[0].value))
    return found


def modules() -> dict[str, pathlib.Path]:
    return {module_name(path): path for path in SOURCE.rglob("*.py")}


def other_imports(path: pathlib.Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module.split(".")[0])
    return found


@pytest.mark.skipif(not SOURCE.is_dir(), reason="needs the source tree")
def test_no_module_imports_upward() -> None:
    for name, path in modules().items():
        mine = layer_of(name)
        for imported in fastser_imports(path):
            assert layer_of(imported) <= mine, f"{name} imports {imported} from above"


@pytest.mark.skipif(not SOURCE.is_dir(), reason="needs the source tree")
def test_no_import_cycles() -> None:
    # Module-level imports only: a lazy import inside a function (the numpy family, loaded
    # by name at the first array) runs after both modules exist.
    graph: dict[str, set[str]] = {}
    for name, path in modules().items():
        tree = ast.parse(path.read_text())
        edges: set[str] = set()
        for node in tree.body:
            if isinstance(node, ast.ImportFrom) and node.module and \
                    node.module.startswith("fastser"):
                for alias in node.names:
                    candidate = f"{node.module}.{alias.name}"
                    edges.add(candidate if candidate in modules() else node.module)
        graph[name] = {edge for edge in edges if edge != name and edge != "fastser"}
    state: dict[str, int] = {}

    def visit(node: str, trail: list[str]) -> None:
        if state.get(node) == 2:
            return
        assert state.get(node) != 1, "import cycle: " + " -> ".join([*trail, node])
        state[node] = 1
        for edge in sorted(graph.get(node, ())):
            visit(edge, [*trail, node])
        state[node] = 2

    for name in sorted(graph):
        visit(name, [])


@pytest.mark.skipif(not SOURCE.is_dir(), reason="needs the source tree")
def test_only_the_pickle_family_imports_pickle() -> None:
    for name, path in modules().items():
        if name != "fastser.families.pickle":
            assert not other_imports(path) & {"pickle", "cloudpickle"}, name


def compiled_modules() -> list[str]:
    setup = (SOURCE.parent / "setup.py").read_text()
    return [line.strip().strip('",')[len("fastser/"):-len(".py")]
            for line in setup.splitlines() if line.strip().startswith('"fastser/')]


@pytest.mark.skipif(not SOURCE.is_dir(), reason="needs the source tree")
def test_compiled_modules_chain_causes_with_chained() -> None:
    # mypyc drops the `from` of `raise X from Y`; compiled code uses errors.chained.
    names = compiled_modules()
    assert "codec/encoder" in names and "transport/sock" in names
    for name in names:
        tree = ast.parse((SOURCE / f"{name}.py").read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Raise):
                assert node.cause is None, f"{name}.py:{node.lineno} uses raise ... from"
