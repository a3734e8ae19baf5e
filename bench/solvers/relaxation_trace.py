#!/usr/bin/env python3
"""The CP-SAT relaxation's optimum along a schedule: for each time T, every compute op, offload
level and transfer that starts before T in the schedule is fixed to its start (the state of the
branch-and-bound node on that schedule's path at time T), and CP-SAT solves the rest of its
relaxation (cpsat_model.py: free timing, so its optimum is a lower bound for that node).

It shows how early a bound could cut a path, against `build/bench/bound_trace` (what the
solver's own bounds give at each decision of the same path):

    bench/solvers/.venv/bin/python bench/solvers/relaxation_trace.py \\
        instances/offload-slow-pcie-4x8.json witness.json --times 0,50,100,130
    # the same for stage 0 alone (bench/solvers/single_stage.py writes the variant):
    bench/solvers/.venv/bin/python bench/solvers/relaxation_trace.py \\
        instances/offload-slow-pcie-4x8.json witness.json --variant /tmp/stage0.json --stage 0

The schedule is simulated on INSTANCE by `optpipe simulate --timeline`; with --variant, only
the ops and transfers of --stage are fixed, and the variant is solved (single_stage.py keeps
that stage's times, so the schedule's times are a point of its model). Needs the solver
benchmark's virtual environment (bench/solvers/run.sh makes it) for OR-Tools.

With --improve PREFIX it re-optimises the schedule's suffix instead of only bounding it: the
schedule's whole timeline is CP-SAT's hint, and the best schedule CP-SAT finds for each T is
turned into device lists, written to PREFIX-T.json and re-simulated (the spec's makespan is
printed beside CP-SAT's objective, which the relaxation can make smaller):

    bench/solvers/.venv/bin/python bench/solvers/relaxation_trace.py \
        instances/generated/bench-llama2-7b-16x64-4act.json incumbent.json --times 1550 \
        --time-limit 500 --threads 2 --improve /tmp/suffix
"""
import argparse
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

OP = re.compile(r"\s*\d+\s+\d+\s+([FBW])(\d+)\.(\d+)(@[\d.]+)?\s+([\d.]+)\s+[\d.]+")
TRANSFER = re.compile(r"(offload|reload)\s+\d+\s+\d+\s+(\d+)\.(\d+)\s+[\d.]+ \S+\s+[\d.]+\s+([\d.]+)")


def timeline(optpipe: str, inst_path: str, sched_path: str):
    """(compute ops as (type, stage, mb, level, start), transfers as (off|rel, stage, mb, start))."""
    run = subprocess.run([optpipe, "simulate", inst_path, sched_path, "--timeline", "--no-gantt"],
                         capture_output=True, text=True)
    if run.returncode != 0:
        raise ValueError(f"optpipe simulate failed: {run.stdout.strip()} {run.stderr.strip()}")
    ops, transfers = [], []
    for line in run.stdout.splitlines():
        m = OP.match(line)
        if m:
            level = float(m.group(4)[1:]) if m.group(4) else 0.0
            ops.append((m.group(1), int(m.group(2)), int(m.group(3)), level, float(m.group(5))))
            continue
        m = TRANSFER.match(line)
        if m:
            kind = "off" if m.group(1) == "offload" else "rel"
            transfers.append((kind, int(m.group(2)), int(m.group(3)), float(m.group(4))))
    if not ops:
        raise ValueError("no timeline in optpipe simulate's output")
    return ops, transfers


def fixes(inst, ops, transfers, t_cut: float, stage=None):
    fix = {}
    for (t, s, j, r, start) in ops:
        if start < t_cut - 1e-9 and (stage is None or s == stage):
            fix[(t, s, j)] = start
            if t == "F" and inst.can_offload(s):
                fix[("level", s, j)] = r
    for (kind, s, j, start) in transfers:
        if start < t_cut - 1e-9 and (stage is None or s == stage):
            fix[(kind, s, j)] = start
    return fix


