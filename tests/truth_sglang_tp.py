#!/usr/bin/env python3
"""Independent ground truth for real SGLang tensor-parallel CPU (gloo) traces: which rank the
others wait for, from when, and how long a step.

Python 3 stdlib only (gzip, json, re, sys, os); never reads rankprof's output and shares none of
its code.

    python3 tests/truth_sglang_tp.py ../shared/fixtures/sglang-cpu/tp2dp2 [--threshold 5]

Prints one JSON object.

THE RULE (times in µs, the traces' own clock; the ranks ran on one host, one clock)
  files      every `*.trace.json[.gz]`; TP rank from `-TP-<t>`, DP replica from `-DP-<d>` (no
             `-DP-`: replica 0), as SGLang names them.  A replica's TP ranks run the same batches;
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
  imposed    every member of a collective waits for the last arriver and for the transfer; the
             last arriver waits for the transfer alone.  So per step and replica, the rank with
             the least wait is the one the others waited for (the culprit of the step), and what
             it cost them is the median over the other ranks of (their wait - its wait).
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
             replica has an onset.
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


def onset_of(rank, steps, least_ms):
    """The earliest step from which `rank` is the culprit of every step to the last, imposing at
    least `least_ms` in each of them, over at least two steps (or the only one); None when there
    is none."""
    k = len(steps)
    while k > 0 and steps[k - 1]["culprit"] == rank and steps[k - 1]["imposed_ms"] >= least_ms:
        k -= 1
    if k == len(steps) or (len(steps) > 1 and len(steps) - k < 2):
        return None
    return k


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
                    "dur_us": s["dur"],
                    "collectives": len(inside),
                    "unwaited": sum(1 for _, w in inside if w is None),
                    "wait_us": sum(w["dur"] for _, w in inside if w is not None),
                }
            )
        label = f"TP{int(tp.group(1)):02d}" + (f"-DP{int(dp.group(1)):02d}" if dp else "")
        replicas.setdefault(int(dp.group(1)) if dp else 0, {})[label] = per_step
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
            imposed = median([wait[r] - wait[culprit] for r in labels if r != culprit]) if len(labels) > 1 else 0.0
            steps.append(
                {
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
        best = None
        for r in labels:
            k = onset_of(r, steps, threshold / 100 * step_ms)
            if k is None:
                continue
            later = steps[k:]
            cost = sum(s["imposed_ms"] for s in later) / len(later)
            own = {q: sum(s["dur_ms"][q] - s["wait_ms"][q] for s in later) for q in labels}
            peers = median([own[q] for q in labels if q != r])
            found = {"culprit": r, "onset": k, "cost_ms_per_step": cost, "own_ratio": own[r] / peers if peers > 0 else None}
            if best is None or cost > best["cost_ms_per_step"]:
                best = found
        if best is not None:
            rep.update(best)
        out["replicas"].append(rep)
    led = [r for r in out["replicas"] if "culprit" in r]
    if led:
        top = max(led, key=lambda r: r["cost_ms_per_step"])
        out["verdict"] = {
            "rank": top["culprit"],
            "onset_step": top["onset"],
            "cost_ms_per_step": top["cost_ms_per_step"],
            "own_ratio": top["own_ratio"],
            "cause": "slower device or host" if (top["own_ratio"] or 0) > 1 else "unknown",
        }
    else:
        out["verdict"] = "balanced"
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
