#!/usr/bin/env python3
"""Writes the single-stage variant of a plain-pipeline instance: one stage (or a range of
consecutive stages) keeps its device, memory and PCIe channels; every other stage becomes free
(zero durations, no activation, no offload, unlimited memory), and the comm of each link after
the kept stages is raised so that the shortest time from F(s, j)'s end to B(s, j)'s start (the
forward chain up and the backward chain back) stays what it was.

A diagnostic for the exact solver (issue 3; bench/README.md, "Offload under memory pressure"):
it isolates one device with its memory limit and its offloads, which is where the tree
explodes. It is a relaxation for a model with free timing (the CP-SAT model: its optimum is no
larger than the original's), but not a bound on the spec's list-scheduled optimum, where an
op that can start earlier can delay another (a list-scheduling anomaly).

    python3 bench/solvers/single_stage.py instances/offload-slow-pcie-4x8.json 0 -o /tmp/single0.json
    python3 bench/solvers/single_stage.py instances/offload-slow-pcie-4x8.json 0 --no-offload -o /tmp/s0-nooff.json
    # several consecutive stages kept together (here 0 to 2; stage 3 becomes free):
    python3 bench/solvers/single_stage.py instances/offload-slow-pcie-4x8.json 0-2 -o /tmp/s012.json

Keeping a range shows how much of a relaxation's value needs stages together: on
offload-slow-pcie-4x8, CP-SAT gives 334.58 for stage 0 alone and for stages 0-1, and 338.82
(the whole instance's relaxed optimum) for stages 0-2 (bench/README.md).

Only for plain pipelines (stage s on device s, one stage per device) with split or fused
backward; the instance's byte strings (e.g. "1.4GiB") are kept as they are.
"""
import argparse
import json
import sys


def parse_stages(text: str):
    """'2' -> (2, 2); '0-2' -> (0, 2)."""
    try:
        if "-" in text:
            a, b = text.split("-", 1)
            return int(a), int(b)
        return int(text), int(text)
    except ValueError:
        raise ValueError(f"stage '{text}' is not a stage number or a range like 0-2") from None


def single_stage(inst: dict, keep, no_offload: bool = False) -> dict:
    """keep: a stage, or (first, last) for consecutive stages kept together."""
    first, last = (keep, keep) if isinstance(keep, int) else keep
    stages, devices = inst["stages"], inst["devices"]
    S = len(stages)
    if len(devices) != S or any(st["device"] != s for s, st in enumerate(stages)):
        raise ValueError("only plain pipelines (stage s on device s) are supported")
    for k in (first, last):
        if not 0 <= k < S:
            raise ValueError(f"stage {k} is not in 0..{S - 1}")
    if first > last:
        raise ValueError(f"stage range {first}-{last} is empty")
    kept = range(first, last + 1)
    comm = inst.get("comm", 0)
    links = list(comm) if isinstance(comm, list) else [comm] * (S - 1)
    out = json.loads(json.dumps(inst))
    suffix = f"stage{first}" if first == last else f"stages{first}-{last}"
    out["name"] = f"{inst.get('name', 'instance')}-{suffix}"
    new_links = []
    for k, c in enumerate(links):  # link k joins stages k and k+1
        if k < first:
            new_links.append(0.0)  # the earlier stages are free: F(first, j) may start at once
        elif k + 1 in kept:
            new_links.append(c)  # between two kept stages: as it was
        else:
            # Crossed twice (forward up, backward down) on the way from F(last, j) to B(last, j):
            # half of stage k+1's forward and backward on each crossing keeps the latency.
            up = stages[k + 1]
            new_links.append(round(c + (up["forward"] + up["backward"]) / 2, 9))
    out["comm"] = new_links
    for s, st in enumerate(out["stages"]):
        if s in kept:
            if no_offload:
                st.pop("offload", None)
                st.pop("reload", None)
            continue
        for field in ("forward", "backward", "weight"):
            if field in st:
                st[field] = 0
        st["activation"] = 0
        st.pop("weight_activation", None)
        st.pop("offload", None)
        st.pop("reload", None)
    for d, dev in enumerate(out["devices"]):
        if d not in kept:
            dev["memory_limit"] = "1TiB"
            dev.pop("static_memory", None)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("instance", help="a plain-pipeline instance file")
    ap.add_argument("stage", help="the stage to keep, or a range of consecutive stages (e.g. 0-2)")
    ap.add_argument("-o", "--out", required=True, help="where to write the variant")
    ap.add_argument("--no-offload", action="store_true", help="also make the kept stage not offloadable")
    a = ap.parse_args()
    try:
        with open(a.instance) as f:
            inst = json.load(f)
        out = single_stage(inst, parse_stages(a.stage), a.no_offload)
    except (OSError, ValueError, KeyError) as e:
        print(f"single_stage: {a.instance}: {e}", file=sys.stderr)
        return 2
    with open(a.out, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
