# The few things optpipe.torch asks of the OptPipe solver: solve an instance, run a heuristic,
# simulate a schedule (makespan and peak memory per device), validate one. Used by online
# re-scheduling (online.py), the memory report (memory.py) and the examples; nothing else in
# optpipe.torch needs the solver, and nothing imports it at import time.
#
# Two ways to reach it:
#   - the Python bindings (`import optpipe`, the compiled `optpipe._optpipe`), imported lazily
#     inside each function, never when optpipe.torch is imported;
#   - the `optpipe` command line binary ($OPTPIPE_CLI, else build/optpipe in this checkout, else
#     `optpipe` on PATH), used when the bindings are not importable.
# The bindings were written in parallel with this module; the calls into them below follow their
# interface as read from the h-py branch while it was in progress (Instance/Schedule.from_dict,
# solve(instance, time_limit=...) -> SolveResult.schedule, schedule(instance, heuristic),
# simulate(instance, schedule, timeline=...) -> SimResult with timeline and transfers,
# validate(...) -> violations). When a call does not match, a warning names it and the CLI answers
# instead. The integrator switches these functions to the bindings for good. The CLI path is the
# one the tests run.
#
# Instances and schedules are passed as optpipe-instance/1 and optpipe-schedule/1 dicts (or
# paths, or objects with `.to_dict()`).
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .units import parse_bytes

__all__ = ["find_cli", "solve", "heuristic_schedule", "simulate", "validate", "allocation_order", "SimResult",
           "SolveJob", "SolverUnavailable"]


class SolverUnavailable(RuntimeError):
    """Neither the bindings nor the optpipe binary can be found."""


def _as_dict(obj: Any) -> dict:
    if isinstance(obj, dict):
        return obj
    if hasattr(obj, "to_dict"):
        return obj.to_dict()
    if isinstance(obj, (str, os.PathLike)):
        with open(obj) as f:
            return json.load(f)
    raise TypeError(f"expected a dict, a JSON file path or an object with .to_dict(), not {type(obj).__name__}")


def find_cli() -> str:
    """The optpipe binary: $OPTPIPE_CLI, else build/optpipe of this checkout, else `optpipe` on PATH."""
    env = os.environ.get("OPTPIPE_CLI")
    if env:
        if not (os.path.isfile(env) and os.access(env, os.X_OK)):
            raise SolverUnavailable(f"OPTPIPE_CLI={env} is not an executable file")
        return env
    repo = Path(__file__).resolve().parents[3]
    local = repo / "build" / "optpipe"
    if local.is_file() and os.access(local, os.X_OK):
        return str(local)
    found = shutil.which("optpipe")
    if found:
        return found
    raise SolverUnavailable(f"no optpipe binary: set OPTPIPE_CLI, build it with scripts/build.sh optpipe "
                            f"(expected at {local}), or put optpipe on PATH")


# -- the bindings (lazy) --------------------------------------------------------------------------
_warned: set[str] = set()


def _bindings():
    """The compiled bindings, or None. Imported here, lazily: importing optpipe.torch never loads
    them. Without them (not built, or only the optpipe.torch subpackage on the path) the CLI is used."""
    try:
        import optpipe  # noqa: PLC0415 (lazy on purpose)
    except ImportError:
        return None
    return optpipe if hasattr(optpipe, "solve") and hasattr(optpipe, "Instance") else None


def _try_bindings(what: str, call):
    """call(bindings), or None when there are no bindings or the call does not fit their interface
    (then the CLI answers). Their own errors (no schedule, bad input) become RuntimeError."""
    b = _bindings()
    if b is None:
        return None
    try:
        return call(b)
    except (AttributeError, TypeError) as e:  # the interface differs from the one expected
        if what not in _warned:
            _warned.add(what)
            warnings.warn(f"optpipe bindings: {what} did not match the expected interface ({e}); "
                          f"using the optpipe CLI instead", RuntimeWarning, stacklevel=3)
        return None
    except RuntimeError:
        raise
    except Exception as e:  # InputError, InfeasibleError, ...
        raise RuntimeError(f"{what}: {e}") from e


def _b_instance(b, inst: dict):
    cls = b.Instance
    if hasattr(cls, "from_dict"):
        return cls.from_dict(inst)
    return cls.from_json(json.dumps(inst))


