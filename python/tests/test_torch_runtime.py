# The PyTorch runtime (python/optpipe/torch/runtime.py) end to end, issue 19's test: on CPU with
# gloo, 2 and 4 ranks (one process each), for the schedules of every heuristic and of the solver
# (one stage per rank, V and loop placements, split and fused backward, offloads at levels 1 and
# 0.5), one step's loss and every parameter gradient equal a plain single-process step of the
# whole model (float64, 1e-9). Negative controls: a schedule missing a reload, or with a reload
# after its B, is refused on every rank before any forward runs; and a reload that brings back
# wrong values (a corrupted host copy) makes the comparison fail, so a pass means the offloaded
# activations really came back.
#
# All cases of one world size run in one spawn (one process start per rank); the schedules come
# from the optpipe binary (the tests skip when it is missing).
import copy
import tempfile

import pytest

import torch_fixtures as tf

tf.require_torch()

from optpipe.torch import load_schedule  # noqa: E402

ONE2, V2, LOOP2 = [0, 1], [0, 1, 1, 0], [0, 1, 0, 1]
ONE4, V4, LOOP4 = [0, 1, 2, 3], [0, 1, 2, 3, 3, 2, 1, 0], [0, 1, 2, 3, 0, 1, 2, 3]
HEUR = lambda name: ["schedule", "--heuristic", name]  # noqa: E731
SOLVE = ["solve", "--time-limit", "3"]

# name: (placement, microbatches, split, room in activations (None: plenty), how, offload levels that
# must run (None: the schedule must not offload); for the solver's schedules the levels it may use:
# it returns one of several optimal schedules, which one depending on its two threads' timing
# (one-solver-offload on 2 ranks: F0.0@0.5 in most runs, @1 in another), so those run exactly the
# levels of their schedule, and the manual cases are the ones that always run both)
CASES = {
    2: {
        "one-gpipe": (ONE2, 4, True, None, HEUR("gpipe"), None),
        "one-1f1b": (ONE2, 4, True, None, HEUR("1f1b"), None),
        "one-zb-h1": (ONE2, 4, True, None, HEUR("zb-h1"), None),
        "one-zb-h2": (ONE2, 4, True, None, HEUR("zb-h2"), None),
        "one-solver-offload": (ONE2, 4, True, 1.5, SOLVE, {0.5, 1.0}),
        "one-manual-offload": (ONE2, 4, True, None, "manual", {0.5, 1.0}),
        "one-fused-1f1b": (ONE2, 4, False, None, HEUR("1f1b"), None),
        "one-fused-pipe-offload": (ONE2, 4, False, 1.5, HEUR("pipe-offload"), {1.0}),
        "v-zb-v": (V2, 4, True, None, HEUR("zb-v"), None),
        "v-v-min": (V2, 4, True, None, HEUR("v-min"), None),
        "v-v-half": (V2, 4, True, None, HEUR("v-half"), None),
        "v-v-zb": (V2, 4, True, None, HEUR("v-zb"), None),
        "v-solver-offload": (V2, 4, True, 2.5, SOLVE, {0.5, 1.0}),
        "v-ada-offload": (V2, 4, True, 2.5, HEUR("ada-offload"), {1.0}),
        "loop-interleaved-1f1b": (LOOP2, 4, True, None, HEUR("interleaved-1f1b"), None),
        "loop-pipe-offload": (LOOP2, 4, True, 3.0, HEUR("pipe-offload"), {1.0}),
        "loop-zb-greedy": (LOOP2, 4, True, None, HEUR("zb-greedy"), None),
    },
    4: {
        "one-1f1b": (ONE4, 8, True, None, HEUR("1f1b"), None),
        "one-zb-h1": (ONE4, 8, True, None, HEUR("zb-h1"), None),
        "one-zb-greedy": (ONE4, 8, True, None, HEUR("zb-greedy"), None),
        "one-gpipe": (ONE4, 8, True, None, HEUR("gpipe"), None),
        "one-pipe-offload": (ONE4, 8, True, 2.0, HEUR("pipe-offload"), {1.0}),
        "one-ada-offload": (ONE4, 8, True, 2.0, HEUR("ada-offload"), {1.0}),
        "one-solver-offload": (ONE4, 8, True, 2.0, SOLVE, {0.5, 1.0}),
        "one-manual-offload": (ONE4, 8, True, None, "manual", {0.5, 1.0}),
        "one-fused-solver-offload": (ONE4, 8, False, 2.0, SOLVE, {1.0}),
        "v-zb-v": (V4, 8, True, None, HEUR("zb-v"), None),
        "v-pipe-offload": (V4, 8, True, 3.0, HEUR("pipe-offload"), {1.0}),
        "loop-interleaved-1f1b": (LOOP4, 8, True, None, HEUR("interleaved-1f1b"), None),
    },
}
NEGATIVE = {"missing-reload", "reload-after-b"}


def add_offloads(schedule: dict) -> dict:
    """Every F whose B is not the next action offloads, alternately all (1) and half (0.5) of its
    activation, with its R right before its B."""
    d = copy.deepcopy(schedule)
    n = 0
    for r, lst in enumerate(d["devices"]):
        out = []
        for i, a in enumerate(lst):
            if a.startswith("F"):
                b = lst.index("B" + a[1:])
                if b > i + 1:
                    out.append(a + ("@1" if n % 2 == 0 else "@0.5"))
                    n += 1
                    continue
            if a.startswith("B") and any(x == "F" + a[1:] + "@1" or x == "F" + a[1:] + "@0.5" for x in out):
                out.append("R" + a[1:])
            out.append(a)
        d["devices"][r] = out
    return d


