"""Head-to-head benchmark (issue 5): `optpipe solve` against CBC, HiGHS and SCIP on the exported
MILP (`optpipe export-milp`) and against OR-Tools CP-SAT with a model of its own
(cpsat_model.py), on one suite of instances, with one time limit and thread count for all.

For each (instance, solver): the best makespan (its schedule re-simulated by `optpipe simulate`:
the spec's makespan, whatever the solver's own model says), the solver's objective, its proven
bound, the gap, time to best, time to proof and status. Writes a markdown table and a PNG (the
incumbent against time per solver for each instance; time to proof against instance size) to
bench/results/. Run it through run.sh, which makes the virtual environment.
"""

import argparse
import datetime
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)

import instance as instance_io  # noqa: E402
from lists import device_lists  # noqa: E402

SOLVERS = ["optpipe", "cpsat", "highs", "scip", "cbc"]
DEFAULT_SUITE = [  # 2 to 16 devices, 3 to 64 microbatches, with and without offload
    "tiny-2x3", "unsplit-4x8", "hetero-4x8", "v-4x8", "offload-fast-pcie-4x8", "offload-slow-pcie-4x8",
    "scale-llama2-7b-4x16", "scale-llama2-7b-8x16", "gpt-8x24-tight", "scale-llama2-7b-8x32-2act",
    "scale-llama2-7b-16x32", "scale-llama2-7b-16x64",
]


@dataclass
class Result:
    solver: str
    status: str = "no solution"  # optimal | feasible | infeasible | no solution | error | skipped
    makespan: Optional[float] = None  # the spec's makespan of its schedule (optpipe simulate)
    objective: Optional[float] = None  # the solver's own objective value
    bound: Optional[float] = None
    seconds: float = 0.0
    time_to_best: Optional[float] = None
    time_to_proof: Optional[float] = None
    trajectory: List[Tuple[float, float]] = field(default_factory=list)  # (seconds, objective)
    note: str = ""

    def gap(self) -> Optional[float]:
        best = self.makespan if self.makespan is not None else self.objective
        if best is None or self.bound is None or best <= 0:
            return None
        return max(0.0, (best - self.bound) / best)


def optpipe_bin(args) -> str:
    return args.optpipe or os.path.join(ROOT, "build", "optpipe")


def simulate(args, inst_path: str, lists: List[List[str]], name: str, tmp: str) -> Tuple[Optional[float], str]:
    """The spec's makespan of device lists, or None with the reason."""
    path = os.path.join(tmp, f"{name}.schedule.json")
    with open(path, "w") as f:
        json.dump({"format": "optpipe-schedule/1", "instance": instance_io.load(inst_path).name, "devices": lists}, f)
    p = subprocess.run([optpipe_bin(args), "simulate", inst_path, path, "--no-gantt"], capture_output=True, text=True)
    m = re.search(r"makespan ([0-9.]+) ms", p.stdout)
    if p.returncode != 0 or not m:
        return None, (p.stdout + p.stderr).strip().splitlines()[-1] if (p.stdout + p.stderr).strip() else "simulate failed"
    return float(m.group(1)), ""


def read_mst(path: str) -> Dict[str, float]:
    """The MIP start `optpipe export-milp --warm-start` writes (CBC's solution-file format: a
    first line with the objective, then `index name value 0` per variable)."""
    out = {}
    with open(path) as f:
        for line in f.read().splitlines()[1:]:
            parts = line.split()
            if len(parts) >= 3:
                out[parts[1]] = float(parts[2])
    return out


def lists_from_milp(inst, values: Dict[str, float]) -> List[List[str]]:
    starts, levels, reloads = {}, {}, {}
    for s in range(inst.num_stages):
        for j in range(inst.microbatches):
            for t in inst.types():
                starts[t, s, j] = values.get(f"S_{t}_s{s}_j{j}", 0.0)
            for k, r in enumerate(inst.offload_levels):
                if r > 0 and values.get(f"o_s{s}_j{j}_l{k}", 0.0) > 0.5:
                    levels[s, j] = r
                    reloads[s, j] = values.get(f"Trel_s{s}_j{j}", 0.0)
    return device_lists(inst, starts, levels, reloads)


def with_times(r: Result) -> Result:
    """Time to proof (the run's time when proven optimal) and time to best (the last improvement)."""
    if r.status == "optimal":
        r.time_to_proof = r.seconds
    if r.trajectory:
        r.time_to_best = r.trajectory[-1][0]
    return r


