"""The conformance corpus (tests/conformance/, README.md there): every case's frames read back
as its type-tagged value says, exact types included, in this build; dumps writes the very
bytes of each file it can write; every refusal raises its exact fastser exception; and the
corpus covers every extension code of codec.wire and every row of docs/wire-format.md's
tables. A second implementation of the format is checked against the same files."""

import json
import pathlib
import re
import subprocess
import sys
import zlib
from typing import Any

import msgpack
import pytest
from fuzz_target import fuzz_one
from tagged import (CASES_FILE, FRAMES_DIR, Case, canonical, frames_file, is_encoded,
                    load_cases, tagged_of, value_of)

import fastser
from fastser import DeserializationError, FrameError
from fastser.codec import wire

WIRE_FORMAT = pathlib.Path(__file__).resolve().parent.parent / "docs" / "wire-format.md"
MAKE_CORPUS = pathlib.Path(__file__).resolve().parent / "conformance" / "make_corpus.py"
CASES = load_cases()
VALID = [case for case in CASES if "refused" not in case]
ENCODED = [case for case in CASES if is_encoded(case)]
REFUSED = [case for case in CASES if "refused" in case]
ERRORS: dict[str, type[DeserializationError]] = {
    "DeserializationError": DeserializationError, "FrameError": FrameError}
# Cases that state the format where this decoder does not follow it yet: strict xfail, so a
# fix shows up as a failure that asks for the entry to go.
KNOWN_DEVIATIONS: dict[str, str] = {}
# The rows of these tables of docs/wire-format.md (first column) each need a case; the
# generic "a payload" row is the second table's rows.
TABLE_HEADS = ("| value | written as |", "| form | when |")
NOT_A_CONSTRUCT = {"a payload (below)"}


def public_class(exc: BaseException) -> type[BaseException]:
    """The most derived public fastser class of `exc` (fastser's own subclasses, such as
    the error family's, are not part of the API)."""
    return next(cls for cls in type(exc).__mro__ if cls in ERRORS.values())


def ids(cases: list[Case]) -> list[str]:
    return [case["name"] for case in cases]


def file_bytes(case: Case) -> bytes:
    return frames_file(case).read_bytes()


def read(case: Case) -> list[memoryview]:
    return fastser.unpack_frames(file_bytes(case))


def expected(tagged: Any) -> Any:
    if "ndarray" in json.dumps(tagged):
        pytest.importorskip("numpy")
    return canonical(tagged)


def test_every_case_has_its_file_and_every_file_a_case() -> None:
    names = ids(CASES)
    assert len(set(names)) == len(names)
    assert sorted(path.stem for path in FRAMES_DIR.glob("*.bin")) == sorted(names)


def test_make_corpus_would_change_no_file() -> None:
    """The hand-built files too are what make_corpus.py describes (this build's dumps writes
    the others: see test_dumps_writes_the_file)."""
    run = subprocess.run([sys.executable, str(MAKE_CORPUS), "--check"], capture_output=True,
                         text=True, check=False)
    assert run.returncode == 0, run.stdout + run.stderr


def test_the_corpus_is_small() -> None:
    total = sum(path.stat().st_size for path in FRAMES_DIR.glob("*.bin"))
    assert total + CASES_FILE.stat().st_size < 2**19


def test_every_case_says_what_it_is() -> None:
    for case in CASES:
        assert case["construct"] and case["description"], case["name"]
        assert ("value" in case) != ("refused" in case), case["name"]
        assert case.get("refused", "DeserializationError") in ERRORS, case["name"]


@pytest.mark.parametrize("case", VALID, ids=ids(VALID))
def test_reads_as_described(case: Case) -> None:
    received = fastser.loads(read(case), deserialize=False)
    assert canonical(tagged_of(received)) == expected(case["value"])


@pytest.mark.parametrize("case", VALID, ids=ids(VALID))
def test_opens_as_described(case: Case) -> None:
    frames = read(case)
    if "opened_refused" in case:
        with pytest.raises(DeserializationError) as info:
            fastser.loads(frames)
        assert public_class(info.value) is ERRORS[case["opened_refused"]]
        return
    opened = fastser.loads(frames)
    assert canonical(tagged_of(opened)) == expected(case.get("opened", case["value"]))


def compresses_as_recorded(case: Case, frames: list[Any]) -> bool:
    """Whether this process's zlib writes the bytes that wrote the case: each bytes-like the
    encoder compressed is found, compressed by this zlib, in the header (inline)."""
    header = bytes(frames[0])
    value = value_of(case["value"])
    items = value if isinstance(value, list) else [value]
    return all(zlib.compress(item) in header for item in items
               if isinstance(item, (bytes, bytearray)) and len(item) >= 10_000)


