"""OR-Tools CP-SAT model of the pipeline scheduling problem (../shared/spec/problem.md), written
for the solver benchmark: the strongest general scheduling solver, with a model of its own
rather than the exported MILP.

Model (the classic CP scheduling encoding: Baptiste, Le Pape & Nuijten, "Constraint-Based
Scheduling", Kluwer 2001; OR-Tools' interval, no-overlap, cumulative and reservoir constraints):
  - one interval per compute op (F, B, W of every stage and microbatch) with its duration;
  - precedences: F(s,j) after F(s-1,j) + comm, B(s,j) after F(s,j) and after B(s+1,j) + comm,
    W(s,j) after B(s,j); FIFO per stage and type (same stream: end before the next start);
  - one compute stream per device: no-overlap of its intervals; the device's list is the order of
    the start times;
  - memory per device: a reservoir of limit - static bytes (plus the simulator's 1-byte
    tolerance): +M_B at F's start, -(M_B - M_W) at B's end, -M_W at W's end; with offload, per
    (s,j) one literal per level r > 0 (at most one true), an optional D2H interval after F's end
    and an optional H2D interval after it and before B's start, each lasting r times the
    transfer time, -r M_B at the offload's end and +r M_B at the reload's start (active with the
    literal). Devices that cannot offload use a cumulative instead (faster);
  - one D2H and one H2D channel per PCIe group: no-overlap of the transfers on it, and per stage
    offloads and reloads in microbatch order (the spec's FIFO channels imply both).
  - objective: the makespan, the latest end of a compute op.

Where it differs from the spec, it is a relaxation: a reload may start at any time (the spec
issues it when the list reaches R, at an op boundary), the channels may serve transfers in any
order consistent with the per-stage order (the spec serves strictly in request order), and a
forward never blocks its stream while it waits for memory (it simply starts later). Times are in
integer ticks of 1 µs with durations and comm rounded down. So CP-SAT's optimum and bound are no
larger than the spec's optimum (its bound is a valid lower bound), and its schedule, turned into
device lists (ops by start time, R placed after the last op that ends by the reload's start) and
re-simulated by `optpipe simulate`, has the spec's makespan, which can be a little larger than
CP-SAT's objective.

Size: 2 or 3 intervals per (stage, microbatch), plus two optional transfers and one literal per
offload level when offloadable; the reservoir's encoding is quadratic in the events of a device.
"""

import math
import time
from typing import Dict, List, Optional, Tuple

from ortools.sat.python import cp_model

from instance import Instance
from lists import device_lists

TICK_MS = 1e-3  # 1 µs
MEM_UNIT = 2**20  # bytes: memory in MiB, amounts rounded down, capacities up (a relaxation)


def ticks(ms: float) -> int:
    """ms in whole ticks, rounded down (a relaxation), but 9.2 / 0.001 = 9199.999999999998 is 9200."""
    return int(math.floor(ms / TICK_MS + 1e-6))


class _Trajectory(cp_model.CpSolverSolutionCallback):
    def __init__(self, t0: float):
        super().__init__()
        self.t0 = t0
        self.points: List[Tuple[float, float]] = []

    def on_solution_callback(self):
        self.points.append((time.monotonic() - self.t0, self.ObjectiveValue() * TICK_MS))


