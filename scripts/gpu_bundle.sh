#!/usr/bin/env bash
# Packs what scripts/gpu_check.sh runs into one folder, for a GPU machine that has the NVIDIA
# driver and the CUDA runtime but not OptPipe's build dependencies (TBB, spdlog, fmt, SQLite,
# Google Benchmark): the binaries of build/ that the check runs, and the shared libraries they
# need beyond glibc, libstdc++ and CUDA's own.
#
#   scripts/gpu_bundle.sh [DIR]      (default: .gpu/; needs build/ made with nvcc found)
#
# OPTPIPE_BUILD_DIR names another build folder (default: build/ in the checkout); the bundle
# keeps its layout under DIR/build/ all the same. Nothing is left behind when it fails.
#
# On the GPU machine, in a checkout of the same commit (the test binaries name the source tree
# by its absolute path here, so the checkout must be reachable at that path, e.g. by a link):
#
#   cp -a DIR/build/. build/
#   LD_LIBRARY_PATH=$PWD/DIR/lib:/usr/local/cuda/lib64:<folder of libnccl.so.2> scripts/gpu_check.sh
#
# The PyTorch step of gpu_check needs the optpipe Python package built for that machine's Python
# and is skipped without it: OPTPIPE_BUNDLE_PYTHON=python3.X (the GPU machine's minor version;
# it needs pip and the package index, and takes a few minutes) adds it, built from python/, under
# DIR/python, its libraries in DIR/lib; there, add PYTHONPATH=$PWD/DIR/python to the command
# above. The bundle is about 25 MB (30 with the package).
set -euo pipefail
dir=${1:-.gpu}
case "$dir" in /*) ;; *) dir="$PWD/$dir" ;; esac
cd "$(dirname "$0")/.."
build=${OPTPIPE_BUILD_DIR:-build}
for f in optpipe liboptpipe_cuda.so; do
  if [ ! -f "$build/$f" ]; then
    echo "gpu_bundle: $build/$f is missing (scripts/build.sh with nvcc on the PATH makes it)" >&2
    exit 2
  fi
done
binaries=(optpipe liboptpipe_cuda.so liboptpipe_mpi.so
  tests/kernels_tests tests/runtime_tests tests/cli_tests tests/solve_tests
  tests/liboptpipe_test_foreign_plugin.so tests/liboptpipe_test_broken_plugin.so
  bench/bounds_bench bench/solver_table)
bundle_python=${OPTPIPE_BUNDLE_PYTHON:-}
if [ -n "$bundle_python" ] && ! "$bundle_python" -m pip --version >/dev/null 2>&1; then
  echo "gpu_bundle: OPTPIPE_BUNDLE_PYTHON=$bundle_python is not a Python with pip" >&2
  exit 2
fi
mkdir -p "$(dirname "$dir")"
tmp=$(mktemp -d "${dir%/}.tmp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/lib"
for f in "${binaries[@]}"; do
  [ -f "$build/$f" ] || continue  # the MPI plugin and the benchmarks are optional builds
  mkdir -p "$tmp/build/$(dirname "$f")"
  cp "$build/$f" "$tmp/build/$f"
done
if [ -n "$bundle_python" ]; then
  echo "gpu_bundle: building the optpipe package for $("$bundle_python" --version 2>&1) (minutes)" >&2
  if ! CMAKE_ARGS="${CMAKE_ARGS:-} $(command -v ccache >/dev/null && echo -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)" \
      "$bundle_python" -m pip wheel ./python --no-deps -w "$tmp/wheel" >"$tmp/wheel.log" 2>&1; then
    tail -n 20 "$tmp/wheel.log" >&2
    echo "gpu_bundle: building the Python package failed (above)" >&2
    exit 1
  fi
  "$bundle_python" -m zipfile -e "$tmp"/wheel/optpipe-*.whl "$tmp/python"
  rm -rf "$tmp/wheel" "$tmp/wheel.log"
fi
# The libraries the binaries need that a CUDA image does not have: every one ldd finds outside
# glibc, the C++ runtime, CUDA, NCCL and MPI (the MPI plugin is loaded only by commands that ask).
while read -r lib; do
  cp -L "$lib" "$tmp/lib/"
done < <({ for f in "${binaries[@]}"; do [ -f "$build/$f" ] && ldd "$build/$f"; done
           if [ -d "$tmp/python" ]; then find "$tmp/python" -name '*.so' -exec ldd {} \; ; fi; } | awk '$3 ~ /^\// {print $3}' | sort -u |
  grep -Ev '/(libc|libm|libdl|librt|libpthread|libgcc_s|libstdc\+\+|ld-linux[^/]*)\.so|/libcu|/libnccl|/libmpi|/libopen-|/libhwloc|/libevent|/libpmix|/libz\.|/libudev|/libfabric|/libucp|/libucs|/libucm|/libuct|/libibverbs|/librdma|/libnl-|/libpsm|/libefa|/libltdl|/libcap')
rm -rf "$dir"
mv "$tmp" "$dir"
trap - EXIT
echo "gpu_bundle: $(du -sh "$dir" | cut -f1) in $dir: $(find "$dir/build" -type f | wc -l) binaries, libraries: $(ls "$dir/lib" | tr '\n' ' ')$([ -d "$dir/python" ] && echo "; the Python package in $dir/python")"
