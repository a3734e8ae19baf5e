# The offloader (python/optpipe/torch/offload.py) in one process, on CPU: which saved tensors an
# offload of fraction r moves, that the device copies really go (nothing else holds them) and come
# back for B with the same values, that the gradients equal a run without offload, and that a
# backward without its reload is caught.
import collections
import gc
import weakref

import pytest

import torch_fixtures as tf

tf.require_torch()

import torch  # noqa: E402

from optpipe.torch import ActivationOffloader, OffloadError  # noqa: E402
from optpipe.torch.offload import _Saved  # noqa: E402


def _stage():
    torch.manual_seed(0)
    return tf.build_model(1)[0].double()


def _forward(off, module, x, stage=0, mb=0):
    with off.capture(stage, mb):
        return module(x)


def test_choose_is_deterministic_and_reaches_the_fraction():
    off = ActivationOffloader({}, "cpu")
    sizes = [(48, False), (96, False), (24, True), (96, False), (32, False)]
    saved = [_Saved(torch.zeros(n, dtype=torch.uint8), i, leaf, off) for i, (n, leaf) in enumerate(sizes)]
    total = sum(n for n, _ in sizes)
    assert ActivationOffloader.choose(saved, 0) == []
    assert set(map(id, ActivationOffloader.choose(saved, 1.0))) == set(map(id, saved))
    half = ActivationOffloader.choose(saved, 0.5)
    assert [s.order for s in half] == [0, 1, 3]  # save order, stopping once >= half; the leaf is not needed
    assert sum(s.nbytes for s in half) >= 0.5 * total
    assert sum(s.nbytes for s in half[:-1]) < 0.5 * total  # minimal prefix
    assert [s.order for s in ActivationOffloader.choose(saved, 0.9)] == [0, 1, 3, 4]  # leaf last
    assert [s.order for s in ActivationOffloader.choose(saved, 0.5)] == [s.order for s in half]


@pytest.mark.parametrize("level", [1.0, 0.5])
def test_offload_frees_device_copies_and_reload_restores_gradients(level):
    torch.set_default_dtype(torch.float64)
    x = torch.randn(3, tf.HIDDEN, requires_grad=True)
    ref_mod, mod = _stage(), _stage()
    ref_out = ref_mod(x)
    ref_out.sum().backward()

    off = ActivationOffloader({0: mod}, "cpu")
    x2 = x.detach().clone().requires_grad_(True)
    out = _forward(off, mod, x2)
    rec = off.records[(0, 0)]
    # parameters are never captured: 4 activations (input, 2 hidden, output), none a parameter
    pptrs = {p.untyped_storage().data_ptr() for p in mod.parameters()}
    assert len(rec.saved) == 4 and all(s.device.untyped_storage().data_ptr() not in pptrs for s in rec.saved)
    assert rec.stats.saved_bytes == (3 * 8 + 3 * 16 + 3 * 16 + 3 * 8) * 8
    assert off.resident_bytes == rec.stats.saved_bytes
    refs = {s.order: weakref.ref(s.device) for s in rec.saved}
    off.offload(0, 0, level)
    moved = {s.order for s in rec.moved}
    assert rec.stats.moved_bytes >= level * rec.stats.saved_bytes
    if level < 1:
        assert 0 < rec.stats.moved_bytes < rec.stats.saved_bytes
    gc.collect()
    # a moved tensor is gone from the "device" unless something else holds it: the leaf input
    # (held by the caller) and the stage output (held by `out`) stay; the hidden ones go.
    for order, ref in refs.items():
        if order in moved and order in (1, 2):
            assert ref() is None, f"saved tensor {order} still alive after its offload"
    assert off.resident_bytes == rec.stats.saved_bytes - rec.stats.moved_bytes
    with pytest.raises(OffloadError, match="before B0.0 runs|R0.0"):
        off.wait_reload(0, 0)
    off.reload(0, 0)
    assert off.resident_bytes == rec.stats.saved_bytes
    off.wait_reload(0, 0)
    out.sum().backward()
    for p, q in zip(mod.parameters(), ref_mod.parameters()):
        assert torch.equal(p.grad, q.grad)
    assert torch.equal(x2.grad, x.grad)
    off.release(0, 0)
    del out
    gc.collect()
    assert off.resident_bytes == 0 and off.peak_resident_bytes == rec.stats.saved_bytes


