# OptPipe schedules (optpipe-schedule/1, ../shared/spec/problem.md §3 and §5) for the PyTorch
# runtime: parses the per-rank action lists (`F3.7`, `F3.7@0.5`, `B3.7`, `W3.7`, `R3.7`) and
# checks the whole schedule before anything runs, so that every rank refuses a bad schedule
# with the same message, naming the rank, the position in its list and the action.
#
# Checked here (the spec's structure, §3): each F, B (and W when the backward is split) of every
# stage and microbatch exactly once, all of a stage's actions on one rank, microbatches in
# increasing order per stage and action type, B after its F and W after its B in the same list,
# an R exactly for each F with r > 0, after that F and before its B; and that the lists do not
# deadlock on their cross-rank dependencies (F(s, j) needs F(s-1, j); B(s, j) needs B(s+1, j)).
# Timing and memory (spec §4) are the simulator's business (`optpipe validate`); the runtime
# needs neither to run without deadlock, because it does not wait for memory.
#
# Mirrors torch.distributed.pipelining's `_Action` and `_validate_schedule` in spirit (an action
# is a small immutable tuple, the schedule a rank -> list map), with OptPipe's text form.
from __future__ import annotations

import json
import os
import re
from typing import Any, Iterable, NamedTuple

__all__ = [
    "Action",
    "PipelineSchedule",
    "ScheduleError",
    "parse_action",
    "load_schedule",
    "gpipe_schedule",
    "SCHEDULE_FORMAT",
]

SCHEDULE_FORMAT = "optpipe-schedule/1"

# Fields a schedule file may carry besides the lists (spec §5); any other field is an error.
_INFO_FIELDS = {"makespan", "bubble", "peak_memory", "status", "bound", "gap", "solver"}

_ACTION_RE = re.compile(r"^([FBWR])(\d+)\.(\d+)(?:@([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?))?$")


class ScheduleError(ValueError):
    """A schedule that cannot run. `rank`, `position` and `action` locate the problem (None when
    it concerns the whole schedule)."""

    def __init__(self, message: str, rank: int | None = None, position: int | None = None,
                 action: str | None = None):
        where = ""
        if rank is not None:
            where = f"rank {rank}"
            if position is not None:
                where += f", position {position}"
            if action is not None:
                where += f" ({action})"
            where += ": "
        super().__init__(where + message)
        self.rank, self.position, self.action = rank, position, action


class Action(NamedTuple):
    """One entry of a rank's list. kind: 'F' forward, 'B' backward (input backward when the
    backward is split, else the fused backward), 'W' weight backward, 'R' reload. level: the
    offload fraction r of an F (0 for every other kind)."""

    kind: str
    stage: int
    microbatch: int
    level: float = 0.0

    def __str__(self) -> str:
        text = f"{self.kind}{self.stage}.{self.microbatch}"
        if self.kind == "F" and self.level > 0:
            text += "@" + _format_level(self.level)
        return text

    @property
    def offloads(self) -> bool:
        return self.kind == "F" and self.level > 0


def _format_level(r: float) -> str:
    return f"{r:g}"


def parse_action(text: str, rank: int | None = None, position: int | None = None) -> Action:
    """`F3.7`, `F3.7@0.5`, `B3.7`, `W3.7`, `R3.7` -> Action. Raises ScheduleError."""
    if not isinstance(text, str):
        raise ScheduleError(f"an action must be a string such as 'F0.1', not {text!r}", rank, position)
    m = _ACTION_RE.match(text.strip())
    if not m:
        raise ScheduleError(
            f"{text!r} is not an action (F<stage>.<microbatch>[@r], B<s>.<j>, W<s>.<j> or R<s>.<j>)",
            rank, position)
    kind, stage, mb, level = m.group(1), int(m.group(2)), int(m.group(3)), m.group(4)
    r = 0.0
    if level is not None:
        if kind != "F":
            raise ScheduleError(f"only a forward carries an offload level, not {text!r}", rank, position, text)
        r = float(level)
        if not 0.0 <= r <= 1.0:
            raise ScheduleError(f"offload level {r:g} is outside [0, 1]", rank, position, text)
    return Action(kind, stage, mb, r)


