#!/usr/bin/env bash
# The solver benchmark (issue 5): makes a virtual environment with the Python solvers (OR-Tools
# CP-SAT, HiGHS, SCIP) from the package index on first use, builds optpipe if needed, and runs
# run.py with the given arguments (see --help). CBC comes from Debian (scripts/setup.sh).
#   bench/solvers/run.sh --time-limit 60            # the default suite
#   bench/solvers/run.sh --time-limit 10 tiny-2x3 uniform-4x8 --solvers optpipe,cpsat
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
venv="$here/.venv"
if [ ! -x "$venv/bin/python" ]; then
  echo "solvers: making $venv (ortools, highspy, pyscipopt, matplotlib)" >&2
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --upgrade pip
  "$venv/bin/pip" install -q -r "$here/requirements.txt"
fi
if [ ! -x "$root/build/optpipe" ]; then
  "$root/scripts/setup.sh"
  "$root/scripts/build.sh" optpipe
fi
exec "$venv/bin/python" "$here/run.py" "$@"
