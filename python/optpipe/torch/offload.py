# Activation offload and reload for the PyTorch runtime (the spec's `F s.j@r` and `R s.j`,
# ../shared/spec/problem.md §3-4; PipeOffload, arXiv 2503.01328, §4.2, moves activations the same
# way: a side stream per direction, pinned host buffers, events between the streams).
#
# The activation of a forward is what autograd saves for its backward: `capture(stage, mb)` wraps
# the forward in `torch.autograd.graph.saved_tensors_hooks`, so every tensor saved for backward
# goes through `pack`, which files it (once per distinct tensor) in the forward's record. The
# stage's parameters and buffers are not activations and are left alone.
#
#   offload(stage, mb, r)  right after F: picks saved tensors until at least the fraction r of the
#                          record's bytes is chosen (deterministically: in the order autograd saved
#                          them, which backward reads last-first, so the earliest are needed
#                          latest; leaf tensors such as the stage's own inputs last, because
#                          PipelineStage or the caller keeps a reference to them anyway, so moving
#                          them frees nothing), copies
#                          them to host memory and drops the device copies.
#   reload(stage, mb)      copies them back into fresh device tensors (the runtime calls it at
#                          the R action, or later when the R must wait for memory: runtime.py).
#   wait_reload(stage, mb) just before B: B must see the reloaded values.
#
# CUDA: the copies run on a D2H and an H2D side stream into pinned host buffers. The D2H stream
# waits for an event recorded on the compute stream after F; the reload's destination is
# allocated on the compute stream (so it can reuse what the compute stream freed) and the H2D
# stream waits for an event recorded there (the request) and for the offload's end event (spec:
# a reload starts no earlier than its offload's end); B makes the compute stream wait for the
# reload's end event. Nothing blocks the host thread or the compute stream beyond that, except
# an F that needs the room of offloads still in flight (wait_for_offloads, spec §4's memory_fit).
# `record_stream` keeps the caching allocator from reusing a block that a side stream still
# reads (offload) or writes (reload).
# CPU: the same steps, synchronously, into separate CPU tensors (pinned only when CUDA is
# available), so the whole path (selection, drop, reload, unpack) runs and is tested without a GPU.
#
# Each forward's record keeps what was moved (`OffloadStats`): the profiler and the tests use it.
# `resident_bytes` / `peak_resident_bytes` track the saved-tensor bytes on the device (added at
# pack, removed at offload and when autograd frees the tensor, added back at reload): a memory
# measure that also works on CPU.
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import torch

__all__ = ["ActivationOffloader", "OffloadStats", "OffloadError"]


class OffloadError(RuntimeError):
    pass


@dataclass
class OffloadStats:
    """What one forward saved and what its offload moved (bytes as the tensors' nbytes)."""

    stage: int
    microbatch: int
    level: float = 0.0            # the F's offload fraction r
    saved_bytes: int = 0          # distinct saved tensors, parameters excluded (the activation)
    saved_tensors: int = 0
    moved_bytes: int = 0          # copied to host memory by the offload
    moved_tensors: int = 0
    resident_after_backward: int | None = None  # saved bytes still alive right after B (for W)
    offload_ms: float | None = None   # CPU: wall time of the copies; CUDA: D2H stream time (events)
    reload_ms: float | None = None


class _Saved:
    """One distinct saved tensor. `device` is the tensor autograd saved, None while offloaded."""

    __slots__ = ("device", "host", "nbytes", "order", "is_leaf", "owner", "__weakref__")

    def __init__(self, t: torch.Tensor, order: int, is_leaf: bool, owner: "ActivationOffloader"):
        self.device = t
        self.host = None
        self.nbytes = t.numel() * t.element_size()
        self.order = order
        self.is_leaf = is_leaf
        self.owner = owner
        owner._add_resident(self.nbytes)

    def __del__(self):  # autograd freed the saved tensor (after B / W): it leaves the device
        try:
            if self.device is not None:
                self.owner._add_resident(-self.nbytes)
        except Exception:  # interpreter shutdown
            pass


