#!/usr/bin/env bash
# One command for the whole test suite on a fresh machine: installs what is missing, builds,
# runs every test (GoogleTest via CTest), then the Python package's tests (pytest, in the
# virtual environment scripts/python_env.sh makes; skipped, saying why, when the package index
# cannot be reached). GPU-only tests skip with a printed reason.
#
# Sanitizer modes (README.md, "Tests"), each in a build folder of its own, with the system's
# C++ compiler (gcc: its sanitizer runtimes come with g++; CXX=clang++ for clang) and CUDA off:
#   scripts/test.sh --sanitize[=address,undefined]   every C++ test under ASan + UBSan (build-asan/)
#   scripts/test.sh --sanitize=thread                the threaded areas under TSan (build-tsan/)
# They leave out the Python tests (the interpreter is not instrumented) and the wall-time tests
# (WallTimeTests.*: the sanitizers slow every thread down, so their timings mean nothing), saying
# so; the suppressions of third-party false positives are in tests/sanitizers/. Each mode prints
# how long its build and its tests took.
set -euo pipefail
cd "$(dirname "$0")/.."
sanitize=""
for arg in "$@"; do
  case "$arg" in
    --sanitize) sanitize=address,undefined ;;
    --sanitize=*) sanitize=${arg#--sanitize=} ;;
    *) echo "usage: scripts/test.sh [--sanitize[=address,undefined|thread]]" >&2; exit 2 ;;
  esac
done
./scripts/setup.sh
jobs=$(nproc 2>/dev/null || echo 2)
if [ -z "$sanitize" ]; then
  ./scripts/build.sh
  ctest --test-dir build --output-on-failure -j "$jobs"
  status=0
  ./scripts/test_python.sh || status=$?
  if [ "$status" -eq 77 ]; then
    echo "test: the Python tests were skipped (the reason is above)"
  elif [ "$status" -ne 0 ]; then
    exit "$status"
  fi
  exit 0
fi

case "$sanitize" in
  address,undefined | undefined,address | address | undefined)
    dir=build-asan
    # The threaded areas run under TSan below; every area runs here.
    labels="" ;;
  thread)
    dir=build-tsan
    # The solver's workers and batch evaluation (search, kernels, solve), the heuristics run in
    # parallel, and the executor's threads (runtime).
    labels="search|kernels|solve|heuristics|runtime" ;;
  *) echo "test: --sanitize=$sanitize: give address,undefined or thread" >&2; exit 2 ;;
esac
supp=$PWD/tests/sanitizers
export ASAN_OPTIONS="detect_leaks=1:check_initialization_order=1:strict_init_order=1"
export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:suppressions=$supp/ubsan.supp"
# Processes that mpirun starts (the MPI plugin's ranks) unwind allocation stacks in full, so that
# Open MPI's own leaks are recognised by the suppressions (its components are unloaded before
# LeakSanitizer runs); every other process keeps the fast unwinder.
export OMPI_MCA_mca_base_env_list="ASAN_OPTIONS=$ASAN_OPTIONS:fast_unwind_on_malloc=0"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$supp/tsan.supp:print_suppressions=0"

launcher=()
if command -v ccache >/dev/null 2>&1; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$(dirname "$PWD")}
fi
start=$SECONDS
# -O1 -g, assertions on: the usual sanitizer build; no benchmarks, no Python module, no CUDA.
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" \
  -DOPTPIPE_SANITIZE="$sanitize" -DOPTPIPE_ENABLE_CUDA=OFF -DOPTPIPE_BUILD_BENCH=OFF "${launcher[@]}" >/dev/null
targets=()
if [ -n "$labels" ]; then
  for area in ${labels//|/ }; do targets+=(--target "${area}_tests"); done
fi
cmake --build "$dir" -j "$jobs" "${targets[@]}"
built=$((SECONDS - start))

echo "test: $sanitize: leaving out WallTimeTests.* (wall-time measurements: the sanitizers slow every thread down) and the Python tests (the interpreter is not instrumented)"
start=$SECONDS
status=0
ctest --test-dir "$dir" --output-on-failure -j "$jobs" -E '^WallTimeTests\.' ${labels:+-L "$labels"} || status=$?
tested=$((SECONDS - start))
echo "test: $sanitize: build ${built} s, tests ${tested} s ($dir/)"
exit "$status"
