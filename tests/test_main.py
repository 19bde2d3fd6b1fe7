"""python -m fastser: demo, inspect and version, run as a user runs them (a subprocess of the
interpreter the suite tests, so the installed build)."""

import operator
import pathlib
import subprocess
import sys
from typing import Optional

import numpy as np

import fastser
from fastser import Serialize, ToPickle
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
        "garbage": (b"\xff" * 64, "not a valid fastser message"),
        "not a header": (fastser.pack_frames([b"\x09hello"]), "not a valid fastser message"),
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
