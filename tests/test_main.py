"""python -m fastser: demo, inspect and version, run as a user runs them (a subprocess of the
interpreter the suite tests, so the installed build)."""

import contextlib
import io
import operator
import os
import pathlib
import re
import struct
import subprocess
import sys
from typing import Any, Optional

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import examples

import fastser
import fastser.__main__
from fastser import Serialize, Serialized, ToPickle
from fastser.codec.wire import WIRE_VERSION


def run(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[str]:
    # -P: never import the source tree from the current directory instead of the build.
    return subprocess.run([sys.executable, "-P", "-m", "fastser", *args], input=stdin.decode(
        "latin-1"), capture_output=True, text=True, timeout=60, encoding="latin-1")


def stream_of(*messages: object, compression: Optional[str] = None) -> bytes:
    return b"".join(fastser.pack_frames(fastser.dumps(msg, compression=compression))
                    for msg in messages)


def write(tmp: pathlib.Path, data: bytes) -> str:
    path = tmp / "stream.bin"
    path.write_bytes(data)
    return str(path)


class Boom:
    """Unpickling it would create a file: inspect must never do that."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self) -> tuple[object, ...]:
        return (open, (self.path, "w"))


def test_inspect_describes_each_message_without_opening_payloads(tmp_path: pathlib.Path) -> None:
    target = tmp_path / "unpickled"
    data = stream_of({"op": "compute", "key": ("x", 1), "data": Serialize(np.arange(10_000.0)),
                      "fn": ToPickle(Boom(str(target))), "raw": b"r" * 70_000,
                      "task": Serialize((operator.add, "x", 1))},
                     [1, 2, {3}], compression="zlib")
    done = run("inspect", write(tmp_path, data))
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "message 0: " in out and "message 1: " in out and "2 messages" in out
    assert f"wire version {WIRE_VERSION}" in out
    assert "<Serialized serializer='dispatch' type='numpy.ndarray' compression=['zlib']" in out
    assert "<Pickled serializer='pickle'" in out and "<bytes 70000 B>" in out
    assert "('x', 1)" in out and "set({3})" in out
    assert "<Serialized serializer='pickle' frames=[" in out
    assert not target.exists()


def test_inspect_reads_stdin() -> None:
    done = run("inspect", "-", stdin=stream_of({"a": 1}))
    assert done.returncode == 0 and "{'a': 1}" in done.stdout


def test_inspect_refuses_bad_streams_with_status_2(tmp_path: pathlib.Path) -> None:
    good = stream_of({"a": b"x" * 100_000})
    cases = {
        "truncated": (good[:-10], "truncated inside message 0"),
        "empty": (b"", "no message"),
        "garbage": (b"\xff" * 64, "not a fastser stream"),
        "not a header": (fastser.pack_frames([b"\x09hello"]), "not a fastser stream"),
    }
    for name, (data, error) in cases.items():
        done = run("inspect", write(tmp_path, data))
        assert done.returncode == 2, name
        assert error in done.stderr, (name, done.stderr)
    missing = run("inspect", str(tmp_path / "nope.bin"))
    assert missing.returncode == 2 and "cannot read" in missing.stderr


def test_version_says_which_build_and_what_it_uses() -> None:
    done = run("version")
    assert done.returncode == 0
    build = "compiled with mypyc" if fastser.COMPILED else "pure Python"
    assert f"fastser {fastser.__version__} ({build})" in done.stdout
    for package in ("msgpack", "cloudpickle", "lz4", "zstandard"):
        assert f"  {package}: " in done.stdout


def test_unknown_commands_print_usage_with_status_2() -> None:
    # No command at all prints the whole help, still on stderr with status 2.
    for args in ([], ["nope"], ["inspect"], ["version", "x"]):
        done = run(*args)
        assert done.returncode == 2 and "usage: python -m fastser" in done.stderr


def test_demo_round_trips_and_says_so() -> None:
    done = run("demo")
    assert done.returncode == 0, done.stderr
    assert f"({'compiled with mypyc' if fastser.COMPILED else 'pure Python'})" in done.stdout
    assert "payload frame aliases the ndarray (no copy): True" in done.stdout
    assert "round trip equal with types kept: True" in done.stdout


def test_demo_needs_no_numpy() -> None:
    # numpy is an extra: a plain install must still run the README's main job.
    blocked = ("import runpy, sys; sys.modules['numpy'] = None; sys.argv = ['fastser', 'demo'];"
               " runpy.run_module('fastser', run_name='__main__')")
    done = subprocess.run([sys.executable, "-P", "-c", blocked], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "bytearray of 800,000 bytes (numpy not installed)" in done.stdout
    assert "payload frame aliases the bytearray (no copy): True" in done.stdout


# --- inspect never shows a traceback: a description (0) or one line on stderr (2) ---

def inspect_in_process(data: bytes) -> tuple[int, str, str]:
    """fastser.__main__.main(["inspect", "-"]) on `data` as standard input, in this process:
    its status, stdout and stderr. Whatever it raises fails the test."""
    stdin, out, err = sys.stdin, io.StringIO(), io.StringIO()
    sys.stdin = io.TextIOWrapper(io.BytesIO(data))
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = fastser.__main__.main(["inspect", "-"])
    finally:
        sys.stdin = stdin
    return status, out.getvalue(), err.getvalue()


def assert_refused(status: int, stderr: str, *expected: str) -> None:
    """Status 2 and one line on stderr, an error naming each of `expected`."""
    assert status == 2, stderr
    assert stderr.startswith("error: ") and stderr.count("\n") == 1, stderr
    assert "Traceback" not in stderr
    for part in expected:
        assert part in stderr, (part, stderr)


def nested(depth: int, leaf: object = 0) -> object:
    for _ in range(depth):
        leaf = [leaf]
    return leaf


def test_inspect_shows_ints_too_long_to_print_by_size(tmp_path: pathlib.Path) -> None:
    # 5,000 digits, beyond the 4,300 that Python converts to text (and quadratic where
    # that limit is lifted): an ext type 1 int of 16,610 bits.
    huge = 10**5000
    done = run("inspect", write(tmp_path, stream_of({"x": huge, "y": -huge, "z": 2**70})))
    assert done.returncode == 0, done.stderr
    assert "{'x': <int of 16,610 bits>, 'y': <int of 16,610 bits>, " \
           "'z': 1180591620717411303424}" in done.stdout


def test_inspect_shows_deep_nesting_to_a_depth(tmp_path: pathlib.Path) -> None:
    # A kept payload's header may nest far deeper than the recursion limit lets us print.
    chain: object = "leaf"
    for _ in range(100):  # 200 levels, within Limits.max_depth
        chain = frozenset([(chain,)])
    data = stream_of({"p": Serialized({"serializer": nested(1000)}, [b"ab"]),
                      "list": nested(200, "leaf"), "set": chain})
    done = run("inspect", write(tmp_path, data))
    assert done.returncode == 0, done.stderr
    assert "<Serialized serializer=" + "[" * 98 + "<list of 1 item>" + "]" * 98 in done.stdout
    assert "'list': " + "[" * 99 + "<list of 1 item>" + "]" * 99 in done.stdout
    assert "'set': frozenset({(frozenset({(frozenset({(" in done.stdout
    assert "frozenset({<tuple of 1 item>})" in done.stdout
    assert "'leaf'" not in done.stdout


GOOD = stream_of({"a": b"x" * 100_000}, [1, 2])
FIRST = len(stream_of({"a": b"x" * 100_000}))


def test_inspect_refuses_hostile_streams_in_one_line(tmp_path: pathlib.Path) -> None:
    cases = {
        "text": (b"hello world, this is not a stream\n",
                 ("not a fastser stream: a message's first 8 bytes, b'hello wo', read as a "
                  "frame count of 8031924123371070824", "input holds 34")),
        "count -1": (b"\xff" * 8 + b"\x00" * 8,
                     ("not a fastser stream", "frame count of 18446744073709551615")),
        "no frames": (b"\x00" * 8, ("not a fastser stream: no frames",)),
        "zeros": (b"\x00" * 100, ("not a fastser stream: no frames",)),
        "huge length": (struct.pack("<QQ", 1, 2**63) + b"\x01\x80",
                        ("not a fastser stream: its prelude announces 1 frames of "
                         "9,223,372,036,854,775,808 bytes", "exceeding Limits.max_frame_bytes")),
        "length -1": (struct.pack("<QQ", 1, 2**64 - 1), ("not a fastser stream",)),
        "short": (b"\x01\x00\x00", ("not a fastser stream: it holds 3 bytes",)),
        "prelude cut": (struct.pack("<QQ", 3, 10), ("truncated inside message 0: its first 8 "
                                                   "bytes", "announce 3 frames")),
        "frames cut": (GOOD[:FIRST - 10], ("truncated inside message 0: its prelude announces "
                                          "2 frames of", f"input ends after {FIRST - 10:,}")),
        "second cut": (GOOD[:-1], ("truncated inside message 1",)),
        "bad utf-8": (fastser.pack_frames([b"\x01\xa2\xff\xfe"]),
                      ("message 0 is not a valid fastser message", "UnicodeDecodeError")),
        "wire version 2": (fastser.pack_frames([b"\x02\x80"]), ("not a fastser stream",)),
        "garbage after": (GOOD + b"garbage!" * 3, ("message 2 is not a valid fastser message",
                                                   "not a fastser stream")),
    }
    for data, expected in cases.values():
        done = run("inspect", write(tmp_path, data))
        assert_refused(done.returncode, done.stderr, *expected)
        assert_refused(*inspect_in_process(data)[::2])  # in-process, the size is not known
    missing = run("inspect", str(tmp_path / "nope.bin"))
    assert_refused(missing.returncode, missing.stderr, "cannot read", "No such file")
    directory = run("inspect", str(tmp_path))
    assert_refused(directory.returncode, directory.stderr, "cannot read", "Is a directory")


def test_inspect_refuses_unusable_standard_input() -> None:
    closed = subprocess.run(f"{sys.executable} -P -m fastser inspect - <&-", shell=True,
                            capture_output=True, text=True, timeout=60)
    assert_refused(closed.returncode, closed.stderr, "cannot read standard input")
    piped = run("inspect", "-", stdin=b"hello world")
    assert_refused(piped.returncode, piped.stderr,
                   "not a fastser stream: a message's first 8 bytes")
    assert "input holds" not in piped.stderr  # a pipe's size is not known


def test_inspect_ends_in_one_line_even_on_its_own_bug(monkeypatch: pytest.MonkeyPatch) -> None:
    import fastser.cli.inspect

    def broken(value: object, text: object, depth: int) -> None:
        raise RuntimeError("a bug\nwith a long text " + "x" * 5000)

    monkeypatch.setattr(fastser.cli.inspect, "write_value", broken)
    status, _, stderr = inspect_in_process(GOOD)
    assert_refused(status, stderr, "cannot describe message 0: RuntimeError: a bug with a long")
    assert len(stderr) < 1100 and stderr.endswith("xxx ...\n")


def test_inspect_escapes_what_the_terminal_cannot_show(tmp_path: pathlib.Path) -> None:
    done = subprocess.run([sys.executable, "-P", "-m", "fastser", "inspect",
                           write(tmp_path, stream_of({"caf\xe9": "\u20ac"}))],
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONIOENCODING": "ascii"})
    assert done.returncode == 0, done.stderr
    assert "{'caf\\xe9': '\\u20ac'}" in done.stdout


def test_inspect_stops_quietly_when_its_reader_goes(tmp_path: pathlib.Path) -> None:
    # `inspect FILE | head`: the pipe closes while inspect still writes.
    path = write(tmp_path, stream_of(*[{"key": i, "text": "x" * 30} for i in range(20_000)]))
    child = subprocess.Popen([sys.executable, "-P", "-m", "fastser", "inspect", path],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert child.stdout is not None and child.stderr is not None
    child.stdout.read(100)
    child.stdout.close()
    stderr = child.stderr.read().decode()
    assert child.wait(timeout=60) == 1
    assert stderr == ""


def test_inspect_writes_a_description_as_it_makes_it() -> None:
    # A header of a million one-byte ints: a description made whole would hold a string per
    # int (60 bytes each, 7.6x what decoding takes); written in batches, about 1.1x.
    script = """if True:
        import io, os, tracemalloc
        import fastser
        from fastser.cli.inspect import inspect_stream
        items = 200_000
        stream = fastser.pack_frames([b"\\x01\\xdd" + items.to_bytes(4, "big") + b"d" * items])

        def peak(run):
            tracemalloc.start()
            run()
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            return peak

        decoding = peak(lambda: fastser.loads(fastser.unpack_frames(stream)))
        with open(os.devnull, "w") as sink:
            inspecting = peak(lambda: inspect_stream(io.BytesIO(stream), sink))
        print(inspecting / decoding)
    """
    done = subprocess.run([sys.executable, "-P", "-c", script], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert float(done.stdout) < 2, done.stdout


SAMPLES = [stream_of({"op": "x", "key": ("k", 1), "s": {1, 2}, "big": -(2**70), "u": "\xe9",
                      "data": Serialize(np.arange(4)), "fn": ToPickle(len), "b": b"q" * 40}),
           stream_of([b"x" * 70_000, bytearray(b"y" * 10), memoryview(b"zz")], 1.5, None)]


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    data = bytearray(draw(st.sampled_from(SAMPLES)))
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(data) - 1))
        how = draw(st.sampled_from(["byte", "cut", "delete", "insert", "length"]))
        if how == "byte":
            data[at] = draw(st.integers(0, 255))
        elif how == "cut":
            del data[at:]
        elif how == "delete":
            del data[at:at + draw(st.integers(1, 16))]
        elif how == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=16))
        else:  # a prelude field: the count or a length, anything from 0 to 2**64 - 1
            field = 8 * draw(st.integers(0, 3))
            data[field:field + 8] = draw(st.integers(0, 2**64 - 1)).to_bytes(8, "little")
        if not data:
            break
    return bytes(data)


@settings(max_examples=examples(300), deadline=None)
@given(st.one_of(st.binary(max_size=200), mutated()))
def test_inspect_only_describes_or_refuses(data: bytes) -> None:
    status, stdout, stderr = inspect_in_process(data)
    if status == 0:
        assert stderr == "" and re.search(r"\n(1 message|[0-9]+ messages)\n\Z", stdout)
    else:
        assert_refused(status, stderr)


# --- the help of each command ---

def main_in_process(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = fastser.__main__.main(list(args))
    return status, out.getvalue(), err.getvalue()


COMMANDS = ("demo", "inspect", "version", "help")


def test_help_lists_every_command() -> None:
    done = run("--help")
    assert done.returncode == 0 and done.stderr == ""
    assert done.stdout.startswith("usage: python -m fastser demo | inspect FILE | version")
    for args in (["-h"], ["help"]):
        assert main_in_process(*args) == (0, done.stdout, "")
    for command in COMMANDS:
        assert f"\n    {command} " in done.stdout, command
    # No command: the same help, as a usage error.
    assert main_in_process() == (2, "", done.stdout)


def test_each_command_has_its_own_help() -> None:
    done = run("inspect", "--help")
    assert done.returncode == 0 and done.stderr == ""
    assert done.stdout.startswith("usage: python -m fastser inspect [-h] FILE")
    assert "safe decoder" in done.stdout and "Exit status" in done.stdout
    assert main_in_process("help", "inspect") == (0, done.stdout, "")
    for command, says in {"demo": "Round-trip", "version": "mypyc", "help": "COMMAND"}.items():
        status, out, err = main_in_process(command, "-h")
        assert status == 0 and err == "", command
        assert out.startswith(f"usage: python -m fastser {command} [-h]") and says in out
        if command != "help":
            assert main_in_process("help", command) == (0, out, "")
    status, _, err = main_in_process("help", "nope")
    assert status == 2 and "invalid choice: 'nope'" in err


def test_a_file_may_be_named_like_an_option(tmp_path: pathlib.Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "--help").write_bytes(stream_of({"a": 1}))
    status, out, _ = main_in_process("inspect", "--", "--help")
    assert status == 0 and "{'a': 1}" in out


class Trickle(io.RawIOBase):
    """A pipe that hands over at most `size` bytes per read."""

    def __init__(self, data: bytes, size: int) -> None:
        self.data, self.size, self.pos = data, size, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        piece = self.data[self.pos:self.pos + min(self.size, len(buffer))]
        buffer[:len(piece)] = piece
        self.pos += len(piece)
        return len(piece)


def test_inspect_says_the_same_however_the_bytes_arrive() -> None:
    from fastser.cli.inspect import inspect_stream
    data = SAMPLES[0] + SAMPLES[1] + b"garbage!"
    said = []
    for size in (len(data), 1, 3, 8, 13):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stderr(err):
            # A raw stream is not a typing.BinaryIO, though it has all that inspect uses.
            status = inspect_stream(Trickle(data, size), out)  # type: ignore[arg-type]
        said.append((status, out.getvalue(), err.getvalue()))
    assert said[0][0] == 2 and "message 3: " in said[0][1]
    assert "memoryview(b'zz')" in said[0][1]  # not its address, which differs run to run
    assert "error: message 4 is not a valid fastser message" in said[0][2]
    assert all(other == said[0] for other in said[1:])
