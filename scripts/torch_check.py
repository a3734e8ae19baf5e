#!/usr/bin/env python3
"""Integration check of `optpipe export --format torch-csv` against PyTorch (issue 9).

For each case: writes a small instance, schedules it with the optpipe binary (a heuristic or the
solver), exports the schedule as PyTorch's compute-only CSV, then spawns one process per rank
(gloo backend, file rendezvous, CPU) that builds the same MLP (S stages of nn.Linear + tanh, float64),
wraps its stages in PipelineStage objects (one per global stage id the instance puts on that rank),
loads the CSV into torch.distributed.pipelining's _PipelineScheduleRuntime with _load_csv, runs one
step() and compares the loss and every parameter's gradient with a plain, non-pipelined step of the
whole model on the same batch.

Usage: scripts/torch_check.py --optpipe build/optpipe [--keep DIR] [--tolerance 1e-9]
Run it through scripts/torch_check.sh, which makes the virtual environment with PyTorch.
Exit status 0 when every case matches within the tolerance.
"""

import argparse
import csv
import datetime
import inspect
import json
import os
import subprocess
import sys
import tempfile

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn

try:  # newer PyTorch main moves the runtime into runtime.py
    from torch.distributed.pipelining.schedules import _PipelineScheduleRuntime
except ImportError:  # pragma: no cover
    from torch.distributed.pipelining.runtime import _PipelineScheduleRuntime
from torch.distributed.pipelining import PipelineStage
from torch.distributed.pipelining.schedules import PipelineScheduleMulti

HIDDEN = 16
ROWS_PER_MICROBATCH = 3


def make_instance(name, placement, microbatches, split=True):
    stages = []
    for dev in placement:
        st = {"device": dev, "forward": 1.0, "backward": 1.2, "weight": 0.8, "activation": "64MiB",
              "weight_activation": "16MiB" if split else 0}
        stages.append(st)
    return {
        "format": "optpipe-instance/1",
        "name": name,
        "microbatches": microbatches,
        "split_backward": split,
        "comm": 0.05,
        "devices": [{"memory_limit": "16GiB", "static_memory": "1GiB"} for _ in range(max(placement) + 1)],
        "stages": stages,
    }


# (name, placement of stages on ranks, microbatches, split backward, how to schedule)
CASES = [
    ("one-4x8-zbh1", [0, 1, 2, 3], 8, True, ["schedule", "--heuristic", "zb-h1"]),
    ("one-4x8-solved", [0, 1, 2, 3], 8, True, ["solve", "--time-limit", "3", "--quiet"]),
    ("v-2x4-zbv", [0, 1, 1, 0], 4, True, ["schedule", "--heuristic", "zb-v"]),
    ("v-2x6-vhalf", [0, 1, 1, 0], 6, True, ["schedule", "--heuristic", "v-half"]),
    ("loop-2x4-interleaved", [0, 1, 0, 1], 4, True, ["schedule", "--heuristic", "interleaved-1f1b"]),
    ("unsplit-4x8-1f1b", [0, 1, 2, 3], 8, False, ["schedule", "--heuristic", "1f1b"]),
]


def build_model(num_stages, seed=1234):
    torch.manual_seed(seed)
    return nn.ModuleList([nn.Sequential(nn.Linear(HIDDEN, HIDDEN), nn.Tanh()) for _ in range(num_stages)])


def make_batch(microbatches, seed=99):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(microbatches * ROWS_PER_MICROBATCH, HIDDEN, generator=g)
    y = torch.randn(microbatches * ROWS_PER_MICROBATCH, HIDDEN, generator=g)
    return x, y


def loss_fn(output, target):
    return nn.functional.mse_loss(output, target)


def worker(rank, world, rendezvous, case, csv_path, result_path):
    torch.set_default_dtype(torch.float64)
    dist.init_process_group("gloo", init_method="file://" + rendezvous, rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=120))
    try:
        placement, microbatches = case["placement"], case["microbatches"]
        num_stages = len(placement)
        x, y = make_batch(microbatches)

        # Reference: the whole model, one plain step on the whole batch.
        ref = build_model(num_stages)
        out = x
        for block in ref:
            out = block(out)
        ref_loss = loss_fn(out, y)
        ref_loss.backward()

        # Pipelined: this rank's stages, same initial weights.
        model = build_model(num_stages)
        my_stages = [s for s in range(num_stages) if placement[s] == rank]
        stages = [PipelineStage(model[s], s, num_stages, torch.device("cpu")) for s in my_stages]
        extra = {}
        if "stage_index_to_group_rank" in inspect.signature(_PipelineScheduleRuntime.__init__).parameters or \
                "stage_index_to_group_rank" in inspect.signature(PipelineScheduleMulti.__init__).parameters:
            # PyTorch 2.6 does not infer the stage -> rank map from the CSV (2.7+ does): pass it.
            extra["stage_index_to_group_rank"] = {s: placement[s] for s in range(num_stages)}
        schedule = _PipelineScheduleRuntime(stages, microbatches, loss_fn=loss_fn, **extra)
        try:
            schedule._load_csv(csv_path)  # format="compute_only", the default
        except Exception as e:  # the negative control: every rank rejects the same file before any message
            if case.get("expect_rejection"):
                if rank == 0:
                    with open(result_path, "w") as f:
                        json.dump({"rejected": str(e).splitlines()[0]}, f)
                return
            raise
        if case.get("expect_rejection"):
            raise AssertionError(f"rank {rank}: PyTorch accepted {csv_path}, which lacks a W")

        # The loaded program is the CSV row, cell for cell.
        with open(csv_path, newline="") as f:
            rows = list(csv.reader(f))
        loaded = [str(a) for a in schedule.pipeline_order[rank] if a is not None]
        assert loaded == [c.strip() for c in rows[rank] if c.strip()], (loaded, rows[rank])

        args = (x,) if 0 in my_stages else ()
        target = y if num_stages - 1 in my_stages else None
        losses = [] if target is not None else None
        schedule.step(*args, target=target, losses=losses)

        max_grad_diff = 0.0
        for s in my_stages:
            for p, q in zip(model[s].parameters(), ref[s].parameters()):
                if p.grad is None:
                    raise AssertionError(f"rank {rank}: stage {s} has a parameter without a gradient")
                max_grad_diff = max(max_grad_diff, (p.grad - q.grad).abs().max().item())
        loss_diff = 0.0
        if losses is not None:
            pipe_loss = torch.stack([l.detach() for l in losses]).mean()
            loss_diff = abs(pipe_loss.item() - ref_loss.item())
        t = torch.tensor([max_grad_diff, loss_diff])
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        if rank == 0:
            with open(result_path, "w") as f:
                json.dump({"max_grad_diff": t[0].item(), "loss_diff": t[1].item(), "loss": ref_loss.item()}, f)
    finally:
        dist.destroy_process_group()