def solve(inst: Instance, time_limit: float, threads: int, fix: Optional[Dict] = None,
          hints: Optional[Dict[str, float]] = None) -> Dict:
    """`fix` (for tests): {(t, s, j): start ms} for compute ops, ("off"|"rel", s, j): start ms for
    transfers, ("level", s, j): r; pins those values, to check that a schedule is a point of the
    model. `hints`: a warm start as the exported MILP's variable values (S_F_s0_j3 starts,
    o_s0_j3_l1 levels, Toff_/Trel_ transfer starts; export-milp --warm-start), given to CP-SAT
    as hints."""
    m = cp_model.CpModel()
    S, M = inst.num_stages, inst.microbatches
    types = inst.types()
    horizon = 0
    for s in range(S):
        for t in types:
            horizon += ticks(inst.duration(t, s)) * M
        if inst.can_offload(s):
            st = inst.stages[s]
            horizon += (ticks(st.offload) + ticks(st.reload)) * M
    horizon += sum(ticks(c) for c in inst.comm) * M * 2 + 1

    start, end, interval = {}, {}, {}
    for s in range(S):
        for j in range(M):
            for t in types:
                d = ticks(inst.duration(t, s))
                a = m.NewIntVar(0, horizon, f"s_{t}{s}_{j}")
                b = m.NewIntVar(0, horizon, f"e_{t}{s}_{j}")
                interval[t, s, j] = m.NewIntervalVar(a, d, b, f"i_{t}{s}_{j}")
                start[t, s, j], end[t, s, j] = a, b
    makespan = m.NewIntVar(0, horizon, "makespan")
    for key, b in end.items():
        m.Add(makespan >= b)
    for s in range(S):
        for j in range(M):
            if s > 0:
                m.Add(start["F", s, j] >= end["F", s - 1, j] + ticks(inst.comm[s - 1]))
            m.Add(start["B", s, j] >= end["F", s, j])
            if s < S - 1:
                m.Add(start["B", s, j] >= end["B", s + 1, j] + ticks(inst.comm[s]))
            if "W" in types:
                m.Add(start["W", s, j] >= end["B", s, j])
            if j + 1 < M:
                for t in types:
                    m.Add(start[t, s, j + 1] >= end[t, s, j])
    D = len(inst.devices)
    for d in range(D):
        ivs = [interval[t, s, j] for s in range(S) if inst.stages[s].device == d for j in range(M) for t in types]
        m.AddNoOverlap(ivs)

    # Offload decisions and transfers.
    levels = [r for r in inst.offload_levels if r > 0]
    lit: Dict[Tuple[int, int, float], cp_model.IntVar] = {}
    off_iv, rel_iv, off_start, off_end, rel_start, rel_end, present = {}, {}, {}, {}, {}, {}, {}
    for s in range(S):
        if not inst.can_offload(s):
            continue
        st = inst.stages[s]
        for j in range(M):
            ls = [m.NewBoolVar(f"x_{s}_{j}_{k}") for k, _ in enumerate(levels)]
            for k, r in enumerate(levels):
                lit[s, j, r] = ls[k]
            p = m.NewBoolVar(f"p_{s}_{j}")
            m.Add(sum(ls) == p)
            present[s, j] = p
            od = sum(ls[k] * ticks(r * st.offload) for k, r in enumerate(levels))
            rd = sum(ls[k] * ticks(r * st.reload) for k, r in enumerate(levels))
            os_, oe = m.NewIntVar(0, horizon, f"os_{s}_{j}"), m.NewIntVar(0, horizon, f"oe_{s}_{j}")
            rs, re_ = m.NewIntVar(0, horizon, f"rs_{s}_{j}"), m.NewIntVar(0, horizon, f"re_{s}_{j}")
            off_iv[s, j] = m.NewOptionalIntervalVar(os_, od, oe, p, f"off_{s}_{j}")
            rel_iv[s, j] = m.NewOptionalIntervalVar(rs, rd, re_, p, f"rel_{s}_{j}")
            m.Add(os_ >= end["F", s, j]).OnlyEnforceIf(p)
            m.Add(rs >= oe).OnlyEnforceIf(p)
            m.Add(start["B", s, j] >= re_).OnlyEnforceIf(p)
            off_start[s, j], off_end[s, j], rel_start[s, j], rel_end[s, j] = os_, oe, rs, re_
        # Per stage, transfers in microbatch order (FIFO requests on FIFO channels).
        for j in range(M):
            for k in range(j + 1, M):
                both = [present[s, j], present[s, k]]
                m.Add(off_start[s, k] >= off_end[s, j]).OnlyEnforceIf(both)
                m.Add(rel_start[s, k] >= rel_end[s, j]).OnlyEnforceIf(both)
    groups = sorted({dv.pcie_group for dv in inst.devices})
    for g in groups:
        stages_g = [s for s in range(S) if inst.devices[inst.stages[s].device].pcie_group == g]
        offs = [off_iv[s, j] for s in stages_g for j in range(M) if (s, j) in off_iv]
        rels = [rel_iv[s, j] for s in stages_g for j in range(M) if (s, j) in rel_iv]
        if len(offs) > 1:
            m.AddNoOverlap(offs)
        if len(rels) > 1:
            m.AddNoOverlap(rels)

    # Memory.
    for d in range(D):
        dv = inst.devices[d]
        cap = int(math.ceil((dv.memory_limit - dv.static_memory + 1.0) / MEM_UNIT))
        if cap < 0:
            return {"status": "infeasible", "objective": None, "bound": None, "schedule": None, "trajectory": [],
                    "reason": f"device {d}: static memory exceeds the limit"}
        ss = [s for s in range(S) if inst.stages[s].device == d]
        offloading = any(inst.can_offload(s) for s in ss)
        if not offloading:
            ivs, dem = [], []
            for s in ss:
                st = inst.stages[s]
                mb, mw = int(st.activation // MEM_UNIT), int(st.weight_activation // MEM_UNIT)
                for j in range(M):
                    last_b = end["B", s, j]
                    iv = m.NewIntervalVar(start["F", s, j], m.NewIntVar(0, horizon, ""), last_b, "")
                    ivs.append(iv)
                    dem.append(mb - mw)
                    if mw > 0:
                        iv2 = m.NewIntervalVar(start["F", s, j], m.NewIntVar(0, horizon, ""), end["W", s, j], "")
                        ivs.append(iv2)
                        dem.append(mw)
            m.AddCumulative(ivs, dem, cap)
            continue
        times, changes, actives = [], [], []
        one = m.NewConstant(1)
        for s in ss:
            st = inst.stages[s]
            mb, mw = int(st.activation // MEM_UNIT), int(st.weight_activation // MEM_UNIT)
            for j in range(M):
                times.append(start["F", s, j]); changes.append(mb); actives.append(one)
                times.append(end["B", s, j]); changes.append(-(mb - mw)); actives.append(one)
                if "W" in types and mw > 0:
                    times.append(end["W", s, j]); changes.append(-mw); actives.append(one)
                if (s, j) in present:
                    for r in levels:
                        q = int(math.floor(r * mb))
                        times.append(off_end[s, j]); changes.append(-q); actives.append(lit[s, j, r])
                        times.append(rel_start[s, j]); changes.append(q); actives.append(lit[s, j, r])
        m.AddReservoirConstraintWithActive(times, changes, actives, 0, cap)

    if fix:
        for key, v in fix.items():
            if key[0] == "level":
                _, s, j = key
                if (s, j) in present:
                    m.Add(present[s, j] == (1 if v > 0 else 0))
                    for r in levels:
                        m.Add(lit[s, j, r] == (1 if r == v else 0))
            elif key[0] in ("off", "rel"):
                var = (off_start if key[0] == "off" else rel_start)[key[1], key[2]]
                m.Add(var == int(round(v / TICK_MS)))
            else:
                m.Add(start[key] == int(round(v / TICK_MS)))
    if hints:
        for (t, s, j), var in start.items():
            v = hints.get(f"S_{t}_s{s}_j{j}")
            if v is not None:
                m.AddHint(var, int(round(v / TICK_MS)))
        for (s, j), p in present.items():
            on = False
            for k, r in enumerate(inst.offload_levels):
                if r > 0 and (s, j, r) in lit:
                    val = hints.get(f"o_s{s}_j{j}_l{k}", 0.0) > 0.5
                    m.AddHint(lit[s, j, r], 1 if val else 0)
                    on = on or val
            m.AddHint(p, 1 if on else 0)
            if on:
                m.AddHint(off_start[s, j], int(round(hints.get(f"Toff_s{s}_j{j}", 0.0) / TICK_MS)))
                m.AddHint(rel_start[s, j], int(round(hints.get(f"Trel_s{s}_j{j}", 0.0) / TICK_MS)))
    m.Minimize(makespan)
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = float(time_limit)
    solver.parameters.num_workers = max(1, int(threads))
    t0 = time.monotonic()
    cb = _Trajectory(t0)
    code = solver.Solve(m, cb)
    seconds = time.monotonic() - t0
    status = {cp_model.OPTIMAL: "optimal", cp_model.FEASIBLE: "feasible", cp_model.INFEASIBLE: "infeasible",
              cp_model.MODEL_INVALID: "invalid"}.get(code, "unknown")
    out = {"status": status, "seconds": seconds, "trajectory": cb.points, "objective": None,
           "bound": solver.BestObjectiveBound() * TICK_MS if status in ("optimal", "feasible", "unknown") else None,
           "schedule": None}
    if status in ("optimal", "feasible"):
        out["objective"] = solver.ObjectiveValue() * TICK_MS
        starts = {k: solver.Value(v) * TICK_MS for k, v in start.items()}
        lv, rel = {}, {}
        for (s, j), p in present.items():
            if solver.Value(p):
                lv[s, j] = next(r for r in levels if solver.Value(lit[s, j, r]))
                rel[s, j] = solver.Value(rel_start[s, j]) * TICK_MS
        lists = device_lists(inst, starts, lv, rel)
        out["schedule"] = lists
    return out
