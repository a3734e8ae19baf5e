#!/usr/bin/env python3
# Train a small GPT with an OptPipe schedule that offloads activations (issue 19, part 5): the
# whole path a user copies, profile -> solve -> run, from Python, one process per GPU (or per CPU
# rank) under torchrun:
#
#   torchrun --nproc-per-node 4 python/examples/train_gpt.py                 # GPUs (NCCL)
#   python -m torch.distributed.run --nproc-per-node 4 python/examples/train_gpt.py \
#       --device cpu --dtype float64 --check                                 # CPU (gloo), checked
#
# 1. The model (token and position embedding, pre-LayerNorm transformer blocks with causal
#    self-attention and a GELU MLP, final LayerNorm and LM head) is built on every rank from one
#    seed and split into pipeline stages (one per rank, or two per rank in a V or loop placement);
#    each rank wraps its stages in torch.distributed.pipelining.PipelineStage.
# 2. It starts with GPipe's order (optpipe.torch.gpipe_schedule, no solver needed) and profiles a
#    few warm-up iterations without optimizer steps (optpipe.torch.Profiler): each stage's F, B, W
#    times, the activation bytes autograd saves, the copy times to host memory and back, the
#    message time, static memory, and the memory limit (--memory-limit: bytes, "Nact" = static
#    memory + N of the rank's largest activations, or "gpu").
# 3. Rank 0 solves the measured instance (optpipe.torch.solver.solve: the bindings or the optpipe
#    CLI) and broadcasts the schedule; every rank switches to it (ScheduleOptPipe.set_schedule).
# 4. It trains --steps steps with the solver's schedule, printing the loss and iteration time of
#    each, then each rank's peak memory against the simulator's and the limit. With --check, the
#    first step's loss and gradients are compared with a plain step of the whole model on the
#    same batch (use --dtype float64: the difference must be at most 1e-9).
# --online instead switches schedules while training (optpipe.torch.OnlineRescheduler).
import argparse
import datetime
import json
import math
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

try:
    import optpipe.torch as ot
except ImportError:  # running from a checkout: the package is in python/
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    import optpipe.torch as ot
from torch.distributed.pipelining import PipelineStage


# -- the model -----------------------------------------------------------------------------------
class Embedding(nn.Module):
    def __init__(self, vocab, seq, hidden):
        super().__init__()
        self.tok = nn.Embedding(vocab, hidden)
        self.pos = nn.Embedding(seq, hidden)

    def forward(self, ids):
        positions = torch.arange(ids.shape[1], device=ids.device)
        return self.tok(ids) + self.pos(positions)


