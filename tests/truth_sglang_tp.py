#!/usr/bin/env python3
"""Independent ground truth for real SGLang tensor-parallel CPU (gloo) traces: which rank the
others wait for, from when, and how long a step.

Python 3 stdlib only (gzip, json, re, sys, os); never reads rankprof's output and shares none of
its code.

    python3 tests/truth_sglang_tp.py ../shared/fixtures/sglang-cpu/tp2dp2 [--threshold 5]

Prints one JSON object.

THE RULE (times in µs, the traces' own clock; the ranks ran on one host, one clock)
  files      every `*.trace.json[.gz]`; TP rank from `-TP-<t>`, DP replica from `-DP-<d>` (no
             `-DP-`: replica 0), as SGLang names them, one file a rank (a folder of one file
             per stage, `…-TP-0-EXTEND`, is refused).  A replica's TP ranks run the same batches;
             each replica is judged on its own (its ranks share no collective with another's).
  step       the OUTERMOST `X` events named `step[...]` (SGLang's forward-step annotation; a
             `step[...]` inside another on the same thread is the same iteration and is
             dropped).  Step k of one rank is step k of its replica's other ranks (their names
             must agree, else the script exits 1).
  the wait   gloo's `c10d::*` op returns once the work is queued; the calling thread then sits
             in `Work.wait()`.  With Python stacks recorded, torch writes that call as a
             `python_function` event `<built-in method wait of …>` (the spelling of the object
             depends on the pybind11 build).  Rule: after each `c10d::*` op, the first event on
             the same thread, starting at or after the op's end and before the next `c10d::*`
             op, whose name holds "method wait" is its wait.  (A name table the analyzer needs
             too: this rule is shared by necessity; everything below is not.)  Its `dur` is the
             wait.  Per rank per step: wait = the sum of the waits of its collectives inside the
             step.
  imposed    (by waits) every member of a collective waits for the last arriver and for the
             transfer; the last arriver waits for the transfer alone.  So per step and replica,
             the rank with the least wait is the one the others waited for (the culprit of the
             step), and what it cost them is the median over the other ranks of (their wait -
             its wait).  Per rank, `imposed_by_waits_ms` is that median for every rank, not only
             the culprit (negative: it waited more than the others).
  blocked    (by arrivals, the second measure: tests/truth_gloo.py's rule) the k-th `c10d::*`
             op of a step on every rank of a replica is one collective (their names must agree).
             A rank arrives at its op's start and leaves at the end of its wait (no wait found:
             the op's end).  The last arriver is the latest start; each other member waited for
             it max(0, min(last arrival - its arrival, its leave - its arrival)): from its
             arrival until the last arrived, no longer than it stayed.  What the last arriver
             cost the collective is the median of that over the other members; per rank per
             step, `blocked_ms` sums it over the collectives it arrived last at.  The culprit of
             the step by arrivals is the rank with the most, and the onset and cost follow as
             below, on that figure (`by_arrivals`, `verdict_by_arrivals`).
  the two    measure the same thing, what the peers waited for a rank, from different events,
             and on a busy CPU they part: the waits leave out time blocked inside the `c10d::`
             op itself (tp2dp2, step 2 of DP01: TP00's all-reduces take up to 9.3 ms before
             their `Work.wait()`s, with TP01 not yet there), and count a waiter's own late
             wake-up (merge_by_sglang, step 7: TP01 stays in `Work.wait()` 2.7 ms after TP00,
             the last arriver, has left: the scheduler's, not TP00's).  The arrivals are the
             better founded of the two; neither is a plant (these recordings have none), and
             where they differ the test holds the verdict to the span between them.
  own time   per rank per step: the step's duration less its wait (what it did itself).
  onset      per rank: the earliest step k such that the rank is the culprit of every step from
             k to the last and imposes at least `--threshold` percent (default 5, rankprof's
             default) of the replica's median step duration in each of them, over at least two
             steps (or the only one): a slowdown that stays, as docs/analysis.md defines the
             onset (before 2026-12-02 this script applied the threshold at step k alone); its
             cost per step is the mean imposed wait over those steps.  A rank with no such k
             has no onset.  A replica's culprit is its rank with the largest cost per step.
  cause      "slower device or host" when the culprit ran the same batches as its peers (the
             same step names, one for one) and its own time from the onset on is larger than
             the median peer's: `own_ratio` = the culprit's own time / the median peer's.
  verdict    the replica whose culprit costs the most leads; "balanced" when no rank of any
             replica has an onset.  `verdict` by the waits, `verdict_by_arrivals` by the
             arrivals (the own time and the cause are the same rule in both).
"""
import gzip
import json
import os
import re
import sys


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        doc = json.load(f)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    return [e for e in events if e.get("ph") == "X" and "dur" in e and "ts" in e]


