# Profiler for the user's model (issue 19, part 3): measures a running ScheduleOptPipe and writes
# an optpipe-instance/1 (../shared/spec/problem.md §2, §5), so that the loop is
# profile -> solve -> run, all from Python. The OptPipe paper's "Profile: run a few warm-up
# iterations to profile computation time and memory usage" (arXiv 2510.05186, Fig. 1, as recorded
# in ../shared/background/optpipe-paper.md §1.1, §3.3); the C++ counterpart is runtime/profiler.h.
#
# Per stage, from the profiled iterations (the first one is left out when there are several: it
# includes PipelineStage's shape inference and first-touch allocations); the median over the
# stage's microbatches and iterations:
#   forward, backward, weight  the compute of each F, B, W action (runtime timings: CUDA events on
#                              the compute stream, else wall time), after its waits;
#   activation                 the bytes autograd saved in F (the offloader's hooks: distinct saved
#                              tensors, parameters excluded) - the memory F holds for B;
#   weight_activation          the saved bytes still alive right after B (PipelineStage's input
#                              backward keeps the graph for W, so this is usually all of it);
#   offload, reload            the time to copy the whole activation to host memory and back: from
#                              the run's own offloads of that stage, scaled to the activation's
#                              bytes, else a copy of that many bytes measured here (CUDA: pinned
#                              buffer, side stream, events; CPU: a memcpy into a host buffer).
# Per boundary crossing ranks: `comm`, half the round trip of a message of the stage's output size
# over the runtime's channel (median of a few). Per rank (device): `static_memory` (parameters,
# their gradients and the optimizer's state, measured or estimated; on CUDA at least what is
# allocated between iterations) and `memory_limit` (given, `Nact` = static + N of the rank's
# largest activations, or the GPU's memory / the host's RAM).
from __future__ import annotations

import os
import statistics
import time
from typing import Any

import torch
import torch.distributed as dist

from .runtime import ScheduleOptPipe
from .units import parse_bytes

__all__ = ["Profiler", "profile"]


def _median(xs, default=0.0):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else default


