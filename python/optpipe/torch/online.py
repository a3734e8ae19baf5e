# Online re-scheduling in PyTorch (issue 19, part 4): the OptPipe paper's framework (arXiv
# 2510.05186, Fig. 1 and §3.3 as reconstructed in ../shared/background/optpipe-paper.md): start
# training with a schedule that fits, profile a few iterations, solve the measured instance in the
# background, and switch every rank to the solver's schedule at an iteration boundary, as
# `optpipe train --online` does (online/online.h).
#
#   - The first `profile_iterations` steps run under a Profiler (profiler.py). After them every
#     rank takes part in building the measured instance; rank 0 starts the solver on it in a
#     background thread (solver.SolveJob: the CLI in a subprocess, or the bindings, which release
#     the GIL), and training goes on.
#   - At every later iteration boundary, until a decision is made, rank 0 broadcasts (over a gloo
#     group of its own, so it works beside NCCL) either nothing or the new schedule. Rank 0 sends
#     the solver's schedule when the simulator predicts it faster on the measured instance than
#     the running one by more than `switch_threshold` (a share; negative values switch to any
#     schedule the solver returns, for tests). Every rank then checks it in full (ScheduleOptPipe
#     .set_schedule, with the measured instance's memory budget) and runs it from that iteration
#     on: all ranks switch at the same iteration.
#   - The losses do not change: every schedule runs each stage's W (or fused B) in microbatch order
#     (the spec's FIFO rule), so gradients accumulate in the same order and a switch changes only
#     the timing.
#   - Training never waits for the solver (unless `wait_for_solver`, for reproducible runs and
#     tests); `finish()` stops it.
from __future__ import annotations

import math
import threading
from dataclasses import dataclass

import torch.distributed as dist

from .profiler import Profiler
from .runtime import ScheduleOptPipe
from .schedule import load_schedule

__all__ = ["OnlineRescheduler", "SwitchEvent"]


class _FunctionJob:
    """A user's solve function in a background thread, with SolveJob's interface."""

    def __init__(self, fn, instance):
        self._res, self._err = None, None

        def run():
            try:
                self._res = fn(instance)
            except BaseException as e:  # handed to result()
                self._err = e

        self._thread = threading.Thread(target=run, name="optpipe-solve", daemon=True)
        self._thread.start()

    def done(self):
        return not self._thread.is_alive()

    def wait(self, timeout=None):
        self._thread.join(timeout)

    def result(self):
        if self._err is not None:
            raise self._err
        return self._res

    def cancel(self):  # a Python function cannot be stopped; it runs out in its daemon thread
        pass


@dataclass
class SwitchEvent:
    iteration: int               # the first iteration run with the new schedule
    predicted_before: float      # ms, the running schedule simulated on the measured instance
    predicted_after: float       # ms, the new one