_RESULTS = {}


def _results(world):
    """Runs every case of `world` ranks once (module cache); returns {name: result}."""
    if world in _RESULTS:
        return _RESULTS[world]
    tf.require_cli()
    work = tempfile.mkdtemp(prefix=f"optpipe-torch-runtime-{world}-")
    cases, names = [], []
    for name, (placement, m, split, room, how, _) in CASES[world].items():
        inst = tf.make_instance(f"{name}-{world}", placement, m, split=split, limit_acts=room)
        if how == "manual":
            base = tf.cli_schedule(work, inst, HEUR("1f1b"))
            sched = add_offloads(base)
            ok, text = tf.cli_validate(work, inst, sched)
            assert ok, f"the hand-made offload schedule is invalid: {text}"
        else:
            sched = tf.cli_schedule(work, inst, how)
        # with its instance: reloads start in the simulated allocation order (runtime._ReloadGate)
        cases.append({"placement": placement, "microbatches": m, "schedule": sched, "instance": inst})
        names.append(name)
    if world == 2:
        # negative controls, from the solver's offloading schedule
        good = cases[names.index("one-solver-offload")]
        d = good["schedule"]
        rank, lst = next((r, l) for r, l in enumerate(d["devices"]) if any(a.startswith("R") for a in l))
        i = next(k for k, a in enumerate(lst) if a.startswith("R"))
        missing = copy.deepcopy(d)
        del missing["devices"][rank][i]
        late = copy.deepcopy(d)
        r_act = late["devices"][rank].pop(i)
        late["devices"][rank].insert(late["devices"][rank].index("B" + r_act[1:]) + 1, r_act)
        for name, bad in (("missing-reload", missing), ("reload-after-b", late)):
            cases.append(dict(good, schedule=bad))
            names.append(name)
        cases.append(dict(good, corrupt=True))
        names.append("corrupted-reload")
    results = tf.run_cases(world, cases, work)
    for name, r in zip(names, results):  # shown with pytest -s
        if "grad_diff" in r:
            print(f"{world} ranks {name:28s} max |grad diff| {r['grad_diff']:.3g}  |loss diff| {r['loss_diff']:.3g}  "
                  f"offloaded forwards {r['offloaded_forwards']}  moved {r['moved_bytes']} B")
    _RESULTS[world] = dict(zip(names, results))
    _RESULTS[world]["_schedules"] = dict(zip(names, [c["schedule"] for c in cases]))
    return _RESULTS[world]


PARAMS = [(w, n) for w in (2, 4) for n in CASES[w]]


@pytest.mark.parametrize("world,name", PARAMS, ids=[f"{w}ranks-{n}" for w, n in PARAMS])
def test_step_matches_plain_step(world, name):
    res = _results(world)[name]
    assert "error" not in res, res.get("error")
    assert "refused" not in res, res["refused"]
    assert res["grad_diff"] <= tf.TOLERANCE, f"max gradient difference {res['grad_diff']:.3g}"
    assert res["loss_diff"] <= tf.TOLERANCE, f"loss difference {res['loss_diff']:.3g}"
    assert res["resident_after"] == [0] * world, "saved tensors still on the device after the step"
    expected = CASES[world][name][5]
    sched = load_schedule(_results(world)["_schedules"][name])
    if expected is None:
        assert res["offloaded_forwards"] == 0
        return
    assert res["offloaded_forwards"] == len(sched.offloads) > 0
    offloading_ranks = {r for r, lst in sched.pipeline_order.items() if any(a.offloads for a in lst)}
    assert all(res["planned"][r] for r in offloading_ranks), "no simulated allocation order was used"
    assert res["forced"] == 0
    assert res["moved_bytes"] > 0 and not res["short_offloads"], res["short_offloads"]
    if CASES[world][name][4] == SOLVE:
        planned = {a.level for a in sched.offloads}
        assert planned <= expected, f"the solver's offload levels {sorted(planned)}, allowed {sorted(expected)}"
        expected = planned
    assert expected <= set(res["levels"]), f"offload levels run: {res['levels']}, expected {sorted(expected)}"
    if 0.5 in expected:
        assert res["partial_offloads"] > 0, "no offload at 0.5 moved a strict part of its activation"


@pytest.mark.parametrize("name", sorted(NEGATIVE))
def test_bad_schedule_is_refused_before_anything_runs(name):
    res = _results(2)[name]
    assert "error" not in res, res.get("error")
    assert "refused" in res, f"the runtime ran a schedule with a {name}"
    what = "needs the reload" if name == "missing-reload" else "comes after its backward"
    for msg in res["refused"]:
        assert msg and what in msg and msg.startswith("rank "), msg
    assert res["forwards"] == 0, "a stage ran a forward before the schedule was refused"


def test_wrong_reloaded_values_are_caught():
    res = _results(2)["corrupted-reload"]
    assert "error" not in res, res.get("error")
    assert res["grad_diff"] > 1e-6, "corrupted reloads went unnoticed: the comparison cannot fail"
