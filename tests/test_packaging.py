"""What a release ships, checked without building: the cibuildwheel configuration, the sdist's
MANIFEST.in and, where cibuildwheel is installed, the exact build identifiers.
scripts/release.sh does the building (docs/release.md)."""

import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT: dict[str, Any] = tomllib.loads((ROOT / "pyproject.toml").read_text())
CIBUILDWHEEL: dict[str, Any] = PYPROJECT["tool"]["cibuildwheel"]


def test_wheels_are_cpython_311_to_314_on_64_bit_only() -> None:
    assert CIBUILDWHEEL["build"] == ["cp311-*", "cp312-*", "cp313-*", "cp314-*"]
    assert set(CIBUILDWHEEL["skip"]) == {"cp314t-*", "*-musllinux_*", "*-win32", "*_i686"}
    assert CIBUILDWHEEL["linux"]["archs"] == ["x86_64", "aarch64"]
    assert CIBUILDWHEEL["macos"]["archs"] == ["x86_64", "arm64"]
    assert CIBUILDWHEEL["windows"]["archs"] == ["AMD64"]
    assert CIBUILDWHEEL["manylinux-x86_64-image"] == "manylinux2014"
    assert CIBUILDWHEEL["manylinux-aarch64-image"] == "manylinux2014"


def test_wheels_are_compiled_at_opt_level_3() -> None:
    assert CIBUILDWHEEL["environment"] == {"MYPYC_OPT_LEVEL": "3", "FASTSER_PURE": "0"}
    assert 'os.environ.get("MYPYC_OPT_LEVEL"' in (ROOT / "setup.py").read_text()


def test_wheel_test_command_is_the_suite_run_of_scripts_suite_sh() -> None:
    assert CIBUILDWHEEL["test-extras"] == ["test"]
    assert CIBUILDWHEEL["test-environment"] == {"FASTSER_EXPECT": "compiled"}
    command = shlex.split(CIBUILDWHEEL["test-command"])
    assert command[:3] == ["python", "-m", "pytest"]
    # scripts/suite.sh passes the same arguments, with "$repo" where cibuildwheel has {project}.
    suite = shlex.split((ROOT / "scripts" / "suite.sh").read_text(), comments=True)
    as_in_suite = [arg.replace("{project}", "$repo") for arg in command[3:]]
    start = suite.index(as_in_suite[0])
    assert suite[start:start + len(as_in_suite)] == as_in_suite


def tracked_files() -> list[str]:
    try:
        listed = subprocess.run(["git", "-C", str(ROOT), "ls-files"], capture_output=True,
                                text=True, check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("needs a git checkout of fastser")
    return listed


def test_manifest_puts_every_tracked_file_in_the_sdist() -> None:
    # setuptools' own MANIFEST.in engine, matching the lines against the tracked files.
    filelist = pytest.importorskip("setuptools._distutils.filelist")
    tracked = tracked_files()
    selection = filelist.FileList()
    selection.set_allfiles(tracked)
    for line in (ROOT / "MANIFEST.in").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            selection.process_template_line(line)
    added_by_setuptools = ("fastser/", "README.md", "setup.py", "pyproject.toml")
    left_out = (".ci/", ".gitignore")
    missing = [name for name in tracked
               if not name.startswith(added_by_setuptools + left_out)
               and name not in selection.files]
    assert missing == []
    assert "mypy.ini" in selection.files


@pytest.mark.skipif(importlib.util.find_spec("cibuildwheel") is None,
                    reason="cibuildwheel is not installed (scripts/release.sh installs it)")
def test_cibuildwheel_selects_exactly_the_listed_identifiers() -> None:
    checked = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "release_checks.py"), "identifiers",
         sys.executable], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr


def pure_install(source: Path, root: Path) -> "subprocess.Popen[str]":
    # setup.py's own build and install commands, on a copy without pyproject.toml (which
    # only a recent setuptools reads; the build directory logic is setup.py's either way).
    return subprocess.Popen(
        [sys.executable, "setup.py", "-q", "install", "--root", str(root),
         "--single-version-externally-managed", "--record", str(root) + ".record"],
        cwd=source, env={**os.environ, "FASTSER_PURE": "1"}, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True)


def test_builds_from_one_source_folder_at_once_each_ship_the_whole_package(
        tmp_path: Path) -> None:
    pytest.importorskip("setuptools")
    source = tmp_path / "source"
    shutil.copytree(ROOT / "fastser", source / "fastser",
                    ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.pyd"))
    shutil.copy(ROOT / "setup.py", source)
    (source / "setup.cfg").write_text("[metadata]\nname = fastser\n"
                                      "[options]\npackages = find:\n")
    # Left by an older build: an extension of a module since made interpreted (it would
    # shadow the .py if shipped), and what may be another build's files at this moment.
    old = source / "build" / "lib" / "fastser"
    old.mkdir(parents=True)
    (old / "sock.cpython-311-x86_64-linux-gnu.so").write_bytes(b"stale")
    (old / "__init__.py").write_text("")
    runs = [pure_install(source, tmp_path / f"root{n}") for n in range(2)]
    for run in runs:
        out, _ = run.communicate(timeout=120)
        assert run.returncode == 0, out
    # The modules; and py.typed, package data that some setuptools versions ship and
    # others leave out.
    expected = sorted(path.relative_to(ROOT).as_posix()
                      for path in (ROOT / "fastser").rglob("*.py"))
    for n in range(2):
        installed = [path for path in (tmp_path / f"root{n}").rglob("fastser/**/*")
                     if path.is_file() and "__pycache__" not in path.parts]
        names = sorted(path.as_posix()[path.as_posix().rindex("/fastser/") + 1:]
                       for path in installed if path.suffix != ".pyc")
        assert [name for name in names if name != "fastser/py.typed"] == expected
    # Each run built in a directory of its own, removed when it ended; the older build's
    # files were left alone and never shipped.
    assert sorted(path.name for path in (source / "build").iterdir()) == ["lib"]
    assert sorted(path.name for path in old.iterdir()) == [
        "__init__.py", "sock.cpython-311-x86_64-linux-gnu.so"]


def floor_of(name: str, requirements: list[str]) -> tuple[int, ...]:
    matching = [req for req in requirements if re.match(rf"{name}(\[|[<>=!~ ]|$)", req)]
    assert len(matching) == 1, (name, requirements)
    floor = re.fullmatch(rf"{name}(\[[a-z,]+\])?>=([0-9.]+)", matching[0])
    assert floor is not None, f"{matching[0]!r} has no floor"
    return tuple(int(part) for part in floor.group(2).split("."))


def test_dask_extras_have_a_floor_that_the_tested_distributed_meets() -> None:
    # Unbounded, pip paired the newest dask with distributed 2021.4.1 (the newest that pins
    # no dask) whenever a dask came out before its distributed.
    extras = PYPROJECT["project"]["optional-dependencies"]
    peer = (ROOT / "scripts" / "distributed_peer" / "requirements.txt").read_text()
    pinned = re.search(r"^distributed==([0-9.]+)$", peer, re.MULTILINE)
    assert pinned is not None
    tested = tuple(int(part) for part in pinned.group(1).split("."))
    assert floor_of("distributed", extras["dask"]) <= tested
    assert floor_of("distributed", extras["bench"]) <= tested
    assert floor_of("dask", extras["bench"]) == floor_of("distributed", extras["bench"])
