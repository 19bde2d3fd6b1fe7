"""What a fresh clone's user trips on: "auto" compression with no compressor installed says
so, once per process; and which layer detects a truncated message (the stream readers, which
know each frame's length from the prelude), against what loads can check of a frame list
(what the header states, not a raw frame's original length)."""

import warnings
from collections.abc import Iterator

import numpy
import pytest

import fastser
from fastser import FrameError
from fastser.frames import compression

PAYLOAD = b"x" * 70_000  # a frame of its own (64 KiB or more)


@pytest.fixture
def no_compressors(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """As if neither lz4 nor zstandard were installed, and "auto" had not warned yet."""
    monkeypatch.setattr(compression, "_modules", {"lz4": None, "zstd": None})
    monkeypatch.setattr(compression, "_auto_warned", [])
    yield


def test_auto_without_lz4_or_zstd_warns_once_naming_the_extras(no_compressors: None) -> None:
    with pytest.warns(RuntimeWarning, match=r"neither lz4 nor zstandard.*fastser\[lz4\]") as seen:
        encoder = fastser.Encoder(compression="auto")
    assert encoder.compression is None
    # It points at the line that asked for "auto", in both builds.
    assert [warning.filename for warning in seen] == [__file__]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fastser.Encoder(compression="auto")  # once per process: silent now
        frames = fastser.dumps(PAYLOAD, compression="auto")
    assert fastser.loads(frames) == PAYLOAD


def test_the_auto_warning_points_at_the_callers_line(no_compressors: None) -> None:
    # Through the facade (api.py, whose frames the compiled build keeps too).
    with pytest.warns(RuntimeWarning, match="neither lz4 nor zstandard") as seen:
        fastser.dumps(PAYLOAD, compression="auto")
    assert [warning.filename for warning in seen] == [__file__]


def test_auto_with_a_compressor_installed_is_silent() -> None:
    if compression.compressor_module("lz4") is None and \
            compression.compressor_module("zstd") is None:
        pytest.skip("neither lz4 nor zstandard is installed")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert fastser.Encoder(compression="auto").compression in ("lz4", "zstd")


def test_the_stream_readers_detect_a_message_cut_short() -> None:
    packed = fastser.pack_frames(fastser.dumps({"b": PAYLOAD}))
    for cut in (1, 8, len(PAYLOAD) // 2, len(packed) - 1):
        with pytest.raises(FrameError, match="truncated"):
            fastser.unpack_frames(packed[:-cut])
        reader = fastser.FrameReader()
        assert reader.feed(packed[:-cut]) == []
        assert reader.pending  # waits for the rest: the prelude gave every frame's length


def test_loads_cannot_know_a_raw_frames_original_length() -> None:
    frames = fastser.dumps({"b": PAYLOAD})
    cut = [frames[0], memoryview(frames[1])[:-10]]
    assert fastser.loads(cut) == {"b": PAYLOAD[:-10]}  # as documented: shorter bytes


def test_loads_checks_what_the_header_states() -> None:
    frames = fastser.dumps({"b": PAYLOAD})
    with pytest.raises(fastser.DeserializationError, match="names payload frame 1"):
        fastser.loads(frames[:1])  # a frame the header refers to is missing
    with pytest.raises(fastser.DeserializationError, match="header"):
        fastser.loads([memoryview(frames[0])[:-1], frames[1]])  # the header itself is cut
    array = fastser.dumps(fastser.Serialize(numpy.arange(20_000)))
    with pytest.raises(fastser.DeserializationError, match="does not hold shape"):
        fastser.loads([array[0], memoryview(array[1]).cast("B")[:-8]])


def test_the_silent_compile_is_announced() -> None:
    """pip shows nothing while mypyc compiles: the README says so next to its first command,
    setup.py prints what the wait is for (pip -v shows it), and scripts/test.sh says it
    before each build."""
    import pathlib
    root = pathlib.Path(__file__).resolve().parent.parent
    if not (root / "setup.py").is_file():
        pytest.skip("the tests run outside the repository")
    readme = (root / "README.md").read_text()
    first = readme.index("The first command")
    assert "about a minute" in readme[first:first + 600]
    assert "a minute on 2 cores" in (root / "setup.py").read_text()
    assert "pip is silent until it is done (compiled: about a minute" in (
        root / "scripts" / "test.sh").read_text()
