"""The fuzzer's corpus, replayed: every input the coverage-guided fuzzer kept (scripts/fuzz.sh)
goes through the same target in both builds, and must end in FrameError/DeserializationError
or a message — never another exception. The fuzzer itself needs clang and runs outside CI."""

import pathlib
from typing import Any

import fuzz_target
import pytest
from fuzz_target import fuzz_one

import fastser

CORPUS = pathlib.Path(__file__).resolve().parent / "fuzz" / "corpus"
INPUTS = sorted(CORPUS.iterdir())


def test_the_corpus_is_committed_and_small() -> None:
    assert len(INPUTS) >= 50
    assert sum(path.stat().st_size for path in INPUTS) < 2**20


@pytest.mark.parametrize("path", INPUTS, ids=[path.name[:12] for path in INPUTS])
def test_corpus_input_breaks_no_promise(path: pathlib.Path) -> None:
    fuzz_one(path.read_bytes())


class Broken:
    def loads(self, frames: list[Any]) -> Any:
        raise KeyError("a raw lookup error: what fastser promises never to raise")


def test_the_target_lets_a_broken_promise_through(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fuzz_target, "DECODERS", (Broken(),))
    with pytest.raises(KeyError):
        fuzz_one(b"\x00" + fastser.pack_frames([b"\x03\x90"]))
