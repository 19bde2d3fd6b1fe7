#!/usr/bin/env bash
# Cuts a release into dist/ from a clean checkout on Linux, and proves it on this machine the
# way cibuildwheel would in CI, without a container, for each Python in PYTHONS (by default the
# newest pyenv CPython 3.11, 3.12 and 3.13):
#   1. cibuildwheel selects exactly scripts/build-identifiers.txt on linux, macos and windows;
#   2. python -m build makes the sdist, and from the sdist the pure wheel (FASTSER_PURE=1,
#      py3-none-any), once, and the compiled wheel (MYPYC_OPT_LEVEL=3) with each Python;
#   3. the sdist holds every tracked file but .ci/, .github/ and .gitignore;
#   4. auditwheel show accepts each compiled wheel as manylinux_2_17 or better, and
#      auditwheel repair gives it that tag;
#   5. each compiled wheel's unconditional Requires-Dist is exactly what it imports;
#   6. on each Python, the compiled wheel (with the test and dask extras) and the pure wheel
#      (with the test extra), each installed into a fresh virtual environment, pass the whole
#      suite (scripts/suite.sh, the same run as scripts/test.sh), asserting their build.
# Ends with a summary. Extra arguments go to pytest. See docs/release.md.
#   PYTHON   runs the release tools and checks (default python3)
#   PYTHONS  the interpreters to build and test wheels for, space-separated
#   ALLOW_MISSING_PYTHONS=1  a Python that is not installed is skipped without failing the release
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
python=${PYTHON:-python3}
envs="$repo/.envs"
dist="$repo/dist"
source "$repo/scripts/suite.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

check() { "$python" "$repo/scripts/release_checks.py" "$@"; }
fresh_env() {  # fresh_env PYTHON NAME PIP_INSTALL_ARGS...: a new venv under .envs
    local base=$1 name=$2; shift 2
    "$base" -m venv --clear "$envs/$name"
    "$envs/$name/bin/python" -m pip install --quiet --disable-pip-version-check --no-cache-dir "$@"
}
minor() { "$1" -c 'import sys; print("%d.%d" % sys.version_info[:2])'; }
counts() {  # counts LOG: pytest's last summary line, without its ===
    grep -E '^=+ .*(passed|failed|error).* in [0-9.]+s' "$1" | tail -1 \
        | sed -E 's/^=+ | =+$//g' || true
}

if [ -n "$(git -C "$repo" status --porcelain)" ]; then
    echo "release.sh: the checkout has uncommitted or untracked files; release from a clean clone" >&2
    exit 1
fi

# The interpreters: PYTHONS, or the newest pyenv build of each supported minor version.
missing=()
if [ -z "${PYTHONS:-}" ]; then
    pyenv_root=$(pyenv root 2>/dev/null || echo "${PYENV_ROOT:-$HOME/.pyenv}")
    PYTHONS=
    for want in 3.11 3.12 3.13; do
        found=$(ls -d "$pyenv_root/versions/$want".* 2>/dev/null \
                | grep -E "/$want\.[0-9]+\$" | sort -V | tail -1 || true)
        if [ -n "$found" ] && [ -x "$found/bin/python$want" ]; then
            PYTHONS+=" $found/bin/python$want"
        else
            missing+=("Python $want (no $pyenv_root/versions/$want.N/bin/python$want)")
        fi
    done
fi
pythons=()
for candidate in $PYTHONS; do
    if command -v "$candidate" >/dev/null && minor "$candidate" >/dev/null 2>&1; then
        pythons+=("$(command -v "$candidate")")
    else
        missing+=("$candidate (does not run)")
    fi
done
for absent in "${missing[@]}"; do
    echo "release.sh: skipping $absent" >&2