def outermost_steps(xs):
    steps = sorted((e for e in xs if e["name"].startswith("step[")), key=lambda e: (e["ts"], -e["dur"]))
    out = []
    for s in steps:
        inside = any(
            o["tid"] == s["tid"] and o["pid"] == s["pid"] and o["ts"] <= s["ts"] and s["ts"] + s["dur"] <= o["ts"] + o["dur"]
            for o in out
        )
        if not inside:
            out.append(s)
    return out


def leave(op, w):
    """When a rank left a collective: the end of its wait, else of its op (µs)."""
    return w["ts"] + w["dur"] if w is not None else op["ts"] + op["dur"]


def blocked_by_arrivals(labels, colls):
    """Per rank, what the others waited for it at the collectives of one step it arrived last
    at (µs): `colls[r]` is rank r's (op, wait) list in time order; the k-th of every rank is
    one collective.  None when the ranks' ops do not agree by name."""
    n = min(len(colls[r]) for r in labels)
    if any(len(colls[r]) != n for r in labels):
        return None
    out = {r: 0.0 for r in labels}
    for k in range(n):
        if len({colls[r][k][0]["name"] for r in labels}) != 1:
            return None
        arrive = {r: colls[r][k][0]["ts"] for r in labels}
        last = max(labels, key=lambda r: (arrive[r], r))
        waited = [
            max(0.0, min(arrive[last] - arrive[o], leave(*colls[o][k]) - arrive[o]))
            for o in labels
            if o != last
        ]
        out[last] += median(waited)
    return out


def waits(xs):
    """(c10d op, its wait event or None) in time order, per thread."""
    by_tid = {}
    for e in xs:
        by_tid.setdefault((e["pid"], e["tid"]), []).append(e)
    out = []
    for evs in by_tid.values():
        evs.sort(key=lambda e: e["ts"])
        ops = [e for e in evs if e["name"].startswith("c10d::")]
        for i, op in enumerate(ops):
            end = op["ts"] + op["dur"]
            nxt = ops[i + 1]["ts"] if i + 1 < len(ops) else float("inf")
            w = next((e for e in evs if end <= e["ts"] < nxt and "method wait" in e["name"]), None)
            out.append((op, w))
    return out


def median(v):
    v = sorted(v)
    n = len(v)
    return 0.0 if n == 0 else (v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2)


def onset_of(rank, steps, least_ms, culprit="culprit", imposed="imposed_ms"):
    """The earliest step from which `rank` is the culprit of every step to the last, imposing at
    least `least_ms` in each of them, over at least two steps (or the only one); None when there
    is none.  `culprit` and `imposed` name the measure's fields in a step."""
    k = len(steps)
    while k > 0 and steps[k - 1][culprit] == rank and steps[k - 1][imposed] >= least_ms:
        k -= 1
    if k == len(steps) or (len(steps) > 1 and len(steps) - k < 2):
        return None
    return k


def lead_of(labels, steps, least_ms, culprit, imposed):
    """The replica's culprit by one measure: its rank with an onset whose cost per step (the
    mean imposed from the onset on) is the largest, with its own time over its median peer's;
    None when no rank has an onset."""
    best = None
    for r in labels:
        k = onset_of(r, steps, least_ms, culprit, imposed)
        if k is None:
            continue
        later = steps[k:]
        cost = sum(s[imposed] for s in later) / len(later)
        own = {q: sum(s["dur_ms"][q] - s["wait_ms"][q] for s in later) for q in labels}
        peers = median([own[q] for q in labels if q != r])
        found = {"culprit": r, "onset": k, "cost_ms_per_step": cost, "own_ratio": own[r] / peers if peers > 0 else None}
        if best is None or cost > best["cost_ms_per_step"]:
            best = found
    return best


