#!/usr/bin/env bash
# The PyTorch runtime end to end (issue 19): trains the small GPT of python/examples/train_gpt.py
# on CPU with 4 ranks (gloo, one process each, float64) under an OptPipe schedule that offloads:
# profile 3 warm-up iterations, solve the measured instance with a memory limit of 1.5
# activations per rank (the solver must offload), run 5 steps with the solver's schedule, and
# compare the first step's loss and gradients with a plain step of the whole model.
#
# Prints `offloads N` (the schedule's offloading forwards) and `max gradient difference X`; exits
# 0 only when N > 0 and X <= 1e-9.
#
# Standalone on a fresh clone: makes (or reuses) the project's Python environment with the
# optpipe package and PyTorch from PyPI (scripts/python_env.sh: TORCH_SPEC picks the version,
# TORCH_INDEX_URL another wheel index, e.g. https://download.pytorch.org/whl/cpu for the smaller
# CPU wheel), and builds the optpipe binary with scripts/setup.sh and scripts/build.sh if
# $OPTPIPE_CLI (default build/optpipe) is missing. Extra arguments go to train_gpt.py.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh >&2  # the Debian packages the environment builds with
# The project's Python environment with the optpipe package and PyTorch (scripts/python_env.sh).
venv=$(./scripts/python_env.sh | tail -n 1) || {
  echo "torch_demo: the Python environment could not be made (see above)" >&2
  exit 2
}
if ! "$venv/bin/python" -c "import torch" >/dev/null 2>&1; then
  echo "torch_demo: PyTorch is not installed in $venv (see above)" >&2
  exit 2
fi
"$venv/bin/python" -c "import torch; print('torch_demo: torch', torch.__version__)"

cli=${OPTPIPE_CLI:-build/optpipe}
if [ ! -x "$cli" ]; then
  echo "torch_demo: $cli is missing; building it (scripts/setup.sh, scripts/build.sh optpipe)"
  ./scripts/setup.sh
  ./scripts/build.sh optpipe
  cli=build/optpipe
fi
OPTPIPE_CLI=$(cd "$(dirname "$cli")" && pwd)/$(basename "$cli")
export OPTPIPE_CLI

log=$(mktemp)
trap 'rm -f "$log"' EXIT
set +e
"$venv/bin/python" -m torch.distributed.run --standalone \
  --nproc-per-node 4 python/examples/train_gpt.py --device cpu --dtype float64 --check \
  --memory-limit 1.5act "$@" 2>&1 | tee "$log" | grep -v -e '^W[0-9]' -e '^\*\*\*' -e 'OMP_NUM_THREADS'
status=${PIPESTATUS[0]}
set -e

offloads=$(sed -n 's/^offloads \([0-9][0-9]*\).*/\1/p' "$log" | tail -1)
diff=$(sed -n 's/^max gradient difference \([^ ]*\).*/\1/p' "$log" | tail -1)
if [ "$status" -ne 0 ] || [ -z "$offloads" ] || [ -z "$diff" ]; then
  echo "torch_demo: FAIL: the run exited with status $status (offloads '${offloads}', max gradient difference '${diff}')"
  exit 1
fi
if "$venv/bin/python" -c "import sys; sys.exit(0 if int('$offloads') > 0 and float('$diff') <= 1e-9 else 1)"; then
  echo "torch_demo: PASS: offloads $offloads, max gradient difference $diff (<= 1e-9)"
else
  echo "torch_demo: FAIL: offloads $offloads, max gradient difference $diff (need offloads > 0 and difference <= 1e-9)"
  exit 1
fi
