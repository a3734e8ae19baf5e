#!/usr/bin/env bash
# Fuzzes the file readers: builds the libFuzzer targets of fuzz/ (clang, ASan + UBSan, into
# build-fuzz/; clang and its runtimes are installed like scripts/setup.sh's packages when
# missing) and runs each for SECONDS, one after another, then prints per reader the executions,
# the corpus size and the findings (crashes, sanitizer reports, hangs over 10 s, inputs that
# need more than 2 GB).
#
#   scripts/fuzz.sh SECONDS [READER...]     readers: instance schedule torch_csv cache_import (default: all)
#
# Each reader's corpus grows in build-fuzz/corpus/<reader>/ across runs; the seeds are read from
# tests/fuzz/corpus/<reader>/ (committed: seeds and the inputs of past findings) and, for the
# instance and schedule readers, from instances/ and tests/data/. A finding is written to
# build-fuzz/findings/<reader>-crash-* (or -timeout-, -oom-, -leak-) and the run of that reader
# stops there. To keep one: fix the reader, copy the file into tests/fuzz/corpus/<reader>/ as
# finding-<what>.<ext>, and add a test of the message to the reader's test file (README.md,
# "Tests"). Replay one file: build-fuzz/fuzz/<reader>_fuzz FILE. Exit status: 0 when nothing
# was found, 1 when something was.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 1 ] || ! [[ "$1" =~ ^[0-9]+$ ]]; then
  echo "usage: scripts/fuzz.sh SECONDS [instance|schedule|torch_csv|cache_import ...]" >&2
  exit 2
fi
seconds=$1
shift
readers=("$@")
[ ${#readers[@]} -gt 0 ] || readers=(instance schedule torch_csv cache_import)
for r in "${readers[@]}"; do
  case "$r" in instance | schedule | torch_csv | cache_import) ;; *) echo "fuzz: unknown reader $r" >&2; exit 2 ;; esac
done

./scripts/setup.sh clang libclang-rt-dev
launcher=()
if command -v ccache >/dev/null 2>&1; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$(dirname "$PWD")}
fi
# -O1 -g with assertions on: the libraries as the fuzzer should see them.
cmake -S . -B build-fuzz -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" -DOPTPIPE_FUZZ=ON -DOPTPIPE_ENABLE_CUDA=OFF \
  -DOPTPIPE_BUILD_TESTS=OFF -DOPTPIPE_BUILD_BENCH=OFF -DOPTPIPE_BUILD_TOOLS=OFF "${launcher[@]}" >/dev/null
targets=()
for r in "${readers[@]}"; do targets+=(--target "${r}_fuzz"); done
cmake --build build-fuzz -j "$(nproc 2>/dev/null || echo 2)" "${targets[@]}"

mkdir -p build-fuzz/findings build-fuzz/logs
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
status=0
summary=()
for r in "${readers[@]}"; do
  corpus=build-fuzz/corpus/$r
  mkdir -p "$corpus"
  seeds=(tests/fuzz/corpus/"$r")
  case "$r" in
    instance) seeds+=(instances tests/data) ;;
    schedule) seeds+=(tests/data) ;;
  esac
  before=$(find build-fuzz/findings -name "$r-*" | wc -l)
  log=build-fuzz/logs/$r.log
  echo "fuzz: $r for ${seconds} s (log: $log)"
  # -rss_limit_mb / -malloc_limit_mb: an input that makes a reader take more than 2 GB is a
  # finding (an allocation bomb); -timeout: one input over 10 s is a hang.
  rc=0
  # -max_len: 16 KB holds a dozen cache entries or an 8 x 24 instance; without it libFuzzer takes
  # the largest seed's length (the 90 KB deep-nesting finding), and every input grows slow.
  "build-fuzz/fuzz/${r}_fuzz" -max_total_time="$seconds" -max_len=16384 -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=2048 \
    -dict=fuzz/optpipe.dict -print_final_stats=1 -artifact_prefix="build-fuzz/findings/$r-" \
    "$corpus" "${seeds[@]}" >"$log" 2>&1 || rc=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  size=$(grep -o 'corp: [0-9]*/[0-9]*[a-zA-Z]*' "$log" | tail -1 | sed 's/corp: //')
  after=$(find build-fuzz/findings -name "$r-*" | wc -l)
  found=$((after - before))
  if [ "$rc" -ne 0 ] || [ "$found" -gt 0 ]; then
    status=1
    grep -m1 -E 'ERROR: |runtime error|terminate called|what\(\)' "$log" || true
    grep -E "^artifact_prefix|Test unit written" "$log" || true
  fi
  summary+=("$(printf '%-13s %12s %9s %22s %9s' "$r" "${runs:-?}" "${speed:-?}" "${size:-?} ($(find "$corpus" -type f | wc -l) new)" "$found")")
done
echo
printf '%-13s %12s %9s %22s %9s\n' reader executions "exec/s" "corpus (units/bytes)" findings
printf '%s\n' "${summary[@]}"
exit "$status"
