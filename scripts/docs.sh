#!/usr/bin/env bash
# The documentation site: installs the docs extra into .envs/docs (again when pyproject.toml changes) and builds the site
# with `mkdocs build --strict` (every link and cross-reference checked). Arguments go to
# mkdocs: `bash scripts/docs.sh -d /tmp/site`, or `bash scripts/docs.sh serve` to preview.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
env="$repo/.envs/docs"
python=${PYTHON:-python3}
# (Re)made when missing or older than pyproject.toml, where the extra is listed.
if [ ! -f "$env/installed" ] || [ "$repo/pyproject.toml" -nt "$env/installed" ]; then
    "$python" -m venv --clear "$env"
    # Only the extra's packages: the reference is read from the source, never imported.
    extras=$(cd "$repo" && "$python" -c 'import tomllib; print(" ".join(tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]["docs"]))')
    # shellcheck disable=SC2086  # one word per requirement
    "$env/bin/python" -m pip install --quiet --disable-pip-version-check $extras
    touch "$env/installed"
fi
cd "$repo"
export NO_MKDOCS_2_WARNING=1
if [ "${1:-}" = serve ]; then
    shift
    exec "$env/bin/mkdocs" serve "$@"
fi
exec "$env/bin/mkdocs" build --strict "$@"
