"""Turns a solver's start times into the spec's device lists (../shared/spec/problem.md §3), so
that every solver's answer is re-simulated by `optpipe simulate` and compared on the spec's
makespan, not on its own model's objective.

Compute ops go in the order of their start times (ties: earlier end first). A reload R s.j is
requested when the list reaches it, at the end of the compute op before it; so it goes after
the last op that ends by the reload's start, and always after F s.j and before B s.j."""

from typing import Dict, List, Tuple

from instance import Instance


def _level_text(r: float) -> str:
    return "%g" % r


def device_lists(inst: Instance, starts: Dict[Tuple[str, int, int], float], levels: Dict[Tuple[int, int], float],
                 reload_starts: Dict[Tuple[int, int], float]) -> List[List[str]]:
    """`starts[(t, s, j)]`: start of every compute op (t in F, B, W); `levels[(s, j)]`: offload
    level (absent or 0: none); `reload_starts[(s, j)]`: start of the reload of each offloaded one."""
    S, M = inst.num_stages, inst.microbatches
    lists = []
    for d in range(len(inst.devices)):
        ops = []
        for s in range(S):
            if inst.stages[s].device != d:
                continue
            for j in range(M):
                for t in inst.types():
                    text = f"{t}{s}.{j}"
                    r = levels.get((s, j), 0.0)
                    if t == "F" and r > 0:
                        text += "@" + _level_text(r)
                    st = starts[t, s, j]
                    ops.append((st, st + inst.duration(t, s), text))
        ops.sort(key=lambda o: (o[0], o[1]))
        texts = [o[2] for o in ops]
        pending = sorted(((reload_starts[k], k) for k, r in levels.items()
                          if r > 0 and inst.stages[k[0]].device == d and k in reload_starts), reverse=True)
        # Insert from the latest reload back, so that earlier insertions do not shift the anchors.
        for rs, (s, j) in pending:
            f_text = next(o[2] for o in ops if o[2].startswith(f"F{s}.{j}@"))
            at = texts.index(f_text) + 1
            for o in ops:
                if o[1] <= rs + 1e-9:
                    at = max(at, texts.index(o[2]) + 1)
            at = min(at, texts.index(f"B{s}.{j}"))
            texts.insert(at, f"R{s}.{j}")
        lists.append(texts)
    return lists
