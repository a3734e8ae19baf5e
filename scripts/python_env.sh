#!/usr/bin/env bash
# Sets up the project's Python virtual environment and installs the package optpipe into it from
# python/ (README.md, "Python"); the last line on stdout is the environment's folder.
#
#   the environment   $OPTPIPE_VENV, else ${XDG_CACHE_HOME:-~/.cache}/optpipe/python-venv: outside
#                     the checkout, so that clones share it and what else it gets (torch) stays
#   its Python        $PYTHON, else python3 (3.9 or later, with venv and its headers)
#   build tools       python/requirements-dev.txt (scikit-build-core, nanobind, pytest), pinned
#   PyTorch           from PyPI (or $TORCH_INDEX_URL), for optpipe.torch; OPTPIPE_NO_TORCH=1: none
#   the package       pip install --no-build-isolation ./python, the C++ build kept in
#                     build-python/ (git-ignored) so that a reinstall recompiles only what
#                     changed; ccache when it is installed
#
# Exit status 77 means the environment cannot be made here (no usable Python, or pip cannot reach
# the package index for the build tools); the reason is printed. Any other failure, such as the
# C++ build of the module, is an error. While it runs it holds a lock beside the environment
# ($OPTPIPE_VENV.lock), so that two checkouts do not install into it at once; a caller that
# holds the lock already sets OPTPIPE_VENV_LOCKED=1.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
venv=${OPTPIPE_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/optpipe/python-venv}
python=${PYTHON:-python3}

skip() {
  echo "python: $*" >&2
  exit 77
}

if ! command -v "$python" >/dev/null 2>&1; then
  skip "no $python on PATH (set PYTHON to a Python 3.9+ interpreter)"
fi
if ! "$python" -c 'import sys, venv; sys.exit(sys.version_info < (3, 9))' 2>/dev/null; then
  skip "$python is not Python 3.9+ with the venv module ($("$python" --version 2>&1))"
fi

mkdir -p "$(dirname "$venv")"
if [ "${OPTPIPE_VENV_LOCKED:-}" != 1 ] && command -v flock >/dev/null 2>&1; then
  exec 9>"$venv.lock"
  flock 9
fi

if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import pip' >/dev/null 2>&1; then
  echo "python: making the virtual environment $venv ($("$python" --version 2>&1))" >&2
  rm -rf "$venv"
  "$python" -m venv "$venv"
fi

log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! "$venv/bin/python" -m pip install --disable-pip-version-check -q -r python/requirements-dev.txt >"$log" 2>&1; then
  tail -n 5 "$log" >&2
  skip "pip could not install the build tools (python/requirements-dev.txt) into $venv; is the package index reachable?"
fi

# PyTorch, for optpipe.torch and its tests (a large download, once per environment): from PyPI,
# or $TORCH_INDEX_URL (e.g. https://download.pytorch.org/whl/cpu); $TORCH_SPEC picks the version.
# OPTPIPE_NO_TORCH=1 leaves it out. When it cannot be installed the torch tests skip and say so.
if [ "${OPTPIPE_NO_TORCH:-}" != 1 ] && ! "$venv/bin/python" -c 'import torch' >/dev/null 2>&1; then
  echo "python: installing ${TORCH_SPEC:-torch} into $venv for optpipe.torch (a large download, once)" >&2
  if ! "$venv/bin/python" -m pip install --disable-pip-version-check -q "${TORCH_SPEC:-torch}" numpy \
       ${TORCH_INDEX_URL:+--index-url "$TORCH_INDEX_URL"} >"$log" 2>&1; then
    tail -n 5 "$log" >&2
    echo "python: PyTorch could not be installed into $venv; the optpipe.torch tests will skip" >&2
  fi
fi

args=(--disable-pip-version-check --no-build-isolation --no-deps -q
      -C "build-dir=$root/build-python")
if command -v ccache >/dev/null 2>&1; then
  args+=(-C cmake.define.CMAKE_CXX_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$root}
fi
echo "python: building and installing optpipe from python/ (C++ build in build-python/; minutes the first time)" >&2
"$venv/bin/python" -m pip install "${args[@]}" ./python >&2
echo "$venv"
