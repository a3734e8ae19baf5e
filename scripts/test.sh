#!/usr/bin/env bash
# One command for the whole test suite on a fresh machine: installs what is missing, builds,
# runs every test (GoogleTest via CTest). GPU-only tests skip with a printed reason.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/build.sh
jobs=$(nproc 2>/dev/null || echo 2)
ctest --test-dir build --output-on-failure -j "$jobs"
