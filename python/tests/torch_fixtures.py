# Helpers for the optpipe.torch tests (test_torch*.py): a small float64 MLP split into stages,
# instances for the OptPipe CLI, and a harness that runs a list of cases in one process per rank
# (gloo on CPU, file rendezvous, as scripts/torch_check.py does), each case one step of the
# pipelined model compared with a plain step of the whole model.
#
# Every rank of a spawn runs all its cases in the same order, so one spawn (a few seconds of
# process start and `import torch`) serves many schedules.
from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
import tempfile
import traceback

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# optpipe (with optpipe.torch) is the installed package (scripts/test_python.sh installs it); the
# sources in python/ are not put on the path: they lack the compiled module.

try:
    import torch
    import torch.distributed as dist
    import torch.multiprocessing as mp
    import torch.nn as nn
    from torch.distributed.pipelining import PipelineStage
    TORCH_ERROR = None
except Exception as e:  # pragma: no cover (no torch here)
    torch = None
    TORCH_ERROR = f"PyTorch cannot be imported ({type(e).__name__}: {e})"

HIDDEN = 8
ROWS = 3          # rows per microbatch
TOLERANCE = 1e-9  # float64


def require_torch():
    if TORCH_ERROR:
        pytest.skip(TORCH_ERROR)


def cli_path() -> str | None:
    env = os.environ.get("OPTPIPE_CLI")
    if env:
        return env if os.access(env, os.X_OK) else None
    p = os.path.join(ROOT, "build", "optpipe")
    return p if os.access(p, os.X_OK) else None


def require_cli() -> str:
    p = cli_path()
    if p is None:
        pytest.skip("the optpipe binary is missing (build it with scripts/build.sh optpipe, or set OPTPIPE_CLI); "
                    "these tests take their schedules from it")
    return p


def cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run([require_cli()] + [str(a) for a in args], capture_output=True, text=True)


def make_instance(name, placement, microbatches, split=True, limit_acts=None, levels=(0, 0.5, 1)):
    """Unit-ish costs, 1 GiB activations on 10 GiB of static memory; `limit_acts`: room for that
    many activations above the static memory (None: plenty)."""
    stages = [{"device": d, "forward": 1.0, "backward": 1.1, "weight": 0.9 if split else 0.0,
               "activation": "1GiB", "weight_activation": "512MiB" if split else 0,
               "offload": 0.4, "reload": 0.4} for d in placement]
    limit = "64GiB" if limit_acts is None else f"{10 * 1024 + int(limit_acts * 1024)}MiB"
    return {"format": "optpipe-instance/1", "name": name, "microbatches": microbatches, "split_backward": split,
            "offload_levels": list(levels), "comm": 0.05,
            "devices": [{"memory_limit": limit, "static_memory": "10GiB"} for _ in range(max(placement) + 1)],
            "stages": stages}


def write_json(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f, indent=1)
    return path


def cli_schedule(workdir, instance, how) -> dict:
    """how: ['schedule', '--heuristic', NAME] or ['solve', ...]; returns the schedule dict."""
    ip = write_json(os.path.join(workdir, instance["name"] + ".instance.json"), instance)
    sp = os.path.join(workdir, instance["name"] + "." + how[-1] + ".schedule.json")
    extra = ["--no-cache", "--quiet"] if how[0] == "solve" else []
    r = cli(*how, ip, "-o", sp, *extra)
    if r.returncode != 0:
        raise AssertionError(f"optpipe {' '.join(how)} failed: {r.stdout}{r.stderr}")
    with open(sp) as f:
        return json.load(f)


def cli_validate(workdir, instance, schedule):
    ip = write_json(os.path.join(workdir, instance["name"] + ".v.instance.json"), instance)
    sp = write_json(os.path.join(workdir, instance["name"] + ".v.schedule.json"),
                    {k: schedule[k] for k in ("format", "instance", "devices")})
    r = cli("validate", ip, sp)
    return r.returncode == 0, r.stdout + r.stderr


