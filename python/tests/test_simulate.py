"""optpipe.simulate(), validate() and render_svg() against `optpipe simulate --timeline`,
`optpipe validate` and `optpipe render`: the same numbers, the same violations, the same
picture."""

import math
import re

import pytest

import optpipe
from conftest import instance_path, run_cli


def parse_simulate(text: str):
    """The command's makespan, per-device timeline (start, end, 4 decimals) and transfers."""
    makespan = float(re.search(r"^makespan ([0-9.]+) ms", text, re.M).group(1))
    timeline = {}
    for m in re.finditer(r"^\s*(\d+)\s+(\d+)\s+(\S+)\s+([0-9.]+)\s+([0-9.]+)", text, re.M):
        timeline[(int(m[1]), int(m[2]))] = (m[3], float(m[4]), float(m[5]))
    transfers = [
        (m[1], int(m[2]), int(m[3]), int(m[4]), int(m[5]), float(m[6]), float(m[7]), float(m[8]))
        for m in re.finditer(r"^(offload|reload)\s+(\d+)\s+(\d+)\s+(\d+)\.(\d+)\s+\S+ \S+\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)",
                             text, re.M)
    ]
    return makespan, timeline, transfers


@pytest.mark.parametrize("name", ["tiny-2x3", "offload-fast-pcie-4x8", "v-4x8", "gpt-8x24-tight"])
def test_simulate_equals_the_command(cli, tmp_path, name):
    path = tmp_path / "s.json"
    run_cli(cli, "schedule", instance_path(name), "-o", path)
    text = run_cli(cli, "simulate", instance_path(name), path, "--timeline", "--no-gantt").stdout
    makespan, timeline, transfers = parse_simulate(text)

    inst = optpipe.Instance.from_file(instance_path(name))
    sched = optpipe.Schedule.from_file(path)
    sim = optpipe.simulate(inst, sched)
    assert sim.feasible and sim.reason is None
    assert sim.makespan == pytest.approx(makespan, abs=5e-4)
    assert sim.makespan == sched.makespan  # recorded by the same simulator when the command wrote it
    assert sim.bubble == sched.bubble
    assert sim.peak_memory == sched.peak_memory
    assert len(sim.busy) == inst.num_devices
    assert sim.bubble == pytest.approx(1 - sum(sim.busy) / (inst.num_devices * sim.makespan))
    # Every action's start and end, as the command prints them.
    assert sum(len(t) for t in sim.timeline) == len(timeline) == sched.num_actions
    for d, entries in enumerate(sim.timeline):
        for k, span in enumerate(entries):
            action, start, end = timeline[(d, k)]
            assert action == sched.devices[d][k]
            assert span == (pytest.approx(start, abs=5e-5), pytest.approx(end, abs=5e-5))
    # Every transfer, in request order.
    assert len(sim.transfers) == len(transfers)
    for t, (kind, device, group, stage, mb, request, start, end) in zip(sim.transfers, transfers):
        assert (t.kind, t.device, t.group, t.stage, t.microbatch) == (kind, device, group, stage, mb)
        assert (t.request, t.start, t.end) == (pytest.approx(request, abs=5e-5), pytest.approx(start, abs=5e-5),
                                               pytest.approx(end, abs=5e-5))
        assert t.started and t.finished and t.fraction > 0
    if name == "offload-fast-pcie-4x8":
        assert sim.transfers
    # The channels: two per PCIe group, their busy time the sum of their transfers', and the
    # busiest one the one the command names.
    groups = {t.group for t in sim.transfers} | {0}
    assert len(sim.channels) % 2 == 0 and len(sim.channels) >= 2 * len(groups)
    for c in sim.channels:
        assert isinstance(c, optpipe.ChannelLoad)
        mine = [t for t in sim.transfers if t.group == c.group and t.kind == ("reload" if c.direction == "h2d" else "offload")]
        assert c.transfers == len(mine)
        assert c.busy == pytest.approx(sum(t.end - t.start for t in mine), abs=1e-9)
        assert c.share(sim.makespan) == pytest.approx(c.busy / sim.makespan)
    busiest = re.search(r"^busiest PCIe channel: group (\d+)'s (D2H|H2D) .*, busy ([0-9.]+) ms", text, re.M)
    assert (busiest is not None) == bool(sim.transfers)
    if busiest:
        top = max(sim.channels, key=lambda c: c.busy)
        assert top.busy == pytest.approx(float(busiest[3]), abs=5e-4)
    # Memory curves: one per device, peaking at the peak.
    assert len(sim.memory) == inst.num_devices
    for d, curve in enumerate(sim.memory):
        assert max(b for _, b in curve) <= sim.peak_memory[d]
    # Without recording, the same numbers.
    quick = optpipe.simulate(inst, sched, timeline=False, memory=False)
    assert quick.makespan == sim.makespan and quick.peak_memory == sim.peak_memory
    assert quick.timeline == [] and quick.transfers == [] and quick.memory == []