class PipelineSchedule:
    """A checked OptPipe schedule: `pipeline_order[rank]` is that rank's list of Actions (like
    PyTorch's `PipelineScheduleMulti.pipeline_order`).

    Derived: `num_stages`, `microbatches`, `split_backward` (the lists contain W actions),
    `stage_to_rank` (the placement), `offloads` (the F actions with r > 0).
    """

    def __init__(self, lists: Iterable[Iterable[Any]], *, instance: str = "", info: dict | None = None,
                 num_stages: int | None = None, microbatches: int | None = None,
                 split_backward: bool | None = None, offload_levels: Iterable[float] | None = None):
        self.instance = instance
        self.info = dict(info or {})
        order: dict[int, list[Action]] = {}
        for rank, lst in enumerate(lists):
            if isinstance(lst, (str, bytes)) or not hasattr(lst, "__iter__"):
                raise ScheduleError(f"devices[{rank}] must be a list of actions, not {type(lst).__name__}")
            order[rank] = [a if isinstance(a, Action) else parse_action(a, rank, i) for i, a in enumerate(lst)]
        if not order:
            raise ScheduleError("the schedule has no device lists")
        self.pipeline_order = order
        self._check(num_stages, microbatches, split_backward, offload_levels)

    # -- derived views ---------------------------------------------------------------------
    @property
    def num_ranks(self) -> int:
        return len(self.pipeline_order)

    def stages_of(self, rank: int) -> list[int]:
        return sorted(s for s, r in self.stage_to_rank.items() if r == rank)

    @property
    def offloads(self) -> list[Action]:
        return [a for lst in self.pipeline_order.values() for a in lst if a.offloads]

    def to_dict(self) -> dict:
        d = {"format": SCHEDULE_FORMAT, "instance": self.instance,
             "devices": [[str(a) for a in self.pipeline_order[r]] for r in range(self.num_ranks)]}
        d.update({k: v for k, v in self.info.items() if k in _INFO_FIELDS})
        return d

    def same_layout(self, other: "PipelineSchedule") -> bool:
        """Same ranks, stages, placement, microbatches and split: one runtime can run both."""
        return (self.num_ranks == other.num_ranks and self.stage_to_rank == other.stage_to_rank
                and self.microbatches == other.microbatches and self.split_backward == other.split_backward)

    def __repr__(self) -> str:
        return (f"PipelineSchedule({self.num_ranks} ranks, {self.num_stages} stages, {self.microbatches} "
                f"microbatches, {'split' if self.split_backward else 'fused'} backward, "
                f"{len(self.offloads)} offloads)")

    # -- the checks ------------------------------------------------------------------------
    def _check(self, num_stages, microbatches, split_backward, offload_levels):
        order = self.pipeline_order
        # Placement: every stage on the rank of its first action.
        stage_to_rank: dict[int, int] = {}
        first_seen: dict[int, tuple[int, int]] = {}
        for rank, lst in order.items():
            for pos, a in enumerate(lst):
                if a.stage not in stage_to_rank:
                    stage_to_rank[a.stage] = rank
                    first_seen[a.stage] = (rank, pos)
                elif stage_to_rank[a.stage] != rank:
                    r0, p0 = first_seen[a.stage]
                    raise ScheduleError(f"stage {a.stage} is on rank {r0} (position {p0}); every action of a stage "
                                        f"must be on its rank", rank, pos, str(a))
        if not stage_to_rank:
            raise ScheduleError("the schedule has no actions")
        S = max(stage_to_rank) + 1 if num_stages is None else num_stages
        missing_stages = [s for s in range(S) if s not in stage_to_rank]
        if missing_stages:
            raise ScheduleError(f"stage(s) {missing_stages} have no actions (stages 0..{S - 1} expected)")
        for rank, lst in order.items():
            for pos, a in enumerate(lst):
                if a.stage >= S:
                    raise ScheduleError(f"stage {a.stage} out of range (the pipeline has {S} stages)", rank, pos, str(a))
        unused = [r for r in order if not order[r]]
        if unused:
            raise ScheduleError(f"rank(s) {unused} hold no stage (every device runs at least one stage)")

        m = max(a.microbatch for lst in order.values() for a in lst) + 1 if microbatches is None else microbatches
        has_w = any(a.kind == "W" for lst in order.values() for a in lst)
        split = has_w if split_backward is None else bool(split_backward)
        levels = None if offload_levels is None else sorted(float(x) for x in offload_levels)

        # Each op once, FIFO per stage and kind, B after F, W after B, R between its F and B.
        first_pos: dict[tuple[str, int, int], tuple[int, int]] = {}
        for rank, lst in order.items():
            for pos, a in enumerate(lst):
                first_pos.setdefault((a.kind, a.stage, a.microbatch), (rank, pos))
        pos_of: dict[tuple[str, int, int], tuple[int, int]] = {}
        last_mb: dict[tuple[str, int], int] = {}
        for rank, lst in order.items():
            for pos, a in enumerate(lst):
                where = (rank, pos, str(a))
                if a.microbatch >= m:
                    raise ScheduleError(f"microbatch {a.microbatch} out of range (the schedule has {m} microbatches)",
                                        *where)
                if a.kind == "W" and not split:
                    raise ScheduleError("a W action in a schedule whose backward is fused (no split)", *where)
                key = (a.kind, a.stage, a.microbatch)
                if key in pos_of:
                    raise ScheduleError(f"{a.kind}{a.stage}.{a.microbatch} appears twice (first at position "
                                        f"{pos_of[key][1]})", *where)
                prev = last_mb.get((a.kind, a.stage), -1)
                if a.microbatch < prev:
                    raise ScheduleError(f"microbatches of {a.kind} on stage {a.stage} must be in increasing order "
                                        f"({a.kind}{a.stage}.{prev} comes before it)", *where)
                last_mb[(a.kind, a.stage)] = a.microbatch
                if a.kind == "F" and a.level > 0 and levels is not None and not any(
                        abs(a.level - x) <= 1e-12 for x in levels):
                    raise ScheduleError(f"offload level {a.level:g} is not one of the instance's offload_levels "
                                        f"{levels}", *where)
                if a.kind == "B" and ("F", a.stage, a.microbatch) not in pos_of:
                    raise ScheduleError(f"B{a.stage}.{a.microbatch} comes before its forward "
                                        f"F{a.stage}.{a.microbatch}", *where)
                if a.kind == "W" and ("B", a.stage, a.microbatch) not in pos_of:
                    raise ScheduleError(f"W{a.stage}.{a.microbatch} comes before its backward "
                                        f"B{a.stage}.{a.microbatch}", *where)
                if a.kind == "R":
                    f = pos_of.get(("F", a.stage, a.microbatch))
                    if f is None:
                        b = pos_of.get(("B", a.stage, a.microbatch))
                        if b is not None:
                            raise ScheduleError(f"R{a.stage}.{a.microbatch} comes after its backward "
                                                f"B{a.stage}.{a.microbatch} (position {b[1]}); a reload must come "
                                                f"between its F and its B", *where)
                        raise ScheduleError(f"R{a.stage}.{a.microbatch} comes before its forward "
                                            f"F{a.stage}.{a.microbatch}", *where)
                    if ("B", a.stage, a.microbatch) in pos_of:
                        b = pos_of[("B", a.stage, a.microbatch)]
                        raise ScheduleError(f"R{a.stage}.{a.microbatch} comes after its backward "
                                            f"B{a.stage}.{a.microbatch} (position {b[1]}); a reload must come "
                                            f"between its F and its B", *where)
                    fa = order[f[0]][f[1]]
                    if not fa.offloads:
                        raise ScheduleError(f"R{a.stage}.{a.microbatch} reloads an activation that "
                                            f"F{a.stage}.{a.microbatch} (position {f[1]}) does not offload", *where)
                if a.kind == "B":
                    f = pos_of[("F", a.stage, a.microbatch)]
                    fa = order[f[0]][f[1]]
                    if fa.offloads and ("R", a.stage, a.microbatch) not in pos_of:
                        later = first_pos.get(("R", a.stage, a.microbatch))
                        if later is not None:
                            raise ScheduleError(f"R{a.stage}.{a.microbatch} comes after its backward "
                                                f"B{a.stage}.{a.microbatch} (position {pos}); a reload must come "
                                                f"between its F and its B", later[0], later[1],
                                                f"R{a.stage}.{a.microbatch}")
                        raise ScheduleError(f"B{a.stage}.{a.microbatch} needs the reload R{a.stage}.{a.microbatch} "
                                            f"before it: {fa} (position {f[1]}) offloads and no "
                                            f"R{a.stage}.{a.microbatch} reloads it", *where)
                pos_of[key] = (rank, pos)

        # Completeness: every op of every stage and microbatch.
        kinds = ("F", "B", "W") if split else ("F", "B")
        for s in range(S):
            rank = stage_to_rank[s]
            for kind in kinds:
                for j in range(m):
                    if (kind, s, j) not in pos_of:
                        raise ScheduleError(f"{kind}{s}.{j} is missing (stage {s} is on rank {rank}; "
                                            f"{m} microbatches, {'split' if split else 'fused'} backward)",
                                            rank, len(order[rank]))
            for j in range(m):
                f = pos_of[("F", s, j)]
                if order[f[0]][f[1]].offloads and ("R", s, j) not in pos_of:
                    raise ScheduleError(f"{order[f[0]][f[1]]} offloads but no R{s}.{j} reloads it", f[0], f[1],
                                        str(order[f[0]][f[1]]))

        self.stage_to_rank = dict(sorted(stage_to_rank.items()))
        self.num_stages, self.microbatches, self.split_backward = S, m, split
        self._check_deadlock()

    def _check_deadlock(self):
        """Runs the lists on their dependencies alone (no timing, no memory): each rank's next action
        starts when F(s-1, j) (for an F) or B(s+1, j) (for a B) is done. Stuck with work left means
        the ranks wait on each other in a cycle, and the runtime would hang."""
        order, S = self.pipeline_order, self.num_stages
        done: set[tuple[str, int, int]] = set()
        ptr = {r: 0 for r in order}
        remaining = sum(len(lst) for lst in order.values())
        while remaining:
            progressed = False
            for r, lst in order.items():
                while ptr[r] < len(lst):
                    a = lst[ptr[r]]
                    if a.kind == "F" and a.stage > 0 and ("F", a.stage - 1, a.microbatch) not in done:
                        break
                    if a.kind == "B" and a.stage < S - 1 and ("B", a.stage + 1, a.microbatch) not in done:
                        break
                    done.add((a.kind, a.stage, a.microbatch))
                    ptr[r] += 1
                    remaining -= 1
                    progressed = True
            if not progressed:
                waits = []
                for r, lst in order.items():
                    if ptr[r] < len(lst):
                        a = lst[ptr[r]]
                        need = f"F{a.stage - 1}.{a.microbatch}" if a.kind == "F" else f"B{a.stage + 1}.{a.microbatch}"
                        waits.append(f"rank {r} at position {ptr[r]} ({a}) waits for {need} on rank "
                                     f"{self._rank_of(need)}")
                raise ScheduleError("the lists deadlock: " + "; ".join(waits))

    def _rank_of(self, text: str) -> int:
        return self.stage_to_rank[parse_action(text).stage]


