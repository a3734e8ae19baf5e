#!/usr/bin/env bash
# One command for the main job on a fresh machine: installs what is missing, builds, then finds
# the best heuristic schedule for a shipped instance (8 H100-class GPUs, 24 microbatches, tight
# memory), prints its makespan, bubble and peak memory per device, then solves it for 15 s
# (local search on the warm starts, branch-and-bound with a proven bound) and writes both
# schedules and SVG Gantt charts to out/. Pass another instance file to use that one instead.
set -euo pipefail
cd "$(dirname "$0")/.."
instance="${1:-instances/gpt-8x24-tight.json}"
./scripts/setup.sh
./scripts/build.sh optpipe
mkdir -p out
name=$(basename "$instance" .json)
./build/optpipe schedule --heuristic best "$instance" -o "out/$name.schedule.json" --svg "out/$name.svg"
echo
./build/optpipe solve "$instance" --time-limit 15 -o "out/$name.solved.json" --svg "out/$name.solved.svg"