class Profiler:
    """Profiles a ScheduleOptPipe while it trains.

        prof = Profiler(runtime, memory_limit="3act", optimizer=opt)
        with prof:
            for _ in range(3):
                runtime.step(...)
        instance = prof.instance()   # collective: every rank calls it; every rank gets the instance

    memory_limit: bytes, a string with units ("80GiB"), "<N>act", or None (the GPU's memory; on
        CPU the host's RAM). static_memory: bytes per rank to use instead of the measurement.
    optimizer: its state counts as static memory (estimated before its first step).
    offload_levels: the instance's offload_levels. pcie_groups: per rank (default: own id).
    """

    def __init__(self, runtime: ScheduleOptPipe, *, memory_limit: Any = None, static_memory: Any = None,
                 optimizer: torch.optim.Optimizer | None = None, offload_levels=(0, 1), name: str = "torch-measured",
                 pcie_groups: list[int] | None = None, comm_repeats: int = 5, copy_repeats: int = 5):
        self.runtime = runtime
        self.memory_limit, self.static_memory = memory_limit, static_memory
        self.optimizer = optimizer
        self.offload_levels = sorted(set(float(x) for x in offload_levels) | {0.0})
        self.name = name
        self.pcie_groups = pcie_groups
        self.comm_repeats, self.copy_repeats = comm_repeats, copy_repeats
        self.iterations: list[dict] = []  # per profiled step: timings and offload stats of this rank
        self.notes: list[str] = []

    # -- collecting -----------------------------------------------------------------------------------
    def start(self):
        self.runtime.record_timings = True
        if self._observe not in self.runtime.step_observers:
            self.runtime.step_observers.append(self._observe)
        return self

    def stop(self):
        self.runtime.record_timings = False
        if self._observe in self.runtime.step_observers:
            self.runtime.step_observers.remove(self._observe)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def _observe(self, rt: ScheduleOptPipe):
        self.iterations.append({"timings": [(t.action.kind, t.action.stage, t.ms) for t in rt.last_timings],
                                "stats": [dict(vars(s)) for s in rt.offload_stats]})

    # -- the instance ---------------------------------------------------------------------------------------
    def stage_costs(self) -> dict[int, dict]:
        """This rank's stages: measured costs (ms and bytes)."""
        its = self.iterations[1:] if len(self.iterations) > 1 else self.iterations
        if not its:
            raise RuntimeError("the profiler saw no step: run runtime.step() inside `with profiler:`")
        rt = self.runtime
        out = {}
        for st in rt._stages:
            s = st.stage_index
            times = {k: [ms for it in its for (kind, stage, ms) in it["timings"] if stage == s and kind == k]
                     for k in "FBW"}
            stats = [x for it in its for x in it["stats"] if x["stage"] == s]
            activation = _median([x["saved_bytes"] for x in stats])
            kept = _median([x["resident_after_backward"] for x in stats], default=0.0)
            moved = [x for x in stats if x["moved_bytes"] > 0 and x["offload_ms"] is not None]
            if moved:
                offload = _median([x["offload_ms"] * activation / x["moved_bytes"] for x in moved])
                reload = _median([x["reload_ms"] * activation / x["moved_bytes"] for x in moved
                                  if x["reload_ms"] is not None], default=offload)
                how = "the run's offloads"
            else:
                offload, reload = self._copy_times(int(activation))
                how = "a copy measured here"
            out[s] = {"forward": _median(times["F"]), "backward": _median(times["B"]),
                      "weight": _median(times["W"]) if rt.schedule.split_backward else 0.0,
                      "activation": activation,
                      "weight_activation": min(kept, activation) if rt.schedule.split_backward else 0.0,
                      "offload": offload, "reload": reload, "copy_source": how,
                      "output_bytes": rt.output_bytes.get(s, 0)}
        return out

    def _copy_times(self, nbytes: int) -> tuple[float, float]:
        """ms to copy nbytes device -> host and back (median of copy_repeats)."""
        dev = self.runtime.device
        nbytes = max(nbytes, 1)
        src = torch.empty(nbytes, dtype=torch.uint8, device=dev)
        if dev.type == "cuda":
            host = torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)
            side = torch.cuda.Stream(device=dev)
            d2h, h2d = [], []
            for _ in range(self.copy_repeats):
                e = [torch.cuda.Event(enable_timing=True) for _ in range(4)]
                with torch.cuda.stream(side):
                    e[0].record(side)
                    host.copy_(src, non_blocking=True)
                    e[1].record(side)
                    e[2].record(side)
                    src.copy_(host, non_blocking=True)
                    e[3].record(side)
                side.synchronize()
                d2h.append(e[0].elapsed_time(e[1]))
                h2d.append(e[2].elapsed_time(e[3]))
            return _median(d2h), _median(h2d)
        host = torch.empty(nbytes, dtype=torch.uint8, pin_memory=torch.cuda.is_available())
        d2h, h2d = [], []
        for _ in range(self.copy_repeats):
            t0 = time.perf_counter()
            host.copy_(src)
            t1 = time.perf_counter()
            src.copy_(host)
            t2 = time.perf_counter()
            d2h.append((t1 - t0) * 1e3)
            h2d.append((t2 - t1) * 1e3)
        return _median(d2h), _median(h2d)

    def _static_bytes(self) -> float:
        if self.static_memory is not None:
            v = self.static_memory
            return parse_bytes(v[self.runtime.rank] if isinstance(v, (list, tuple)) else v)
        params = [p for st in self.runtime._stages for p in st.submod.parameters()]
        pbytes = sum(p.numel() * p.element_size() for p in params)
        gbytes = sum(p.numel() * p.element_size() for p in params if p.requires_grad)
        obytes = 0.0
        if self.optimizer is not None:
            ids = {id(p) for p in params}
            state = [v for p, st in self.optimizer.state.items() if id(p) in ids for v in st.values()
                     if isinstance(v, torch.Tensor)]
            if state:
                obytes = sum(t.numel() * t.element_size() for t in state)
            else:  # before its first step: what it will allocate
                name = type(self.optimizer).__name__.lower()
                per = 2 if "adam" in name else (1 if any(g.get("momentum", 0) for g in self.optimizer.param_groups)
                                                else 0)
                obytes = per * gbytes
                if per:
                    self.notes.append(f"optimizer state estimated as {per} x the gradients (no step yet)")
        static = float(pbytes + gbytes + obytes)
        dev = self.runtime.device
        if dev.type == "cuda":
            static = max(static, float(torch.cuda.memory_allocated(dev)))
        return static

    def _limit_bytes(self, static: float, activations: list[float]) -> Any:
        lim = self.memory_limit
        if isinstance(lim, (list, tuple)):
            lim = lim[self.runtime.rank]
        if lim is None:
            dev = self.runtime.device
            if dev.type == "cuda":
                return float(torch.cuda.get_device_properties(dev).total_memory)
            return float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
        if isinstance(lim, str) and lim.strip().endswith("act"):
            n = float(lim.strip()[:-3])
            return static + n * max(activations or [0.0])
        return parse_bytes(lim)

    def _comm_ms(self, sizes: dict[int, int]) -> list[float]:
        """Half round trips per boundary (collective over the ranks of each boundary; every rank walks
        the boundaries in the same order)."""
        rt = self.runtime
        sched = rt.schedule
        me = rt.rank
        comm = [0.0] * (sched.num_stages - 1)
        for s in range(sched.num_stages - 1):
            a, b = sched.stage_to_rank[s], sched.stage_to_rank[s + 1]
            if a == b or me not in (a, b):
                continue
            group = rt._fwd_group[s]
            ga, gb = (a, b) if rt._stages[0].group is None else (
                dist.get_global_rank(rt._stages[0].group, a), dist.get_global_rank(rt._stages[0].group, b))
            n = max(int(sizes.get(s, 0)), 1)
            buf = torch.zeros(n, dtype=torch.uint8, device=rt.device)
            rtts = []
            for _ in range(self.comm_repeats + 1):
                if rt.device.type == "cuda":
                    torch.cuda.synchronize(rt.device)
                t0 = time.perf_counter()
                if me == a:
                    dist.send(buf, dst=gb, group=group)
                    dist.recv(buf, src=gb, group=group)
                else:
                    dist.recv(buf, src=ga, group=group)
                    dist.send(buf, dst=ga, group=group)
                if rt.device.type == "cuda":
                    torch.cuda.synchronize(rt.device)
                rtts.append((time.perf_counter() - t0) * 1e3)
            comm[s] = _median(rtts[1:]) / 2
        return comm

    def instance(self) -> dict:
        """The measured optpipe-instance/1 (collective: call it on every rank; all get the same dict)."""
        rt = self.runtime
        sched = rt.schedule
        costs = self.stage_costs()
        static = self._static_bytes()
        limit = self._limit_bytes(static, [c["activation"] for c in costs.values()])
        mine = {"rank": rt.rank, "costs": costs, "static": static, "limit": limit, "notes": self.notes}
        world = sched.num_ranks
        group = rt._stages[0].group
        if dist.is_initialized() and dist.get_world_size(group) > 1:
            everyone = [None] * dist.get_world_size(group)
            dist.all_gather_object(everyone, mine, group=group)
        else:
            everyone = [mine]
        by_rank = {x["rank"]: x for x in everyone}
        all_costs = {s: c for x in everyone for s, c in x["costs"].items()}
        sizes = {s: c["output_bytes"] for s, c in all_costs.items()}
        comm = self._comm_ms(sizes)
        if dist.is_initialized() and dist.get_world_size(group) > 1:
            t = torch.tensor(comm, dtype=torch.float64, device=rt.device)  # on the device: NCCL too
            dist.all_reduce(t, op=dist.ReduceOp.MAX, group=group)
            comm = t.tolist()
        devices = []
        for r in range(world):
            d = {"memory_limit": by_rank[r]["limit"], "static_memory": by_rank[r]["static"]}
            if self.pcie_groups is not None:
                d["pcie_group"] = int(self.pcie_groups[r])
            devices.append(d)
        stages = []
        for s in range(sched.num_stages):
            c = all_costs[s]
            st = {"device": sched.stage_to_rank[s], "forward": c["forward"], "backward": c["backward"],
                  "activation": c["activation"], "offload": c["offload"], "reload": c["reload"]}
            if sched.split_backward:
                st["weight"] = c["weight"]
                st["weight_activation"] = c["weight_activation"]
            stages.append(st)
        inst = {"format": "optpipe-instance/1", "name": self.name, "microbatches": sched.microbatches,
                "split_backward": sched.split_backward, "offload_levels": self.offload_levels,
                "comm": comm if comm else 0.0, "devices": devices, "stages": stages}
        return inst


def profile(runtime: ScheduleOptPipe, step, iterations: int = 3, **kwargs) -> dict:
    """Runs `step()` (one training iteration of `runtime`, no optimizer step needed) `iterations`
    times under a Profiler(runtime, **kwargs) and returns the measured instance (collective)."""
    prof = Profiler(runtime, **kwargs)
    with prof:
        for _ in range(iterations):
            step()
    return prof.instance()
