#!/usr/bin/env bash
# Cuts a release into dist/ from a clean checkout on Linux, and proves it on this machine the
# way cibuildwheel would in CI, without a container:
#   1. cibuildwheel selects exactly scripts/build-identifiers.txt on linux, macos and windows;
#   2. python -m build makes the sdist, then the compiled wheel FROM the sdist (MYPYC_OPT_LEVEL=3),
#      and the pure wheel (FASTSER_PURE=1, py3-none-any) from the same sdist;
#   3. the sdist holds every tracked file but .ci/ and .gitignore;
#   4. auditwheel show accepts the compiled wheel as manylinux_2_17 or better, and
#      auditwheel repair gives it that tag;
#   5. the compiled wheel's unconditional Requires-Dist is exactly what it imports;
#   6. each wheel, installed with the test extra into a fresh virtual environment, passes the
#      whole suite (scripts/suite.sh, the same run as scripts/test.sh), asserting its build.
# Ends with a summary. Extra arguments go to pytest. See docs/release.md.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
python=${PYTHON:-python3}
envs="$repo/.envs"
dist="$repo/dist"
source "$repo/scripts/suite.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

check() { "$python" "$repo/scripts/release_checks.py" "$@"; }
fresh_env() {  # fresh_env NAME PIP_INSTALL_ARGS...: a new venv under .envs
    local name=$1; shift
    "$python" -m venv --clear "$envs/$name"
    "$envs/$name/bin/python" -m pip install --quiet --disable-pip-version-check --no-cache-dir "$@"
}

if [ -n "$(git -C "$repo" status --porcelain)" ]; then
    echo "release.sh: the checkout has uncommitted or untracked files; release from a clean clone" >&2
    exit 1
fi

echo "== release tools (scripts/release-tools.txt)"
fresh_env release-tools -r "$repo/scripts/release-tools.txt"
tools="$envs/release-tools/bin"

echo "== cibuildwheel --print-build-identifiers"
check identifiers "$tools/python" | tee "$work/identifiers"

echo "== sdist, then the compiled wheel from it, then the pure wheel from it"
rm -rf "$dist"
mkdir -p "$dist"
MYPYC_OPT_LEVEL=3 FASTSER_PURE=0 "$tools/python" -m build --outdir "$work/build" "$repo"
sdist=$(echo "$work"/build/fastser-*.tar.gz)
raw=$(echo "$work"/build/fastser-*-cp*.whl)
cp "$sdist" "$dist/"
FASTSER_PURE=1 "$tools/python" -m build --wheel --outdir "$dist" "$sdist"
pure=$(echo "$dist"/fastser-*-py3-none-any.whl)

echo "== sdist contents"
check sdist "$sdist" | tee "$work/sdist"

echo "== auditwheel"
check manylinux "$tools/auditwheel" "$raw" | tee "$work/auditwheel"
PATH="$tools:$PATH" "$tools/auditwheel" repair --plat "manylinux_2_17_$(uname -m)" \
    -w "$dist" "$raw"
compiled=$(echo "$dist"/fastser-*-cp*manylinux*.whl)
check pure "$pure" | tee "$work/pure"

echo "== runtime requirements of the compiled wheel, installed without extras"
fresh_env release-bare "$compiled"
check requires "$compiled" "$envs/release-bare/bin/python" | tee "$work/requires"

status=0
for kind in compiled pure; do
    if [ "$kind" = compiled ]; then wheel=$compiled; else wheel=$pure; fi
    echo "== the whole suite against the installed $kind wheel"
    fresh_env "release-$kind" "$wheel[test]"
    run_suite "$kind" "$envs/release-$kind/bin/python" "$repo" "$@" | tee "$work/$kind.log" \
        || status=$?
done

echo
echo "== release summary"
version() { "$tools/python" -c "from importlib.metadata import version; print(version('$1'))"; }
echo "cibuildwheel $(version cibuildwheel) build identifiers:"
sed 's/^/  /' "$work/identifiers"
echo "artifacts in dist/:"
for wheel in "$compiled" "$pure"; do echo "  $(check tags "$wheel")"; done
echo "  $(cat "$work/pure")"
echo "  $(cat "$work/sdist")"
echo "auditwheel $(version auditwheel) show: $(cat "$work/auditwheel"); repaired to the tags above"
echo "requirements: $(cat "$work/requires")"
for kind in compiled pure; do
    counts=$(grep -E '^=+ .*(passed|failed|error).* in [0-9.]+s' "$work/$kind.log" | tail -1 || true)
    echo "suite against the $kind wheel: $(echo "$counts" | sed -E 's/^=+ | =+$//g')"
done
[ "$status" -eq 0 ] && echo "release: OK" || echo "release: FAILED (a suite failed)"
exit $status
