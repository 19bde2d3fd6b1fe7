# Sourced by scripts/test.sh and scripts/release.sh: the one way the pytest suite is run
# against an installed fastser. It runs from a scratch directory, so the source tree is never
# imported (python -m pytest would put the working directory first on sys.path), and
# FASTSER_EXPECT makes the suite assert which build it sees. pyproject.toml's cibuildwheel
# test-command is the same invocation.
# Both scripts install the dask extra into the compiled build, so that tests/test_dask.py runs
# there instead of skipping unnoticed: FASTSER_EXPECT_DASK=1 makes the compiled run insist on
# it (tests/test_build.py). cibuildwheel installs only the test extra and does not set it.

run_suite() {  # run_suite compiled|pure PYTHON REPO [PYTEST_ARGS...]
    local kind=$1 python=$2 repo=$3 run status=0 dask=0
    shift 3
    [ "$kind" != compiled ] || dask=1
    run=$(mktemp -d)
    (cd "$run" && FASTSER_EXPECT=$kind FASTSER_EXPECT_DASK=$dask "$python" -m pytest \
        -p no:cacheprovider --rootdir "$repo" -c "$repo/pyproject.toml" "$repo/tests" "$@") \
        || status=$?
    rm -rf "$run"
    return $status
}
