#!/usr/bin/env bash
# Every benchmark in one command: bash scripts/bench.sh NAME [ARGS] (--help shows a script's
# options). Builds fastser compiled (and, for suite and traffic, pure), each with the bench
# extra (distributed, dask[array,dataframe], msgspec, numpy, lz4, zstandard, mypy), into
# .envs/bench-compiled and .envs/bench-pure (REUSE_ENVS=1 keeps existing ones), then runs:
#   suite [ARGS]        (the default NAME) benchmarks/suite.py: six workloads, both builds,
#                       against the anchors, targets checked (--rounds N, --only
#                       control-message,arrays, --fastser-only, --json)
#   traffic [ARGS]      benchmarks/traffic/bench.py on the traffic corpus, both builds
#   capture [ARGS]      records a cluster's traffic (benchmarks/traffic/capture.py --scale S)
#                       and remakes the corpus from it
#   cluster [ARGS]      benchmarks/cluster.py: whole workloads, tcp:// vs fastser://
#   forms LABEL=REV ... [-- ARGS]
#                       benchmarks/forms.py: compiled builds of git revisions side by side
#                       (what a wire special form gains)
#   floors [ARGS]       benchmarks/floors.py: the floors under the targets, in one process
#   instructions [ARGS] benchmarks/instructions.py: callgrind counts (needs valgrind)
#   comm-receive [ARGS] benchmarks/comm_receive.py: how the fastser:// comm receives arrays
#   hostile             benchmarks/hostile.py: what each known hostile input costs the
#                       compiled build's decoder (each case in a fresh interpreter)
#   byte-shuffle [ARGS] benchmarks/byte_shuffle.py: lz4 and zstd against blosc2's byte
#                       shuffle (installs blosc2, not a fastser dependency, into the env)
#   lab [ARGS]          benchmarks/lab/run.py: the network lab (as root: Linux namespaces)
#   plots [ARGS]        benchmarks/plots.py: the docs' SVG plots (default: --published
#                       docs/data/published.json --out docs/img); measures nothing, so it
#                       builds only .envs/bench-plots, fastser pure with the plots extra
# Needs only Python 3.11+ and a C compiler.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
envs="$repo/.envs"
python=${PYTHON:-python3}
mkdir -p "$envs"
what=suite
case "${1:-}" in
    suite|traffic|capture|cluster|forms|floors|instructions|comm-receive|hostile|byte-shuffle|lab|plots)
        what=$1; shift ;;
esac

build() {  # build NAME FASTSER_PURE [EXTRA] (one after the other: both build in the same tree)
    if [ "${REUSE_ENVS:-0}" = 1 ] && [ -x "$envs/$1/bin/python" ]; then return; fi
    "$python" -m venv --clear "$envs/$1"
    FASTSER_PURE=$2 "$envs/$1/bin/python" -m pip install --quiet --disable-pip-version-check \
        --no-cache-dir "$repo[${3:-bench}]"
}

if [ "$what" = plots ]; then
    build bench-plots 1 plots
    [ $# -gt 0 ] || set -- --published "$repo/docs/data/published.json" --out "$repo/docs/img"
    exec "$envs/bench-plots/bin/python" -P "$repo/benchmarks/plots.py" "$@"
fi

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
        case " $* " in  # --help: capture.py's alone, no corpus remade
            *" -h "*|*" --help "*) exec "$compiled" -P "$repo/benchmarks/traffic/capture.py" "$@" ;;
        esac
        records=$(mktemp -d)
        trap 'rm -rf "$records"' EXIT
        "$compiled" -P "$repo/benchmarks/traffic/capture.py" --out "$records" "$@"
        "$python" "$repo/benchmarks/traffic/synthesize.py" "$records" ;;
    cluster)
        "$compiled" -P "$repo/benchmarks/cluster.py" "$@" ;;
    floors)
        "$compiled" -P "$repo/benchmarks/floors.py" "$@" ;;
    instructions)
        "$python" "$repo/benchmarks/instructions.py" --python "$compiled" "$@" ;;
    comm-receive)
        "$compiled" -P "$repo/benchmarks/comm_receive.py" "$@" ;;
    hostile)
        "$python" "$repo/benchmarks/hostile.py" "$compiled" ;;
    byte-shuffle)
        "$compiled" -m pip install --quiet --disable-pip-version-check blosc2
        "$compiled" -P "$repo/benchmarks/byte_shuffle.py" "$@" ;;
    lab)
        "$compiled" -P "$repo/benchmarks/lab/run.py" "$@" ;;
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
