#!/usr/bin/env bash
# The benchmarks in one command each. Builds fastser compiled and pure, each with the bench
# extra (distributed, dask[array,dataframe], msgspec, numpy, lz4, zstandard, mypy), into two
# fresh virtual environments (REUSE_ENVS=1 keeps existing ones), then runs:
#   bash scripts/bench.sh [ARGS]           benchmarks/suite.py, W1-W6 (--rounds N, --only W1,W4, --json)
#   bash scripts/bench.sh traffic [ARGS]   benchmarks/traffic/bench.py on the traffic corpus
#   bash scripts/bench.sh capture [ARGS]   records a cluster's traffic (benchmarks/traffic/
#                                          capture.py --scale S) and remakes the corpus from it
#   bash scripts/bench.sh cluster [ARGS]   benchmarks/cluster.py: whole workloads, tcp:// vs fastser://
#   bash scripts/bench.sh forms LABEL=REV ... [-- ARGS]
#                                          benchmarks/forms.py: compiled builds of git revisions
#                                          side by side (what a wire special form gains)
# Needs only Python 3.11+ and a C compiler.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
envs="$repo/.envs"
python=${PYTHON:-python3}
mkdir -p "$envs"
what=suite
case "${1:-}" in traffic|capture|cluster|forms) what=$1; shift ;; esac

build() {  # build NAME FASTSER_PURE (one after the other: both build in the same tree)
    if [ "${REUSE_ENVS:-0}" = 1 ] && [ -x "$envs/$1/bin/python" ]; then return; fi
    "$python" -m venv --clear "$envs/$1"
    FASTSER_PURE=$2 "$envs/$1/bin/python" -m pip install --quiet --disable-pip-version-check \
        --no-cache-dir "$repo[bench]"
}

echo "== building compiled and pure fastser with the bench extra" >&2
build bench-compiled 0
compiled="$envs/bench-compiled/bin/python"
pure="$envs/bench-pure/bin/python"
case $what in
    suite)
        build bench-pure 1
        "$python" "$repo/benchmarks/suite.py" --compiled "$compiled" --pure "$pure" "$@" ;;
    traffic)
        build bench-pure 1
        "$python" "$repo/benchmarks/traffic/bench.py" --compiled "$compiled" --pure "$pure" "$@" ;;
    capture)
        records=$(mktemp -d)
        trap 'rm -rf "$records"' EXIT
        "$compiled" -P "$repo/benchmarks/traffic/capture.py" --out "$records" "$@"
        "$python" "$repo/benchmarks/traffic/synthesize.py" "$records" ;;
    cluster)
        "$compiled" -P "$repo/benchmarks/cluster.py" "$@" ;;
    forms)
        # Each revision's compiled build goes into a folder of its own, built with the bench
        # env's mypy and setuptools (no build isolation: the pinned mypy is there already), one at a
        # time.
        "$compiled" -m pip install --quiet --disable-pip-version-check "setuptools>=70"
        builds=()
        while [ $# -gt 0 ] && [ "$1" != -- ]; do
            label=${1%%=*} rev=${1#*=}; shift
            src=$(mktemp -d) dest="$envs/forms/$label"
            git -C "$repo" archive "$rev" | tar -x -C "$src"
            rm -rf "$dest"
            FASTSER_PURE=0 "$compiled" -m pip install --quiet --disable-pip-version-check \
                --no-cache-dir --no-deps --no-build-isolation --target "$dest" "$src"
            rm -rf "$src"
            builds+=(--build "$label=$dest")
        done
        [ "${1:-}" != -- ] || shift
        "$python" "$repo/benchmarks/forms.py" --python "$compiled" "${builds[@]}" "$@" ;;
esac
