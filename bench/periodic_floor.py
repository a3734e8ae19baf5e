#!/usr/bin/env python3
"""The best a strictly periodic schedule can do on a one-stage-per-GPU instance with offload
(issue 21: which side of a large gap is loose?).

A periodic schedule runs microbatch j's ops c·j later than microbatch 0's (heuristics/periodic.h
builds such templates). This computes, for each cycle c, a floor for that whole class under
optimistic assumptions, so that a solver's incumbent can be compared with it:

  - every forward follows the F chain and every backward the B chain with no wait (the shortest
    latency; W right after its B), though a template's backwards must avoid its forwards modulo c,
    which for cycles between F + B + 2·comm and twice that costs about a cycle per stage
    (bench/README.md, "Why a kept activation lives a cycle per stage");
  - per stage, the fewest offloads that keep the memory peak within the limit, found exactly over
    the repeating keep/offload patterns of period at most --period (an offloaded microbatch holds
    its activation from F's start to its offload's end, F + offload, and from its reload's start
    to B's end, then M_W until W ends; a kept one from F's start to W's end), each transfer
    starting at once (no channel queueing);
  - the PCIe channels: the offloads of the stages of one group must fit in a cycle
    (sum of offload fraction x offload time <= c; reloads are symmetric here).

With --band, each B(s, 0) also avoids its GPU's forwards modulo c (its offset from F(s, 0)'s start
lies in [F_s, c - B_s] modulo c), as in a strictly periodic template: below c = 2·(F + B + comm)
the backward chain then waits at most stages, above it where a step lands on a forward
(bench/README.md, "Not on every row"), and kept microbatches hold their activation that much
longer.

The floor at c is (m - 1)·c + the length of microbatch 0's ops at stage 0 (F start to W end). It is
not a lower bound on every schedule (non-periodic ones may do better, and the fill and drain
are not modelled); it says how far the incumbent is from the best periodic template could be,
and the least channel load that any periodic pattern needs.

    python3 bench/periodic_floor.py instances/generated/bench-gpt3-14.6b-16x64-4act.json \\
        --cycles 16.5,17,17.5,18

Complexity: per cycle and stage, 2^q patterns for q up to --period, each checked at its steady
state's events: O(S · 2^P · (P·K)^2) for K the microbatches a pattern holds at once.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "solvers"))
from instance import load  # noqa: E402  (bench/solvers/instance.py: the benchmark's instance reader)


def least_offload_share(c, f, b, F, B, W, off, act, mw, cap, period):
    """The smallest share of microbatches to offload, over patterns of period <= `period`, so that
    the stage's memory never passes cap; None when no pattern fits. `off` None: cannot offload."""
    best = None
    w = b + B
    life = w + W - f  # a kept microbatch's whole stay, F's start to W's end
    for q in range(1, period + 1):
        # The steady state: a window of two pattern periods that starts once the microbatches
        # alive in it all belong to the pattern (every one started at least `life` before it).
        skip = max(6, int(life // (q * c)) + 2)
        count = q * (skip + 3)
        for mask in range(1 << q):
            x = bin(mask).count("1") / q
            if best is not None and x >= best:
                continue
            if x > 0 and off is None:
                continue
            ivs = []
            for j in range(count):
                fs, shift = f + j * c, j * c
                if (mask >> (j % q)) & 1:
                    ivs += [(fs, fs + F + off, act), (b + shift - off, w + shift, act)]
                else:
                    ivs.append((fs, w + shift, act))
                ivs.append((w + shift, w + shift + W, mw))
            lo = f + c * q * skip
            hi = lo + c * q * 2
            starts = [s for s, _, _ in ivs if lo <= s < hi]
            if all(sum(a for s, e, a in ivs if s <= t < e) <= cap + 1 for t in starts):
                best = x
    return best


def band_starts(c, a, F, B, comm):
    """B(s, 0)'s earliest start in a template of cycle c where, on each GPU, a B never overlaps a
    forward of the same GPU: its offset from F(s, 0)'s start, modulo c, lies in [F_s, c - B_s]."""
    S = len(a)
    b = [0.0] * S
    for s in range(S - 1, -1, -1):
        t = a[s] + F[s] if s == S - 1 else max(a[s] + F[s], b[s + 1] + B[s + 1] + comm[s])
        r = (t - a[s]) % c
        if r < F[s] - 1e-9:
            t += F[s] - r
        elif r > c - B[s] + 1e-9:
            t += c - r + F[s]
        b[s] = t
    return b


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("instance")
    ap.add_argument("--cycles", required=True, help="comma-separated cycles c in ms")
    ap.add_argument("--period", type=int, default=8, help="longest keep/offload pattern tried (default 8)")
    ap.add_argument("--band", action="store_true",
                    help="each B(s, j) off its device's forwards modulo c (no overlap with F(s, j + k)): the "
                         "chain waits of a strictly periodic template, bench/README.md")
    args = ap.parse_args()
    inst = load(args.instance)
    S, m = inst.num_stages, inst.microbatches
    if len({st.device for st in inst.stages}) != S:
        raise SystemExit("periodic_floor: one stage per GPU only")
    F = [inst.duration("F", s) for s in range(S)]
    B = [inst.duration("B", s) for s in range(S)]
    W = [inst.duration("W", s) if inst.split_backward else 0.0 for s in range(S)]
    a = [0.0] * S
    for s in range(1, S):
        a[s] = a[s - 1] + F[s - 1] + inst.comm[s - 1]
    b = [0.0] * S
    for s in range(S - 1, -1, -1):
        b[s] = a[s] + F[s] if s == S - 1 else max(a[s] + F[s], b[s + 1] + B[s + 1] + inst.comm[s])
    for c in [float(x) for x in args.cycles.split(",")]:
        if c < max(F[s] + B[s] + W[s] for s in range(S)):
            print(f"c {c:.2f}: below the busiest GPU's work per microbatch")
            continue
        if args.band:
            b = band_starts(c, a, F, B, inst.comm)
        shares, load_ms = [], {}
        for s, st in enumerate(inst.stages):
            dv = inst.devices[st.device]
            off = st.offload if inst.can_offload(s) else None
            x = least_offload_share(c, a[s], b[s], F[s], B[s], W[s], off, st.activation, st.weight_activation,
                                    dv.memory_limit - dv.static_memory, args.period)
            shares.append(x)
            need = (x if x is not None else float("inf")) * (off or 0.0)
            load_ms[dv.pcie_group] = load_ms.get(dv.pcie_group, 0.0) + need
        worst = max(load_ms.values())
        floor = (m - 1) * c + b[0] + B[0] + W[0]
        text = " ".join("-" if x is None else f"{x:.2f}" for x in shares)
        verdict = "fits" if worst <= c else "channel over"
        print(f"c {c:.2f} ms: busiest channel {worst:.2f} ms a cycle ({verdict}); offload shares {text}; "
              f"floor {floor:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