def uncompressed(data: bytes) -> bytes:
    """The message `data` holds, written again without compression: the bytes that do not
    depend on the compressor's build (received payloads are inflated, then written as they
    are)."""
    kept = fastser.loads(fastser.unpack_frames(data), deserialize=False)
    return fastser.pack_frames(fastser.dumps(kept))


def check_written(case: Case, written: bytes, data: bytes) -> None:
    """`written` is the file's bytes; where this process's zlib compresses to other bytes
    than the corpus's, the same message compressed alike: equal once inflated, with as many
    frames."""
    if written != data and case.get("options", {}).get("compression") and \
            not compresses_as_recorded(case, fastser.unpack_frames(data)):
        assert len(fastser.unpack_frames(written)) == len(fastser.unpack_frames(data))
        assert uncompressed(written) == uncompressed(data)
        assert written != uncompressed(written)  # compressed, as the file's
        return
    assert written == data


@pytest.mark.parametrize("case", ENCODED, ids=ids(ENCODED))
def test_dumps_writes_the_file(case: Case) -> None:
    options = case.get("options", {})
    data = file_bytes(case)
    written = fastser.pack_frames(fastser.dumps(value_of(case["value"]), **options))
    check_written(case, written, data)


@pytest.mark.parametrize("case", ENCODED, ids=ids(ENCODED))
def test_forwarding_what_was_read_writes_the_file(case: Case) -> None:
    """The forwarding promise (docs/guide/messages.md): re-dumping
    loads(frames, deserialize=False) with the same options reproduces
    the frames (compressed frames are decompressed on receipt, so recompressed)."""
    options = case.get("options", {})
    data = file_bytes(case)
    received = fastser.loads(fastser.unpack_frames(data), deserialize=False)
    written = fastser.pack_frames(fastser.dumps(received, **options))
    check_written(case, written, data)


def refusal(case: Case) -> Any:
    if case["name"] in KNOWN_DEVIATIONS:
        return pytest.param(case, id=case["name"], marks=pytest.mark.xfail(
            strict=True, reason=KNOWN_DEVIATIONS[case["name"]]))
    return pytest.param(case, id=case["name"])


@pytest.mark.parametrize("deserialize", [False, True], ids=["kept", "opened"])
@pytest.mark.parametrize("case", [refusal(case) for case in REFUSED])
def test_refused(case: Case, deserialize: bool) -> None:
    """Refused by unpack_frames or by loads, with the exact class named, whether payloads
    are kept or opened (by a decoder that refuses pickle)."""
    with pytest.raises(DeserializationError) as info:
        frames = fastser.unpack_frames(file_bytes(case))
        fastser.loads(frames, deserialize=deserialize,
                      deserializers=fastser.SAFE_DESERIALIZERS)
    assert public_class(info.value) is ERRORS[case["refused"]]


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_breaks_no_promise_read_as_untrusted_input(case: Case) -> None:
    fuzz_one(b"\x00" + file_bytes(case))


def ext_codes(case: Case) -> set[int]:
    """The extension codes in a case's header frame."""
    codes: set[int] = set()

    def hook(code: int, data: bytes) -> Any:
        codes.add(code)
        return msgpack.ExtType(code, data)

    body = bytes(read(case)[0])[1:]
    msgpack.unpackb(body, ext_hook=hook, use_list=False, strict_map_key=False)
    return codes


def test_every_ext_code_has_a_case() -> None:
    defined = {name: value for name, value in vars(wire).items()
               if name.startswith("EXT_") and type(value) is int}
    assert len(set(defined.values())) == len(defined)
    used: set[int] = set()
    for case in VALID:
        used |= ext_codes(case)
    assert {name: code for name, code in defined.items() if code not in used} == {}
    assert used <= set(defined.values())


def table_rows(text: str, head: str) -> list[str]:
    """The first column of the markdown table that starts with `head`, backticks dropped."""
    lines = text[text.index(head):].splitlines()[2:]
    rows = []
    for line in lines:
        if not line.startswith("|"):
            break
        rows.append(re.sub(r"`", "", line.split("|")[1]).strip())
    return rows


def test_every_row_of_the_wire_format_tables_has_a_case() -> None:
    text = WIRE_FORMAT.read_text(encoding="utf-8")
    rows = [row for head in TABLE_HEADS for row in table_rows(text, head)]
    assert len(rows) >= 10
    constructs = {case["construct"] for case in VALID}
    assert [row for row in rows if row not in constructs and row not in NOT_A_CONSTRUCT] == []