class _Record:
    def __init__(self, stats: OffloadStats, device: torch.device):
        self.stats = stats
        self.device = device
        self.saved: list[_Saved] = []
        self.by_key: dict[tuple, _Saved] = {}
        self.moved: list[_Saved] = []
        self.offloaded = False
        self.reloaded = False
        self.off_event = None     # CUDA: end of the D2H copies
        self.rel_event = None     # CUDA: end of the H2D copies
        self.timing_events = None  # CUDA: (d2h start, d2h end, h2d start, h2d end)


def _storage_ptr(t: torch.Tensor) -> int:
    try:
        return t.untyped_storage().data_ptr()
    except Exception:  # tensors without storage (e.g. some subclasses)
        return -1


class ActivationOffloader:
    """Saved-tensor hooks and the offload / reload copies for one rank's stages.

    modules: {stage index: its nn.Module} (their parameters and buffers are never offloaded).
    device: the ranks' compute device. On CUDA the side streams are created here.
    """

    def __init__(self, modules: dict[int, torch.nn.Module], device: torch.device | str):
        self.device = torch.device(device)
        self.cuda = self.device.type == "cuda"
        self.pin = torch.cuda.is_available()
        self._param_storages = {s: {_storage_ptr(t) for t in list(m.parameters()) + list(m.buffers())}
                                for s, m in modules.items()}
        self.records: dict[tuple[int, int], _Record] = {}
        self.stats: list[OffloadStats] = []  # this iteration's forwards, in execution order
        self._current: _Record | None = None
        self.resident_bytes = 0
        self.peak_resident_bytes = 0
        self.timing = False  # time the copies (CUDA: events; read them after a synchronize)
        if self.cuda:
            self.d2h_stream = torch.cuda.Stream(device=self.device)
            self.h2d_stream = torch.cuda.Stream(device=self.device)
        # Tests only: a function applied to every host buffer after the offload's copy (it lets a
        # test check that wrong reloaded values are caught).
        self._corrupt_host = None

    # -- accounting --------------------------------------------------------------------------
    def _add_resident(self, n: int):
        self.resident_bytes += n
        if self.resident_bytes > self.peak_resident_bytes:
            self.peak_resident_bytes = self.resident_bytes

    def reset_peak(self):
        self.peak_resident_bytes = self.resident_bytes

    def new_iteration(self):
        """Forget the previous iteration's records (their tensors are gone with its graphs)."""
        leftover = [k for k, r in self.records.items() if r.offloaded and not r.reloaded]
        self.records.clear()
        self.stats = []
        if leftover:
            raise OffloadError(f"offloaded activations never reloaded in the last iteration: {leftover}")

    # -- the hooks -----------------------------------------------------------------------------
    def capture(self, stage: int, microbatch: int):
        """Context manager around F(stage, microbatch) (and its loss): files what autograd saves.
        Leaf tensors (the stage's inputs, data, constants: whatever autograd did not compute in
        this forward) are offloaded last; see the file comment."""
        key = (stage, microbatch)
        if key in self.records:
            raise OffloadError(f"F{stage}.{microbatch} ran twice in one iteration")
        rec = _Record(OffloadStats(stage, microbatch), self.device)
        self.records[key] = rec
        self.stats.append(rec.stats)
        params = self._param_storages.get(stage, set())

        # Everything kept here is a detached alias (same storage, no grad_fn): holding a saved
        # *output* itself would hold its grad_fn, the node that saved it, a cycle through C++ that
        # Python's gc cannot see; it leaks whenever the graph is not consumed with
        # retain_graph=False through that node, as in PipelineStage's split B / W.
        def pack(t: torch.Tensor) -> Any:
            if not isinstance(t, torch.Tensor):
                return t
            if t.device != self.device or t.numel() == 0 or t.layout != torch.strided:
                return t.detach()
            ptr = _storage_ptr(t)
            if ptr in params or ptr == -1:
                return t.detach()  # a parameter or buffer (or a view of one): not an activation
            k = (ptr, t.storage_offset(), tuple(t.shape), tuple(t.stride()), t.dtype)
            s = rec.by_key.get(k)
            if s is None:
                s = _Saved(t.detach(), len(rec.saved), t.is_leaf, self)
                rec.by_key[k] = s
                rec.saved.append(s)
                rec.stats.saved_bytes += s.nbytes
                rec.stats.saved_tensors += 1
            return s

        def unpack(x: Any) -> torch.Tensor:
            if not isinstance(x, _Saved):
                return x
            if x.device is None:
                raise OffloadError(f"the backward of stage {stage} microbatch {microbatch} needs an activation "
                                   f"that was offloaded and not reloaded (R{stage}.{microbatch} must come before "
                                   f"B{stage}.{microbatch})")
            return x.device

        return torch.autograd.graph.saved_tensors_hooks(pack, unpack)

    # -- offload / reload ------------------------------------------------------------------------
    @staticmethod
    def choose(saved: list[_Saved], level: float) -> list[_Saved]:
        """The saved tensors an offload of fraction `level` moves: in save order, leaf tensors
        last, until at least level x (their total bytes) are chosen."""
        if level <= 0 or not saved:
            return []
        total = sum(s.nbytes for s in saved)
        goal = level * total
        chosen, moved = [], 0
        for s in sorted(saved, key=lambda s: (s.is_leaf, s.order)):
            if moved >= goal - 1e-9 * total:
                break
            chosen.append(s)
            moved += s.nbytes
        return chosen

    def offload(self, stage: int, microbatch: int, level: float):
        rec = self._record(stage, microbatch, "offload")
        if rec.offloaded:
            raise OffloadError(f"F{stage}.{microbatch} offloaded twice")
        rec.stats.level = level
        rec.offloaded = True
        chosen = self.choose(rec.saved, level)
        rec.moved = chosen
        rec.stats.moved_bytes = sum(s.nbytes for s in chosen)
        rec.stats.moved_tensors = len(chosen)
        if self.cuda:
            compute = torch.cuda.current_stream(self.device)
            ready = torch.cuda.Event()
            ready.record(compute)
            ev = self._timing_events(rec)
            with torch.cuda.stream(self.d2h_stream):
                self.d2h_stream.wait_event(ready)
                if ev:
                    ev[0].record(self.d2h_stream)
                for s in chosen:
                    t = s.device
                    host = torch.empty_like(t, device="cpu", pin_memory=True)
                    host.copy_(t, non_blocking=True)
                    t.record_stream(self.d2h_stream)  # no reuse of the block before the copy has read it
                    s.host, s.device = host, None
                    self._add_resident(-s.nbytes)
                if ev:
                    ev[1].record(self.d2h_stream)
                rec.off_event = torch.cuda.Event()
                rec.off_event.record(self.d2h_stream)
        else:
            t0 = time.perf_counter()
            for s in chosen:
                t = s.device
                host = torch.empty_like(t, device="cpu", pin_memory=self.pin)
                host.copy_(t)
                s.host, s.device = host, None
                self._add_resident(-s.nbytes)
            rec.stats.offload_ms = (time.perf_counter() - t0) * 1e3
        if self._corrupt_host is not None:
            if self.cuda:
                self.d2h_stream.synchronize()
            for s in chosen:
                self._corrupt_host(s.host)

    def reload(self, stage: int, microbatch: int):
        rec = self._record(stage, microbatch, "reload")
        if not rec.offloaded:
            raise OffloadError(f"R{stage}.{microbatch}: F{stage}.{microbatch} did not offload")
        if rec.reloaded:
            raise OffloadError(f"R{stage}.{microbatch} reloaded twice")
        rec.reloaded = True
        if self.cuda:
            # The destination is allocated on the compute stream, so it can take blocks that the
            # compute stream freed (a W before the reload's start); the H2D stream starts the copy
            # when the compute stream reaches this point (the request, spec §4) and the offload has
            # ended. B waits for rel_event.
            compute = torch.cuda.current_stream(self.device)
            devs = [torch.empty_like(s.host, device=self.device) for s in rec.moved]
            requested = torch.cuda.Event()
            requested.record(compute)
            ev = self._timing_events(rec)
            with torch.cuda.stream(self.h2d_stream):
                self.h2d_stream.wait_event(requested)
                self.h2d_stream.wait_event(rec.off_event)  # a reload starts after its offload's end
                if ev:
                    ev[2].record(self.h2d_stream)
                for s, dev in zip(rec.moved, devs):
                    dev.copy_(s.host, non_blocking=True)
                    dev.record_stream(self.h2d_stream)  # no reuse before the copy has written it
                    s.device, s.host = dev, None
                    self._add_resident(s.nbytes)
                if ev:
                    ev[3].record(self.h2d_stream)
                rec.rel_event = torch.cuda.Event()
                rec.rel_event.record(self.h2d_stream)
        else:
            t0 = time.perf_counter()
            for s in rec.moved:
                dev = torch.empty_like(s.host, device=self.device)
                dev.copy_(s.host)
                s.device, s.host = dev, None
                self._add_resident(s.nbytes)
            rec.stats.reload_ms = (time.perf_counter() - t0) * 1e3

    def reload_bytes(self, stage: int, microbatch: int) -> int:
        """Bytes the reload of (stage, microbatch) brings back."""
        return self._record(stage, microbatch, "reload").stats.moved_bytes

    def inflight_offload_bytes(self) -> int:
        """CUDA: bytes of offloads whose copy has not ended (their device blocks are not free yet)."""
        if not self.cuda:
            return 0
        return sum(r.stats.moved_bytes for r in self.records.values()
                   if r.off_event is not None and not r.reloaded and not r.off_event.query())

    def wait_for_offloads(self, need: int, budget: float):
        """CUDA, before an F that needs `need` bytes: wait (in order) for offloads in flight until
        the resident bytes, those in flight included, leave room (spec §4: a waiting F blocks its
        compute stream; only offloads can free memory for it)."""
        if not self.cuda:
            return
        for r in list(self.records.values()):
            if self.resident_bytes + self.inflight_offload_bytes() + need <= budget:
                return
            if r.off_event is not None and not r.reloaded and not r.off_event.query():
                r.off_event.synchronize()

    def wait_reload(self, stage: int, microbatch: int):
        """Before B(stage, microbatch): its activation must be back (the compute stream waits for the
        reload's event on CUDA; on CPU the reload was synchronous)."""
        rec = self.records.get((stage, microbatch))
        if rec is None or not rec.offloaded:
            return
        if not rec.reloaded:
            raise OffloadError(f"B{stage}.{microbatch} runs before R{stage}.{microbatch} reloaded its activation")
        if self.cuda:
            torch.cuda.current_stream(self.device).wait_event(rec.rel_event)

    def after_backward(self, stage: int, microbatch: int):
        """Right after B: what is still saved for W."""
        rec = self.records.get((stage, microbatch))
        if rec is not None:
            rec.stats.resident_after_backward = sum(s.nbytes for s in rec.saved if s.device is not None)

    def release(self, stage: int, microbatch: int):
        """After the last backward op of (stage, microbatch): drop our references to its saved
        tensors, so they go when autograd drops its own."""
        rec = self.records.get((stage, microbatch))
        if rec is not None:
            rec.saved, rec.by_key, rec.moved = [], {}, []

    def finish_timing(self):
        """CUDA: turn the recorded copy events into times (call after a synchronize)."""
        if not self.cuda:
            return
        for rec in self.records.values():
            ev = rec.timing_events
            if ev:
                rec.stats.offload_ms = ev[0].elapsed_time(ev[1])
                if rec.reloaded:
                    rec.stats.reload_ms = ev[2].elapsed_time(ev[3])

    def _timing_events(self, rec: _Record):
        if not self.timing:
            return None
        if rec.timing_events is None:
            rec.timing_events = tuple(torch.cuda.Event(enable_timing=True) for _ in range(4))
        return rec.timing_events

    def _record(self, stage, microbatch, what) -> _Record:
        rec = self.records.get((stage, microbatch))
        if rec is None:
            raise OffloadError(f"{what} of stage {stage} microbatch {microbatch} before its forward ran")
        return rec
