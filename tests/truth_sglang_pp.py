#!/usr/bin/env python3
"""Independent figures for a real SGLang pipeline-parallel recording
(fixtures/real-sglang/pp2-control): what each stage's thread computed in each step.

Python 3 stdlib only (gzip, json); never reads rankprof's output and shares none of its code.

    python3 tests/truth_sglang_pp.py fixtures/real-sglang/pp2-control

THE RULE (times in ms, the traces' own clock)
  rank      `PP<p>` from the file name (`…-TP-0-PP-<p>.trace.json.gz`), as `TP00-PP<pp>`.
  thread    the tid holding the `step[…]` spans (`user_annotation`).
  step      each outermost `step[…]` span on that thread, in order: [ts, ts + dur].
  compute   the union of that thread's `cpu_op` events inside the step (clipped to it) whose
            name is not a communication op (`c10d::…`, `record_param_comms`): time the thread
            was running an op of its own, so time it was not waiting for the other stage.
Prints one JSON object: {"ranks": {rank: [{"step", "name", "dur_ms", "compute_ms"}, …]}}.
"""
import gzip
import json
import os
import re
import sys


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def union_within(ivs, lo, hi):
    total, end = 0.0, lo
    for a, b in sorted(ivs):
        a, b = max(a, end), min(b, hi)
        if b > a:
            total += b - a
            end = b
    return total


def stage(path):
    events = [e for e in load(path)["traceEvents"]
              if e.get("ph") == "X" and isinstance(e.get("ts"), (int, float))]
    spans = [e for e in events if str(e.get("name", "")).startswith("step[")]
    if not spans:
        return []
    tid = spans[0]["tid"]
    spans.sort(key=lambda e: (e["ts"], -e.get("dur", 0)))
    steps, last_end = [], float("-inf")
    for e in spans:
        if e["tid"] != tid or e["ts"] < last_end:
            continue  # nested, or another thread's
        steps.append(e)
        last_end = e["ts"] + e.get("dur", 0)
    ops = [(e["ts"], e["ts"] + e.get("dur", 0)) for e in events
           if e["tid"] == tid and e.get("cat") == "cpu_op"
           and not str(e["name"]).startswith("c10d::") and e["name"] != "record_param_comms"]
    out = []
    for i, s in enumerate(steps):
        lo, hi = s["ts"], s["ts"] + s.get("dur", 0)
        inside = [(a, b) for a, b in ops if b > lo and a < hi]
        out.append({"step": i, "name": s["name"], "dur_ms": (hi - lo) / 1e3,
                    "compute_ms": union_within(inside, lo, hi) / 1e3})
    return out


def main(folder):
    ranks = {}
    for f in sorted(os.listdir(folder)):
        m = re.search(r"-PP-(\d+)\.trace\.json(\.gz)?$", f)
        if m:
            ranks[f"TP00-PP{int(m.group(1)):02d}"] = stage(os.path.join(folder, f))
    print(json.dumps({"ranks": ranks}, indent=1))


if __name__ == "__main__":
    main(sys.argv[1])
