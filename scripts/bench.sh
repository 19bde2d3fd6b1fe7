#!/usr/bin/env bash
# The benchmark suite of issue 4 in one command: builds fastser compiled and pure, each with
# the bench extra (distributed, msgspec, numpy, lz4, zstandard, mypy), into two fresh virtual
# environments, then runs benchmarks/suite.py with both. Extra arguments go to suite.py
# (--rounds N, --only W1,W4, --json, --gc). Needs only Python 3.11+ and a C compiler.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
envs="$repo/.envs"
python=${PYTHON:-python3}
mkdir -p "$envs"

build() {  # build NAME FASTSER_PURE (one after the other: both build in the same tree)
    "$python" -m venv --clear "$envs/$1"
    FASTSER_PURE=$2 "$envs/$1/bin/python" -m pip install --quiet --disable-pip-version-check \
        --no-cache-dir "$repo[bench]"
}

echo "== building compiled and pure fastser with the bench extra" >&2
build bench-compiled 0
build bench-pure 1
"$python" "$repo/benchmarks/suite.py" --compiled "$envs/bench-compiled/bin/python" \
    --pure "$envs/bench-pure/bin/python" "$@"
