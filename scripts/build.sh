#!/usr/bin/env bash
# Configures and builds OptPipe (Release) into build/. CUDA parts are compiled when nvcc is on
# PATH or in /usr/local/cuda; without it the build is CPU-only. Arguments name the targets to
# build (default: everything), e.g. `scripts/build.sh optpipe`.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake --build build -j "$jobs" "${targets[@]}"
