"""Which build is loaded, one class identity across compiled and interpreted code, and the
introspection that must survive compilation."""

import copy
import importlib
import inspect
import os
import pathlib
import pickle
import pydoc

import pytest

import fastser
from fastser import wrappers

EXPECTED = os.environ.get("FASTSER_EXPECT")
# The modules setup.py leaves interpreted, each for the reason its docstring gives; every
# other module of the package must be compiled (a new module left out of setup.py's list
# would run interpreted unnoticed: the hash counter of codec.collisions once did).
INTERPRETED = {"__init__", "__main__", "api", "sock", "aio", "errors", "frames.address"}
INTERPRETED_FOLDERS = ("cli.", "dask.")


def package_modules() -> list[str]:
    """Every module of the installed fastser package but the folders' __init__ (their
    docstring, nothing else), as a dotted name under fastser."""
    root = pathlib.Path(fastser.__file__).resolve().parent
    names = set()
    for path in root.glob("**/*.py"):  # a compiled build ships each source beside its .so
        if path.stem != "__init__" and "__pycache__" not in path.parts:
            names.add(".".join(path.relative_to(root).with_suffix("").parts))
    return sorted(names)


COMPILED_MODULES = [name for name in package_modules()
                    if name not in INTERPRETED and not name.startswith(INTERPRETED_FOLDERS)]


def test_the_compiled_list_is_the_package_less_its_interpreted_modules() -> None:
    assert "codec.collisions" in COMPILED_MODULES and "codec.decoder" in COMPILED_MODULES
    assert "api" not in COMPILED_MODULES


def test_expected_build_is_loaded() -> None:
    if EXPECTED is None:
        pytest.skip("FASTSER_EXPECT (compiled|pure) is set by scripts/test.sh")
    assert EXPECTED in ("compiled", "pure")
    assert fastser.COMPILED is (EXPECTED == "compiled")


def test_not_imported_from_source_tree() -> None:
    if EXPECTED is None:
        pytest.skip("only meaningful under scripts/test.sh")
    source = pathlib.Path(__file__).resolve().parent.parent / "fastser"
    assert pathlib.Path(fastser.__file__).resolve().parent != source


@pytest.mark.parametrize("name", COMPILED_MODULES)
def test_every_hot_module_matches_the_build(name: str) -> None:
    module = importlib.import_module(f"fastser.{name}")
    assert (not module.__file__.endswith(".py")) is fastser.COMPILED  # type: ignore[union-attr]


def test_compiled_suite_runs_the_dask_tests() -> None:
    # scripts/test.sh and scripts/release.sh install the dask extra into the compiled build, so
    # tests/test_dask.py runs there instead of skipping unnoticed; scripts/suite.sh says so with
    # FASTSER_EXPECT_DASK=1 (cibuildwheel installs only the test extra and does not set it).
    if os.environ.get("FASTSER_EXPECT_DASK") != "1":
        pytest.skip("scripts/suite.sh sets FASTSER_EXPECT_DASK=1 for the compiled build only")
    assert EXPECTED == "compiled"
    importlib.import_module("distributed")


def test_dask_module_stays_interpreted() -> None:
    # It subclasses distributed's classes (setup.py lists the reason).
    pytest.importorskip("distributed")
    for name in ("fastser.dask", "fastser.dask.backend", "fastser.dask.bridge",
                 "fastser.dask.codecs", "fastser.dask.comm", "fastser.dask.listener"):
        dask_module = importlib.import_module(name)
        assert dask_module.__file__ is not None and dask_module.__file__.endswith(".py")


def test_single_class_identity() -> None:
    assert fastser.Serialize is wrappers.Serialize
    assert fastser.Serialized is wrappers.Serialized
    assert fastser.ToPickle is wrappers.ToPickle
    assert fastser.Pickled is wrappers.Pickled


def test_wrapper_made_here_is_recognised_by_the_walk() -> None:
    # Instances created by this interpreted test module go through the compiled walk.
    frames = fastser.dumps({"x": fastser.Serialize(b"abc")})
    assert fastser.loads(frames) == {"x": b"abc"}
    kept = fastser.loads(frames, deserialize=False)
    assert type(kept["x"]) is fastser.Serialized


def test_interpreted_subclass_counts_as_its_wrapper() -> None:
    class MySerialize(fastser.Serialize):
        def describe(self) -> str:
            return f"mine: {self.data!r}"

    wrapped = MySerialize([1, 2])
    assert wrapped.describe() == "mine: [1, 2]"
    assert isinstance(wrapped, fastser.Serialize)
    assert fastser.loads(fastser.dumps({"a": wrapped})) == {"a": [1, 2]}


@pytest.mark.parametrize("obj", [
    fastser.dumps, fastser.loads, fastser.serialize, fastser.deserialize,
    fastser.extract_serialize, fastser.register_serialization,
    fastser.register_serialization_lazy, fastser.register_serialization_family,
    fastser.Serialize, fastser.Serialized, fastser.ToPickle, fastser.Pickled,
    fastser.Encoder, fastser.Decoder, fastser.Limits, fastser.FastserError,
    fastser.SerializationError, fastser.DeserializationError, fastser.FrameError,
    fastser.pack_frames, fastser.pack_frames_prelude, fastser.unpack_frames,
    fastser.FrameReader,
])
def test_public_names_keep_docstrings(obj: object) -> None:
    doc = inspect.getdoc(obj)
    assert doc and len(doc) > 20
    assert doc.splitlines()[0] in pydoc.render_doc(obj)


def test_signatures_survive() -> None:
    params = inspect.signature(fastser.dumps).parameters
    assert list(params) == ["msg", "serializers", "on_error", "context", "frame_split_size",
                            "compression"]
    assert list(inspect.signature(fastser.loads).parameters) == [
        "frames", "deserialize", "deserializers", "limits"]
    assert "bytes_threshold" in inspect.signature(fastser.extract_serialize).parameters


def test_dumps_and_loads_take_their_arguments_every_way() -> None:
    # The public names are the compiled functions behind a partial (_facade.compiled_as):
    # every call must behave as the documented signature says.
    msg = {"key": ("x", 1), "data": b"y" * 70_000, 3: [1.5, None]}
    frames = fastser.dumps(msg)
    assert fastser.dumps(msg=msg) == frames
    assert fastser.dumps(msg, on_error="raise", compression=None) == frames
    assert fastser.loads(frames) == msg
    assert fastser.loads(frames=frames) == msg
    assert fastser.loads(frames, deserialize=True, limits=fastser.Limits()) == msg
    with pytest.raises(TypeError, match="dumps"):
        fastser.dumps()  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="dumps"):
        fastser.dumps(msg, None)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="serializer"):
        fastser.dumps(msg, serializer=None)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="loads"):
        fastser.loads(frames, msg=1)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="frames"):
        fastser.loads(frames, frames=frames)  # type: ignore[misc]
    with pytest.raises(fastser.DeserializationError):
        fastser.loads(frames[:1])


def test_dumps_and_loads_pickle_and_copy_as_functions_do() -> None:
    # Shipped to another process (a process pool, a Dask task) by pickle: by reference.
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        data = pickle.dumps((fastser.dumps, fastser.loads), protocol=protocol)
        assert pickle.loads(data) == (fastser.dumps, fastser.loads) and len(data) < 100
    assert copy.deepcopy(fastser.loads) is fastser.loads


def test_all_is_complete() -> None:
    for name in fastser.__all__:
        assert hasattr(fastser, name), name
