#!/usr/bin/env bash
# The Python package's tests: sets up the environment and installs the package
# (scripts/python_env.sh), then runs pytest on python/tests. The tests compare the bindings with
# the optpipe command in build/ (scripts/build.sh builds it; $OPTPIPE_CLI picks another).
# Arguments go to pytest, e.g. `scripts/test_python.sh -k solve`. Exit status 77 (with the reason
# printed) when the environment cannot be made here, e.g. without access to the package index.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${OPTPIPE_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/optpipe/python-venv}
mkdir -p "$(dirname "$venv")"
if command -v flock >/dev/null 2>&1; then  # one checkout at a time installs into and tests from it
  exec 9>"$venv.lock"
  flock 9
  export OPTPIPE_VENV_LOCKED=1
fi
venv=$(./scripts/python_env.sh | tail -n 1) || exit $?
# From the repository root, so that python/optpipe (the sources, without the built module) does
# not shadow the installed package.
OPTPIPE_CACHE=off "$venv/bin/python" -m pytest -p no:cacheprovider -q python/tests "$@"