def test_backward_without_reload_is_caught():
    torch.set_default_dtype(torch.float64)
    mod = _stage()
    off = ActivationOffloader({0: mod}, "cpu")
    out = _forward(off, mod, torch.randn(3, tf.HIDDEN, requires_grad=True))
    off.offload(0, 0, 1.0)
    with pytest.raises(OffloadError, match="offloaded and not reloaded"):
        out.sum().backward()


def test_new_iteration_refuses_a_missing_reload():
    mod = _stage()
    off = ActivationOffloader({0: mod}, "cpu")
    _forward(off, mod, torch.randn(3, tf.HIDDEN, dtype=torch.float64))
    off.offload(0, 0, 0.5)
    with pytest.raises(OffloadError, match="never reloaded"):
        off.new_iteration()


def test_no_reference_cycle_when_the_graph_is_kept():
    """PipelineStage's input backward keeps the graph (retain_graph=True) and its weight backward
    walks only the weights' side: the saved outputs of the nodes it skips must still go when the
    graph goes (a hook that keeps the tensor itself would keep its grad_fn: a cycle through C++)."""
    torch.set_default_dtype(torch.float64)
    mod = _stage()
    off = ActivationOffloader({0: mod}, "cpu")
    x = torch.randn(3, tf.HIDDEN, requires_grad=True)
    out = _forward(off, mod, x)
    torch.autograd.grad(out.sum(), x, retain_graph=True)
    off.release(0, 0)
    del out
    gc.collect()
    assert off.resident_bytes == 0
    assert not [o for o in gc.get_objects() if type(o) is _Saved]


def _offloaded(off, mod, n, level=1.0):
    outs = []
    for j in range(n):
        outs.append(_forward(off, mod, torch.randn(3, tf.HIDDEN, dtype=torch.float64, requires_grad=True), 0, j))
        off.offload(0, j, level)
    return outs


def test_reload_gate_waits_for_its_turn_and_for_room():
    """runtime._ReloadGate: a requested reload starts when every allocation the simulation made
    before it has happened and the budget has room; a B forces its own."""
    from optpipe.torch.runtime import _ReloadGate
    torch.set_default_dtype(torch.float64)
    mod = _stage()
    off = ActivationOffloader({0: mod}, "cpu")
    outs = _offloaded(off, mod, 3)
    act = off.records[(0, 0)].stats.saved_bytes
    assert off.resident_bytes == 0
    plan = [("F", 0, 0), ("F", 0, 1), ("F", 0, 2), ("R", 0, 0), ("F", 0, 3), ("R", 0, 1), ("R", 0, 2)]
    gate = _ReloadGate(off, budget=1.5 * act, plan=plan)
    for j in range(3):
        gate.after_forward(0, j)
    gate.request(0, 0)
    assert not gate.pending and off.records[(0, 0)].reloaded  # its turn, and room
    gate.request(0, 1)
    assert gate.pending == collections.deque([(0, 1)])  # F0.3 comes first in the plan
    gate.after_forward(0, 3)
    gate.start_ready()
    assert gate.pending == collections.deque([(0, 1)])  # its turn now, but 2 activations > 1.5
    gate.request(0, 2)
    assert list(gate.pending) == [(0, 1), (0, 2)] and gate.delayed == 2
    outs[0].sum().backward()  # "W0.0": the first activation goes
    off.release(0, 0)
    gate.start_ready()
    assert list(gate.pending) == [(0, 2)] and off.records[(0, 1)].reloaded
    gate.before_backward(0, 2)  # a B forces its reload
    assert not gate.pending and gate.forced == 1
    for o in outs[1:]:
        o.sum().backward()


def test_reload_gate_without_instance_starts_at_the_request():
    from optpipe.torch.runtime import _ReloadGate
    mod = _stage()
    off = ActivationOffloader({0: mod}, "cpu")
    _offloaded(off, mod, 2)
    gate = _ReloadGate(off, budget=None, plan=None)
    gate.request(0, 1)
    gate.request(0, 0)
    assert not gate.pending and gate.delayed == 0