def load_schedule(source: Any, **expect) -> PipelineSchedule:
    """A PipelineSchedule from an optpipe-schedule/1 dict, a JSON file path, a JSON string, an
    object with `.to_dict()` (the bindings' Schedule), or a PipelineSchedule (returned as is when
    no expectations are given). `expect`: num_stages, microbatches, split_backward, offload_levels,
    checked against the lists."""
    if isinstance(source, PipelineSchedule):
        if not expect:
            return source
        source = source.to_dict()
    if hasattr(source, "to_dict") and not isinstance(source, dict):
        source = source.to_dict()
    if isinstance(source, (str, os.PathLike)):
        text = str(source)
        if isinstance(source, os.PathLike) or not text.lstrip().startswith("{"):
            with open(source) as f:
                try:
                    source = json.load(f)
                except json.JSONDecodeError as e:
                    raise ScheduleError(f"{source}: not JSON: {e}") from None
        else:
            source = json.loads(text)
    if not isinstance(source, dict):
        raise ScheduleError(f"a schedule is an {SCHEDULE_FORMAT} object, not {type(source).__name__}")
    fmt = source.get("format")
    if fmt != SCHEDULE_FORMAT:
        raise ScheduleError(f"format is {fmt!r}, expected {SCHEDULE_FORMAT!r}")
    unknown = set(source) - {"format", "instance", "devices"} - _INFO_FIELDS
    if unknown:
        raise ScheduleError(f"unknown field(s) {sorted(unknown)} in the schedule")
    if "devices" not in source or not isinstance(source["devices"], list):
        raise ScheduleError("the schedule has no 'devices' list")
    info = {k: v for k, v in source.items() if k in _INFO_FIELDS}
    return PipelineSchedule(source["devices"], instance=str(source.get("instance", "")), info=info, **expect)


def gpipe_schedule(placement: list[int], microbatches: int, split_backward: bool = True) -> PipelineSchedule:
    """GPipe's order for any placement (Huang et al. 2019): on each rank all forwards of its stages
    in stage order, then all backwards in reverse stage order (each followed by its W when split).
    Needs no solver, so it is the schedule a run can start and profile with; it keeps every
    activation of the iteration, so it needs the most memory."""
    ranks = max(placement) + 1
    lists: list[list[str]] = [[] for _ in range(ranks)]
    for r in range(ranks):
        mine = [s for s, d in enumerate(placement) if d == r]
        for s in mine:
            lists[r] += [f"F{s}.{j}" for j in range(microbatches)]
        for s in reversed(mine):
            for j in range(microbatches):
                lists[r].append(f"B{s}.{j}")
                if split_backward:
                    lists[r].append(f"W{s}.{j}")
    return PipelineSchedule(lists, instance="gpipe", num_stages=len(placement), microbatches=microbatches,
                            split_backward=split_backward)
