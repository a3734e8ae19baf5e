# The PyTorch runtime on one device, CPU and (where there is one) GPU: every stage of a loop
# placement on rank 0, a schedule that offloads every forward's activation, one step against a
# plain step of the whole model, and the memory the offloads save, measured.
#
# On CUDA this is the path CI cannot run (no GPU there): offload.py's D2H and H2D side streams,
# pinned host buffers, the events between the streams and record_stream, and runtime.py's peak
# memory (torch.cuda.max_memory_allocated). A copy that raced its stream would give B wrong
# values (the gradient check), a device copy that stayed alive would show in the peak (the
# memory check). Without a GPU the CUDA cases skip, saying so; the CPU cases check the same
# things with the offloader's own count of resident bytes.
import copy

import pytest

import torch_fixtures as tf

tf.require_torch()

import torch  # noqa: E402

STAGES, MICROBATCHES = 4, 6
HIDDEN, ROWS = 256, 256  # float64: about 3 MiB saved per forward, 72 MiB for the 24 forwards


DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(
    not torch.cuda.is_available(), reason="no CUDA device here: the GPU path of the runtime is not run"))]


def _without_offloads(schedule):
    """The same lists with every offload level at 0 and no reloads: the order without offload."""
    plain = copy.deepcopy(schedule)
    plain["devices"] = [[a.split("@")[0] for a in acts if not a.startswith("R")] for acts in schedule["devices"]]
    return plain


@pytest.fixture(scope="module")
def schedules(tmp_path_factory):
    """A loop placement of 4 stages on one device, room for 2.5 activations: the solver's schedule
    offloads (every forward, in practice) and its order without offloads does not fit."""
    work = str(tmp_path_factory.mktemp("device"))
    inst = tf.make_instance("one-device-loop", [0] * STAGES, MICROBATCHES, limit_acts=2.5)
    sched = tf.cli_schedule(work, inst, ["solve", "--time-limit", "5"])
    offloads = sum(1 for acts in sched["devices"] for a in acts if a.startswith("F") and "@" in a and not a.endswith("@0"))
    assert offloads > 0, "the solver's schedule offloads nothing: the test has nothing to check"
    return inst, sched, _without_offloads(sched)


@pytest.mark.parametrize("device", DEVICES)
def test_one_device_offload_step_matches_the_plain_step_and_saves_memory(device, schedules):
    _, sched, plain = schedules
    case = {"placement": [0] * STAGES, "microbatches": MICROBATCHES, "device": device,
            "hidden": HIDDEN, "rows": ROWS}
    # The room in real bytes: 4 forwards' activations (the instance's room is in its nominal 1 GiB
    # activations), so that on CUDA an F waits for offloads in flight (offload.wait_for_offloads).
    budget = 4 * ROWS * 6 * HIDDEN * 8
    res_off, res_plain = tf.run_cases(1, [dict(case, schedule=sched, memory_budget=budget),
                                          dict(case, schedule=plain)])
    for name, res in (("offload", res_off), ("no offload", res_plain)):
        assert "error" not in res, f"{name}: {res.get('error')}"
        assert res["grad_diff"] < tf.TOLERANCE, f"{name}: gradients differ from the plain step by {res['grad_diff']}"
        assert res["loss_diff"] < tf.TOLERANCE, f"{name}: loss differs by {res['loss_diff']}"
    assert res_off["offloaded_forwards"] > 0 and res_off["moved_bytes"] > 0
    assert res_plain["offloaded_forwards"] == 0
    assert res_off["resident_after"] == [0] and res_plain["resident_after"] == [0]
    saved = res_plain["saved_bytes"]
    assert saved > 0 and res_off["saved_bytes"] == saved
    # Without offloads the order holds every forward's activation at once (all F before the first
    # B in this loop schedule): the peak is the whole of them. With them, what the offloads moved
    # is off the device: at least half of it must not show in the peak.
    peak_off, peak_plain = res_off["peak_resident"][0], res_plain["peak_resident"][0]
    print(f"\n{device}: saved {saved / 2**20:.1f} MiB in {STAGES * MICROBATCHES} forwards, moved "
          f"{res_off['moved_bytes'] / 2**20:.1f} MiB; peak resident activations {peak_plain / 2**20:.1f} MiB "
          f"without offload, {peak_off / 2**20:.1f} MiB with")
    assert peak_plain >= 0.99 * saved
    assert peak_plain - peak_off >= 0.5 * res_off["moved_bytes"]
    if device == "cuda":
        # The allocator's own peak (parameters, gradients, inputs and workspace included, the
        # same in both runs) must drop too: the device copies really went. Not by all that moved:
        # a forward saves its stage's input and output (a third of its bytes here), which the
        # pipeline itself holds (PipelineStage keeps both for the backward; the input is the
        # previous stage's output), so moving them frees nothing. On an H200 (2026-11-27) the
        # peak fell from 155.1 to 121.1 MiB for 75 MiB moved; at least half of the two thirds that
        # can be freed must show.
        mem_off, mem_plain = res_off["peak_memory"][0], res_plain["peak_memory"][0]
        print(f"cuda: torch.cuda.max_memory_allocated {mem_plain / 2**20:.1f} MiB without offload, "
              f"{mem_off / 2**20:.1f} MiB with")
        assert mem_plain - mem_off >= res_off["moved_bytes"] / 3


def test_first_step_sends_no_init_message_to_its_own_rank():
    """PyTorch 2.11's first step messages every neighbour stage, also one on the same rank, which
    gloo cannot do (seen on the H200 with torch 2.11: "Pair is not connected"); the runtime leaves
    those messages out (runtime._without_self_init_ops) and keeps the ones between ranks."""
    from optpipe.torch.runtime import _without_self_init_ops

    class Op:
        def __init__(self, peer):
            self.group_peer = peer

    class Stage:
        def __init__(self, index, rank, ranks):
            self.stage_index, self.group_rank, self.ranks = index, rank, ranks

        def _get_init_p2p_neighbors_ops(self):  # as PyTorch 2.11: recv and send both ways
            return [Op(self.ranks[i]) for i in (self.stage_index - 1, self.stage_index + 1) if i in self.ranks
                    for _ in range(2)]

    ranks = dict(enumerate([0, 1, 1, 0]))  # V placement: stages 1 and 2 on rank 1
    stages = [Stage(1, 1, ranks), Stage(2, 1, ranks)]
    _without_self_init_ops(stages)
    _without_self_init_ops(stages)  # a second step wraps nothing twice
    assert [op.group_peer for op in stages[0]._get_init_p2p_neighbors_ops()] == [0, 0]
    assert [op.group_peer for op in stages[1]._get_init_p2p_neighbors_ops()] == [0, 0]
    assert [op.group_peer for op in Stage(1, 1, ranks)._get_init_p2p_neighbors_ops()] == [0, 0, 1, 1]
