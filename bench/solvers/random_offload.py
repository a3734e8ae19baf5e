#!/usr/bin/env python3
"""Writes small random instances with offloadable stages under memory pressure.

The exact solver proves most shipped instances at the root, but offloading under tight memory
is where its tree explodes (issue 3): each forward's offload level and each reload's place in
the list are branching decisions that the node bounds barely tell apart until deep in the
tree. These instances (2-4 devices, one stage each, 4-8 microbatches, room for 1.5-3
activations, offload and reload times from 0.5 to 6 ms) make that measurable:

    python3 bench/solvers/random_offload.py --out /tmp/offload-random
    bench/solvers/run.sh --time-limit 10 --threads 2 --solvers optpipe,cpsat /tmp/offload-random/*.json

Deterministic: the same --seed and --count always write the same files (Python's own
Mersenne Twister, no other dependency).
"""
import argparse
import json
import os
import random


def instance(rng, k):
    devices = rng.choice([2, 3, 4])
    microbatches = rng.choice([4, 5, 6, 8])
    act = rng.uniform(1, 2)  # GB
    stages = []
    for s in range(devices):
        forward, backward, weight = rng.uniform(1, 3), rng.uniform(1, 3), rng.uniform(0.5, 2)
        offload = rng.uniform(0.5, 6)
        stages.append({
            "device": s, "forward": round(forward, 2), "backward": round(backward, 2), "weight": round(weight, 2),
            "activation": round(act * 1e9), "weight_activation": round(act * rng.uniform(0.3, 0.9) * 1e9),
            "offload": round(offload, 2), "reload": round(offload * rng.uniform(0.8, 1.2), 2),
        })
    tokens = rng.choice([1.5, 2, 2.5, 3])  # activations that fit beside the static memory
    return {
        "format": "optpipe-instance/1", "name": "offload-random-%02d" % k, "microbatches": microbatches,
        "comm": 0.05, "stages": stages,
        "devices": [{"memory_limit": round((10 + tokens * act) * 1e9), "static_memory": 10e9}
                    for _ in range(devices)],
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="folder to write offload-random-NN.json into")
    ap.add_argument("--count", type=int, default=24, help="how many instances (default 24)")
    ap.add_argument("--seed", type=int, default=7, help="random seed (default 7)")
    a = ap.parse_args()
    if a.count < 1:
        ap.error("--count must be at least 1")
    os.makedirs(a.out, exist_ok=True)
    rng = random.Random(a.seed)
    for k in range(a.count):
        path = os.path.join(a.out, "offload-random-%02d.json" % k)
        with open(path, "w") as f:
            json.dump(instance(rng, k), f, indent=1)
            f.write("\n")
    print("wrote %d instances to %s" % (a.count, a.out))


if __name__ == "__main__":
    main()