# -- the model ------------------------------------------------------------------------------------
def build_model(num_stages, seed=1234, hidden=HIDDEN):
    """Stage s: Linear(H, 2H) -> GELU -> Linear(2H, H) -> Tanh. Autograd saves four tensors of
    different sizes per forward (the input, both hidden activations, the output), so a fractional
    offload moves a strict subset."""
    torch.manual_seed(seed)
    return nn.ModuleList([nn.Sequential(nn.Linear(hidden, 2 * hidden), nn.GELU(), nn.Linear(2 * hidden, hidden),
                                        nn.Tanh()) for _ in range(num_stages)])


def make_batch(microbatches, seed=99, hidden=HIDDEN, rows=ROWS):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(microbatches * rows, hidden, generator=g)
    y = torch.randn(microbatches * rows, hidden, generator=g)
    return x, y


def loss_fn(output, target):
    return nn.functional.mse_loss(output, target)


def plain_step(model, x, y):
    out = x
    for block in model:
        out = block(out)
    loss = loss_fn(out, y)
    loss.backward()
    return loss.item()


# -- the multi-process harness --------------------------------------------------------------------------
def _init(rank, world, rendezvous):
    torch.set_default_dtype(torch.float64)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method="file://" + rendezvous, rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=90))


def _run_case(rank, world, case):
    """One step of case["schedule"] against a plain step (on the CPU); returns this rank's
    measurements. Optional keys: "device" ("cpu" or "cuda": this rank's stages run on the GPU of
    its rank), "hidden" and "rows" (the model's width and rows per microbatch), "memory_budget"
    (ScheduleOptPipe's, instead of the instance's room)."""
    from optpipe.torch import ScheduleOptPipe, ScheduleError  # noqa: PLC0415

    placement, m = case["placement"], case["microbatches"]
    S = len(placement)
    hidden, rows = case.get("hidden", HIDDEN), case.get("rows", ROWS)
    device = torch.device("cpu")
    if case.get("device") == "cuda":
        device = torch.device("cuda", rank % torch.cuda.device_count())
        torch.cuda.set_device(device)
    x, y = make_batch(m, hidden=hidden, rows=rows)
    ref = build_model(S, hidden=hidden)
    ref_loss = plain_step(ref, x, y)
    x, y = x.to(device), y.to(device)

    model = build_model(S, hidden=hidden).to(device)
    forwards = {"n": 0}

    def count(*_):
        forwards["n"] += 1

    for blk in model:
        blk.register_forward_hook(count)
    mine = [s for s in range(S) if placement[s] == rank]
    stages = [PipelineStage(model[s], s, S, device) for s in mine]
    try:
        sched = ScheduleOptPipe(stages, case["schedule"], loss_fn=loss_fn, instance=case.get("instance"),
                                memory_budget=case.get("memory_budget"))
    except ScheduleError as e:
        return {"refused": str(e), "forwards": forwards["n"]}
    if case.get("corrupt"):
        sched.offloader._corrupt_host = lambda h: h.add_(1e-3)
    losses = []
    sched.step(*((x,) if 0 in mine else ()), target=y if S - 1 in mine else None, losses=losses)

    grad_diff = 0.0
    for s in mine:
        for p, q in zip(model[s].parameters(), ref[s].parameters()):
            if p.grad is None:
                raise AssertionError(f"rank {rank}: stage {s} has a parameter without a gradient")
            grad_diff = max(grad_diff, (p.grad.cpu() - q.grad).abs().max().item())
    loss_diff = 0.0
    if S - 1 in mine:
        loss_diff = abs(torch.stack([l.detach() for l in losses]).mean().item() - ref_loss)
    stats = sched.offload_stats
    offloaded = [st for st in stats if st.level > 0]
    short = [(st.stage, st.microbatch, st.level, st.moved_bytes, st.saved_bytes) for st in offloaded
             if st.moved_bytes < st.level * st.saved_bytes - 1e-6]
    partial = sum(1 for st in offloaded if 0 < st.moved_bytes < st.saved_bytes)
    return {"grad_diff": grad_diff, "loss_diff": loss_diff, "loss": ref_loss,
            "offloaded_forwards": len(offloaded), "moved_bytes": sum(st.moved_bytes for st in offloaded),
            "partial_offloads": partial, "short_offloads": short,
            "levels": sorted({st.level for st in offloaded}),
            "resident_after": sched.offloader.resident_bytes, "forwards": forwards["n"],
            "planned": sched.allocation_plan is not None, "forced": sched.forced_reloads,
            "saved_bytes": sum(st.saved_bytes for st in stats),
            "peak_resident": sched.offloader.peak_resident_bytes, "peak_memory": sched.last_peak_memory}


