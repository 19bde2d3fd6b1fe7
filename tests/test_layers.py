"""The import direction of STYLE.md, and that only _pickle.py imports pickle."""

import ast
import pathlib

import pytest

SOURCE = pathlib.Path(__file__).resolve().parent.parent / "fastser"
LAYERS = [
    {"_arguments", "_types", "_errors", "_wire", "_limits", "_placed", "wrappers"},
    {"_registry"},
    {"_dispatch", "_numpy", "_pickle"},
    {"_buffers"},
    {"_split", "_compression", "_packing", "_leads", "_maps"},
    {"_serialize"},
    {"_paths", "_walk", "_depth", "_frame_refs", "_header", "_array_records", "_marks", "_encoder",
     "_decoder", "_codec"},
    {"_framing"},
    {"_aio", "_sock"},
    {"_facade", "__init__", "__main__", "_demo", "_inspect", "aio", "sock", "dask",
     "_dask_bridge"},
]


def level(name: str) -> int:
    for index, layer in enumerate(LAYERS):
        if name in layer:
            return index
    raise AssertionError(f"module {name} is in no layer")


def imports(path: pathlib.Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module:
                found.add(node.module.split(".")[0])
            else:
                found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


@pytest.mark.skipif(not SOURCE.is_dir(), reason="needs the source tree")
def test_no_module_imports_upward() -> None:
    for path in SOURCE.glob("*.py"):
        mine = level(path.stem)
        for name in imports(path):
            if (name.startswith("_") and not name.startswith("__")) or name == "wrappers":
                assert level(name) <= mine, f"{path.name} imports {name} from above"


@pytest.mark.skipif(not SOURCE.is_dir(), reason="needs the source tree")
def test_only_the_pickle_module_imports_pickle() -> None:
    for path in SOURCE.glob("*.py"):
        names = imports(path)
        if path.stem != "_pickle":
            assert not names & {"pickle", "cloudpickle"}, path.name


def compiled_modules() -> list[str]:
    setup = (SOURCE.parent / "setup.py").read_text()
    return [line.strip().strip('",')[len("fastser/"):-len(".py")]
            for line in setup.splitlines() if line.strip().startswith('"fastser/')]


@pytest.mark.skipif(not SOURCE.is_dir(), reason="needs the source tree")
def test_compiled_modules_chain_causes_with_chained() -> None:
    # mypyc drops the `from` of `raise X from Y`; compiled code uses _errors.chained.
    names = compiled_modules()
    assert "_encoder" in names and "_sock" in names
    for name in names:
        tree = ast.parse((SOURCE / f"{name}.py").read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Raise):
                assert node.cause is None, f"{name}.py:{node.lineno} uses raise ... from"