def run(cmd):
    print("  $ " + " ".join(cmd), flush=True)
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        print(r.stdout + r.stderr, flush=True)
        raise SystemExit(f"{cmd[0]} failed with exit status {r.returncode}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--optpipe", required=True, help="the optpipe binary")
    ap.add_argument("--tolerance", type=float, default=1e-9, help="largest allowed difference (float64)")
    ap.add_argument("--keep", help="write the instances, schedules and CSVs here (default: a temporary folder)")
    a = ap.parse_args()

    print(f"torch {torch.__version__} ({torch.__file__}); _PipelineScheduleRuntime from "
          f"{_PipelineScheduleRuntime.__module__}", flush=True)
    work = a.keep or tempfile.mkdtemp(prefix="optpipe-torch-check-")
    os.makedirs(work, exist_ok=True)
    failures, worst = 0, 0.0
    for name, placement, m, split, how in CASES:
        inst_path = os.path.join(work, name + ".instance.json")
        sch_path = os.path.join(work, name + ".schedule.json")
        csv_path = os.path.join(work, name + ".csv")
        with open(inst_path, "w") as f:
            json.dump(make_instance(name, placement, m, split), f, indent=1)
        print(f"{name}: {max(placement) + 1} ranks, {len(placement)} stages {placement}, {m} microbatches, "
              f"{'split' if split else 'fused'} backward", flush=True)
        run([a.optpipe] + how + [inst_path, "-o", sch_path])
        run([a.optpipe, "export", "--format", "torch-csv", "--instance", inst_path, sch_path, "-o", csv_path])
        with open(csv_path) as f:
            print("  csv: " + " | ".join(line.strip() for line in f), flush=True)
        world = max(placement) + 1
        rendezvous = os.path.join(work, name + ".rendezvous")
        result_path = os.path.join(work, name + ".result.json")
        for p in (rendezvous, result_path):
            if os.path.exists(p):
                os.remove(p)
        case = {"placement": placement, "microbatches": m}
        try:
            mp.spawn(worker, args=(world, rendezvous, case, csv_path, result_path), nprocs=world, join=True)
            with open(result_path) as f:
                r = json.load(f)
            ok = r["max_grad_diff"] <= a.tolerance and r["loss_diff"] <= a.tolerance
            worst = max(worst, r["max_grad_diff"], r["loss_diff"])
            print(f"  {'PASS' if ok else 'FAIL'}: loss {r['loss']:.12g}, |loss diff| {r['loss_diff']:.3g}, "
                  f"max |grad diff| {r['max_grad_diff']:.3g}", flush=True)
        except Exception as e:  # a rank raised: report and go on
            ok = False
            print(f"  FAIL: {e}", flush=True)
        failures += 0 if ok else 1
    # Negative control: the first case's CSV without the last cell of rank 0 (a W) must be refused,
    # so a pass above means PyTorch checked the file.
    name, placement, m = CASES[0][0], CASES[0][1], CASES[0][2]
    with open(os.path.join(work, name + ".csv")) as f:
        rows = [line.rstrip("\n").split(",") for line in f]
    rows[0] = rows[0][:-1]
    bad = os.path.join(work, name + ".missing-w.csv")
    with open(bad, "w") as f:
        f.write("".join(",".join(r) + "\n" for r in rows))
    print(f"negative control: {bad} (rank 0's last W removed) must be rejected by _load_csv", flush=True)
    rendezvous, result_path = os.path.join(work, "negative.rendezvous"), os.path.join(work, "negative.result.json")
    for p in (rendezvous, result_path):
        if os.path.exists(p):
            os.remove(p)
    try:
        case = {"placement": placement, "microbatches": m, "expect_rejection": True}
        mp.spawn(worker, args=(max(placement) + 1, rendezvous, case, bad, result_path), nprocs=max(placement) + 1, join=True)
        with open(result_path) as f:
            print(f"  PASS: rejected: {json.load(f)['rejected']}", flush=True)
    except Exception as e:
        failures += 1
        print(f"  FAIL: {e}", flush=True)
    print(f"torch {torch.__version__}: {'PASS' if failures == 0 else 'FAIL'}: {len(CASES)} cases and the negative "
          f"control, {failures} failed; largest loss/gradient difference {worst:.3g} (tolerance {a.tolerance:g}, float64)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
