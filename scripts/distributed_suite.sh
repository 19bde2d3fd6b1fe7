#!/usr/bin/env bash
# distributed's own tests (tag 2026.7.1, from FASTSER_PEER_TESTS) run twice, under tcp:// and
# under fastser://, in one fresh virtual environment holding compiled fastser and
# distributed==2026.7.1; prints both pass/fail counts and every test that passes on tcp://
# only (scripts/distributed_peer/report.py). Exits 1 if such a test is not explained in
# scripts/distributed_peer/tcp_only.txt.
#
#   bash scripts/distributed_suite.sh            the whole selection below (an hour or more)
#   bash scripts/distributed_suite.sh --quick    the few-minute selection scripts/test.sh runs
#
# FASTSER_PEER_TESTS is a clone of dask/distributed at the tag that
# scripts/distributed_peer/requirements.txt pins (its wheels ship no tests: CONTRIBUTING.md).
# Their test folders are copied into the venv's distributed package, as distributed's
# utils_test expects, and run with --pyargs from a scratch directory holding their
# conftest.py. DASK_DISTRIBUTED__COMM__DEFAULT_SCHEME moves the clusters gen_cluster starts;
# scripts/distributed_peer/count_schemes.py counts the schemes asked for and fails the
# fastser run if fastser:// was never used. test_fastser_comms.py adds fastser:// and
# fastser-tls:// to the schemes their comm tests check. Extra arguments go to pytest;
# PEER_TIMEOUT (default 120) is pytest-timeout's limit per test.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
python=${PYTHON:-python3}
peer=${FASTSER_PEER_TESTS:-$repo/../shared/peer/distributed-2026.7.1}
env="$repo/.envs/distributed-suite"
here="$repo/scripts/distributed_peer"
quick=0
if [ "${1:-}" = --quick ]; then quick=1; shift; fi

if [ ! -d "$peer/distributed/tests" ]; then
    echo "distributed_suite.sh: no peer tests at $peer (set FASTSER_PEER_TESTS)" >&2
    exit 1
fi

echo "== fastser (compiled) and distributed 2026.7.1 into $env"
"$python" -m venv --clear "$env"
"$env/bin/python" -m pip install --quiet --disable-pip-version-check --no-cache-dir \
    "$repo[dask,test]" -r "$here/requirements.txt"
site=$("$env/bin/python" -P -c 'import distributed, os; print(os.path.dirname(distributed.__file__))')
cp -r "$peer/distributed/tests" "$site/"
cp -r "$peer/distributed/comm/tests" "$site/comm/"
chmod -R u+w "$site/tests" "$site/comm/tests"

if [ $quick = 1 ]; then
    # A few minutes a scheme: the codec's paths (scatter, gather, (de)serializers, pickle
    # refusal, error payloads), batched streams, and the comm tests.
    selection=(--pyargs distributed.tests.test_batched distributed.comm.tests.test_comms
               distributed.tests.test_client test_fastser_comms.py
               -k "test_batched or test_comms or scatter or gather or serializ or pickle or error")
else
    # test_core and test_publish: with test_client and test_batched, every module of
    # their suite that reads or writes with serializers= or deserializers=.
    selection=(--pyargs distributed.tests.test_client distributed.tests.test_worker
               distributed.tests.test_scheduler distributed.tests.test_batched
               distributed.tests.test_nanny distributed.tests.test_steal
               distributed.tests.test_core distributed.tests.test_publish
               distributed.comm.tests.test_comms test_fastser_comms.py)
fi

run=$(mktemp -d)
trap 'rm -rf "$run"' EXIT
results="$env/outcomes"  # each test's outcome per scheme, kept for a look afterwards
mkdir -p "$results"
# Their conftest.py (fixtures, resource-leak checks) and ours beside it, in the directory
# pytest runs from: a test file elsewhere would move pytest's rootdir away from conftest.py.
cp "$peer/conftest.py" "$here/test_fastser_comms.py" "$run/"
for scheme in tcp fastser; do
    echo "== distributed's tests under $scheme://"
    (cd "$run" && DASK_DISTRIBUTED__COMM__DEFAULT_SCHEME=$scheme PYTHONPATH="$here" \
        PEER_OUTCOMES="$results/$scheme.json" \
        "$env/bin/python" -m pytest -p count_schemes -p no:cacheprovider -q -rfE \
        -W ignore::pytest.PytestUnknownMarkWarning --timeout "${PEER_TIMEOUT:-120}" \
        "${selection[@]}" "$@") || true
done
echo "== tcp:// against fastser://"
"$env/bin/python" "$here/report.py" "$results/tcp.json" "$results/fastser.json"