def _worker(rank, world, rendezvous, cases, out_dir):
    _init(rank, world, rendezvous)
    try:
        for i, case in enumerate(cases):
            try:
                res = _run_case(rank, world, case)
            except Exception as e:  # the case failed on this rank; record it and go on
                res = {"error": f"{type(e).__name__}: {e}", "trace": traceback.format_exc()}
            with open(os.path.join(out_dir, f"case{i}.rank{rank}.json"), "w") as f:
                json.dump(res, f)
            if "error" in res:
                break  # the other ranks may wait on us; stop here (they time out)
    finally:
        dist.destroy_process_group()


def run_cases(world, cases, workdir=None):
    """Runs every case on `world` ranks; returns one dict per case: the ranks' results merged
    (maximum of the differences, sums of counts), or {"error": ...}."""
    workdir = workdir or tempfile.mkdtemp(prefix="optpipe-torch-test-")
    rendezvous = os.path.join(workdir, "rendezvous")
    if os.path.exists(rendezvous):
        os.remove(rendezvous)
    try:
        mp.spawn(_worker, args=(world, rendezvous, cases, workdir), nprocs=world, join=True)
        spawn_error = None
    except Exception as e:
        spawn_error = f"{type(e).__name__}: {e}"
    merged = []
    for i in range(len(cases)):
        per_rank = []
        for r in range(world):
            p = os.path.join(workdir, f"case{i}.rank{r}.json")
            per_rank.append(json.load(open(p)) if os.path.exists(p) else {"error": spawn_error or "no result"})
        errors = [f"rank {r}: {x['error']}\n{x.get('trace', '')}" for r, x in enumerate(per_rank) if "error" in x]
        if errors:
            merged.append({"error": "\n".join(errors)})
            continue
        if any("refused" in x for x in per_rank):
            merged.append({"refused": [x.get("refused") for x in per_rank],
                           "forwards": sum(x["forwards"] for x in per_rank)})
            continue
        merged.append({
            "grad_diff": max(x["grad_diff"] for x in per_rank),
            "loss_diff": max(x["loss_diff"] for x in per_rank),
            "loss": per_rank[0]["loss"],
            "offloaded_forwards": sum(x["offloaded_forwards"] for x in per_rank),
            "moved_bytes": sum(x["moved_bytes"] for x in per_rank),
            "partial_offloads": sum(x["partial_offloads"] for x in per_rank),
            "short_offloads": [s for x in per_rank for s in x["short_offloads"]],
            "levels": sorted({lv for x in per_rank for lv in x["levels"]}),
            "resident_after": [x["resident_after"] for x in per_rank],
            "planned": [x["planned"] for x in per_rank], "forced": sum(x["forced"] for x in per_rank),
            "saved_bytes": sum(x["saved_bytes"] for x in per_rank),
            "peak_resident": [x["peak_resident"] for x in per_rank],
            "peak_memory": [x["peak_memory"] for x in per_rank],
        })
    return merged


# -- profiling and online re-scheduling (test_torch_profile_online.py) ------------------------------------
def _train(rank, placement, microbatches, iterations, online_kwargs=None, initial=None):
    """`iterations` SGD steps of the MLP from the same start; returns (losses, parameter sums,
    the OnlineRescheduler or None, the runtime)."""
    from optpipe.torch import OnlineRescheduler, ScheduleOptPipe, gpipe_schedule  # noqa: PLC0415

    S = len(placement)
    model = build_model(S)
    mine = [s for s in range(S) if placement[s] == rank]
    stages = [PipelineStage(model[s], s, S, torch.device("cpu")) for s in mine]
    schedule = initial or gpipe_schedule(placement, microbatches)
    rt = ScheduleOptPipe(stages, schedule, loss_fn=loss_fn)
    params = [p for s in mine for p in model[s].parameters()]
    opt = torch.optim.SGD(params, lr=0.1)
    online = None
    if online_kwargs is not None:
        kw = dict(online_kwargs)
        kw.setdefault("profiler_kwargs", {})["optimizer"] = opt
        online = OnlineRescheduler(rt, **kw)
    runner = online.step if online else rt.step
    losses = []
    for it in range(iterations):
        x, y = make_batch(microbatches, seed=100 + it)
        mb_losses = []
        runner(*((x,) if 0 in mine else ()), target=y if S - 1 in mine else None, losses=mb_losses)
        opt.step()
        opt.zero_grad()
        if mb_losses:
            losses.append(torch.stack([l.detach() for l in mb_losses]).mean().item())
    if online:
        online.finish()
    sums = [p.detach().sum().item() for p in params]
    return losses, sums, online, rt


