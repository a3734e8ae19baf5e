# The PyTorch runtime for OptPipe schedules (issue 19, part 2): runs an optpipe-schedule/1
# schedule, offloads and reloads included, on the user's `PipelineStage` objects (one per stage
# id; one-stage-per-rank, V and loop placements), one process per rank (per GPU under torchrun).
#
# `ScheduleOptPipe` is a `torch.distributed.pipelining.PipelineScheduleMulti` (so `step()`,
# microbatch splitting, loss collection and gradient scaling are PyTorch's) whose
# `_step_microbatches` runs this rank's list in order, as `_PipelineScheduleRuntime` runs its own
# actions, with the stages' public-ish methods:
#
#   F s.j[@r]  wait for the input (if stage s-1 is on another rank), forward_one_chunk under the
#              offloader's saved-tensor hooks (and the loss on the last stage), hand the output to
#              stage s+1 (set_local_fwd_input on this rank, else a non-blocking send), then, when
#              r > 0, start the offload of fraction r of what the forward saved (offload.py)
#   R s.j      start the reload
#   B s.j      wait for the output gradient (if stage s+1 is on another rank) and for the reload,
#              backward_one_chunk(full_backward=False) when the backward is split (the input
#              backward, PyTorch's `I`), else the full backward; pass the input gradient back
#   W s.j      backward_weight_one_chunk
#
# Messages. Each stage boundary that crosses ranks gets its own process group per direction
# (created once, collectively, when the runtime is built), like the C++ executor's one
# communicator per boundary and direction (runtime/program.h). On each such channel both sides
# handle microbatches in increasing order (the spec's FIFO rule), so sends and receives match in
# order even on NCCL, whatever the two ranks' lists interleave; a receive is posted a few actions
# before the action that needs it (`recv_lookahead`), every send is non-blocking and waited for
# at the end of the iteration (or earlier, when it has completed). A schedule whose lists do not
# deadlock on their dependencies (checked in schedule.py before anything runs) therefore runs to
# the end.
#
# Memory (spec §4, memory_fit). An R is a request: in the simulator the reload itself waits for
# its offload's end and for room, while the compute stream goes on, and schedules use that (the
# solver requests reloads early). Given the instance the schedule was made for, the runtime starts
# a reload (_ReloadGate) when (1) every F start and reload start that the simulation put before it
# on this device has happened here (the C++ executor's allocation tickets, runtime/program.h; the
# order comes from solver.allocation_order), so a reload never takes the room the simulator gave an
# F, and (2) the saved bytes on the device (the offloader's count, offloads in flight included)
# leave room for it within limit - static_memory, the room the B and W before it free; checked
# after every action, in request order (one H2D channel). Every wait is for something earlier in
# the same list, so this cannot deadlock. With only a byte budget (memory_budget, or when the
# simulation is not available), (2) alone. On CUDA an F that needs the room of offloads still in
# flight waits for them (spec: only offloads can free memory for a waiting F). A B whose reload has
# not started forces it (`forced_reloads`: the run then strays from the simulation). Without an
# instance or budget, a reload starts at its R. memory.py reports the measured peak against the
# simulator's.
#
# The whole schedule is checked when the runtime is built and when it is switched
# (`set_schedule`), before any stage runs: a schedule missing a reload, with a reload after its B,
# or otherwise malformed raises ScheduleError naming the rank, position and action.
from __future__ import annotations

import collections
import hashlib
import inspect
import json
import time
import warnings
from dataclasses import dataclass
from typing import Any, Callable

import torch
import torch.distributed as dist
from torch.distributed.pipelining.schedules import PipelineScheduleMulti

from .offload import ActivationOffloader
from .schedule import Action, PipelineSchedule, ScheduleError, load_schedule
from .units import parse_bytes

__all__ = ["ScheduleOptPipe", "ActionTiming"]