def _b_schedule(b, sched: dict):
    cls = b.Schedule
    if hasattr(cls, "from_dict"):
        return cls.from_dict(sched)
    return cls.from_json(json.dumps(sched))


def _schedule_dict(res) -> dict:
    if hasattr(res, "schedule") and not hasattr(res, "to_dict"):  # a SolveResult
        status = getattr(res, "status", "feasible")
        if status not in ("optimal", "feasible"):
            raise RuntimeError(f"the solver found no schedule: status {status}"
                               f"{': ' + str(res.reason) if getattr(res, 'reason', None) else ''}")
        res = res.schedule
    return res.to_dict()


class _Failed(Exception):
    """The bindings answered with an error of their own (not an interface mismatch)."""


# -- the CLI ------------------------------------------------------------------------------------------
def _run(args: list[str], proc_holder: list | None = None, check: bool = True) -> subprocess.CompletedProcess:
    cli = find_cli()
    p = subprocess.Popen([cli] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if proc_holder is not None:
        proc_holder.append(p)
    out, err = p.communicate()  # releases the GIL while it waits
    r = subprocess.CompletedProcess([cli] + args, p.returncode, out, err)
    if check and r.returncode not in (0, 1):
        raise RuntimeError(f"{' '.join(r.args)} failed (exit {r.returncode}): {(r.stderr or r.stdout).strip()}")
    return r


class _Files:
    """Temporary JSON files for the CLI."""

    def __init__(self):
        self.dir = tempfile.TemporaryDirectory(prefix="optpipe-torch-")

    def write(self, name: str, obj: dict) -> str:
        path = os.path.join(self.dir.name, name)
        with open(path, "w") as f:
            json.dump(obj, f)
        return path

    def path(self, name: str) -> str:
        return os.path.join(self.dir.name, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.dir.cleanup()


class _Cancelled(Exception):
    pass


def solve(instance: Any, time_limit: float = 10.0, threads: int | None = None, use_cache: bool = False,
          _proc_holder: list | None = None, _stop: threading.Event | None = None) -> dict:
    """The solver's schedule for `instance` (optimal when it proves it within the time limit), as an
    optpipe-schedule/1 dict with status, bound and gap."""
    inst = _as_dict(instance)

    def progress(_):  # the bindings call it about once a second; raising stops the solve
        if _stop is not None and _stop.is_set():
            raise _Cancelled()

    res = _try_bindings("solve", lambda b: _schedule_dict(
        b.solve(_b_instance(b, inst), time_limit=time_limit, threads=threads or 0,
                cache=True if use_cache else None, progress=progress if _stop is not None else None)))
    if res is not None:
        return res
    with _Files() as f:
        ip, sp = f.write("instance.json", inst), f.path("schedule.json")
        args = ["solve", ip, "-o", sp, "--time-limit", str(time_limit), "--quiet"]
        if threads:
            args += ["--threads", str(threads)]
        if not use_cache:
            args.append("--no-cache")
        r = _run(args, _proc_holder)
        if r.returncode != 0 or not os.path.exists(sp):
            raise RuntimeError(f"optpipe solve found no schedule (exit {r.returncode}): {(r.stderr or r.stdout).strip()}")
        with open(sp) as fh:
            return json.load(fh)


def heuristic_schedule(instance: Any, name: str = "best") -> dict:
    """A baseline heuristic's schedule (`optpipe heuristics` lists them; `best` runs them all and
    keeps the fastest that fits). Raises RuntimeError with the heuristic's reason when it cannot."""
    inst = _as_dict(instance)
    try:
        res = _try_bindings("schedule", lambda b: _schedule_dict(b.schedule(_b_instance(b, inst), heuristic=name)))
    except RuntimeError as e:
        raise RuntimeError(f"heuristic {name} gives no schedule: {e}") from None
    if res is not None:
        return res
    with _Files() as f:
        ip, sp = f.write("instance.json", inst), f.path("schedule.json")
        r = _run(["schedule", ip, "--heuristic", name, "-o", sp])
        if r.returncode != 0 or not os.path.exists(sp):
            raise RuntimeError(f"heuristic {name} gives no schedule: {(r.stdout + r.stderr).strip()}")
        with open(sp) as fh:
            return json.load(fh)


@dataclass
class SimResult:
    """The simulator's answer for a schedule on an instance (spec §4)."""

    feasible: bool
    makespan: float | None = None       # ms
    bubble: float | None = None
    peak_memory: list[float] = field(default_factory=list)  # bytes per device
    limit: list[float] = field(default_factory=list)        # bytes per device
    message: str = ""
    peak_precision: float = 0.0         # bytes: 0 when exact; the CLI prints peaks rounded (e.g. 0.1 GiB)
    # with timeline=True: (device, position, action text, start, end) per compute action, and
    # (kind 'offload'|'reload', device, stage, microbatch, request, start, end) per transfer
    actions: list[tuple] = field(default_factory=list)
    transfers: list[tuple] = field(default_factory=list)


_UNITS = {"B": 1, "KiB": 1024, "MiB": 1024 ** 2, "GiB": 1024 ** 3, "TiB": 1024 ** 4}


def _bytes(num: str, unit: str) -> tuple[float, float]:
    scale = _UNITS[unit]
    decimals = len(num.split(".")[1]) if "." in num else 0
    return float(num) * scale, 0.5 * 10 ** (-decimals) * scale


def simulate(instance: Any, schedule: Any, timeline: bool = False) -> SimResult:
    """Simulates `schedule` on `instance`: feasibility, makespan, peak memory per device, and with
    `timeline` the start and end of every action and transfer (from the CLI: times to 1e-4 ms)."""
    inst, sched = _as_dict(instance), _as_dict(schedule)

    def via(b):
        r = b.simulate(_b_instance(b, inst), _b_schedule(b, _plain(sched)), timeline=timeline)
        out = SimResult(bool(r.feasible), r.makespan if r.feasible else None, r.bubble, list(r.peak_memory),
                        [parse_bytes(d["memory_limit"]) for d in inst["devices"]], str(r.reason or ""))
        if timeline:
            for d, entries in enumerate(r.timeline):
                for pos, span in enumerate(entries):
                    if span is not None:
                        out.actions.append((d, pos, sched["devices"][d][pos], span[0], span[1]))
            for t in r.transfers:
                out.transfers.append((t.kind, t.device, t.stage, t.microbatch, t.request, t.start, t.end))
        return out

    res = _try_bindings("simulate", via)
    if res is not None:
        return res
    with _Files() as f:
        ip, sp = f.write("instance.json", inst), f.write("schedule.json", _plain(sched))
        r = _run(["simulate", ip, sp, "--no-gantt"] + (["--timeline"] if timeline else []))
    text = r.stdout + r.stderr
    if r.returncode != 0:
        msg = next((ln.strip() for ln in text.splitlines() if ln.startswith("infeasible")), text.strip())
        return SimResult(False, message=msg)
    res = SimResult(True)
    m = re.search(r"makespan ([0-9.]+) ms, bubble ([0-9.]+)%", text)
    if m:
        res.makespan, res.bubble = float(m.group(1)), float(m.group(2)) / 100
    row = re.compile(r"^\s*(\d+)\s+[0-9.]+ ms\s+[0-9.]+ ms\s+([0-9.]+) (B|KiB|MiB|GiB|TiB)\s+([0-9.]+) "
                     r"(B|KiB|MiB|GiB|TiB)")
    for ln in text.splitlines():
        mm = row.match(ln)
        if mm:
            peak, prec = _bytes(mm.group(2), mm.group(3))
            lim, _ = _bytes(mm.group(4), mm.group(5))
            res.peak_memory.append(peak)
            res.limit.append(lim)
            res.peak_precision = max(res.peak_precision, prec)
    if timeline:
        act = re.compile(r"^\s*(\d+)\s+(\d+)\s+([FBWR]\d+\.\d+(?:@[0-9.]+)?)\s+([0-9.]+)\s+([0-9.]+)")
        xfer = re.compile(r"^(offload|reload)\s+(\d+)\s+\d+\s+(\d+)\.(\d+)\s+[0-9.]+ \w+\s+([0-9.]+)\s+"
                          r"([0-9.]+)\s+([0-9.]+)")
        for ln in text.splitlines():
            mm = act.match(ln)
            if mm:
                res.actions.append((int(mm.group(1)), int(mm.group(2)), mm.group(3), float(mm.group(4)),
                                    float(mm.group(5))))
                continue
            mm = xfer.match(ln)
            if mm:
                res.transfers.append((mm.group(1), int(mm.group(2)), int(mm.group(3)), int(mm.group(4)),
                                      float(mm.group(5)), float(mm.group(6)), float(mm.group(7))))
    return res


def allocation_order(instance: Any, schedule: Any) -> dict[int, list[tuple[str, int, int]]]:
    """Per device, the order in which the simulator lets it allocate: ('F', s, j) at each forward's
    start and ('R', s, j) at each reload's start, by time; at equal times an F before a reload
    (spec §4), then list / request order. The runtime follows it (runtime.py), as the C++
    executor's allocation tickets do (runtime/program.h). Raises RuntimeError when the schedule does
    not complete on the instance. Times are exact from the bindings; from the CLI's timeline they are
    printed to 1e-4 ms, so events closer than that count as simultaneous."""
    sim = simulate(instance, schedule, timeline=True)
    if not sim.feasible:
        raise RuntimeError(f"the schedule does not run on the instance: {sim.message}")
    events: dict[int, list[tuple]] = {}
    for dev, pos, text, start, _ in sim.actions:
        if text.startswith("F"):
            st, mb = text[1:].split("@")[0].split(".")
            events.setdefault(dev, []).append((start, 0, pos, ("F", int(st), int(mb))))
    for n, (kind, dev, st, mb, _, start, _) in enumerate(sim.transfers):
        if kind == "reload":
            events.setdefault(dev, []).append((start, 1, n, ("R", st, mb)))
    return {d: [e[3] for e in sorted(ev)] for d, ev in events.items()}


def validate(instance: Any, schedule: Any) -> tuple[bool, str]:
    """Checks `schedule` against every rule of the spec on `instance` (timing and memory included):
    (True, summary) or (False, the problems)."""
    inst, sched = _as_dict(instance), _as_dict(schedule)
    found = _try_bindings("validate", lambda b: list(b.validate(_b_instance(b, inst), _b_schedule(b, _plain(sched)))))
    if found is not None:
        return (not found), ("\n".join(str(v) for v in found) if found else "valid")
    with _Files() as f:
        ip, sp = f.write("instance.json", inst), f.write("schedule.json", _plain(sched))
        r = _run(["validate", ip, sp])
    return r.returncode == 0, (r.stdout + r.stderr).strip()


def _plain(sched: dict) -> dict:
    """The lists only (the informational fields belong to the instance they were computed on)."""
    return {k: v for k, v in sched.items() if k in ("format", "instance", "devices")}


class SolveJob:
    """`solve` in a background thread (the CLI runs as a subprocess, so the GIL is free while it
    works; the bindings release it themselves). `done()`, `result()` (None while running; raises
    the solver's error), `cancel()` (stops the CLI process, or the bindings' solve at its next
    progress report: after the heuristics and the local search, then about once a second)."""

    def __init__(self, instance: Any, time_limit: float = 10.0, threads: int | None = None):
        self._procs: list = []
        self._result: dict | None = None
        self._error: BaseException | None = None
        self._cancelled = False
        self._stop = threading.Event()
        inst = _as_dict(instance)

        def work():
            try:
                self._result = solve(inst, time_limit=time_limit, threads=threads, _proc_holder=self._procs,
                                     _stop=self._stop)
            except BaseException as e:  # handed to result()
                self._error = e

        self._thread = threading.Thread(target=work, name="optpipe-solve", daemon=True)
        self._thread.start()

    def done(self) -> bool:
        return not self._thread.is_alive()

    def wait(self, timeout: float | None = None) -> bool:
        self._thread.join(timeout)
        return self.done()

    def result(self) -> dict | None:
        if not self.done():
            return None
        if self._error is not None and not self._cancelled:
            raise self._error
        return self._result

    def cancel(self, timeout: float = 30.0):
        self._cancelled = True
        self._stop.set()
        for p in self._procs:
            if p.poll() is None:
                p.terminate()
        self._thread.join(timeout)