class Block(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(hidden)
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.proj = nn.Linear(hidden, hidden)
        self.ln2 = nn.LayerNorm(hidden)
        self.fc1 = nn.Linear(hidden, 4 * hidden)
        self.fc2 = nn.Linear(4 * hidden, hidden)

    def forward(self, x):
        b, t, h = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(h, dim=2)
        q, k, v = (z.view(b, t, self.heads, h // self.heads).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(h // self.heads)
        mask = torch.ones(t, t, dtype=torch.bool, device=x.device).tril()
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, h)
        x = x + self.proj(y)
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class Head(nn.Module):
    def __init__(self, hidden, vocab):
        super().__init__()
        self.ln = nn.LayerNorm(hidden)
        self.out = nn.Linear(hidden, vocab, bias=False)

    def forward(self, x):
        return self.out(self.ln(x))


def build_gpt(a, seed=1234):
    """The GPT as a list of layers: embedding, blocks, head."""
    torch.manual_seed(seed)
    return [Embedding(a.vocab, a.seq, a.hidden)] + [Block(a.hidden, a.heads) for _ in range(a.layers)] + \
        [Head(a.hidden, a.vocab)]


def split_stages(layers, num_stages):
    """Consecutive slices, the blocks as even as possible; the embedding goes with the first
    stage's blocks and the head with the last one's."""
    blocks = layers[1:-1]
    if len(blocks) < num_stages:
        raise SystemExit(f"{len(blocks)} transformer blocks cannot fill {num_stages} stages (--layers)")
    base, extra = divmod(len(blocks), num_stages)
    stages, i = [], 0
    for s in range(num_stages):
        n = base + (1 if s < extra else 0)
        part = blocks[i:i + n]
        i += n
        if s == 0:
            part = [layers[0]] + part
        if s == num_stages - 1:
            part = part + [layers[-1]]
        stages.append(nn.Sequential(*part))
    return stages


def loss_fn(logits, targets):
    return F.cross_entropy(logits.flatten(0, 1), targets.flatten())


def placement_of(kind, ranks):
    if kind == "one":
        return list(range(ranks))
    if kind == "v":
        return list(range(ranks)) + list(reversed(range(ranks)))
    if kind == "loop":
        return list(range(ranks)) * 2
    raise SystemExit(f"unknown placement {kind}")


def batch_for(step, a, device):
    g = torch.Generator().manual_seed(1000 + step)
    tokens = torch.randint(0, a.vocab, (a.batch, a.seq + 1), generator=g)
    return tokens[:, :-1].to(device), tokens[:, 1:].to(device)


def gib(b):
    return f"{b / 2 ** 30:.3f} GiB" if b >= 2 ** 28 else f"{b / 2 ** 20:.3f} MiB"


# -- the run -----------------------------------------------------------------------------------
def main():
    ap = argparse.ArgumentParser(description="Train a small GPT under an OptPipe schedule (run it with torchrun)")
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--dtype", choices=["float32", "float64", "bfloat16"], default="float32")
    ap.add_argument("--placement", choices=["one", "v", "loop"], default="one",
                    help="one stage per rank, or two per rank in a V or loop")
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--vocab", type=int, default=256)
    ap.add_argument("--seq", type=int, default=32)
    ap.add_argument("--batch", type=int, default=16, help="sequences per step (split into microbatches)")
    ap.add_argument("--microbatches", type=int, default=8)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--profile-steps", type=int, default=3, help="warm-up iterations profiled before solving")
    ap.add_argument("--memory-limit", default="1.5act",
                    help="per rank: bytes (e.g. 40GiB), Nact (static memory + N of the rank's largest activations) "
                         "or gpu (the device's memory); default 1.5act, tight enough that the solver must offload")
    ap.add_argument("--offload-levels", default="0,0.5,1")
    ap.add_argument("--solver-time", type=float, default=10.0)
    ap.add_argument("--schedule", help="run this optpipe-schedule/1 file instead of solving")
    ap.add_argument("--instance", help="use this optpipe-instance/1 file (e.g. an earlier run's --out) instead of "
                                       "profiling")
    ap.add_argument("--online", action="store_true", help="switch to the solver's schedule while training")
    ap.add_argument("--check", action="store_true",
                    help="compare the first step's loss and gradients with a plain step of the whole model")
    ap.add_argument("--tolerance", type=float, default=1e-9)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--out", default=None, help="write the measured instance and the schedule here")
    a = ap.parse_args()

    backend = "nccl" if a.device == "cuda" else "gloo"
    dist.init_process_group(backend, timeout=datetime.timedelta(seconds=300))
    rank, world = dist.get_rank(), dist.get_world_size()
    if a.device == "cuda":
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)))
        device = torch.device("cuda", torch.cuda.current_device())
    else:
        device = torch.device("cpu")
    dtype = getattr(torch, a.dtype)
    torch.set_default_dtype(dtype if dtype != torch.bfloat16 else torch.float32)

    def say(*msg):
        if rank == 0:
            print(*msg, flush=True)

    placement = placement_of(a.placement, world)
    S = len(placement)
    layers = build_gpt(a)
    stage_modules = split_stages(layers, S)
    mine = [s for s in range(S) if placement[s] == rank]
    for s in mine:
        stage_modules[s].to(device=device, dtype=dtype)
    stages = [PipelineStage(stage_modules[s], s, S, device) for s in mine]
    params = [p for s in mine for p in stage_modules[s].parameters()]
    opt = torch.optim.AdamW(params, lr=a.lr)
    levels = [float(x) for x in a.offload_levels.split(",")]
    say(f"GPT: {a.layers} blocks, hidden {a.hidden}, {a.heads} heads, vocabulary {a.vocab}, sequence {a.seq}; "
        f"{world} ranks ({a.device}, {a.dtype}), {S} stages placed {placement}, {a.microbatches} microbatches of "
        f"{a.batch // a.microbatches} sequences")

    rt = ot.ScheduleOptPipe(stages, ot.gpipe_schedule(placement, a.microbatches), loss_fn=loss_fn)

    def run_step(runner, step):
        x, y = batch_for(step, a, device)
        losses = []
        if device.type == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        runner(*((x,) if 0 in mine else ()), target=y if S - 1 in mine else None, losses=losses)
        if device.type == "cuda":
            torch.cuda.synchronize()
        ms = (time.perf_counter() - t0) * 1e3
        loss = torch.stack([l.detach().double() for l in losses]).mean().item() if losses else 0.0
        t = torch.tensor([loss if S - 1 in mine else 0.0, ms], dtype=torch.float64, device=device)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)  # the loss from the last stage's rank, the slowest time
        return t[0].item(), t[1].item()

    profiler_kwargs = {"memory_limit": None if a.memory_limit == "gpu" else a.memory_limit, "optimizer": opt,
                       "offload_levels": levels, "name": f"gpt-{a.placement}-{world}x{a.microbatches}-measured"}
    online = None
    instance = None
    if a.online:
        online = ot.OnlineRescheduler(rt, profile_iterations=a.profile_steps, solver_time=a.solver_time,
                                      profiler_kwargs=profiler_kwargs)
        runner = online.step
    else:
        # 2. profile warm-up iterations (no optimizer step: the weights stay those of the seed)
        if a.instance:
            with open(a.instance) as f:
                instance = json.load(f)
            say(f"instance {a.instance} (not profiled)")
        else:
            say(f"profiling {a.profile_steps} warm-up iterations under GPipe's order ...")
            with ot.Profiler(rt, **profiler_kwargs) as prof:
                for i in range(a.profile_steps):
                    run_step(rt.step, -1 - i)
                    opt.zero_grad(set_to_none=True)
            instance = prof.instance()
        if rank == 0:
            for s, st in enumerate(instance["stages"]):
                print(f"  stage {s} (rank {st['device']}): F {st['forward']:.3f} B {st['backward']:.3f} "
                      f"W {st['weight']:.3f} ms, activation {gib(st['activation'])}, offload "
                      f"{st['offload']:.4f} / reload {st['reload']:.4f} ms", flush=True)
            for d, dev in enumerate(instance["devices"]):
                print(f"  rank {d}: static {gib(dev['static_memory'])}, limit {gib(dev['memory_limit'])}", flush=True)
        # 3. solve on rank 0, run the solver's schedule everywhere
        box = [None]
        if rank == 0:
            try:
                if a.schedule:
                    box[0] = ot.load_schedule(a.schedule).to_dict()
                else:
                    t0 = time.time()
                    box[0] = ot.solver.solve(instance, time_limit=a.solver_time)
                    print(f"solved in {time.time() - t0:.1f} s: {box[0].get('status')}, predicted makespan "
                          f"{box[0].get('makespan', float('nan')):.3f} ms", flush=True)
            except Exception as e:  # every rank must hear of it, or they wait in the broadcast
                box[0] = {"error": f"{type(e).__name__}: {e}"}
        dist.broadcast_object_list(box, src=0)
        if "error" in box[0]:
            say(f"no schedule: {box[0]['error']}")
            say("(a higher --memory-limit or --solver-time may help; a V or loop placement holds two stages per "
                "rank, try 3act)")
            dist.destroy_process_group()
            sys.exit(2)
        rt.set_schedule(box[0], instance=instance)  # the instance's limits: reloads wait for room as simulated
        if a.out and rank == 0:
            os.makedirs(a.out, exist_ok=True)
            with open(os.path.join(a.out, "gpt.instance.json"), "w") as f:
                json.dump(instance, f, indent=1)
            with open(os.path.join(a.out, "gpt.schedule.json"), "w") as f:
                json.dump(box[0], f, indent=1)
        runner = rt.step
        offs = rt.schedule.offloads
        by_level = {}
        for act in offs:
            by_level[act.level] = by_level.get(act.level, 0) + 1
        say(f"offloads {len(offs)} ({', '.join(f'level {lv:g}: {n}' for lv, n in sorted(by_level.items())) or 'none'})")

    # 4. train; with --check, the first step against a plain step of the whole model
    failed = False
    for step in range(a.steps):
        loss, ms = run_step(runner, step)
        if step == 0 and a.check:
            ref = [m.to(device=device, dtype=dtype) for m in split_stages(build_gpt(a), S)]
            x, y = batch_for(0, a, device)
            out = x
            for m in ref:
                out = m(out)
            ref_loss = loss_fn(out, y)
            ref_loss.backward()
            worst = 0.0
            for s in mine:
                for p, q in zip(stage_modules[s].parameters(), ref[s].parameters()):
                    worst = max(worst, (p.grad - q.grad).abs().max().item())
            t = torch.tensor([worst, abs(loss - ref_loss.item())], dtype=torch.float64, device=device)
            dist.all_reduce(t, op=dist.ReduceOp.MAX)
            failed = not (t[0].item() <= a.tolerance and t[1].item() <= a.tolerance)
            say(f"max gradient difference {t[0].item():.3g} (loss difference {t[1].item():.3g}, tolerance "
                f"{a.tolerance:g}, against a plain step of the whole model)")
        opt.step()
        opt.zero_grad(set_to_none=True)
        say(f"step {step + 1}  loss {loss:.6f}  iteration {ms:.1f} ms")

    if online is not None:
        online.finish()
        for line in online.log:
            say("online: " + line)
        instance = online.instance
    # 5. memory: measured peak against the simulator's and the limit
    if instance is not None:
        rows = ot.memory_report(rt, instance)
        say(ot.format_memory_report(rows))
        if device.type == "cpu":
            say("(CPU: 'tracked' is the static memory plus the saved-tensor bytes on the device, not the process's "
                "memory)")
    dist.destroy_process_group()
    if failed:
        sys.exit(1)


if __name__ == "__main__":
    main()