class _ReloadGate:
    """Decides when requested reloads start (see the file comment). `plan`: this rank's allocation
    order [('F'|'R', stage, mb), ...] from the simulation, or None; `budget`: activation bytes, or
    None."""

    def __init__(self, off: ActivationOffloader, budget: float | None, plan: list | None):
        self.off, self.budget, self.plan = off, budget, plan
        self.pending: collections.deque = collections.deque()  # requested, not started (request order)
        self.forced = self.delayed = 0
        if plan is not None:
            self.position = {e: i for i, e in enumerate(plan)}
            self.done: set = set()
            self.next = 0  # plan[:next] all happened

    def _happened(self, event):
        if self.plan is None or event not in self.position:
            return
        self.done.add(event)
        while self.next < len(self.plan) and self.plan[self.next] in self.done:
            self.next += 1

    def _start(self, key, forced=False):
        self.pending.remove(key)
        self.off.reload(*key)
        self._happened(("R",) + key)
        self.forced += int(forced)

    def _turn(self, key) -> bool:
        """Its turn in the plan (every allocation the simulation made before it has happened) and
        room in the budget (the plan orders allocations, the frees of B and W give the room)."""
        if self.plan is not None and self.position.get(("R",) + key, -1) > self.next:
            return False
        if self.budget is None:
            return True
        off = self.off
        return off.resident_bytes + off.inflight_offload_bytes() + off.reload_bytes(*key) <= self.budget + 1

    def start_ready(self):
        """After every action: start the reloads whose turn has come, in request order."""
        while self.pending and self._turn(self.pending[0]):
            self._start(self.pending[0])

    def request(self, stage, mb):
        self.pending.append((stage, mb))
        self.start_ready()
        if (stage, mb) in self.pending:
            self.delayed += 1

    def before_forward(self, stage, mb):
        """The reloads the simulation started before this F start first (forced if their turn has not
        come: the run strayed from the plan)."""
        if self.plan is None:
            return
        self.start_ready()
        mine = self.position.get(("F", stage, mb))
        for key in list(self.pending):
            if mine is not None and self.position.get(("R",) + key, len(self.plan)) < mine:
                self._start(key, forced=True)

    def after_forward(self, stage, mb):
        self._happened(("F", stage, mb))

    def before_backward(self, stage, mb):
        """B needs its reload: start it, and the ones requested before it (channel order)."""
        if (stage, mb) not in self.pending:
            return
        self.start_ready()
        while (stage, mb) in self.pending:
            self._start(self.pending[0], forced=True)


@dataclass
class ActionTiming:
    """One compute action's duration in the last profiled iteration (ms): the compute alone, after
    its receive and reload waits."""

    action: Action
    ms: float


def _accepts(fn, name: str) -> bool:
    try:
        return name in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def _without_self_init_ops(stages) -> None:
    """PyTorch 2.11's first step (`_initialize_stages`) sends a dummy tensor to each stage's two
    neighbours and receives one from each, to set up the communicators, also when the neighbour is
    on the same rank; gloo has no connection to its own rank and fails ("Pair is not connected"),
    so a V or loop placement with two adjacent stages on one rank could not run there. Later
    versions do not send these messages. Wraps each stage's `_get_init_p2p_neighbors_ops` (where
    it exists) to leave out the messages to its own rank: both ends of such a message are on this
    rank, so nothing else waits for them; the messages between ranks are PyTorch's as before."""
    for st in stages:
        make = getattr(st, "_get_init_p2p_neighbors_ops", None)
        if make is None or getattr(make, "_optpipe_without_self", False):
            continue

        def ops(make=make, me=st.group_rank):
            return [op for op in make() if getattr(op, "group_peer", None) != me]

        ops._optpipe_without_self = True
        st._get_init_p2p_neighbors_ops = ops