class OnlineRescheduler:
    """Wraps a ScheduleOptPipe: call `step()` instead of `runtime.step()` (same arguments), and
    `finish()` at the end. Every rank builds it at the same point (it creates a process group).

    profile_iterations: steps to profile before solving. solver_time: the solver's time limit (s).
    switch_threshold: see the file comment. wait_for_solver: rank 0 waits for the solver at the
    first boundary after profiling. profiler_kwargs: passed to Profiler (memory_limit,
    offload_levels, optimizer, ...). solve_fn: instance -> schedule dict, to replace the solver
    (tests); it runs in the background thread.
    """

    def __init__(self, runtime: ScheduleOptPipe, *, profile_iterations: int = 2, solver_time: float = 10.0,
                 switch_threshold: float = 0.02, wait_for_solver: bool = False,
                 profiler_kwargs: dict | None = None, solve_fn=None):
        if profile_iterations < 1:
            raise ValueError("profile_iterations must be at least 1")
        self.runtime = runtime
        self.profile_iterations = profile_iterations
        self.solver_time = solver_time
        self.switch_threshold = switch_threshold
        self.wait_for_solver = wait_for_solver
        self.solve_fn = solve_fn
        self.profiler = Profiler(runtime, **(profiler_kwargs or {})).start()
        self.iteration = 0
        self.instance: dict | None = None
        self.switches: list[SwitchEvent] = []
        self.log: list[str] = []
        self._job = None
        self._decided = False
        self._distributed = dist.is_initialized() and dist.get_world_size(runtime._stages[0].group) > 1
        group = runtime._stages[0].group
        ranks = None if group is None else dist.get_process_group_ranks(group)
        self._control = dist.new_group(ranks, backend="gloo") if self._distributed else None
        self._src = 0 if runtime._stages[0].group is None else dist.get_global_rank(runtime._stages[0].group, 0)

    @property
    def is_coordinator(self) -> bool:
        return self.runtime.rank == 0

    def step(self, *args, **kwargs):
        if self.iteration >= self.profile_iterations and not self._decided:
            self._boundary()
        out = self.runtime.step(*args, **kwargs)
        self.iteration += 1
        if self.iteration == self.profile_iterations:
            self.instance = self.profiler.instance()
            self.profiler.stop()
            self.log.append(f"iteration {self.iteration}: profiled {self.profile_iterations} iterations into "
                            f"the measured instance")
            if self.is_coordinator:
                self._start_solver()
        return out

    def _start_solver(self):
        from .solver import SolveJob  # noqa: PLC0415 (needs the solver: lazy)
        if self.solve_fn is not None:
            self._job = _FunctionJob(self.solve_fn, self.instance)
        else:
            self._job = SolveJob(self.instance, time_limit=self.solver_time)
        self.log.append(f"iteration {self.iteration}: solver started in the background "
                        f"({self.solver_time:g} s limit)")

    def _decide(self) -> dict:
        """Rank 0: {"final": bool, "schedule": dict or None}."""
        job = self._job
        if self.wait_for_solver:
            job.wait()
        if not job.done():
            return {"final": False, "schedule": None}
        try:
            cand = job.result()
        except Exception as e:
            self.log.append(f"iteration {self.iteration}: the solver failed: {e}; keeping the schedule")
            return {"final": True, "schedule": None}
        if cand is None:
            self.log.append(f"iteration {self.iteration}: the solver returned nothing; keeping the schedule")
            return {"final": True, "schedule": None}
        from .solver import simulate  # noqa: PLC0415
        try:
            load_schedule(cand, num_stages=self.runtime.schedule.num_stages,
                          microbatches=self.runtime.schedule.microbatches)
        except Exception as e:
            self.log.append(f"iteration {self.iteration}: the solver's schedule cannot run here: {e}")
            return {"final": True, "schedule": None}
        before = simulate(self.instance, self.runtime.schedule.to_dict())
        after = simulate(self.instance, cand)
        tb = before.makespan if before.feasible and before.makespan is not None else math.inf
        ta = after.makespan if after.feasible and after.makespan is not None else math.inf
        if ta < tb * (1 - self.switch_threshold) or (self.switch_threshold < 0 and ta < math.inf):
            self.log.append(f"iteration {self.iteration}: switching: predicted {tb:.3f} -> {ta:.3f} ms "
                            f"({cand.get('status', '?')})")
            return {"final": True, "schedule": cand, "before": tb, "after": ta}
        self.log.append(f"iteration {self.iteration}: keeping the schedule: the solver's is predicted "
                        f"{ta:.3f} ms against {tb:.3f} ms (threshold {self.switch_threshold:g})")
        return {"final": True, "schedule": None}

    def _boundary(self):
        msg = self._decide() if self.is_coordinator else None
        if self._distributed:
            box = [msg]
            dist.broadcast_object_list(box, src=self._src, group=self._control)
            msg = box[0]
        if msg["schedule"] is not None:
            self.runtime.set_schedule(msg["schedule"], instance=self.instance)
            self.switches.append(SwitchEvent(self.iteration, msg.get("before", math.nan), msg.get("after", math.nan)))
            if not self.is_coordinator:
                self.log.append(f"iteration {self.iteration}: switched to rank 0's schedule")
        self._decided = msg["final"]

    def finish(self):
        """Stops the solver if it still runs (training ended)."""
        self.profiler.stop()
        if self._job is not None and not self._job.done():
            self._job.cancel()
            self.log.append("finish: the solver was still running and was stopped")
