#!/usr/bin/env bash
# Regenerates instances/generated/ with `optpipe generate` (the cost model of
# instances/generator/, documented in instances/README.md). Deterministic: running it again
# gives byte-identical files; tests/generator_test.cc checks that the shipped files equal what
# this script writes now.
#
#   instances/generate.sh [OUTDIR]      (default: instances/generated beside this script)
#
# The optpipe binary: $OPTPIPE, else the first of build/optpipe and build-gen/optpipe that has
# the generate command, else optpipe on the PATH.
# Memory limits: "gpu" = the H100's 81559 MiB; "Nact" = the static memory + N of the largest
# activations of the device that needs most (see instances/README.md).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="${1:-$here/generated}"
if [[ -z "${OPTPIPE:-}" ]]; then
  for candidate in "$here/../build/optpipe" "$here/../build-gen/optpipe"; do
    if [[ -x "$candidate" ]] && "$candidate" generate --list-presets > /dev/null 2>&1; then OPTPIPE="$candidate"; break; fi
  done
  OPTPIPE="${OPTPIPE:-optpipe}"
fi
mkdir -p "$out"
rm -f "$out"/*.json

gen() {  # gen NAME ARGS...
  local name="$1"
  shift
  "$OPTPIPE" generate "$@" --name "$name" -o "$out/$name.json" -q
}

# --- the OptPipe paper's setting: GPT-3-like models up to 14.6B on 8 and 16 H100s -------------
# Zero Bubble's model shapes and microbatch counts; memory from what the GPU has (every
# schedule fits) through 3 activations (1F1B, ZB-H1/H2 and GPipe run out of memory) to 1.5
# (only a memory-capped order or offloading runs).
for mem in gpu 3act 1.5act; do
  gen "paper-gpt3-1.5b-8x24-$mem" --model gpt3-1.5b --devices 8 --microbatches 24 --memory-limit "$mem"
  gen "paper-gpt3-6.2b-8x24-$mem" --model gpt3-6.2b --devices 8 --microbatches 24 --memory-limit "$mem"
done
for mem in gpu 8act 1.5act; do
  gen "paper-gpt3-14.6b-16x48-$mem" --model gpt3-14.6b --devices 16 --microbatches 48 --memory-limit "$mem"
done
# Two chunks per GPU (V placement: ZB-V, V-Min, V-Half, V-ZB) and offload at half granularity.
for mem in gpu 2act; do
  gen "paper-gpt3-6.2b-v-8x24-$mem" --model gpt3-6.2b --devices 8 --placement v --microbatches 24 --memory-limit "$mem" \
    --offload-levels 0,0.5,1
done
# Loop placement (interleaved 1F1B) and an uneven explicit split (Llama-2 13B: 40 layers on 16 GPUs).
gen "paper-gpt3-2.7b-loop-8x32-gpu" --model gpt3-2.7b --devices 8 --placement loop --microbatches 32
gen "paper-llama2-13b-16x64-gpu" --model llama2-13b --devices 16 --microbatches 64 \
  --split 2,3,3,3,3,3,3,3,3,2,2,2,2,2,2,2

# --- scaling: devices x microbatches, Llama-2 7B (32 layers), what the GPU has -----------------
for dm in 4x8 4x16 8x16 8x32 8x64 16x32 16x64 16x128 32x64 32x128; do
  gen "scale-llama2-7b-$dm" --model llama2-7b --devices "${dm%x*}" --microbatches "${dm#*x}"
done
for dm in 8x32 16x64; do
  gen "scale-llama2-7b-v-$dm" --model llama2-7b --devices "${dm%x*}" --placement v --microbatches "${dm#*x}"
done
# The same scaling with tight memory (static + 2 activations): memory decides the order.
for dm in 8x32 16x64 32x128; do
  gen "scale-llama2-7b-$dm-2act" --model llama2-7b --devices "${dm%x*}" --microbatches "${dm#*x}" --memory-limit 2act
done

# --- the solver's benchmark at scale (issue 21; bench/README.md, "The solver at scale") -------
# 16 GPUs x 64 microbatches and 32 x 128, GPT-3-like and Llama-like models, memory from what the
# GPU has to the tightest limit that offloading still meets (gpt3-14.6b at 1.5act: only full
# offload in waves fits; at 2act PipeOffload and AdaOffload fit too).
for mem in gpu 8act 4act 2act 1.5act; do
  gen "bench-gpt3-14.6b-16x64-$mem" --model gpt3-14.6b --devices 16 --microbatches 64 --memory-limit "$mem"
done
for mem in gpu 4act; do
  gen "bench-llama2-7b-16x64-$mem" --model llama2-7b --devices 16 --microbatches 64 --memory-limit "$mem"
done
gen "bench-gpt3-28.3b-16x64-4act" --model gpt3-28.3b --devices 16 --microbatches 64 --memory-limit 4act
for mem in gpu 2act; do
  gen "bench-llama2-7b-32x128-$mem" --model llama2-7b --devices 32 --microbatches 128 --memory-limit "$mem"
done
for mem in gpu 4act 2act; do
  gen "bench-gpt3-28.3b-32x128-$mem" --model gpt3-28.3b --devices 32 --microbatches 128 --memory-limit "$mem"
done
