"""Modules registered with cloudpickle.register_pickle_by_value travel by value on every path
that pickles: the task form, fastser's own pickle writer, stdlib pickle and the fallback."""

import functools
import importlib
import pathlib
import sys
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import cloudpickle
import pytest

import fastser
from fastser.families import pickle as _pickle

SOURCE = '''
def double(x):
    return 2 * x


class Thing:
    def __init__(self, v):
        self.v = v

    def __eq__(self, other):
        return type(other).__name__ == "Thing" and other.v == self.v
'''


@pytest.fixture
def by_value_module(tmp_path: pathlib.Path) -> Iterator[ModuleType]:
    """A package module only this test can import, registered by value (its package, so
    the submodule check is exercised too); unregistered and forgotten afterwards."""
    package = tmp_path / "fastser_by_value_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "shipped.py").write_text(SOURCE)
    sys.path.insert(0, str(tmp_path))
    try:
        parent = importlib.import_module("fastser_by_value_pkg")
        module = importlib.import_module("fastser_by_value_pkg.shipped")
        cloudpickle.register_pickle_by_value(parent)
        try:
            yield module
        finally:
            cloudpickle.unregister_pickle_by_value(parent)
    finally:
        if str(tmp_path) in sys.path:  # the test may have taken it out already
            sys.path.remove(str(tmp_path))
        for name in ("fastser_by_value_pkg.shipped", "fastser_by_value_pkg"):
            sys.modules.pop(name, None)


def messages(module: Any) -> dict[str, Any]:
    return {
        "task tuple": {"t": fastser.Serialize((module.double, 21))},
        "partial task": {"t": fastser.Serialize(functools.partial(module.double, 21))},
        "ToPickle function": {"t": fastser.ToPickle(module.double)},
        "Serialize object": {"t": fastser.Serialize(module.Thing(4))},
        "fallback object": {"t": module.Thing(3)},
        "function in a list": {"t": fastser.Serialize([module.double, 1])},
    }


@pytest.fixture(params=["live set", "public function"])
def registry_binding(request: pytest.FixtureRequest) -> Iterator[str]:
    """cloudpickle's registry as fastser reads it: its live set, or (were cloudpickle to
    drop that set) through cloudpickle.list_registry_pickle_by_value."""
    bound = _pickle.BY_VALUE_REGISTRY[0]
    if request.param == "public function":
        _pickle.BY_VALUE_REGISTRY[0] = _pickle.PublicRegistry()
    try:
        yield request.param
    finally:
        _pickle.BY_VALUE_REGISTRY[0] = bound


def test_registered_modules_are_not_needed_by_the_receiver(
        registry_binding: str, by_value_module: ModuleType) -> None:
    sent = {name: [bytes(frame) for frame in fastser.dumps(msg)]
            for name, msg in messages(by_value_module).items()}
    # The receiver cannot import the module: only a pickle by value can be read back.
    sys.modules.pop("fastser_by_value_pkg.shipped")
    sys.modules.pop("fastser_by_value_pkg")
    sys.path.remove(str(pathlib.Path(by_value_module.__file__ or "").parent.parent))
    with pytest.raises(ImportError):
        importlib.import_module("fastser_by_value_pkg.shipped")
    for name, frames in sent.items():
        received = fastser.loads(frames)["t"]
        if name == "task tuple":
            assert received[0](*received[1:]) == 42, name
        elif name == "partial task":
            assert received() == 42, name
        elif name == "ToPickle function":
            assert received(5) == 10, name
        elif name == "function in a list":
            assert received[0](2) == 4, name
        else:
            assert type(received).__name__ == "Thing" and received.v in (3, 4), name


def test_unregistered_modules_still_travel_by_name() -> None:
    # The registry is empty: stdlib pickle writes functions by name.
    frames = fastser.dumps({"t": fastser.Serialize((len, "abc"))})
    assert b"cloudpickle" not in b"".join(bytes(frame) for frame in frames)
    assert fastser.loads(frames)["t"] == (len, "abc")


def test_only_a_pickled_module_name_sends_a_pickle_to_cloudpickle(
        by_value_module: ModuleType) -> None:
    # The registered package is fastser_by_value_pkg: its name inside other text is not a
    # module the pickle names; the module itself or a submodule is.
    import pickle
    assert not _pickle.names_by_value_module(
        pickle.dumps(["see fastser_by_value_pkg_notes"], protocol=5))
    assert _pickle.names_by_value_module(pickle.dumps(by_value_module.Thing, protocol=5))
    assert _pickle.names_by_value_module(pickle.dumps(["fastser_by_value_pkg"], protocol=5))
