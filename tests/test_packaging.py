"""What a release ships, checked without building: the cibuildwheel configuration, the sdist's
MANIFEST.in, the CI workflows (.github/workflows: the wheel runners, the tool pins, trusted
publishing) and, where cibuildwheel is installed, the exact build identifiers, of
pyproject.toml and of the wheel runners. scripts/release.sh does the building
(docs/release.md)."""

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
    left_out = (".ci/", ".github/", ".gitignore")
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


WORKFLOWS = ROOT / ".github" / "workflows"
RELEASE_TOOLS = (ROOT / "scripts" / "release-tools.txt").read_text()
# A runner's image names the platform cibuildwheel builds for there.
RUNNER_PLATFORMS = {"ubuntu": "linux", "macos": "macos", "windows": "windows"}
# "PLATFORM IDENTIFIER" lines: the wheels a release builds.
LISTED_IDENTIFIERS = [line for line in (ROOT / "scripts" / "build-identifiers.txt").read_text()
                      .splitlines() if line.strip() and not line.startswith("#")]


def workflow(name: str) -> dict[str, Any]:
    if not (WORKFLOWS / name).is_file():
        pytest.skip(f"needs a checkout of fastser: the sdist leaves .github/ out ({name})")
    yaml = pytest.importorskip("yaml")  # the test extra installs it
    loaded: dict[Any, Any] = yaml.safe_load((WORKFLOWS / name).read_text())
    # YAML 1.1 reads the bare key `on` as True.
    return {("on" if key is True else key): value for key, value in loaded.items()}


def runs(job: dict[str, Any]) -> str:
    return "\n".join(step.get("run", "") for step in job["steps"])


def wheel_runners() -> list[dict[str, str]]:
    """The wheel job's matrix entries, each with the platform its runner builds for."""
    job = workflow("wheels.yml")["jobs"]["wheels"]
    entries: list[dict[str, str]] = job["strategy"]["matrix"]["include"]
    return [{**entry, "platform": RUNNER_PLATFORMS[entry["os"].split("-")[0]]}
            for entry in entries]


def test_wheel_workflow_takes_cibuildwheel_and_build_from_release_tools() -> None:
    # One pin, scripts/release-tools.txt's, which scripts/release.sh and the identifier lists
    # were checked with: no action version or second pin beside it.
    text = "\n".join((WORKFLOWS / name).read_text() for name in ("wheels.yml", "ci.yml")
                     if (WORKFLOWS / name).is_file())
    jobs = workflow("wheels.yml")["jobs"]
    for tool in ("build", "cibuildwheel"):
        assert re.search(rf"^{tool}==[0-9]", RELEASE_TOOLS, re.MULTILINE)
        assert not re.search(rf"\b{tool}\s*[=<>~]=\s*[0-9]", text), tool
    assert "pypa/cibuildwheel" not in text
    assert "grep '^cibuildwheel==' scripts/release-tools.txt" in runs(jobs["wheels"])
    for tool in ("build", "cibuildwheel"):
        assert f"grep '^{tool}==' scripts/release-tools.txt" in runs(jobs["sdist"])
    assert "python -m cibuildwheel --output-dir wheelhouse" in runs(jobs["wheels"])


def test_wheel_workflow_runners_cover_every_listed_platform_and_linux_arch() -> None:
    runners = wheel_runners()
    platforms = {line.split()[0] for line in LISTED_IDENTIFIERS}
    assert sorted(entry["platform"] for entry in runners if entry["platform"] != "linux") \
        == sorted(platforms - {"linux"})
    # Linux: one native runner per arch of pyproject.toml (arm runners are named *-arm),
    # each narrowed to its arch through CIBW_ARCHS_LINUX; elsewhere pyproject's archs stand.
    linux = [entry for entry in runners if entry["platform"] == "linux"]
    assert sorted(entry["linux-archs"] for entry in linux) \
        == sorted(CIBUILDWHEEL["linux"]["archs"])
    for entry in linux:
        assert entry["os"].endswith("-arm") == (entry["linux-archs"] == "aarch64"), entry
    assert all("linux-archs" not in entry for entry in runners if entry["platform"] != "linux")
    job = workflow("wheels.yml")["jobs"]["wheels"]
    assert 'echo "CIBW_ARCHS_LINUX=${{ matrix.linux-archs }}"' in runs(job)


@pytest.mark.skipif(importlib.util.find_spec("cibuildwheel") is None,
                    reason="cibuildwheel is not installed (scripts/release.sh installs it)")
def test_wheel_workflow_runners_build_exactly_the_listed_identifiers() -> None:
    # What the runners build between them, as cibuildwheel prints it for each runner's
    # platform and Linux arch: build-identifiers.txt, in its order, nothing twice.
    built: list[str] = []
    for entry in wheel_runners():
        env = {name: value for name, value in os.environ.items()
               if not name.startswith("CIBW_")}
        if "linux-archs" in entry:
            env["CIBW_ARCHS_LINUX"] = entry["linux-archs"]
        printed = subprocess.run(
            [sys.executable, "-m", "cibuildwheel", "--print-build-identifiers", "--platform",
             entry["platform"]], cwd=ROOT, env=env, check=True, capture_output=True,
            text=True).stdout.split()
        built += [f"{entry['platform']} {identifier}" for identifier in printed]
    assert sorted(built) == sorted(LISTED_IDENTIFIERS)
    assert len(set(built)) == len(built)


def test_wheel_workflow_publishes_on_version_tags_only_by_trusted_publishing() -> None:
    loaded = workflow("wheels.yml")
    assert loaded["on"]["push"] == {"tags": ["v*"]}
    assert loaded["permissions"] == {"contents": "read"}
    publish = loaded["jobs"]["publish"]
    assert sorted(publish["needs"]) == ["sdist", "wheels"]
    assert "startsWith(github.ref, 'refs/tags/v')" in publish["if"]
    assert publish["environment"]["name"] == "pypi"
    assert publish["permissions"] == {"id-token": "write"}
    uploads = [step for step in publish["steps"]
               if step.get("uses", "").startswith("pypa/gh-action-pypi-publish@")]
    assert len(uploads) == 1 and "with" not in uploads[0]  # no password: no stored token


def test_ci_workflow_runs_ci_run_with_distributeds_pinned_tests() -> None:
    job = workflow("ci.yml")["jobs"]["test"]
    assert job["runs-on"] == "ubuntu-latest"
    script = runs(job)
    assert "scripts/distributed_peer/requirements.txt" in script
    assert "git clone --depth 1 --branch \"$tag\" https://github.com/dask/distributed.git" \
        in script
    assert 'echo "FASTSER_PEER_TESTS=' in script
    # The last step is .ci/run, as root (the network lab), keeping the peer tests' path.
    last = job["steps"][-1]["run"]
    assert last.startswith("sudo --preserve-env=CI,FASTSER_PEER_TESTS ")
    assert last.endswith("bash .ci/run")
