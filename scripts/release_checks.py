"""The checks of scripts/release.sh that are easier to read in Python than in bash.

Standard library only, so that any python3 runs it. Each subcommand prints what it found and
exits 1 with the reason when a check fails:
  identifiers PYTHON      cibuildwheel (installed for PYTHON) selects exactly build-identifiers.txt
  sdist SDIST             the sdist holds every tracked file but .ci/, .github/ and .gitignore
  manylinux AUDITWHEEL WHEEL  `auditwheel show` accepts WHEEL as manylinux_2_17 or better
  pure WHEEL              WHEEL is tagged py3-none-any and carries no extension module
  requires WHEEL PYTHON   WHEEL's unconditional Requires-Dist names exactly the distributions
                          that importing fastser (installed alone for PYTHON) loads
  tags WHEEL              WHEEL's file name and the tags in its WHEEL file
"""

import json
import re
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
IDENTIFIERS = REPO / "scripts" / "build-identifiers.txt"
# Repository plumbing, not source: the only tracked paths an sdist may leave out.
NOT_IN_SDIST = (".ci/", ".github/", ".gitignore")
# What an sdist must hold to build, test and document fastser from it alone (a directory ends
# with "/": it must hold at least one file).
SDIST_MUST_HOLD = ("mypy.ini", "setup.py", "pyproject.toml", "MANIFEST.in", "README.md",
                   "fastser/py.typed", "docs/", "tests/", "scripts/")
OLDEST_GLIBC = (2, 17)


class CheckFailed(Exception):
    pass


def expected_identifiers() -> dict[str, list[str]]:
    expected: dict[str, list[str]] = {}
    for line in IDENTIFIERS.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            platform, identifier = line.split()
            expected.setdefault(platform, []).append(identifier)
    return expected


def identifiers(python: str) -> None:
    for platform, expected in expected_identifiers().items():
        printed = subprocess.run(
            [python, "-m", "cibuildwheel", "--print-build-identifiers", "--platform", platform],
            cwd=REPO, check=True, capture_output=True, text=True).stdout.split()
        if printed != expected:
            raise CheckFailed(f"cibuildwheel selects for {platform}: {' '.join(printed)}\n"
                              f"build-identifiers.txt expects: {' '.join(expected)}")
        print(f"{platform} ({len(printed)}): {' '.join(printed)}")


def sdist(path: str) -> None:
    with tarfile.open(path) as archive:
        members = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    tracked = subprocess.run(["git", "-C", str(REPO), "ls-files"], check=True,
                             capture_output=True, text=True).stdout.split()
    missing = [name for name in tracked
               if not name.startswith(NOT_IN_SDIST) and name not in members]
    missing += [need for need in SDIST_MUST_HOLD
                if not any(name == need or (need.endswith("/") and name.startswith(need))
                           for name in members)]
    if missing:
        raise CheckFailed(f"{Path(path).name} lacks: {', '.join(missing)}")
    print(f"{Path(path).name}: {len(members)} entries, every tracked file but "
          f"{', '.join(NOT_IN_SDIST)}; holds {', '.join(SDIST_MUST_HOLD)}")


def manylinux(auditwheel: str, wheel: str) -> None:
    shown = subprocess.run([auditwheel, "show", wheel], check=True, capture_output=True,
                           text=True).stdout
    found = re.search(r'platform tag:\s*"(manylinux_(\d+)_(\d+)_\w+)"', shown)
    if found is None:
        raise CheckFailed(f"auditwheel names no manylinux tag for {wheel}:\n{shown}")
    tag, glibc = found.group(1), (int(found.group(2)), int(found.group(3)))
    if glibc > OLDEST_GLIBC:
        raise CheckFailed(f"auditwheel: {tag}, newer than manylinux_2_17:\n{shown}")
    print(f"{Path(wheel).name} is consistent with {tag} "
          f"(needs glibc {glibc[0]}.{glibc[1]}, at most 2.17 allowed)")


