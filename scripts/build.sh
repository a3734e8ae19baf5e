#!/usr/bin/env bash
# Configures and builds OptPipe (Release) into build/. The CUDA plugin (build/liboptpipe_cuda.so)
# is compiled when nvcc is on PATH or in /usr/local/cuda; without it the build is CPU-only. The
# MPI plugin (build/liboptpipe_mpi.so) when Open MPI is installed. Arguments name the targets to
# build (default: everything), e.g. `scripts/build.sh optpipe` (which builds the plugins too).
# ccache, when installed, caches the compiles (CCACHE_BASEDIR: the checkout's parent folder, so
# that clones beside each other share them).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi
jobs=$(nproc 2>/dev/null || echo 2)
launcher=()
if command -v ccache >/dev/null 2>&1; then  # recompiles only what changed, across clones too
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$(dirname "$PWD")}
fi
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" >/dev/null
targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake --build build -j "$jobs" "${targets[@]}"
