#!/usr/bin/env bash
# The checks that need a GPU, in one run (CI has none; README.md, "GPU"): the CUDA plugin's
# tests (the batched bounds bit for bit against the scalar ones, the devices, the CUDA MLP against
# the CPU one), a solve with its node bounds on the GPU against the same solve on the CPU, the
# node-bound throughput benchmark (scalar, TBB and CUDA rows), and the PyTorch runtime's CUDA path
# (python/tests/test_torch_device.py: offloads on the side streams, gradients and peak memory).
#
#   scripts/gpu_check.sh [OUT_DIR]      (default: gpu-check/; needs build/ made with nvcc found)
#
# On a GPU machine without OptPipe's build dependencies, scripts/gpu_bundle.sh packs the binaries
# this runs and their libraries, and with OPTPIPE_BUNDLE_PYTHON the Python package (its header
# says how to run it there).
#
# Every step's output goes to OUT_DIR/NAME.log and a one-line verdict to stdout (a step is stopped
# after $STEP_TIMEOUT seconds, default 150, and counts as failed); the exit status
# is the number of failed steps. A step whose tool is missing (no optpipe Python package, say)
# is reported as skipped with the reason. Python: $PYTHON (default python3) with torch and the
# optpipe package importable.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-gpu-check}
mkdir -p "$out"
py=${PYTHON:-python3}
failed=0

step() {  # step NAME COMMAND...: runs it, logs it, prints the verdict and the time taken
  local name=$1; shift
  local t0=$SECONDS
  timeout "${STEP_TIMEOUT:-150}" "$@" >"$out/$name.log" 2>&1
  local rc=$?
  if [ $rc -eq 0 ]; then
    echo "gpu_check: $name: ok ($((SECONDS - t0)) s)"
  else
    echo "gpu_check: $name: FAILED (exit $rc, $((SECONDS - t0)) s; $out/$name.log):"
    tail -n 15 "$out/$name.log" | sed 's/^/    /'
    failed=$((failed + 1))
  fi
}

if [ ! -x build/optpipe ] || [ ! -f build/liboptpipe_cuda.so ]; then
  echo "gpu_check: build/optpipe and build/liboptpipe_cuda.so are needed (scripts/build.sh with nvcc on the PATH)" >&2
  exit 2
fi
if ! build/optpipe devices >"$out/devices.log" 2>&1 || ! grep -q "GPU 0" "$out/devices.log"; then
  echo "gpu_check: no CUDA device is usable here:" >&2
  cat "$out/devices.log" >&2
  exit 2
fi
sed 's/^/gpu_check: /' "$out/devices.log"

# The C++ tests that skip without a GPU, and their neighbours.
step kernels_tests build/tests/kernels_tests
step mlp_cuda_tests build/tests/runtime_tests --gtest_filter='MlpModel*'
# Each in its own process: a test process that has loaded the CUDA libraries is about 95 MB
# resident, and a child forked from it counts that in its own peak (Plugins.HelpRunsInAFewMegabytes
# runs before the plugin tests that load them).
step plugin_tests build/tests/cli_tests --gtest_filter='Plugins.*'
step cli_gpu_tests build/tests/cli_tests --gtest_filter='Cli.SolveBoundsBackends'
step solve_tests build/tests/solve_tests --gtest_filter='SolvePipeline.GpuBounds*:*Bounds*'

# The same solve with node bounds on the CPU, in TBB batches and on the GPU: the same proven
# optimum (v-4x8 without the stage relaxation and the local search, so that the tree proves it:
# about 1.7k nodes depth-first, 2.2M in batches with 16 threads on an H200, 2026-11-27).
for b in cpu tbb gpu; do
  step "solve_$b" build/optpipe solve instances/v-4x8.json --bounds "$b" --no-stage-relaxation --local-search 0 \
    --time-limit 60 --no-cache -v -o "$out/solve_$b.json"
  grep -E "^status|nodes in" "$out/solve_$b.log" | sed "s/^/gpu_check: solve_$b: /"
done
makespan() { grep -o '"makespan": *[0-9.]*' "$1" | head -n 1 | grep -o '[0-9.]*$'; }
for b in tbb gpu; do  # equal optima may differ in the last digits (another schedule, another sum)
  if ! awk -v a="$(makespan "$out/solve_cpu.json")" -v b="$(makespan "$out/solve_$b.json")" \
      'BEGIN { d = a - b; exit !(a != "" && b != "" && d < 1e-6 && d > -1e-6) }'; then
    echo "gpu_check: solve_$b: its makespan differs from --bounds cpu's (both proven optimal?)"
    failed=$((failed + 1))
  fi
done

# Throughput: node bounds per second against the batch size (bench/README.md).
if [ -x build/bench/bounds_bench ]; then
  step bounds_bench build/bench/bounds_bench --benchmark_min_time=0.3 \
    --benchmark_filter='scalar/batch:(1|16|256|4096)/|tbb|cuda'
  grep -E "^BM_" "$out/bounds_bench.log" | sed 's/^/gpu_check: /'
  for b in cpu tbb gpu; do
    step "solver_table_$b" build/bench/solver_table --time-limit 3 --bounds "$b" instances/offload-slow-pcie-4x8.json \
      instances/gpt-8x24-tight.json instances/gpt-8x32-18g.json
  done
fi

# The PyTorch runtime on the GPU.
if "$py" -c "import torch, optpipe; assert torch.cuda.is_available()" 2>"$out/python.log"; then
  step torch_device env PYTHONUNBUFFERED=1 "$py" -m pytest -p no:cacheprovider -q -s -rs python/tests/test_torch_device.py
  grep -E "^(cpu|cuda):" "$out/torch_device.log" | sed 's/^/gpu_check: /'
else
  echo "gpu_check: torch_device: skipped (torch with CUDA and the optpipe package are needed: $(tail -n 1 "$out/python.log"))"
fi
echo "gpu_check: $failed step(s) failed; logs in $out/"
exit "$failed"