def hints(inst, ops, transfers):
    """The schedule as cpsat_model.solve's hints (the exported MILP's variable names)."""
    out = {}
    for (t, s, j, r, start) in ops:
        out[f"S_{t}_s{s}_j{j}"] = start
        if t == "F" and inst.can_offload(s):
            for k, level in enumerate(inst.offload_levels):
                if level > 0:
                    out[f"o_s{s}_j{j}_l{k}"] = 1.0 if abs(level - r) < 1e-9 and r > 0 else 0.0
    for (kind, s, j, start) in transfers:
        out[f"{'Toff' if kind == 'off' else 'Trel'}_s{s}_j{j}"] = start
    return out


def simulated_makespan(optpipe: str, inst_path: str, sched_path: str):
    """The spec's makespan of a schedule file (None when it does not simulate)."""
    run = subprocess.run([optpipe, "simulate", inst_path, sched_path, "--no-gantt"], capture_output=True, text=True)
    m = re.search(r"^makespan ([\d.]+) ms", run.stdout, re.M)
    return float(m.group(1)) if run.returncode == 0 and m else None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("instance")
    ap.add_argument("schedule")
    ap.add_argument("--times", default="0,25,50,75,100,125,150,200", help="comma-separated times T in ms")
    ap.add_argument("--variant", default=None, help="solve this instance instead (e.g. single_stage.py's output)")
    ap.add_argument("--stage", type=int, default=None, help="fix only this stage's ops and transfers")
    ap.add_argument("--time-limit", type=float, default=60.0, help="seconds per CP-SAT solve (default 60)")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="CP-SAT workers (default: all)")
    ap.add_argument("--optpipe", default=os.path.join(ROOT, "build", "optpipe"), help="the optpipe binary")
    ap.add_argument("--improve", default=None, metavar="PREFIX",
                    help="hint the schedule and write CP-SAT's best schedule for each T to PREFIX-T.json")
    a = ap.parse_args()
    try:
        import cpsat_model  # OR-Tools: the benchmark's virtual environment
        import instance
    except ImportError as e:
        print(f"relaxation_trace: {e}; run it with bench/solvers/.venv/bin/python (bench/solvers/run.sh makes it)",
              file=sys.stderr)
        return 2
    try:
        times = [float(x) for x in a.times.split(",") if x.strip()]
        ops, transfers = timeline(a.optpipe, a.instance, a.schedule)
        inst = instance.load(a.variant or a.instance)
    except (OSError, ValueError, KeyError) as e:
        print(f"relaxation_trace: {e}", file=sys.stderr)
        return 2
    if a.improve and a.variant:
        print("relaxation_trace: --improve re-optimises the schedule's own instance, not a --variant", file=sys.stderr)
        return 2
    hint = hints(inst, ops, transfers) if a.improve else None
    extra = f" {'objective':>10} {'simulated':>10}" if a.improve else ""
    print(f"{'T (ms)':>8} {'fixed':>6} {'status':>9} {'bound':>10} {'seconds':>8}{extra}")
    for t_cut in times:
        fix = fixes(inst, ops, transfers, t_cut, a.stage)
        res = cpsat_model.solve(inst, a.time_limit, a.threads, fix=fix, hints=hint)
        bound = res["bound"]
        line = (f"{t_cut:8.1f} {len(fix):6d} {res['status']:>9} {bound if bound is None else round(bound, 3):>10} "
                f"{res['seconds']:8.1f}")
        if a.improve:
            simulated = None
            if res["schedule"]:
                path = f"{a.improve}-{t_cut:g}.json"
                with open(path, "w") as f:
                    json.dump({"format": "optpipe-schedule/1", "instance": inst.name, "devices": res["schedule"]}, f)
                simulated = simulated_makespan(a.optpipe, a.instance, path)
            objective = res["objective"]
            line += (f" {objective if objective is None else round(objective, 3):>10}"
                     f" {simulated if simulated is None else round(simulated, 3):>10}")
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
