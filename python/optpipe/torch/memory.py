# Measured memory against the simulator's (issue 19, part 2, "Memory"): each rank's peak in the
# last step next to the simulator's peak for the same schedule on the instance (spec §4's memory
# model: static memory plus the activations resident at each instant).
#
# The measured peak is, on CUDA, `torch.cuda.max_memory_allocated` over the step (everything the
# caching allocator handed out: parameters, gradients, optimizer state, activations, receive
# buffers, workspaces). On CPU there is no allocator to ask, so it is the instance's static memory
# plus the peak of the saved-tensor bytes the offloader tracked (what autograd kept for backward
# and was on the device at the time), labelled "tracked": the same quantity the simulator models,
# not the process's memory.
from __future__ import annotations

from dataclasses import dataclass

import torch.distributed as dist

from .runtime import ScheduleOptPipe
from .units import parse_bytes

__all__ = ["MemoryRow", "memory_report", "format_memory_report"]


@dataclass
class MemoryRow:
    rank: int
    measured: float          # bytes
    measured_kind: str       # "max_memory_allocated" (CUDA) or "tracked" (CPU: static + saved tensors)
    simulated: float | None  # bytes, the simulator's peak for this device (None: not simulated)
    limit: float | None      # bytes, the instance's memory_limit
    offloads: int            # F actions with r > 0 in this rank's list
    moved_bytes: int         # bytes this rank's offloads moved in the last step
    delayed_reloads: int = 0  # reloads that waited after their R for room (the simulator's memory wait)
    forced_reloads: int = 0   # reloads a B had to start without room (measured bytes above the model)


def memory_report(runtime: ScheduleOptPipe, instance: dict | None = None, simulation=None) -> list[MemoryRow]:
    """Collective: every rank calls it after a step; every rank gets all rows. `instance`: the
    instance the schedule was made for (its static memory and limits; simulated with solver.simulate
    unless `simulation`, a solver.SimResult, is given)."""
    me = runtime.rank
    sched = runtime.schedule
    static = 0.0
    if instance is not None:
        static = parse_bytes(instance["devices"][me].get("static_memory", 0))
    if runtime.device.type == "cuda" and runtime.last_peak_memory is not None:
        measured, kind = float(runtime.last_peak_memory), "max_memory_allocated"
    else:
        measured, kind = static + runtime.offloader.peak_resident_bytes, "tracked"
    moved = sum(s.moved_bytes for s in runtime.offload_stats)
    offloads = sum(1 for a in sched.pipeline_order[me] if a.offloads)
    mine = (me, measured, kind, offloads, moved, runtime.delayed_reloads, runtime.forced_reloads)
    group = runtime._stages[0].group
    if dist.is_initialized() and dist.get_world_size(group) > 1:
        everyone = [None] * dist.get_world_size(group)
        dist.all_gather_object(everyone, mine, group=group)
    else:
        everyone = [mine]
    sim = simulation
    if sim is None and instance is not None:
        from .solver import simulate  # noqa: PLC0415 (needs the solver: lazy)
        sim = simulate(instance, sched.to_dict())
    rows = []
    for r, measured_r, kind_r, off_r, moved_r, delayed_r, forced_r in sorted(everyone):
        simulated = sim.peak_memory[r] if sim is not None and sim.feasible and r < len(sim.peak_memory) else None
        limit = None
        if instance is not None:
            limit = parse_bytes(instance["devices"][r]["memory_limit"])
        rows.append(MemoryRow(r, measured_r, kind_r, simulated, limit, off_r, moved_r, delayed_r, forced_r))
    return rows


def _fmt(b: float | None) -> str:
    if b is None:
        return "-"
    for unit, scale in (("GiB", 1024 ** 3), ("MiB", 1024 ** 2), ("KiB", 1024)):
        if abs(b) >= scale:
            return f"{b / scale:.2f} {unit}"
    return f"{b:.0f} B"


def format_memory_report(rows: list[MemoryRow]) -> str:
    lines = [f"{'rank':>4} {'peak (measured)':>17} {'peak (simulated)':>17} {'limit':>12} {'offloads':>9} "
             f"{'moved':>11} {'reloads waited/forced':>22}  measured as"]
    for r in rows:
        lines.append(f"{r.rank:>4} {_fmt(r.measured):>17} {_fmt(r.simulated):>17} {_fmt(r.limit):>12} "
                     f"{r.offloads:>9} {_fmt(r.moved_bytes):>11} {f'{r.delayed_reloads}/{r.forced_reloads}':>22}  "
                     f"{r.measured_kind}")
    return "\n".join(lines)