def finish_milp(args, r: Result, inst_path: str, values: Optional[Dict[str, float]], tmp: str) -> Result:
    if values and r.objective is not None:
        inst = instance_io.load(inst_path)
        r.makespan, why = simulate(args, inst_path, lists_from_milp(inst, values), r.solver, tmp)
        if r.makespan is None:
            r.note = f"its schedule does not simulate: {why}"
    return with_times(r)


# ---- the solvers ------------------------------------------------------------------------------

def run_optpipe(args, inst_path: str, tmp: str) -> Result:
    r = Result("optpipe")
    out = os.path.join(tmp, "optpipe.schedule.json")
    cmd = [optpipe_bin(args), "solve", inst_path, "--time-limit", str(args.time_limit), "--threads", str(args.threads),
           "--log-format", "json", "-o", out, "--no-cache"]  # from scratch, never from the schedule cache
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    done = None
    for line in p.stdout:
        now = time.monotonic() - t0
        try:
            ev = json.loads(line)
        except json.JSONDecodeError:
            continue
        inc = ev.get("incumbent")
        if ev.get("event") == "start":  # the heuristics and the local search have run
            found = list((ev.get("warm_starts") or {}).values()) + [x.get("after") for x in ev.get("local_search") or []]
            found = [x for x in found if isinstance(x, (int, float))]
            inc = min(found) if found else None
        if ev.get("event") == "done":
            done = ev
            inc = ev.get("makespan")
        if inc is not None and (not r.trajectory or inc < r.trajectory[-1][1] - 1e-9):
            r.trajectory.append((now, float(inc)))
    p.wait()
    r.seconds = time.monotonic() - t0
    if p.returncode not in (0, 1) or done is None:
        r.status, r.note = "error", p.stderr.read().strip()[-200:]
        return r
    r.status = done.get("status", "feasible")
    r.objective = done.get("makespan")
    r.bound = done.get("bound")
    if r.objective is not None and os.path.exists(out):
        r.makespan, _ = simulate(args, inst_path, json.load(open(out))["devices"], "optpipe-check", tmp)
    return with_times(r)


def run_cpsat(args, inst_path: str, tmp: str) -> Result:
    import cpsat_model
    r = Result("cpsat")
    inst = instance_io.load(inst_path)
    t0 = time.monotonic()
    out = cpsat_model.solve(inst, args.time_limit, args.threads, hints=read_mst(args.mst) if args.mst else None)
    r.seconds = time.monotonic() - t0
    r.status = {"unknown": "no solution"}.get(out["status"], out["status"])
    r.objective, r.bound, r.trajectory = out["objective"], out["bound"], out["trajectory"]
    if out.get("schedule"):
        r.makespan, why = simulate(args, inst_path, out["schedule"], "cpsat", tmp)
        if r.makespan is None:
            r.note = f"its schedule does not simulate: {why}"
    return with_times(r)


def run_highs(args, inst_path: str, lp: str, tmp: str) -> Result:
    import highspy
    r = Result("highs")
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("time_limit", float(args.time_limit))
    h.setOptionValue("threads", int(args.threads))
    h.setOptionValue("mip_rel_gap", 0.0)
    h.readModel(lp)
    if args.mst:
        start = read_mst(args.mst)
        sol = highspy.HighsSolution()
        sol.col_value = [start.get(n, 0.0) for n in h.getLp().col_names_]
        sol.value_valid = True
        h.setSolution(sol)
    t0 = time.monotonic()

    def improving(e):
        r.trajectory.append((time.monotonic() - t0, float(e.data_out.objective_function_value)))

    try:
        h.cbMipImprovingSolution.subscribe(improving)
    except AttributeError:  # older highspy: no callbacks, no trajectory
        pass
    h.run()
    r.seconds = time.monotonic() - t0
    status = h.modelStatusToString(h.getModelStatus()).lower()
    info = h.getInfo()
    has_sol = info.primal_solution_status == 2
    r.bound = info.mip_dual_bound if abs(info.mip_dual_bound) < 1e15 else None
    values = None
    if has_sol:
        r.objective = info.objective_function_value
        names = h.getLp().col_names_
        values = dict(zip(names, h.getSolution().col_value))
    r.status = ("optimal" if status == "optimal" else "infeasible" if status == "infeasible"
                else "feasible" if has_sol else "no solution")
    if not r.trajectory and r.objective is not None:
        r.trajectory.append((r.seconds, r.objective))
    return finish_milp(args, r, inst_path, values, tmp)


