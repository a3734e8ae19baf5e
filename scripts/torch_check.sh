#!/usr/bin/env bash
# Integration check of the PyTorch export (issue 9), not part of scripts/test.sh: the PyTorch
# wheel is large. Makes a virtual environment in scripts/.venv-torch (git-ignored), installs
# PyTorch into it (the CPU wheel index first, the default index if that one cannot be reached),
# builds the optpipe binary if needed, and runs scripts/torch_check.py: schedules exported with
# `optpipe export --format torch-csv` run one step in torch.distributed.pipelining's
# _PipelineScheduleRuntime (gloo, one process per rank, CPU) and must give the loss and gradients
# of a plain step.
#
#   scripts/torch_check.sh                      # uses build/optpipe (built with scripts/build.sh if missing)
#   OPTPIPE=build-x/optpipe scripts/torch_check.sh
#   TORCH_SPEC='torch==2.7.1' scripts/torch_check.sh   # another PyTorch version (new venv: rm -rf scripts/.venv-torch)
set -euo pipefail
cd "$(dirname "$0")/.."
venv=scripts/.venv-torch
spec=${TORCH_SPEC:-torch}

if [ ! -x "$venv/bin/python" ]; then
  echo "torch_check: creating the virtual environment $venv"
  python3 -m venv "$venv"
fi
if ! "$venv/bin/python" -c "import torch" >/dev/null 2>&1; then
  echo "torch_check: installing $spec from the CPU wheel index (https://download.pytorch.org/whl/cpu)"
  if ! "$venv/bin/pip" install "$spec" --index-url https://download.pytorch.org/whl/cpu; then
    echo "torch_check: the CPU wheel index failed; installing $spec from the default index (a larger wheel, with CUDA libraries)"
    "$venv/bin/pip" install "$spec" numpy
  fi
fi
"$venv/bin/python" -c "import torch; print('torch_check: torch', torch.__version__)"

optpipe=${OPTPIPE:-build/optpipe}
if [ ! -x "$optpipe" ]; then
  echo "torch_check: $optpipe is missing; building it with scripts/build.sh optpipe"
  scripts/build.sh optpipe
  optpipe=build/optpipe
fi
exec "$venv/bin/python" scripts/torch_check.py --optpipe "$optpipe" "$@"
