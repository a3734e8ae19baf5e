#!/usr/bin/env bash
# One command for the whole test suite on a fresh machine: installs what is missing, builds,
# runs every test (GoogleTest via CTest), then the Python package's tests (pytest, in the
# virtual environment scripts/python_env.sh makes; skipped, saying why, when the package index
# cannot be reached). GPU-only tests skip with a printed reason.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/build.sh
jobs=$(nproc 2>/dev/null || echo 2)
ctest --test-dir build --output-on-failure -j "$jobs"
status=0
./scripts/test_python.sh || status=$?
if [ "$status" -eq 77 ]; then
  echo "test: the Python tests were skipped (the reason is above)"
elif [ "$status" -ne 0 ]; then
  exit "$status"
fi