class ScheduleOptPipe(PipelineScheduleMulti):
    """Runs an OptPipe schedule on this rank's stages.

    stages: this rank's PipelineStage objects, one per stage id the schedule puts on this rank
        (any order). Every rank of the pipeline builds its runtime at the same point: the
        constructor creates process groups collectively.
    schedule: optpipe-schedule/1 as a dict, a JSON path, an object with `.to_dict()` (the
        bindings' Schedule) or a PipelineSchedule. Rank r runs `devices[r]`.
    loss_fn, args_chunk_spec, kwargs_chunk_spec, output_merge_spec, scale_grads: as in
        PipelineScheduleMulti. n_microbatches defaults to the schedule's.
    recv_lookahead: how many actions ahead receives are posted.
    instance: the optpipe-instance/1 (dict, path or `.to_dict()` object) the schedule was made for;
        its memory_limit - static_memory of this rank becomes the activation budget (see the file
        comment). memory_budget: that budget in bytes directly (one number, or one per rank).
    """

    def __init__(self, stages: list, schedule: Any, loss_fn: Callable | None = None, *,
                 n_microbatches: int | None = None, scale_grads: bool = True, recv_lookahead: int = 2,
                 instance: Any = None, memory_budget: Any = None,
                 args_chunk_spec=None, kwargs_chunk_spec=None, output_merge_spec=None):
        if not stages:
            raise ValueError("ScheduleOptPipe needs this rank's stages")
        stages = sorted(stages, key=lambda s: s.stage_index)
        num_stages = stages[0].num_stages
        sched = load_schedule(schedule, num_stages=num_stages, microbatches=n_microbatches)
        self._check_stages(stages, sched)
        super().__init__(stages, sched.microbatches, loss_fn=loss_fn, args_chunk_spec=args_chunk_spec,
                         kwargs_chunk_spec=kwargs_chunk_spec, output_merge_spec=output_merge_spec,
                         scale_grads=scale_grads)
        self.schedule = sched
        self.pipeline_order: dict[int, list[Action]] = sched.pipeline_order
        self.stage_index_to_group_rank = dict(sched.stage_to_rank)
        for st in self._stages:
            st.stage_index_to_group_rank = self.stage_index_to_group_rank
        self.recv_lookahead = max(0, int(recv_lookahead))
        self.device = torch.device(stages[0].device)
        self.offloader = ActivationOffloader({st.stage_index: st.submod for st in self._stages}, self.device)
        self.memory_budget: float | None = None
        self.allocation_plan: list | None = None  # this rank's allocation order (from the simulation)
        self._instance = None
        self._set_budget(instance, memory_budget)
        self.forced_reloads = 0    # in the last step: reloads a B (or an F the plan put after them) had to start early
        self.delayed_reloads = 0   # in the last step: reloads that waited after their R for room
        self._saved_bytes: dict[int, int] = {}  # stage -> bytes its last forward saved
        self._agree_on_schedule(sched)
        self._make_channels(sched)
        # Profiling (profiler.py switches it on): per compute action times of the last step.
        self.record_timings = False
        self.last_timings: list[ActionTiming] = []
        self.last_step_ms: float | None = None
        self.last_peak_memory: int | None = None  # CUDA: torch.cuda.max_memory_allocated in the last step
        self.output_bytes: dict[int, int] = {}    # stage -> bytes of its output (the message to stage + 1)
        self.step_observers: list[Callable[["ScheduleOptPipe"], None]] = []  # called after every step
        self._fwd_takes_save_output = _accepts(stages[0].forward_one_chunk, "save_forward_output")
        self._loss_takes_kwargs = _accepts(self._maybe_compute_loss, "loss_kwargs")

    # -- schedule ---------------------------------------------------------------------------------
    @property
    def rank(self) -> int:
        return self._stages[0].group_rank

    @rank.setter
    def rank(self, value):  # PipelineScheduleMulti.__init__ assigns it; the stages know it
        pass

    def _check_stages(self, stages, sched: PipelineSchedule):
        rank, world = stages[0].group_rank, stages[0].group_size
        if sched.num_ranks != world:
            raise ScheduleError(f"the schedule has {sched.num_ranks} device lists but the pipeline group has "
                                f"{world} ranks")
        mine = sched.stages_of(rank)
        have = [st.stage_index for st in stages]
        if have != mine:
            raise ScheduleError(f"rank {rank} was given stages {have} but the schedule puts stages {mine} on it")

    def _set_budget(self, instance, memory_budget):
        if memory_budget is not None:
            b = memory_budget[self.rank] if isinstance(memory_budget, (list, tuple)) else memory_budget
            self.memory_budget = parse_bytes(b)
            self._instance, self.allocation_plan = None, None
            return
        if instance is not None:
            if hasattr(instance, "to_dict") and not isinstance(instance, dict):
                instance = instance.to_dict()
            if not isinstance(instance, dict):
                with open(instance) as f:
                    instance = json.load(f)
            self._instance = instance
        if self._instance is None:
            return
        dev = self._instance["devices"][self.rank]
        self.memory_budget = parse_bytes(dev["memory_limit"]) - parse_bytes(dev.get("static_memory", 0))
        self.allocation_plan = None
        if self.schedule.offloads:
            from . import solver  # noqa: PLC0415 (needs the simulator: lazy)
            try:
                self.allocation_plan = solver.allocation_order(self._instance, self.schedule.to_dict()).get(self.rank, [])
            except Exception as e:
                warnings.warn(f"rank {self.rank}: no simulated allocation order ({e}); reloads start when the "
                              f"budget has room", RuntimeWarning, stacklevel=3)

    def set_schedule(self, schedule: Any, instance: Any = None, memory_budget: Any = None):
        """Switch to another schedule for the next step (every rank must switch at the same step).
        It must keep the placement, the microbatch count and the split; it is checked in full
        first. `instance` / `memory_budget`: as in the constructor (kept when not given)."""
        sched = load_schedule(schedule, num_stages=self._num_stages, microbatches=self._n_microbatches)
        if not sched.same_layout(self.schedule):
            raise ScheduleError(f"the new schedule changes the layout ({sched!r} placed {sched.stage_to_rank}) "
                                f"of the running one ({self.schedule!r} placed {self.schedule.stage_to_rank})")
        self.schedule = sched
        self.pipeline_order = sched.pipeline_order
        self._set_budget(instance, memory_budget)

    def _agree_on_schedule(self, sched: PipelineSchedule):
        """Every rank must run the same schedule; a rank that read another file would hang the run."""
        group = self._stages[0].group
        if not dist.is_initialized() or dist.get_world_size(group) == 1:
            return
        digest = hashlib.sha256(json.dumps(sched.to_dict()["devices"]).encode()).hexdigest()
        got = [None] * dist.get_world_size(group)
        dist.all_gather_object(got, digest, group=group)
        if len(set(got)) != 1:
            raise ScheduleError("the ranks were given different schedules (their action lists differ)")

    def _make_channels(self, sched: PipelineSchedule):
        """A process group per stage boundary that crosses ranks and per direction, created in the same
        order on every rank: dist.new_group is collective over the whole job, so this supports one
        pipeline per job. (use_local_synchronization would let only the two ranks take part, but
        PyTorch then names a group by its ranks, and a boundary's two directions, or a V's two
        boundaries between the same ranks, would get one name: the run hangs.)"""
        self._fwd_group: dict[int, Any] = {}
        self._bwd_group: dict[int, Any] = {}
        group = self._stages[0].group
        to_global = (lambda r: r) if group is None else (lambda r: dist.get_global_rank(group, r))
        for s in range(sched.num_stages - 1):
            a, b = sched.stage_to_rank[s], sched.stage_to_rank[s + 1]
            if a == b:
                continue
            ranks = sorted({to_global(a), to_global(b)})
            self._fwd_group[s] = dist.new_group(ranks)
            self._bwd_group[s] = dist.new_group(ranks)

    # -- one iteration ------------------------------------------------------------------------------
    def _step_microbatches(self, arg_mbs=None, kwarg_mbs=None, target_mbs=None, losses=None,
                           return_outputs: bool = True, loss_kwargs: dict | None = None):
        arg_mbs, kwarg_mbs = self._check_inputs(arg_mbs, kwarg_mbs, target_mbs, losses)
        first_target = target_mbs[0] if target_mbs is not None else None
        _without_self_init_ops(self._stages)
        if _accepts(self._initialize_stages, "loss_kwargs"):
            self._initialize_stages(arg_mbs[0], kwarg_mbs[0], first_target, loss_kwargs)
        else:  # pragma: no cover (older PyTorch)
            self._initialize_stages(arg_mbs[0], kwarg_mbs[0])

        sched = self.schedule
        me = self.rank
        actions = self.pipeline_order[me]
        by_index = {st.stage_index: st for st in self._stages}
        S, m = sched.num_stages, sched.microbatches
        split = sched.split_backward
        cuda = self.device.type == "cuda"
        off = self.offloader
        off.new_iteration()
        off.reset_peak()
        off.timing = self.record_timings
        if cuda:
            torch.cuda.reset_peak_memory_stats(self.device)
        timings: list[tuple[Action, Any, Any]] = []
        recvs: dict[tuple[str, int, int], list] = {}
        sends: list[tuple[list, Callable | None]] = []
        backward_count = {s: 0 for s in by_index}
        budget = self.memory_budget
        gate = _ReloadGate(off, budget, self.allocation_plan)
        t_start = time.perf_counter()

        def recv_of(a: Action):
            if a.kind == "F" and a.stage > 0 and a.stage - 1 not in by_index:
                return ("act", a.stage, a.microbatch)
            if a.kind == "B" and a.stage < S - 1 and a.stage + 1 not in by_index:
                return ("grad", a.stage, a.microbatch)
            return None

        def post(i: int):
            if i >= len(actions):
                return
            key = recv_of(actions[i])
            if key is None or key in recvs:
                return
            kind, s, j = key
            stage = by_index[s]
            if kind == "act":
                ops, group = stage.get_fwd_recv_ops(j), self._fwd_group[s - 1]
            else:
                ops, group = stage.get_bwd_recv_ops(j), self._bwd_group[s]
            recvs[key] = [dist.irecv(op.tensor, src=op.peer, group=group) for op in ops]

        def wait_recv(a: Action):
            key = recv_of(a)
            if key is not None:
                for w in recvs.pop(key):
                    w.wait()

        def reap_sends():
            still = []
            for works, release in sends:
                if all(w.is_completed() for w in works):
                    for w in works:
                        w.wait()
                    if release is not None:
                        release()
                else:
                    still.append((works, release))
            sends[:] = still

        def clock():
            if cuda:
                ev = torch.cuda.Event(enable_timing=True)
                ev.record()
                return ev
            return time.perf_counter()

        try:
            for i, a in enumerate(actions):
                for k in range(i, i + 1 + self.recv_lookahead):
                    post(k)
                stage = by_index[a.stage]
                j = a.microbatch
                if a.kind == "F":
                    wait_recv(a)
                    gate.before_forward(a.stage, j)
                    if budget is not None and a.stage in self._saved_bytes:
                        off.wait_for_offloads(self._saved_bytes[a.stage], budget)
                    t0 = clock() if self.record_timings else None
                    with off.capture(a.stage, j):
                        if self._fwd_takes_save_output:
                            out = stage.forward_one_chunk(j, arg_mbs[j], kwarg_mbs[j],
                                                          save_forward_output=return_outputs)
                        else:  # pragma: no cover (older PyTorch)
                            out = stage.forward_one_chunk(j, arg_mbs[j], kwarg_mbs[j])
                        if self._loss_takes_kwargs:
                            self._maybe_compute_loss(stage, out, target_mbs, j, loss_kwargs)
                        else:  # pragma: no cover
                            self._maybe_compute_loss(stage, out, target_mbs, j)
                    if self.record_timings:
                        timings.append((a, t0, clock()))
                    if a.stage not in self.output_bytes:
                        self.output_bytes[a.stage] = sum(t.numel() * t.element_size() for t in
                                                         (out if isinstance(out, (tuple, list)) else (out,))
                                                         if isinstance(t, torch.Tensor))
                    if a.stage + 1 in by_index:
                        by_index[a.stage + 1].set_local_fwd_input(out, j)
                    elif not stage.is_last:
                        group = self._fwd_group[a.stage]
                        works = [dist.isend(op.tensor, dst=op.peer, group=group)
                                 for op in stage.get_fwd_send_ops(j)]
                        release = getattr(stage, "release_fwd_send_outputs", None)
                        sends.append((works, (lambda st=stage, jj=j: st.release_fwd_send_outputs(jj))
                                      if release is not None else None))
                    gate.after_forward(a.stage, j)
                    self._saved_bytes[a.stage] = off.records[(a.stage, j)].stats.saved_bytes
                    if a.level > 0:
                        off.offload(a.stage, j, a.level)
                elif a.kind == "R":
                    gate.request(a.stage, j)
                elif a.kind == "B":
                    wait_recv(a)
                    gate.before_backward(a.stage, j)
                    off.wait_reload(a.stage, j)
                    loss = self._maybe_get_loss(stage, j) if stage.is_last else None
                    t0 = clock() if self.record_timings else None
                    if not split:
                        backward_count[a.stage] += 1
                    stage.backward_one_chunk(j, loss=loss, full_backward=not split,
                                             last_backward=(not split and backward_count[a.stage] == m))
                    if self.record_timings:
                        timings.append((a, t0, clock()))
                    if split:
                        off.after_backward(a.stage, j)
                    else:
                        off.release(a.stage, j)
                    if a.stage - 1 in by_index:
                        by_index[a.stage - 1].set_local_bwd_input(stage.get_local_bwd_output(j), j)
                    elif not stage.is_first:
                        group = self._bwd_group[a.stage - 1]
                        works = [dist.isend(op.tensor, dst=op.peer, group=group)
                                 for op in stage.get_bwd_send_ops(j)]
                        sends.append((works, None))
                elif a.kind == "W":
                    backward_count[a.stage] += 1
                    t0 = clock() if self.record_timings else None
                    stage.backward_weight_one_chunk(j, last_backward=backward_count[a.stage] == m)
                    if self.record_timings:
                        timings.append((a, t0, clock()))
                    off.release(a.stage, j)
                if a.kind != "R":
                    gate.start_ready()
                reap_sends()
        except Exception as e:
            raise RuntimeError(f"rank {me}: running {a} (position {i} of its list) failed: {e}") from e
        for works, release in sends:
            for w in works:
                w.wait()
            if release is not None:
                release()
        self.forced_reloads, self.delayed_reloads = gate.forced, gate.delayed
        if gate.pending:  # cannot happen for a checked schedule: every B starts its own reload
            raise RuntimeError(f"rank {me}: reloads never started: {list(gate.pending)}")
        if recvs:  # cannot happen for a checked schedule
            raise RuntimeError(f"rank {me}: receives never consumed: {sorted(recvs)}")

        scale = self._n_microbatches if self.scale_grads else 1
        for st in self._stages:
            if hasattr(st, "perform_reduce_grad"):
                st.perform_reduce_grad(scale)
            elif scale != 1:  # pragma: no cover (older PyTorch)
                st.scale_grads(scale)

        if cuda and self.record_timings:
            torch.cuda.synchronize(self.device)
        self.last_step_ms = (time.perf_counter() - t_start) * 1e3
        if self.record_timings:
            if cuda:
                self.last_timings = [ActionTiming(a, t0.elapsed_time(t1)) for a, t0, t1 in timings]
                off.finish_timing()
            else:
                self.last_timings = [ActionTiming(a, (t1 - t0) * 1e3) for a, t0, t1 in timings]
        if cuda:
            self.last_peak_memory = torch.cuda.max_memory_allocated(self.device)
        self._update_losses(self._stages, losses)
        for observe in list(self.step_observers):
            observe(self)

    # -- what the last step did ------------------------------------------------------------------------
    @property
    def offload_stats(self):
        """Per forward of the last step on this rank: saved and moved bytes (offload.OffloadStats)."""
        return list(self.offloader.stats)
