"""What a release ships, checked without building: the cibuildwheel configuration, the sdist's
MANIFEST.in and, where cibuildwheel is installed, the exact build identifiers.
scripts/release.sh does the building (docs/release.md)."""

import importlib.util
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
CIBUILDWHEEL: dict[str, Any] = tomllib.loads(
    (ROOT / "pyproject.toml").read_text())["tool"]["cibuildwheel"]


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
