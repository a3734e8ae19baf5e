#!/usr/bin/env bash
# One command for the main job on a fresh machine: installs what is missing, builds, then finds
# the best heuristic schedule for a shipped instance (8 H100-class GPUs, 24 microbatches, tight
# memory), prints its makespan, bubble and peak memory per device, and writes the schedule and
# an SVG Gantt chart to out/. Pass another instance file to schedule that one instead.
set -euo pipefail
cd "$(dirname "$0")/.."
instance="${1:-instances/gpt-8x24-tight.json}"
./scripts/setup.sh
./scripts/build.sh optpipe
mkdir -p out
name=$(basename "$instance" .json)
./build/optpipe schedule --heuristic best "$instance" -o "out/$name.schedule.json" --svg "out/$name.svg"
