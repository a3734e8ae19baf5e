# optpipe.torch's schedule reader and checker (python/optpipe/torch/schedule.py), in one process:
# the action grammar, the file forms, every structural rule with the rank, position and action
# in its message (the negative controls of issue 19: a missing reload, a reload after its B), and
# agreement with the C++ validator on the heuristics' schedules and on the refused ones.
import copy
import json

import pytest

import torch_fixtures as tf

tf.require_torch()

from optpipe.torch import (Action, ScheduleError, gpipe_schedule,  # noqa: E402
                           load_schedule, parse_action)


def test_parse_action_forms():
    assert parse_action("F3.7") == Action("F", 3, 7, 0.0)
    assert parse_action("F3.7@0.5") == Action("F", 3, 7, 0.5)
    assert parse_action("F0.0@1") == Action("F", 0, 0, 1.0)
    assert parse_action("B12.40") == Action("B", 12, 40, 0.0)
    assert parse_action("W1.2").kind == "W" and parse_action("R1.2").kind == "R"
    assert str(parse_action("F3.7@0.5")) == "F3.7@0.5" and str(parse_action("F3.7@0")) == "F3.7"
    for bad in ["F3", "X1.2", "F1.2@", "B1.2@0.5", "F1.2@1.5", "f1.2", "F-1.2", ""]:
        with pytest.raises(ScheduleError):
            parse_action(bad)


def _one2(offload=True):
    """2 ranks, 2 stages, 2 microbatches; stage 0 offloads microbatch 0."""
    r0 = ["F0.0@1" if offload else "F0.0", "F0.1", "R0.0", "B0.0", "W0.0", "B0.1", "W0.1"]
    if not offload:
        r0.remove("R0.0")
    r1 = ["F1.0", "B1.0", "W1.0", "F1.1", "B1.1", "W1.1"]
    return {"format": "optpipe-schedule/1", "instance": "t", "devices": [r0, r1]}


def test_load_forms(tmp_path):
    d = _one2()
    s = load_schedule(d)
    assert (s.num_ranks, s.num_stages, s.microbatches, s.split_backward) == (2, 2, 2, True)
    assert s.stage_to_rank == {0: 0, 1: 1} and [str(a) for a in s.offloads] == ["F0.0@1"]
    p = tmp_path / "s.json"
    p.write_text(json.dumps(d))
    assert load_schedule(str(p)).to_dict()["devices"] == d["devices"]
    assert load_schedule(p).to_dict()["devices"] == d["devices"]
    assert load_schedule(json.dumps(d)).to_dict()["devices"] == d["devices"]

    class Bound:  # the bindings' Schedule
        def to_dict(self):
            return d
    assert load_schedule(Bound()).to_dict()["devices"] == d["devices"]
    info = dict(d, makespan=1.0, status="optimal")
    assert load_schedule(info).info == {"makespan": 1.0, "status": "optimal"}
    with pytest.raises(ScheduleError, match="unknown field"):
        load_schedule(dict(d, extra=1))
    with pytest.raises(ScheduleError, match="format"):
        load_schedule(dict(d, format="optpipe-schedule/2"))


def _refused(d, match, rank=None, position=None, action=None):
    with pytest.raises(ScheduleError, match=match) as e:
        load_schedule(d)
    if rank is not None:
        assert e.value.rank == rank, str(e.value)
    if position is not None:
        assert e.value.position == position, str(e.value)
    if action is not None:
        assert e.value.action == action, str(e.value)
    return str(e.value)


def test_missing_reload_is_refused():
    d = _one2()
    d["devices"][0].remove("R0.0")
    msg = _refused(d, "needs the reload R0.0", rank=0, position=2, action="B0.0")
    assert msg.startswith("rank 0, position 2 (B0.0): ") and "F0.0@1 (position 0) offloads" in msg


def test_reload_after_its_backward_is_refused():
    d = _one2()
    d["devices"][0] = ["F0.0@1", "F0.1", "B0.0", "R0.0", "W0.0", "B0.1", "W0.1"]
    msg = _refused(d, "comes after its backward B0.0", rank=0, position=3, action="R0.0")
    assert "position 2" in msg