def test_deadlock_is_a_result_not_an_error(cli, tmp_path):
    inst = optpipe.Instance.from_file(instance_path("gpt-8x24-tight"))
    # 1F1B's lists deadlock on this instance for lack of memory (the heuristic says so): take them
    # from a copy of the instance with room.
    doc = inst.to_dict()
    for d in doc["devices"]:
        d["memory_limit"] = "1TiB"
    roomy = optpipe.Instance.from_dict(doc)
    sched = optpipe.schedule(roomy, "1f1b")
    sim = optpipe.simulate(inst, sched)
    assert not sim.feasible
    assert sim.reason.startswith("deadlock at t=") and "for memory" in sim.reason
    assert sim.bubble is None
    assert any(span is None for entries in sim.timeline for span in entries)
    # Without the limit it runs, over the limit.
    free = optpipe.simulate(inst, sched, enforce_memory_limit=False)
    assert free.feasible
    assert max(free.peak_memory) > inst.devices[0]["memory_limit"]
    # The validator says the same, pointing at the waiting forward; so does the command.
    violations = optpipe.validate(inst, sched)
    assert len(violations) == 1
    v = violations[0]
    assert v.rule == "deadlock" and v.message == "the timing does not complete: " + sim.reason
    assert v.device is not None and sched.devices[v.device][v.position].startswith("F")
    path = tmp_path / "s.json"
    sched.save(path)
    out = run_cli(cli, "validate", instance_path("gpt-8x24-tight"), path, check=False)
    assert out.returncode == 1
    assert f"[deadlock] {v.message}" in out.stdout


def test_validate_lists_what_the_command_lists(cli, tmp_path, tiny):
    good = optpipe.schedule(tiny)
    assert optpipe.validate(tiny, good) == []
    lists = [list(d) for d in good.devices]
    lists[0][0], lists[0][1] = lists[0][1], lists[0][0]  # F0.1 before F0.0: FIFO broken
    lists[1].pop()                                         # the last W of device 1 missing
    lists[1].append("F1.9")                                # a microbatch that does not exist
    broken = optpipe.Schedule(lists, tiny.name)
    violations = optpipe.validate(tiny, broken)
    rules = [v.rule for v in violations]
    assert rules == ["fifo", "unknown-microbatch", "missing"], violations
    fifo, unknown, missing = violations
    assert (fifo.device, fifo.position) == (0, 1)
    assert (unknown.device, unknown.position) == (1, 8)
    assert (missing.device, missing.position) == (None, None)
    assert str(fifo).startswith("[fifo] device 0, position 1: F0.0 comes after F0.1")
    path = tmp_path / "broken.json"
    broken.save(path)
    out = run_cli(cli, "validate", instance_path("tiny-2x3"), path, check=False)
    assert out.returncode == 1
    assert out.stdout.splitlines()[1:] == [f"  [{v.rule}] {v.message}" for v in violations]
    # simulate() and render_svg() need well-formed lists: they raise with the violations.
    with pytest.raises(optpipe.InputError, match=r"^schedule: does not fit the instance .*\[fifo\] device 0, position 1"):
        optpipe.simulate(tiny, broken)
    with pytest.raises(optpipe.InputError, match=r"\[missing\]"):
        optpipe.render_svg(tiny, broken)
    wrong_count = optpipe.Schedule([lists[0]], tiny.name)
    [v] = optpipe.validate(tiny, wrong_count)
    assert v.rule == "device-count" and v.device is None


def test_render_svg_equals_the_command(cli, tmp_path):
    inst = optpipe.Instance.from_file(instance_path("offload-fast-pcie-4x8"))
    sched = optpipe.schedule(inst)
    path = tmp_path / "s.json"
    sched.save(path)
    run_cli(cli, "render", instance_path("offload-fast-pcie-4x8"), path, "-o", tmp_path / "c.svg", "--width", 900,
            "--title", "Title & more")
    svg = optpipe.render_svg(inst, sched, width=900, title="Title & more")
    assert svg == (tmp_path / "c.svg").read_text()
    assert "<svg" in svg and "Title &amp; more" in svg
    run_cli(cli, "render", instance_path("offload-fast-pcie-4x8"), path, "-o", tmp_path / "d.svg", "--no-memory",
            "--no-transfers", "--no-script")
    still = optpipe.render_svg(inst, sched, memory=False, transfers=False, script=False)
    assert still == (tmp_path / "d.svg").read_text()
    assert "<script" in optpipe.render_svg(inst, sched) and "<script" not in still
    with pytest.raises(optpipe.InputError, match=r"^width: must be 300 to 20000 pixels \(or 0: from the ops\), got 10"):
        optpipe.render_svg(inst, sched, width=10)


def test_reprs_say_each_unit_once():
    """The reprs print times as the command does ("12.345 ms"), never "ms ms" or a raw double."""
    inst = optpipe.Instance.from_file(instance_path("offload-fast-pcie-4x8"))
    sch = optpipe.schedule(inst, heuristic="pipe-offload")
    sim = optpipe.simulate(inst, sch)
    texts = [repr(sim), repr(sch), repr(sim.transfers[0])]
    texts.append(repr(optpipe.solve(inst, time_limit=2, node_limit=0)))
    for text in texts:
        assert " ms" in text, text
        assert "ms ms" not in text, text
        assert not re.search(r"\d\.\d{7,}", text), text  # no 228.82000000000005
