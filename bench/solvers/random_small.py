#!/usr/bin/env python3
"""Writes small random no-offload instances of every placement (issue 21's small target).

Families: `chain` (one stage per GPU, split backward), `unsplit` (one stage per GPU, B and W
as one op), `v` (two stages per GPU, V placement) and `loop` (two stages per GPU, interleaved).
2-4 GPUs, 3-6 microbatches (at most about 200 ops), F/B/W times 1-3 ms, room for 2-6
activations per GPU. The solver proves these in well under a second; what they measure is
how fast, from process start, against CP-SAT's Solve time:

    python3 bench/solvers/random_small.py --out /tmp/small
    bench/solvers/run.sh --time-limit 10 --threads 2 --solvers optpipe,cpsat /tmp/small/*.json

Deterministic: the same --seed and --count always write the same files.
"""
import argparse
import json
import os
import random

FAMILIES = ("chain", "unsplit", "v", "loop")


def instance(rng, family, k):
    devices = rng.choice([2, 3, 4])
    microbatches = rng.choice([3, 4, 5, 6])
    per_device = 2 if family in ("v", "loop") else 1
    stages_n = devices * per_device
    if family == "v":
        placement = list(range(devices)) + list(reversed(range(devices)))
    elif family == "loop":
        placement = list(range(devices)) * 2
    else:
        placement = list(range(devices))
    act = rng.uniform(0.5, 2) / per_device  # GB per stage's activation
    stages = []
    for s in range(stages_n):
        scale = 1.0 / per_device
        stages.append({
            "device": placement[s], "forward": round(rng.uniform(1, 3) * scale, 2),
            "backward": round(rng.uniform(1, 3) * scale, 2), "weight": round(rng.uniform(0.5, 2) * scale, 2),
            "activation": round(act * 1e9), "weight_activation": round(act * rng.uniform(0.3, 0.9) * 1e9),
        })
    room = rng.choice([2, 3, 4, 6]) * per_device  # activations that fit beside the static memory
    doc = {
        "format": "optpipe-instance/1", "name": "small-%s-%02d" % (family, k), "microbatches": microbatches,
        "comm": 0.05, "stages": stages,
        "devices": [{"memory_limit": round((10 + room * act) * 1e9), "static_memory": 10e9}
                    for _ in range(devices)],
    }
    if family == "unsplit":
        doc["split_backward"] = False
    return doc


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="folder to write small-FAMILY-NN.json into")
    ap.add_argument("--count", type=int, default=8, help="instances per family (default 8)")
    ap.add_argument("--seed", type=int, default=11, help="random seed (default 11)")
    ap.add_argument("--families", default=",".join(FAMILIES), help="comma-separated (default: all)")
    a = ap.parse_args()
    if a.count < 1:
        ap.error("--count must be at least 1")
    families = [f for f in a.families.split(",") if f]
    for f in families:
        if f not in FAMILIES:
            ap.error("unknown family %r (families: %s)" % (f, ", ".join(FAMILIES)))
    os.makedirs(a.out, exist_ok=True)
    rng = random.Random(a.seed)
    written = 0
    for f in families:
        for k in range(a.count):
            path = os.path.join(a.out, "small-%s-%02d.json" % (f, k))
            with open(path, "w") as out:
                json.dump(instance(rng, f, k), out, indent=1)
                out.write("\n")
            written += 1
    print("wrote %d instances to %s" % (written, a.out))


if __name__ == "__main__":
    main()