def test_other_structure_errors():
    d = _one2(offload=False)
    d2 = copy.deepcopy(d)
    d2["devices"][0].insert(2, "R0.0")  # reload of an F that does not offload
    _refused(d2, "does not offload", 0, 2, "R0.0")
    d2 = copy.deepcopy(d)
    d2["devices"][0][0] = "F0.1"
    d2["devices"][0][1] = "F0.0"  # FIFO
    _refused(d2, "increasing order", 0, 1)
    d2 = copy.deepcopy(d)
    d2["devices"][0].append("W0.1")  # twice
    _refused(d2, "appears twice", 0, 6)
    d2 = copy.deepcopy(d)
    d2["devices"][0].remove("W0.1")
    _refused(d2, "W0.1 is missing", 0)
    d2 = copy.deepcopy(d)
    d2["devices"][1].append("B0.1")  # stage 0 on two ranks
    _refused(d2, "stage 0 is on rank 0", 1)
    d2 = copy.deepcopy(d)
    d2["devices"][0] = ["F0.0", "B0.0", "F0.1", "W0.0", "B0.1", "W0.1"]
    d2["devices"][0][1], d2["devices"][0][3] = "W0.0", "B0.0"  # W before its B
    _refused(d2, "before its backward", 0, 1)
    d2 = copy.deepcopy(d)
    d2["devices"][0][0] = "F0.0@0.5"
    d2["devices"][0].insert(2, "R0.0")
    load_schedule(d2)  # levels are free unless the instance's are given
    with pytest.raises(ScheduleError, match="offload_levels"):
        load_schedule(d2, offload_levels=[0, 1])
    with pytest.raises(ScheduleError, match="fused"):
        load_schedule(d, split_backward=False)
    with pytest.raises(ScheduleError, match="3 microbatches|W0.2|F0.2"):
        load_schedule(d, microbatches=3)


def test_cross_rank_deadlock_is_refused():
    # rank 0 waits for B1.0 before its F0.1, rank 1 runs F1.1 (which needs F0.1) before B1.0
    d = {"format": "optpipe-schedule/1", "instance": "t",
         "devices": [["F0.0", "B0.0", "F0.1", "B0.1"], ["F1.0", "F1.1", "B1.0", "B1.1"]]}
    msg = _refused(d, "deadlock")
    assert "rank 0 at position 1 (B0.0) waits for B1.0 on rank 1" in msg
    assert "rank 1 at position 1 (F1.1) waits for F0.1 on rank 0" in msg


@pytest.mark.parametrize("placement", [[0, 1, 2], [0, 1, 1, 0], [0, 1, 0, 1]])
def test_gpipe_schedule_is_valid(placement, tmp_path):
    s = gpipe_schedule(placement, 3)
    assert s.num_stages == len(placement) and s.microbatches == 3
    if tf.cli_path():
        inst = tf.make_instance("g", placement, 3)
        ok, text = tf.cli_validate(str(tmp_path), inst, s.to_dict())
        assert ok, text


# The C++ validator and this checker agree: every heuristic schedule passes both; the negative
# controls fail both.
HEURISTIC_CASES = [
    ("one4", [0, 1, 2, 3], 8, None, ["gpipe", "1f1b", "zb-h1", "zb-h2", "zb-greedy"]),
    ("one4tight", [0, 1, 2, 3], 8, 2.0, ["pipe-offload", "ada-offload"]),
    ("v2", [0, 1, 1, 0], 4, None, ["zb-v", "v-min", "v-half", "v-zb"]),
    ("loop2", [0, 1, 0, 1], 4, None, ["interleaved-1f1b"]),
]


@pytest.mark.parametrize("name,placement,m,limit,heuristics", HEURISTIC_CASES)
def test_cli_schedules_pass_and_negative_controls_fail_both(name, placement, m, limit, heuristics, tmp_path):
    tf.require_cli()
    inst = tf.make_instance(name, placement, m, limit_acts=limit)
    for h in heuristics:
        d = tf.cli_schedule(str(tmp_path), inst, ["schedule", "--heuristic", h])
        s = load_schedule(d, offload_levels=inst["offload_levels"])
        assert s.num_stages == len(placement) and s.stage_to_rank == dict(enumerate(placement))
        if limit is not None:
            assert s.offloads, f"{h} was expected to offload on {name}"
            rank, lst = next((r, l) for r, l in enumerate(d["devices"]) if any(a.startswith("R") for a in l))
            i = next(k for k, a in enumerate(lst) if a.startswith("R"))
            missing = copy.deepcopy(d)
            del missing["devices"][rank][i]
            late = copy.deepcopy(d)
            r_act = late["devices"][rank].pop(i)
            b = late["devices"][rank].index("B" + r_act[1:])
            late["devices"][rank].insert(b + 1, r_act)
            for bad, what in ((missing, "needs the reload"), (late, "comes after its backward")):
                with pytest.raises(ScheduleError, match=what):
                    load_schedule(bad)
                ok, text = tf.cli_validate(str(tmp_path), inst, bad)
                assert not ok, f"the C++ validator accepted {what}: {text}"