def wheel_file(wheel: str, name: str) -> str:
    with zipfile.ZipFile(wheel) as archive:
        info = next(n for n in archive.namelist() if n.endswith(f".dist-info/{name}"))
        return archive.read(info).decode()


def tags(wheel: str) -> None:
    found = [line.split(":", 1)[1].strip() for line in wheel_file(wheel, "WHEEL").splitlines()
             if line.startswith("Tag:")]
    print(f"{Path(wheel).name}  tags: {', '.join(found)}")


def pure(wheel: str) -> None:
    with zipfile.ZipFile(wheel) as archive:
        binaries = [n for n in archive.namelist() if n.endswith((".so", ".pyd", ".dylib"))]
    if not Path(wheel).name.endswith("-py3-none-any.whl") or binaries:
        raise CheckFailed(f"{Path(wheel).name} is not a pure wheel: {binaries}")
    print(f"{Path(wheel).name}: py3-none-any, no extension module")


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


# Run by the interpreter that has the wheel installed without extras: imports every module of
# the package and reports the third-party distributions that came with it, and the modules that
# could not be imported for lack of an optional package.
IMPORT_PROBE = """
import importlib, json, pkgutil, sys
from importlib.metadata import packages_distributions
before = set(sys.modules)
import fastser
missing = {}
for info in pkgutil.iter_modules(fastser.__path__, "fastser."):
    if info.name.endswith("__mypyc"):
        continue
    try:
        importlib.import_module(info.name)
    except ImportError as exc:
        missing[info.name] = exc.name
owners = packages_distributions()
# A module without __file__ was made in memory by an extension (Cython's cython_runtime).
loaded = {top for top in (name.partition(".")[0] for name in set(sys.modules) - before)
          if top != "fastser" and top not in sys.stdlib_module_names
          and getattr(sys.modules.get(top), "__file__", None)}
print(json.dumps({"compiled": fastser.COMPILED, "missing": missing,
                  "dists": sorted({d for top in loaded for d in owners.get(top, [top])})}))
"""


def requires(wheel: str, python: str) -> None:
    always: set[str] = set()
    optional: set[str] = set()
    for line in wheel_file(wheel, "METADATA").splitlines():
        if line.startswith("Requires-Dist:"):
            spec = line.split(":", 1)[1].strip()
            name = normalize(re.split(r"[\s;<>=!~\[(]", spec, maxsplit=1)[0])
            (optional if ";" in spec else always).add(name)
    # -I and a neutral directory: the source tree must not shadow the installed wheel.
    with tempfile.TemporaryDirectory() as scratch:
        probe = json.loads(subprocess.run([python, "-I", "-c", IMPORT_PROBE], cwd=scratch,
                                          check=True, capture_output=True, text=True).stdout)
    imported = {normalize(name) for name in probe["dists"]}
    unexpected = {module: name for module, name in probe["missing"].items()
                  if normalize(name or "?") not in optional}
    if not probe["compiled"] or imported != always or unexpected:
        raise CheckFailed(f"Requires-Dist without extras: {sorted(always)}; the compiled package "
                          f"imports {sorted(imported)} (compiled={probe['compiled']}); "
                          f"modules failing on a package that is no extra: {unexpected}")
    lazily = ", ".join(f"{module} needs {name}" for module, name in probe["missing"].items())
    print(f"Requires-Dist (no extras) = imported by the compiled package = {sorted(imported)}"
          + (f"; optional: {lazily}" if lazily else ""))


def main(argv: list[str]) -> int:
    commands: dict[str, Callable[..., None]] = {
        "identifiers": identifiers, "sdist": sdist, "manylinux": manylinux, "pure": pure,
        "requires": requires, "tags": tags}
    if not argv or argv[0] not in commands:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        commands[argv[0]](*argv[1:])
    except CheckFailed as exc:
        print(f"release check failed: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
