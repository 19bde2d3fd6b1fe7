#!/usr/bin/env bash
# The whole suite: builds fastser compiled and pure into two fresh virtual environments,
# runs mypy --strict over fastser/ and tests/ and ruff check over the repository, then the same pytest suite against each
# installed build from outside the source tree (a run from the repository root would
# import the uncompiled sources), then a few minutes of distributed's own tests under tcp://
# and fastser://. FASTSER_EXPECT makes the suite assert which build it sees. Extra arguments
# go to our pytest runs.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
envs="$repo/.envs"
python=${PYTHON:-python3}
mkdir -p "$envs"

build() {  # build NAME EXTRAS [ENV=VALUE]
    local name=$1 extras=$2; shift 2
    echo "== building the $name build ($*) into $envs/$name: pip is silent until it is done (compiled: about a minute of mypyc and C on 2 cores)"
    "$python" -m venv --clear "$envs/$name"
    env "$@" "$envs/$name/bin/python" -m pip install --quiet --disable-pip-version-check \
        --no-cache-dir "$repo[$extras]"
}

echo "== building compiled and pure fastser"
# The dask extra in the compiled build only: tests/test_dask.py runs there, skips in pure.
build compiled test,dask FASTSER_PURE=0
build pure test FASTSER_PURE=1
# tests/test_packaging.py checks the build identifiers with the cibuildwheel release.sh pins
# (it skips without one): the same pin, from scripts/release-tools.txt.
cibuildwheel=$(grep '^cibuildwheel==' "$repo/scripts/release-tools.txt")
for kind in compiled pure; do
    "$envs/$kind/bin/python" -m pip install --quiet --disable-pip-version-check --no-cache-dir \
        "$cibuildwheel"
done

echo "== mypy --strict fastser tests"
(cd "$repo" && "$envs/compiled/bin/mypy" --config-file mypy.ini fastser tests)

# ruff, pinned in the test extra, with pyproject.toml's rules. A finding fails the run at the
# end; the suites still run, so one report shows both.
status=0
echo "== ruff check"
(cd "$repo" && "$envs/compiled/bin/ruff" check) || status=$?

source "$repo/scripts/suite.sh"
for kind in compiled pure; do
    echo "== pytest against the $kind build"
    run_suite "$kind" "$envs/$kind/bin/python" "$repo" "$@" || status=$?
done

# distributed's own tests, a few minutes of them, under tcp:// and fastser:// (the whole
# selection: bash scripts/distributed_suite.sh). Their folders come from FASTSER_PEER_TESTS,
# a clone of dask/distributed at its pinned tag (CONTRIBUTING.md).
peer=${FASTSER_PEER_TESTS:-$repo/../shared/peer/distributed-2026.7.1}
if [ -d "$peer/distributed/tests" ]; then
    echo "== distributed's own tests under tcp:// and fastser:// (distributed_suite.sh --quick)"
    FASTSER_PEER_TESTS=$peer bash "$repo/scripts/distributed_suite.sh" --quick || status=$?
elif [ "${CI:-}" = true ]; then
    echo "test.sh: CI, but no peer tests at $peer" >&2
    status=1
else
    echo "== distributed's own tests skipped: none at $peer (set FASTSER_PEER_TESTS)"
fi
echo "== the documentation site: mkdocs build --strict (scripts/docs.sh)"
site=$(mktemp -d)
bash "$repo/scripts/docs.sh" --quiet -d "$site" || status=$?
rm -rf "$site"
exit $status