def _profile_online_worker(rank, world, rendezvous, job, out_dir):
    _init(rank, world, rendezvous)
    res = {}
    try:
        from optpipe.torch import Profiler, ScheduleOptPipe, gpipe_schedule  # noqa: PLC0415

        placement, m = job["placement"], job["microbatches"]
        S = len(placement)
        # 1. the profiler on a plain gpipe run
        model = build_model(S)
        mine = [s for s in range(S) if placement[s] == rank]
        stages = [PipelineStage(model[s], s, S, torch.device("cpu")) for s in mine]
        rt = ScheduleOptPipe(stages, gpipe_schedule(placement, m), loss_fn=loss_fn)
        x, y = make_batch(m)
        with Profiler(rt, memory_limit="1.5act", offload_levels=[0, 0.5, 1], name="mlp-measured") as prof:
            for _ in range(3):
                rt.step(*((x,) if 0 in mine else ()), target=y if S - 1 in mine else None)
                for s in mine:
                    model[s].zero_grad()
        inst = prof.instance()
        res["instance"] = inst
        res["profiled_iterations"] = len(prof.iterations)
        # 2. solve the measured instance (rank 0), run the solver's schedule, report memory
        from optpipe.torch import format_memory_report, memory_report, solver  # noqa: PLC0415
        box = [solver.solve(inst, time_limit=2.0) if rank == 0 else None]
        dist.broadcast_object_list(box, src=0)
        rt.set_schedule(box[0], instance=inst)
        losses = []
        rt.step(*((x,) if 0 in mine else ()), target=y if S - 1 in mine else None, losses=losses)
        rows = memory_report(rt, inst)
        res["solved"] = box[0]
        res["memory"] = [vars(r) for r in rows]
        res["memory_text"] = format_memory_report(rows)
        res["solved_losses"] = [l.item() for l in losses]
        # 3. online re-scheduling against a run that never switches
        online_kwargs = dict(profile_iterations=2, solver_time=2.0, switch_threshold=-1.0, wait_for_solver=True,
                             profiler_kwargs={"memory_limit": "1.5act", "offload_levels": [0, 0.5, 1]})
        l_on, p_on, online, rt_on = _train(rank, placement, m, job["iterations"], online_kwargs)
        l_fix, p_fix, _, _ = _train(rank, placement, m, job["iterations"])
        res.update({"losses_online": l_on, "losses_fixed": l_fix, "params_online": p_on, "params_fixed": p_fix,
                    "switches": [vars(e) for e in online.switches], "log": online.log,
                    "final_schedule": rt_on.schedule.to_dict(),
                    "online_instance": online.instance})
    except Exception as e:
        res = {"error": f"{type(e).__name__}: {e}", "trace": traceback.format_exc()}
    finally:
        with open(os.path.join(out_dir, f"profile.rank{rank}.json"), "w") as f:
            json.dump(res, f)
        dist.destroy_process_group()


def run_profile_online(world, job, workdir=None):
    workdir = workdir or tempfile.mkdtemp(prefix="optpipe-torch-test-")
    rendezvous = os.path.join(workdir, "rendezvous")
    try:
        mp.spawn(_profile_online_worker, args=(world, rendezvous, job, workdir), nprocs=world, join=True)
    except Exception:
        pass  # each rank wrote its error
    out = []
    for r in range(world):
        p = os.path.join(workdir, f"profile.rank{r}.json")
        out.append(json.load(open(p)) if os.path.exists(p) else {"error": "no result"})
    return out
