#!/usr/bin/env python3
"""Stage partitioning benchmark (issue 22): `optpipe partition` on GPT-3 14.6B and 28.3B and Llama-2 7B, on
8 and 16 H100s, at a generous and a tight memory limit (and, on 16, one in between, where other
splits fit). For each case it runs

    optpipe partition --model M --devices D --microbatches m --memory-limit L --time-limit T --format json

and prints one markdown row: the solved makespan (and bound) of the uniform, the default and
the Megatron-style splits and of the best split, each as solved in the same run, and the
command's wall time. The raw JSON of every run goes to OUT.json (--json).

    bench/partition.py [--optpipe build/optpipe] [--time-limit 60] [--json OUT.json] [--only NAME] [--placement auto]
    bench/partition.py --from OUT.json      # the table again from a saved run

With --placement auto the default, uniform and Megatron columns are those of one stage per GPU
(the first placement searched), the best is over every placement (its name before the split),
and the mode column gives each placement's best makespan.

Cells: makespan (bound) in ms, as solved in that run; "proven": every other split's bound reaches
the best makespan, so no split is faster.
"""
import argparse
import json
import subprocess
import sys
import time

CASES = [
    # name, model, devices, microbatches, memory limit
    ("gpt3-14.6b 8x24 gpu", "gpt3-14.6b", 8, 24, "gpu"),
    ("gpt3-14.6b 8x24 1.5act", "gpt3-14.6b", 8, 24, "1.5act"),
    ("gpt3-14.6b 16x48 gpu", "gpt3-14.6b", 16, 48, "gpu"),
    ("gpt3-14.6b 16x48 22GiB", "gpt3-14.6b", 16, 48, "22GiB"),
    ("gpt3-14.6b 16x48 1.5act", "gpt3-14.6b", 16, 48, "1.5act"),
    ("gpt3-28.3b 8x24 gpu", "gpt3-28.3b", 8, 24, "gpu"),
    ("gpt3-28.3b 8x24 1.5act", "gpt3-28.3b", 8, 24, "1.5act"),
    ("gpt3-28.3b 16x48 gpu", "gpt3-28.3b", 16, 48, "gpu"),
    ("gpt3-28.3b 16x48 40GiB", "gpt3-28.3b", 16, 48, "40GiB"),
    ("gpt3-28.3b 16x48 1.5act", "gpt3-28.3b", 16, 48, "1.5act"),
    ("llama2-7b 8x32 gpu", "llama2-7b", 8, 32, "gpu"),
    ("llama2-7b 8x32 2act", "llama2-7b", 8, 32, "2act"),
    ("llama2-7b 16x64 gpu", "llama2-7b", 16, 64, "gpu"),
    ("llama2-7b 16x64 20GiB", "llama2-7b", 16, 64, "20GiB"),
    ("llama2-7b 16x64 2act", "llama2-7b", 16, 64, "2act"),
]


def trial(doc, role):
    for t in doc["trials"]:
        if role in t["roles"]:
            return t
    return None


def cell(t):
    if t is None:
        return "-"
    if not t["solved"]:
        return "not solved (%s)" % t.get("note", "")
    if t["makespan"] is None:
        return "no schedule"
    return "%.1f (%.1f)" % (t["makespan"], t["bound"])


def split(t):
    return ",".join(str(v) for v in t["split"]) if t else "-"


def row(name, mem, doc, wall):
    if "placements" in doc:  # --placement auto: the references are the first placement's (one stage per GPU)
        first = doc["placements"][0]
        refs = first if "trials" in first else {"trials": []}
        best, default = doc["best"], doc["reference"]
        searched = [p for p in doc["placements"] if "trials" in p]
        solves = sum(1 for p in searched for t in p["trials"] if t["solved"])
        mode = "auto (%s), %d solves; %s" % (
            ", ".join("%s %s%s" % (p["placement"], p["mode"], " proven" if p["proven"] else "") for p in searched),
            solves, ", ".join("%s %.1f" % (p["placement"], p["best"]["makespan"]) for p in searched
                              if p.get("best") and p["best"]["makespan"] is not None))
        where = doc["best_placement"] + " " if doc.get("best_placement") else ""
    else:
        refs, best, default = doc, doc["best"], trial(doc, "default")
        solves = sum(1 for t in doc["trials"] if t["solved"])
        mode = "%s, %d solve%s%s" % (doc["mode"], solves, "" if solves == 1 else "s", ", proven" if doc["proven"] else "")
        where = ""
    vs = "-"
    if default and default["solved"] and default["makespan"]:
        vs = "%+.1f%%" % (100.0 * (best["makespan"] - default["makespan"]) / default["makespan"])
    return "| %s | %.1f GiB | %s | %s | %s | %s | %s | %s%s | %s | %.1f s |" % (
        name, doc["memory_limit"] / 2**30, cell(trial(refs, "uniform")), cell(default), cell(trial(refs, "megatron")),
        cell(best), vs, where, split(best), mode, wall)


def compact(doc):
    """The run's JSON without the splits that were only built (neither a reference, screened nor
    solved: thousands at 16 GPUs), counted in trials_dropped instead."""
    for d in [doc] + doc.get("placements", []):
        if "trials" not in d:
            continue
        kept = [t for t in d["trials"] if t["solved"] or t["roles"] or t["heuristic"] is not None]
        d["trials_dropped"] = len(d["trials"]) - len(kept)
        d["trials"] = kept
    return doc


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--optpipe", default="build/optpipe")
    ap.add_argument("--time-limit", type=float, default=60)
    ap.add_argument("--json", default="")
    ap.add_argument("--from", dest="saved", default="", help="print the table of a saved --json file")
    ap.add_argument("--only", default="", help="run only the cases whose name contains this")
    ap.add_argument("--placement", default="one", help="one (default), v, loop or auto (each, the fastest kept)")
    a = ap.parse_args()
    print("| case | memory limit | uniform | default | Megatron | partition's best | vs default | best split | mode | wall |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    if a.saved:
        for r in json.load(open(a.saved)):
            print(row(r["case"], "", r["result"], r["wall"]))
        return
    runs = []
    for name, model, d, m, mem in CASES:
        if a.only and a.only not in name:
            continue
        cmd = [a.optpipe, "partition", "--model", model, "--devices", str(d), "--microbatches", str(m),
               "--memory-limit", mem, "--placement", a.placement, "--time-limit", str(a.time_limit), "--format", "json",
               "-q"]
        t0 = time.time()
        out = subprocess.run(cmd, capture_output=True, text=True)
        wall = time.time() - t0
        if out.returncode != 0:
            print("| %s | %s | %s |" % (name, mem, out.stderr.strip().replace("\n", " ")))
            continue
        doc = json.loads(out.stdout)
        runs.append({"case": name, "command": " ".join(cmd), "wall": wall, "result": compact(doc)})
        print(row(name, mem, doc, wall))
        sys.stdout.flush()
    if a.json:
        with open(a.json, "w") as f:
            json.dump(runs, f, separators=(",", ":"))
            f.write("\n")


if __name__ == "__main__":
    main()