def run_scip(args, inst_path: str, lp: str, tmp: str) -> Result:
    import pyscipopt
    r = Result("scip", note="single-threaded")
    m = pyscipopt.Model()
    m.hideOutput()
    m.readProblem(lp)
    m.setParam("limits/time", float(args.time_limit))
    m.setParam("limits/gap", 0.0)
    t0 = time.monotonic()

    class Best(pyscipopt.Eventhdlr):
        def eventinit(self):
            self.model.catchEvent(pyscipopt.SCIP_EVENTTYPE.BESTSOLFOUND, self)

        def eventexec(self, event):
            r.trajectory.append((time.monotonic() - t0, float(self.model.getSolObjVal(self.model.getBestSol()))))

    m.includeEventhdlr(Best(), "best", "records each improving solution")
    if args.mst:
        start = read_mst(args.mst)
        path = os.path.join(tmp, "scip-start.sol")
        with open(path, "w") as f:
            f.write("objective value: 0\n")
            for n, v in start.items():
                f.write(f"{n} {v!r}\n")
        m.readSol(path)
    m.optimize()
    r.seconds = time.monotonic() - t0
    status = m.getStatus()
    values = None
    if m.getNSols() > 0:
        r.objective = m.getObjVal()
        sol = m.getBestSol()
        values = {v.name: m.getSolVal(sol, v) for v in m.getVars()}
    db = m.getDualbound()
    r.bound = db if abs(db) < 1e15 else None  # SCIP reports -1e20 when it has no bound
    r.status = ("optimal" if status == "optimal" else "infeasible" if status == "infeasible"
                else "feasible" if values else "no solution")
    if not r.trajectory and r.objective is not None:
        r.trajectory.append((0.0 if args.mst else r.seconds, r.objective))
    return finish_milp(args, r, inst_path, values, tmp)


def run_cbc(args, inst_path: str, lp: str, tmp: str) -> Result:
    r = Result("cbc")
    sol = os.path.join(tmp, "cbc.sol")
    cmd = ["cbc", lp, "-sec", str(args.time_limit), "-threads", str(args.threads), "-ratioGap", "0"]
    if args.mst:
        cmd += ["-mips", args.mst]
    cmd += ["-solve", "-solu", sol]
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.time_limit * 3 + 60)
    except FileNotFoundError:
        r.status, r.note = "skipped", "cbc is not installed (scripts/setup.sh installs coinor-cbc)"
        return r
    except subprocess.TimeoutExpired:
        r.status, r.note = "error", "cbc ran far past its time limit"
        return r
    r.seconds = time.monotonic() - t0
    log = p.stdout
    for m in re.finditer(r"Cbc00(?:12|04)I Integer solution of ([0-9.eE+-]+) found.*?\(([0-9.]+) seconds\)", log):
        r.trajectory.append((float(m.group(2)), float(m.group(1))))
    m = re.search(r"Lower bound:\s+([0-9.eE+-]+)", log)
    if m:
        r.bound = float(m.group(1))
    values = None
    if os.path.exists(sol):
        lines = open(sol).read().splitlines()
        head = lines[0] if lines else ""
        if "no integer solution" not in head and "Infeasible" not in head and "objective value" in head:
            values = {}
            for ln in lines[1:]:
                parts = ln.split()
                if len(parts) >= 3:
                    values[parts[1]] = float(parts[2])
            r.objective = float(head.rsplit(" ", 1)[-1])
        if head.startswith("Optimal"):
            r.status = "optimal"
            if r.bound is None:
                r.bound = r.objective
        elif "Infeasible" in head or "infeasible" in head:
            r.status = "infeasible"
        else:
            r.status = "feasible" if values else "no solution"
    return finish_milp(args, r, inst_path, values, tmp)


def run_one(args, solver: str, path: str, lp: str, tmp: str) -> Result:
    try:
        if solver == "optpipe":
            return run_optpipe(args, path, tmp)
        if solver == "cpsat":
            return run_cpsat(args, path, tmp)
        if solver == "highs":
            return run_highs(args, path, lp, tmp)
        if solver == "scip":
            return run_scip(args, path, lp, tmp)
        return run_cbc(args, path, lp, tmp)
    except Exception as e:  # a solver's failure is a row, not the end of the run
        return Result(solver, status="error", note=f"{type(e).__name__}: {e}"[:200])