done
if [ ${#missing[@]} -gt 0 ] && [ "${ALLOW_MISSING_PYTHONS:-0}" != 1 ]; then
    echo "release.sh: the release will FAIL for the missing Python(s) above" \
         "(ALLOW_MISSING_PYTHONS=1 skips them without failing)" >&2
fi
if [ ${#pythons[@]} -eq 0 ]; then
    echo "release.sh: no Python to build wheels for" >&2
    exit 1
fi
echo "== wheels for: ${pythons[*]}"

echo "== release tools (scripts/release-tools.txt)"
fresh_env "$python" release-tools -r "$repo/scripts/release-tools.txt"
tools="$envs/release-tools/bin"

echo "== cibuildwheel --print-build-identifiers"
check identifiers "$tools/python" | tee "$work/identifiers"

echo "== sdist, then the pure wheel from it"
rm -rf "$dist"
mkdir -p "$dist"
"$tools/python" -m build --sdist --outdir "$dist" "$repo"
sdist=$(echo "$dist"/fastser-*.tar.gz)
FASTSER_PURE=1 "$tools/python" -m build --wheel --outdir "$dist" "$sdist"
pure=$(echo "$dist"/fastser-*-py3-none-any.whl)

echo "== sdist contents"
check sdist "$sdist" | tee "$work/sdist"
check pure "$pure" | tee "$work/pure"

declare -A compiled
for py in "${pythons[@]}"; do
    ver=$(minor "$py")
    echo "== Python $ver: the compiled wheel from the sdist ($py)"
    # build itself is installed for this Python; it builds in an isolated environment of it.
    fresh_env "$py" "release-build-$ver" "$(grep -E '^build==' "$repo/scripts/release-tools.txt")"
    MYPYC_OPT_LEVEL=3 FASTSER_PURE=0 "$envs/release-build-$ver/bin/python" -m build --wheel \
        --outdir "$work/raw-$ver" "$sdist"
    raw=$(echo "$work/raw-$ver"/fastser-*-cp*.whl)

    echo "== Python $ver: auditwheel"
    check manylinux "$tools/auditwheel" "$raw" | tee "$work/auditwheel-$ver"
    PATH="$tools:$PATH" "$tools/auditwheel" repair --plat "manylinux_2_17_$(uname -m)" \
        -w "$work/repaired-$ver" "$raw"
    cp "$work/repaired-$ver"/fastser-*.whl "$dist/"
    compiled[$ver]=$dist/$(basename "$work/repaired-$ver"/fastser-*.whl)

    echo "== Python $ver: runtime requirements of the compiled wheel, installed without extras"
    fresh_env "$py" "release-$ver-bare" "${compiled[$ver]}"
    check requires "${compiled[$ver]}" "$envs/release-$ver-bare/bin/python" \
        | tee "$work/requires-$ver"
done

# The dask extra with the compiled wheel, as scripts/test.sh installs it: tests/test_dask.py
# runs against the release wheel (scripts/suite.sh tells the suite to insist on it).
status=0
for py in "${pythons[@]}"; do
    ver=$(minor "$py")
    for kind in compiled pure; do
        if [ "$kind" = compiled ]; then wheel="${compiled[$ver]}[test,dask]"; else wheel="$pure[test]"; fi
        echo "== Python $ver: the whole suite against the installed $kind wheel"
        fresh_env "$py" "release-$ver-$kind" "$wheel"
        run_suite "$kind" "$envs/release-$ver-$kind/bin/python" "$repo" "$@" \
            | tee "$work/suite-$ver-$kind.log" || status=$?
    done
done

echo
echo "== release summary"
version() { "$tools/python" -c "from importlib.metadata import version; print(version('$1'))"; }
echo "cibuildwheel $(version cibuildwheel) build identifiers:"
sed 's/^/  /' "$work/identifiers"
echo "artifacts in dist/:"
echo "  $(cat "$work/sdist")"
echo "  $(cat "$work/pure")"
echo "auditwheel $(version auditwheel); each compiled wheel repaired to the tags below"
for py in "${pythons[@]}"; do
    ver=$(minor "$py")
    echo "Python $("$py" -c 'import platform; print(platform.python_version())') ($py):"
    echo "  compiled: $(check tags "${compiled[$ver]}")"
    echo "  auditwheel show: $(cat "$work/auditwheel-$ver")"
    echo "  requirements: $(cat "$work/requires-$ver")"
    for kind in compiled pure; do
        echo "  suite against the $kind wheel: $(counts "$work/suite-$ver-$kind.log")"
    done
done
echo "pure wheel, tested on every Python above: $(check tags "$pure")"
for absent in "${missing[@]}"; do echo "MISSING: $absent"; done
if [ ${#missing[@]} -gt 0 ] && [ "${ALLOW_MISSING_PYTHONS:-0}" != 1 ]; then
    [ "$status" -ne 0 ] || status=1
    echo "release: FAILED (a Python is missing; ALLOW_MISSING_PYTHONS=1 allows it)"
elif [ "$status" -eq 0 ]; then
    echo "release: OK"
else
    echo "release: FAILED (a suite failed)"
fi
exit $status
