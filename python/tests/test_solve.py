"""optpipe.solve() against `optpipe solve` on shipped instances, its options and errors, the GIL
(released while it runs), the progress callback, the schedule cache and Ctrl-C (a SIGINT stops it
and it returns its best schedule)."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import warnings

import pytest

import optpipe
from conftest import ROOT, instance_path, run_cli

# Proven optimal by the command within a second or two on 2 cores (README, solver table).
PROVEN = ["tiny-2x3", "uniform-4x8", "v-4x8", "offload-fast-pcie-4x8"]


@pytest.mark.parametrize("name", PROVEN)
def test_solve_equals_the_command(cli, tmp_path, name):
    out = tmp_path / "s.json"
    run_cli(cli, "solve", instance_path(name), "--no-cache", "--time-limit", 30, "--threads", 1, "-q", "-o", out)
    reference = optpipe.Schedule.from_file(out)
    inst = optpipe.Instance.from_file(instance_path(name))
    r = optpipe.solve(inst, time_limit=30, threads=1)
    assert r.status == reference.status == "optimal"
    assert r.schedule == reference  # lists, makespan, bound, gap, solver: the same
    assert r.makespan == reference.makespan == r.bound
    assert r.gap == 0
    assert not r.interrupted and not r.from_cache
    assert r.best_heuristic in [name for name, _ in optpipe.heuristics()]
    assert r.best_heuristic_makespan >= r.makespan
    assert 0 < r.seconds < 30 and r.nodes >= 0
    assert optpipe.validate(inst, r.schedule) == []
    assert optpipe.simulate(inst, r.schedule).makespan == r.makespan
    assert isinstance(r.statistics["nodes"], int) and r.statistics["nodes"] == r.nodes


def test_limits_stop_at_once_with_the_best_schedule():
    inst = optpipe.Instance.from_file(instance_path("gpt-8x24-tight"))
    start = time.monotonic()
    r = optpipe.solve(inst, time_limit=0, local_search=0)
    assert time.monotonic() - start < 15
    assert r.status == "feasible" and r.schedule is not None
    assert r.bound <= r.makespan and r.gap > 0
    assert r.makespan == r.schedule.makespan and r.schedule.status == "feasible"
    assert optpipe.validate(inst, r.schedule) == []
    # A warm start better than any heuristic is used.
    better = optpipe.solve(inst, time_limit=0, local_search=0, warm_starts=[r.schedule])
    assert better.makespan <= r.makespan


def test_infeasible_instance_is_a_status(tiny):
    doc = tiny.to_dict()
    doc["devices"][0]["memory_limit"] = "10.5GiB"  # static 10 GiB + one 1 GiB activation does not fit
    r = optpipe.solve(optpipe.Instance.from_dict(doc), time_limit=5)
    assert r.status == "infeasible" and r.schedule is None
    assert "stage 0" in r.reason


def test_cache_answers_the_second_solve(tmp_path, tiny):
    path = tmp_path / "cache.sqlite"
    first = optpipe.solve(tiny, time_limit=10, cache=path)
    assert first.status == "optimal" and not first.from_cache
    with warnings.catch_warnings(record=True) as caught:  # a build with uncommitted changes warns
        warnings.simplefilter("always")
        second = optpipe.solve(tiny, time_limit=10, cache=str(path))
    assert all(str(w.message).startswith("cache: ") for w in caught)
    assert second.from_cache and second.status == "optimal"
    assert second.schedule.devices == first.schedule.devices
    assert path.exists()


def test_bad_options_raise_input_error(tiny):
    with pytest.raises(optpipe.InputError, match=r"^bounds: must be cpu, tbb, gpu or auto, not 'fast'"):
        optpipe.solve(tiny, bounds="fast")
    with pytest.raises(optpipe.InputError, match=r"^time_limit: must be >= 0"):
        optpipe.solve(tiny, time_limit=-1)
    with pytest.raises(optpipe.InputError, match=r"^gap: must be in \[0, 1\]"):
        optpipe.solve(tiny, gap=2)
    with pytest.raises(TypeError):
        optpipe.solve(tiny, cache=3)  # None, a bool or a path
    with pytest.raises(TypeError):
        optpipe.solve(tiny, progress=5)  # a callable or None
    with pytest.raises(TypeError):
        optpipe.solve(tiny, 10)  # options are keyword-only


def test_gil_is_released_while_solving():
    inst = optpipe.Instance.from_file(instance_path("gpt-8x24-tight"))
    ticks = 0
    done = threading.Event()

    def tick():
        nonlocal ticks
        while not done.is_set():
            ticks += 1
            time.sleep(0.001)

    thread = threading.Thread(target=tick)
    thread.start()
    start = time.monotonic()
    r = optpipe.solve(inst, time_limit=3, threads=1)
    elapsed = time.monotonic() - start
    done.set()
    thread.join()
    assert r.schedule is not None
    # About one tick a millisecond while the solve runs; a solve holding the GIL would allow none.
    assert elapsed >= 2.5
    assert ticks > 200 * elapsed, f"{ticks} ticks in {elapsed:.1f} s"


def test_progress_callback_runs_on_the_calling_thread():
    inst = optpipe.Instance.from_file(instance_path("gpt-8x24-tight"))
    seen = []
    caller = threading.get_ident()

    def progress(p):
        seen.append((threading.get_ident(), p.seconds, p.nodes, p.incumbent, p.bound, p.gap))

    r = optpipe.solve(inst, time_limit=5, local_search=1000, progress=progress)
    assert seen, "no progress reported during a search of several seconds"
    assert all(ident == caller for ident, *_ in seen)
    for _, seconds, nodes, incumbent, bound, gap in seen:
        assert seconds >= 0 and nodes >= 0 and bound <= incumbent
    assert seen[-1][3] >= r.makespan


def test_an_exception_in_the_callback_stops_the_solve():
    inst = optpipe.Instance.from_file(instance_path("gpt-8x24-tight"))

    def progress(p):
        raise ValueError(f"stop at {p.nodes} nodes")

    start = time.monotonic()
    with pytest.raises(ValueError, match=r"^stop at \d+ nodes"):
        optpipe.solve(inst, time_limit=60, local_search=1000, progress=progress)
    assert time.monotonic() - start < 30


CTRL_C_SCRIPT = textwrap.dedent(
    """
    import json, signal, sys, time
    import optpipe
    # Python leaves SIGINT ignored when it starts with it ignored (a background job of a
    # non-interactive shell, e.g. under nohup): the test would then wait out the time limit.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    inst = optpipe.Instance.from_file(sys.argv[1])
    print("solving", flush=True)
    start = time.monotonic()
    r = optpipe.solve(inst, time_limit=60)
    print(json.dumps({"interrupted": r.interrupted, "status": r.status, "makespan": r.makespan,
                      "bound": r.bound, "seconds": r.seconds, "wall": time.monotonic() - start,
                      "schedule": r.schedule.to_dict() if r.schedule else None}), flush=True)
    """
)


def test_ctrl_c_stops_the_solve_and_returns_the_best_schedule(tmp_path):
    script = tmp_path / "solve.py"
    script.write_text(CTRL_C_SCRIPT)
    name = "gpt-8x24-tight"  # not proven within 60 s: only the interrupt can end it early
    proc = subprocess.Popen([sys.executable, str(script), str(instance_path(name))], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "solving"
        time.sleep(3)
        proc.send_signal(signal.SIGINT)
        sent = time.monotonic()
        out, err = proc.communicate(timeout=50)
    finally:
        if proc.poll() is None:
            proc.kill()
    stopped_after = time.monotonic() - sent
    assert proc.returncode == 0, err
    result = json.loads(out.strip().splitlines()[-1])
    assert result["interrupted"] is True
    assert result["status"] == "feasible"
    assert result["schedule"] is not None and result["makespan"] < 800
    assert result["bound"] <= result["makespan"]
    # Well before the 60 s limit: every phase stops on the request (a generous margin for slow machines).
    assert result["wall"] < 40 and stopped_after < 37, (result["wall"], stopped_after)
    inst = optpipe.Instance.from_file(instance_path(name))
    assert optpipe.validate(inst, optpipe.Schedule.from_dict(result["schedule"])) == []


def test_device_relaxation_proves_a_v_placement_at_the_root():
    # small-v-04 (bench/solvers/random_small.py): memory on device 3, which holds stages 3 and 4,
    # binds; the device relaxation is its optimum, 33.23 ms, where the other root bounds give 27.26.
    inst = optpipe.Instance.from_file(ROOT / "tests" / "data" / "relaxation" / "small-v-04.json")
    with_it = optpipe.solve(inst, time_limit=30, threads=1)
    without = optpipe.solve(inst, time_limit=30, threads=1, device_relaxation=False)
    for r in (with_it, without):
        assert r.status == "optimal"
        assert r.makespan == pytest.approx(33.23, abs=1e-6)
    assert with_it.statistics["device_relaxation_bound"] == pytest.approx(33.23, abs=1e-6)
    assert with_it.statistics["device_relaxation_device"] == 3
    assert without.statistics["device_relaxation_bound"] == 0
    assert with_it.root_bound == pytest.approx(33.23, abs=1e-6)
    assert without.root_bound < 33.0


def test_probing_proves_small_v_02_at_its_first_target():
    # small-v-02 (bench/solvers/random_small.py, seed 11): its root bound, 43.77 ms, is its optimum;
    # probing asks the tree for a schedule 0.1% above it, finds the optimum and proves it.
    inst = optpipe.Instance.from_file(ROOT / "tests" / "data" / "relaxation" / "small-v-02.json")
    r = optpipe.solve(inst, threads=1)
    assert r.status == "optimal"
    assert r.makespan == pytest.approx(43.77, abs=1e-6)
    p = r.probing
    assert p is not None
    assert p["start"] == pytest.approx(43.77, abs=1e-5)
    assert len(p["targets"]) == 1
    first = p["targets"][0]
    assert first["found"] and not first["refuted"]
    assert p["start"] < first["target"] < p["start"] * 1.002
    assert p["proven"] and p["makespan"] == pytest.approx(43.77, abs=1e-6)
    assert p["nodes"] == first["nodes"] > 0
    off = optpipe.solve(inst, threads=1, time_limit=3, probing=False)
    assert off.probing is None
    assert off.status in ("optimal", "feasible")
    assert off.makespan >= r.makespan - 1e-6  # none shorter than the proven optimum