def run_isolated(args, solver: str, path: str, lp: str, tmp: str) -> Result:
    """Each solver in its own process: the Python solvers bundle different builds of the same
    libraries (OR-Tools links its own HiGHS, which breaks highspy in the same process), and a
    crash or a runaway solver must not take the benchmark down."""
    out = os.path.join(tmp, f"{solver}.result.json")
    cmd = [sys.executable, os.path.abspath(__file__), "--one", solver, "--time-limit", str(args.time_limit),
           "--threads", str(args.threads), "--lp", lp, "--tmp", tmp, "--result", out, path]
    if args.mst:
        cmd += ["--mst", args.mst]
    if args.optpipe:
        cmd += ["--optpipe", args.optpipe]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.time_limit * 3 + 120)
    except subprocess.TimeoutExpired:
        return Result(solver, status="error", note="ran far past its time limit")
    if p.returncode != 0 or not os.path.exists(out):
        tail = (p.stderr or p.stdout).strip().splitlines()
        return Result(solver, status="error", note=(tail[-1] if tail else f"exit {p.returncode}")[:200])
    d = json.load(open(out))
    d["trajectory"] = [tuple(x) for x in d["trajectory"]]
    return Result(**d)


# ---- the report -------------------------------------------------------------------------------

def fmt(x, digits=2) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def ops_of(inst) -> int:
    return inst.num_stages * len(inst.types()) * inst.microbatches


