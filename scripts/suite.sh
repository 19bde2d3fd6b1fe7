# Sourced by scripts/test.sh and scripts/release.sh: the one way the pytest suite is run
# against an installed fastser. It runs from a scratch directory, so the source tree is never
# imported (python -m pytest would put the working directory first on sys.path), and
# FASTSER_EXPECT makes the suite assert which build it sees. pyproject.toml's cibuildwheel
# test-command is the same invocation.

run_suite() {  # run_suite compiled|pure PYTHON REPO [PYTEST_ARGS...]
    local kind=$1 python=$2 repo=$3 run status=0
    shift 3
    run=$(mktemp -d)
    (cd "$run" && FASTSER_EXPECT=$kind "$python" -m pytest \
        -p no:cacheprovider --rootdir "$repo" -c "$repo/pyproject.toml" "$repo/tests" "$@") \
        || status=$?
    rm -rf "$run"
    return $status
}