def verdict_of(leads):
    """The replica whose culprit costs the most leads; "balanced" when none has one."""
    led = [x for x in leads if x is not None]
    if not led:
        return "balanced"
    top = max(led, key=lambda x: x["cost_ms_per_step"])
    return {
        "rank": top["culprit"],
        "onset_step": top["onset"],
        "cost_ms_per_step": top["cost_ms_per_step"],
        "own_ratio": top["own_ratio"],
        "cause": "slower device or host" if (top["own_ratio"] or 0) > 1 else "unknown",
    }


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    folder = argv[1]
    threshold = float(argv[argv.index("--threshold") + 1]) if "--threshold" in argv else 5.0
    replicas = {}
    for name in sorted(os.listdir(folder)):
        if not re.search(r"\.trace\.json(\.gz)?$", name):
            continue
        tp = re.search(r"-TP-(\d+)", name)
        dp = re.search(r"-DP-(\d+)", name)
        if not tp:
            continue
        xs = load(os.path.join(folder, name))
        steps = outermost_steps(xs)
        ws = waits(xs)
        per_step = []
        for s in steps:
            a, b = s["ts"], s["ts"] + s["dur"]
            inside = [(op, w) for op, w in ws if a <= op["ts"] < b]
            per_step.append(
                {
                    "name": s["name"],
                    "ops": sorted(inside, key=lambda x: x[0]["ts"]),
                    "dur_us": s["dur"],
                    "collectives": len(inside),
                    "unwaited": sum(1 for _, w in inside if w is None),
                    "wait_us": sum(w["dur"] for _, w in inside if w is not None),
                }
            )
        label = f"TP{int(tp.group(1)):02d}" + (f"-DP{int(dp.group(1)):02d}" if dp else "")
        replica = replicas.setdefault(int(dp.group(1)) if dp else 0, {})
        if label in replica:
            print(f"two files of {label} (one per stage?): not one profile; give one stage's files", file=sys.stderr)
            return 1
        replica[label] = per_step
    out = {"threshold_pct": threshold, "replicas": []}
    for d, ranks in sorted(replicas.items()):
        labels = sorted(ranks)
        n = min(len(ranks[r]) for r in labels)
        for k in range(n):
            names = {ranks[r][k]["name"] for r in labels}
            if len(names) != 1:
                print(f"replica {d} step {k}: the ranks ran different steps: {names}", file=sys.stderr)
                return 1
        steps = []
        for k in range(n):
            wait = {r: ranks[r][k]["wait_us"] for r in labels}
            culprit = min(labels, key=lambda r: (wait[r], r))
            by_waits = {q: median([wait[r] - wait[q] for r in labels if r != q]) if len(labels) > 1 else 0.0 for q in labels}
            imposed = by_waits[culprit]
            blocked = blocked_by_arrivals(labels, {r: ranks[r][k]["ops"] for r in labels})
            if blocked is None:
                print(f"replica {d} step {k}: the ranks' collectives do not agree by name", file=sys.stderr)
                return 1
            by_arrivals = max(labels, key=lambda r: (blocked[r], r))
            steps.append(
                {
                    "imposed_by_waits_ms": {r: by_waits[r] / 1e3 for r in labels},
                    "blocked_ms": {r: blocked[r] / 1e3 for r in labels},
                    "culprit_by_arrivals": by_arrivals,
                    "blocked_by_culprit_ms": blocked[by_arrivals] / 1e3,
                    "step": k,
                    "name": ranks[labels[0]][k]["name"],
                    "dur_ms": {r: ranks[r][k]["dur_us"] / 1e3 for r in labels},
                    "wait_ms": {r: wait[r] / 1e3 for r in labels},
                    "collectives": {r: ranks[r][k]["collectives"] for r in labels},
                    "unwaited": {r: ranks[r][k]["unwaited"] for r in labels},
                    "culprit": culprit,
                    "imposed_ms": imposed / 1e3,
                }
            )
        step_ms = median([max(s["dur_ms"].values()) for s in steps])
        rep = {"replica": d, "ranks": labels, "median_step_ms": step_ms, "steps": steps}
        least = threshold / 100 * step_ms
        best = lead_of(labels, steps, least, "culprit", "imposed_ms")
        if best is not None:
            rep.update(best)
        rep["by_arrivals"] = lead_of(labels, steps, least, "culprit_by_arrivals", "blocked_by_culprit_ms")
        out["replicas"].append(rep)
    out["verdict"] = verdict_of([{k: r[k] for k in ("culprit", "onset", "cost_ms_per_step", "own_ratio")} if "culprit" in r else None for r in out["replicas"]])
    out["verdict_by_arrivals"] = verdict_of([r["by_arrivals"] for r in out["replicas"]])
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