def write_table(args, rows: List[Tuple[str, dict, List[Result]]], path: str):
    with open(path, "w") as f:
        f.write(f"# Solver benchmark ({datetime.date.today().isoformat()})\n\n")
        ws = " --warm-start" if args.warm_start else ""
        f.write(f"`bench/solvers/run.sh --time-limit {args.time_limit:g} --threads {args.threads}{ws}`"
                f" on {os.cpu_count()} cores. One time limit and thread count for all (SCIP runs one thread).\n\n")
        f.write("`makespan`: the spec's makespan of the solver's schedule, re-simulated by `optpipe simulate`; "
                "`objective`: the solver's own value (the MILP and CP-SAT models relax offload, so theirs can be "
                "lower); `bound`: proven lower bound; times in seconds from the solver's start.\n\n")
        f.write("| instance | devices × stages, microbatches | ops | offload | solver | status | makespan | objective | "
                "bound | gap | time to best | time to proof | note |\n")
        f.write("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
        for name, meta, results in rows:
            for r in results:
                g = r.gap()
                f.write(f"| {name} | {meta['shape']} | {meta['ops']} | {meta['offload']} | {r.solver} | {r.status} | "
                        f"{fmt(r.makespan)} | {fmt(r.objective)} | {fmt(r.bound)} | "
                        f"{'-' if g is None else f'{100 * g:.2f}%'} | {fmt(r.time_to_best)} | {fmt(r.time_to_proof)} | "
                        f"{r.note} |\n")


def write_plot(args, rows, path: str):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    colors = {"optpipe": "#d62728", "cpsat": "#1f77b4", "highs": "#2ca02c", "scip": "#9467bd", "cbc": "#ff7f0e"}
    n = len(rows)
    cols = min(4, n)
    grid = (n + cols - 1) // cols
    fig = plt.figure(figsize=(4.2 * cols, 3.2 * grid + 3.8))
    for k, (name, meta, results) in enumerate(rows):
        ax = fig.add_subplot(grid + 1, cols, k + 1)
        # optpipe last and thicker, so that it stays visible where the lines coincide
        for r in sorted(results, key=lambda x: x.solver == "optpipe"):
            if not r.trajectory:
                continue
            xs, ys = [], []
            for t, v in r.trajectory:
                xs.append(max(t, 1e-3))
                ys.append(round(v, 6))  # MILP values like 252.3199999752 are 252.32
            xs.append(max(r.seconds, xs[-1]))
            ys.append(ys[-1])
            lw = 2.2 if r.solver == "optpipe" else 1.2
            ax.step(xs, ys, where="post", color=colors.get(r.solver), label=r.solver, lw=lw, alpha=0.9)
            ax.plot([xs[-1]], [ys[-1]], marker="o" if r.status == "optimal" else ">", color=colors.get(r.solver), ms=4)
            if r.bound is not None:
                ax.axhline(r.bound, color=colors.get(r.solver), lw=0.6, ls=":")
        ax.set_xscale("log")
        ax.set_xlim(1e-3, args.time_limit * 2)  # the same time axis in every panel
        ax.ticklabel_format(axis="y", useOffset=False, style="plain")
        ax.set_title(f"{name} ({meta['ops']} ops)", fontsize=9)
        ax.set_xlabel("seconds", fontsize=8)
        ax.set_ylabel("incumbent (ms)", fontsize=8)
        ax.tick_params(labelsize=7)
        if k == 0:
            ax.legend(fontsize=7)
    ax = fig.add_subplot(grid + 1, 1, grid + 1)
    for k, solver in enumerate(args.solvers):
        jitter = 1.0 + 0.03 * (k - len(args.solvers) / 2)  # side by side at equal sizes
        xs, ys, xo, yo = [], [], [], []
        for name, meta, results in rows:
            for r in results:
                if r.solver != solver:
                    continue
                if r.time_to_proof is not None:
                    xs.append(meta["ops"] * jitter)
                    ys.append(max(r.time_to_proof, 1e-3))
                else:
                    xo.append(meta["ops"] * jitter)
                    yo.append(args.time_limit)
        ax.scatter(xs, ys, color=colors.get(solver), marker="o", label=solver)
        ax.scatter(xo, yo, color=colors.get(solver), marker="x")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("compute ops in the instance")
    ax.set_ylabel("time to proof (s)")
    ax.set_title(f"Time to proof against instance size (o: proven; x at {args.time_limit:g} s: not proven)",
                 fontsize=10)
    ax.legend(fontsize=8, ncol=len(args.solvers), loc="lower right")
    fig.suptitle(f"optpipe vs general solvers, {args.time_limit:g} s, {args.threads} threads\n"
                 f"incumbent against time (dotted: each solver's proven bound; o: proven optimal, >: stopped)",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def inconsistencies(results: List[Result], offload: bool) -> List[str]:
    """What cannot all be true if every solver and model is right: a bound above a schedule's
    simulated makespan (any solver's: all models are exact or relaxations), or two proven optima
    that differ where both models are exact (without offload)."""
    problems = []
    best = min((r.makespan for r in results if r.makespan is not None), default=None)
    for r in results:
        if r.bound is not None and best is not None and r.bound > best + 1e-6 * max(1.0, best):
            problems.append(f"{r.solver}'s bound {r.bound:.6f} is above a simulated schedule's {best:.6f}")
    proven = [r for r in results if r.status == "optimal" and r.objective is not None]
    exact = [r for r in proven if r.solver == "optpipe" or not offload]
    for a in exact:
        for b in exact:
            if a.solver < b.solver and abs(a.objective - b.objective) > 1e-2:  # CP-SAT rounds to 1 µs ticks
                problems.append(f"{a.solver} proved {a.objective:.6f}, {b.solver} proved {b.objective:.6f}")
    return problems


def resolve_instance(name: str) -> str:
    if os.path.exists(name):
        return name
    for folder in ("instances", "instances/generated"):
        p = os.path.join(ROOT, folder, name if name.endswith(".json") else name + ".json")
        if os.path.exists(p):
            return p
    raise SystemExit(f"run.py: no instance file '{name}' (a path, or a name in instances/)")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("instances", nargs="*", help=f"instance files or names (default: {' '.join(DEFAULT_SUITE)})")
    ap.add_argument("--time-limit", type=float, default=60.0, help="seconds per solve (default 60)")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="threads per solve (default: all)")
    ap.add_argument("--solvers", default=",".join(SOLVERS), help=f"comma-separated subset of {','.join(SOLVERS)}")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results"), help="folder for the table and plot")
    ap.add_argument("--tag", default="", help="suffix of the output files (default: the date)")
    ap.add_argument("--optpipe", default=None, help="the optpipe binary (default: build/optpipe)")
    ap.add_argument("--warm-start", action="store_true",
                    help="give every solver the best heuristic's schedule (MIP start for CBC, HiGHS and SCIP; hints "
                         "for CP-SAT); optpipe always starts from its heuristics")
    ap.add_argument("--mst", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--one", default=None, help=argparse.SUPPRESS)  # internal: one solver, one instance
    ap.add_argument("--lp", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--tmp", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--result", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--replot", default=None, metavar="JSON",
                    help="redraw the table and plot from a run's solvers-*.json, without solving")
    args = ap.parse_args()
    if args.replot:
        doc = json.load(open(args.replot))
        args.time_limit, args.threads, args.solvers = doc["time_limit"], doc["threads"], doc["solvers"]
        args.warm_start = doc.get("warm_start", False)
        rows = []
        for n, m, rs in doc["rows"]:
            res = []
            for d in rs:
                d["trajectory"] = [tuple(x) for x in d["trajectory"]]
                res.append(Result(**d))
            rows.append((n, m, res))
        base = args.replot[:-len(".json")] if args.replot.endswith(".json") else args.replot
        write_table(args, rows, base + ".md")
        write_plot(args, rows, base + ".png")
        print(f"wrote {base}.md and .png")
        return
    if args.one:
        r = run_one(args, args.one, args.instances[0], args.lp, args.tmp)
        with open(args.result, "w") as f:
            json.dump(r.__dict__, f)
        return
    args.solvers = [s.strip() for s in args.solvers.split(",") if s.strip()]
    for s in args.solvers:
        if s not in SOLVERS:
            ap.error(f"unknown solver '{s}' (choose from {', '.join(SOLVERS)})")
    if not os.path.exists(optpipe_bin(args)):
        ap.error(f"{optpipe_bin(args)} does not exist: build first (scripts/build.sh)")
    names = args.instances or DEFAULT_SUITE
    os.makedirs(args.out, exist_ok=True)
    tag = args.tag or datetime.date.today().isoformat()
    rows = []
    all_problems: List[str] = []
    for name in names:
        path = resolve_instance(name)
        inst = instance_io.load(path)
        offload = any(inst.can_offload(s) for s in range(inst.num_stages))
        meta = {"shape": f"{len(inst.devices)} × {inst.num_stages}, {inst.microbatches}", "ops": ops_of(inst),
                "offload": "yes" if offload else "no"}
        results = []
        with tempfile.TemporaryDirectory() as tmp:
            lp = os.path.join(tmp, "model.lp")
            export = [optpipe_bin(args), "export-milp", path, "-o", lp]
            args.mst = None
            if args.warm_start:
                ws = os.path.join(tmp, "warm.schedule.json")
                h = subprocess.run([optpipe_bin(args), "schedule", path, "--heuristic", "best", "-o", ws],
                                   capture_output=True, text=True)
                if h.returncode == 0 and os.path.exists(ws):
                    export += ["--warm-start", ws]
                    args.mst = os.path.join(tmp, "model.mst")
            exp = subprocess.run(export, capture_output=True, text=True)
            if args.mst and not os.path.exists(args.mst):
                args.mst = None
            for solver in args.solvers:
                print(f"[{name}] {solver} ...", end=" ", flush=True)
                if solver in ("highs", "scip", "cbc") and exp.returncode != 0:
                    r = Result(solver, status="skipped", note="no MILP: " + exp.stderr.strip()[-120:])
                else:
                    r = run_isolated(args, solver, path, lp, tmp)
                print(f"{r.status}, makespan {fmt(r.makespan)}, bound {fmt(r.bound)}, {r.seconds:.1f} s", flush=True)
                results.append(r)
        problems = inconsistencies(results, offload)
        for msg in problems:
            print(f"[{name}] INCONSISTENT: {msg}", flush=True)
        all_problems += problems
        rows.append((inst.name or name, meta, results))
        write_table(args, rows, os.path.join(args.out, f"solvers-{tag}.md"))  # after each instance: nothing lost
        with open(os.path.join(args.out, f"solvers-{tag}.json"), "w") as f:  # raw results, for --replot
            json.dump({"time_limit": args.time_limit, "threads": args.threads, "solvers": args.solvers,
                       "warm_start": args.warm_start,
                       "rows": [[n, m, [x.__dict__ for x in rs]] for n, m, rs in rows]}, f)
    write_plot(args, rows, os.path.join(args.out, f"solvers-{tag}.png"))
    print(f"wrote {os.path.join(args.out, f'solvers-{tag}.md')} and .png")
    if all_problems:
        print(f"{len(all_problems)} inconsistencies between the solvers (see above)")
        sys.exit(1)


if __name__ == "__main__":
    main()
