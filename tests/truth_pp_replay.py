#!/usr/bin/env python3
"""What removing the planted matmuls gives back on a real gloo GPipe recording, replayed from
the raw events (Python 3 stdlib only; none of rankprof's code or constants).

    python3 tests/truth_pp_replay.py fixtures/real-gloo/pp4-slow-stage-shapes [--json]

The recording (fixtures/real-gloo/record.py, `pp4-*-shapes`) runs GPipe over 4 processes:
per micro-batch each stage receives (`dist.recv`), runs N_MM = 2 matmuls, and sends
(`dist.send`); the planted stage runs 2 more (`plant.json`'s `planted_rank`). Taken with
`record_shapes`, each `c10d::send` / `c10d::recv_` names its peer in `Concrete Inputs`
(third entry).

The method, from the raw events only:
- per rank, its transfers in order: the `c10d::` op's start (arrival) and the end of the
  `gloo:send` / `gloo:recv` range on the same thread that follows it (leave);
- the n-th send from a to b is paired with the n-th receive at b from a;
- the planted time before each transfer: on the planted rank, the 3rd and 4th `aten::mm`
  between its previous transfer and this one (the ones `record.py` adds), by their own
  durations;
- the replay: each rank has a clock; a pair completes when both have arrived (arrival = clock
  + the recorded gap since the rank's previous leave, less the planted matmuls when removed);
  each end leaves as long after the last arrival as it did in the recording. Run as recorded
  it reproduces the recording; with the planted matmuls removed, the last leave moves earlier
  by what they cost the profile.

Prints the planted time and what removing it gives back, per step (the profile's steps:
`ProfilerStep#` ranges on the planted rank). The replay assumes what rankprof's graph
assumes (a transfer joins its two ends; the other ranks' gaps do not change): it checks the
implementation and the choice of what is removed (here exactly the planted ops, where
rankprof scales the rank's busy time to the median rank's), not that assumption.
"""

import collections
import glob
import gzip
import json
import os
import sys


def load(folder):
    ranks = {}
    for f in glob.glob(os.path.join(folder, "*.pt.trace.json.gz")):
        with gzip.open(f, "rt") as fh:
            doc = json.load(fh)
        me = doc["distributedInfo"]["rank"]
        evs = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
        ranks[me] = evs
    return ranks


def transfers(evs, me, planted):
    main = collections.Counter(e["tid"] for e in evs if e.get("cat") == "cpu_op").most_common(1)[0][0]
    ops = sorted((e for e in evs if e["name"] in ("c10d::send", "c10d::recv_")), key=lambda e: e["ts"])
    waits = sorted((e for e in evs if e["name"] in ("gloo:send", "gloo:recv") and e["tid"] == main),
                   key=lambda e: e["ts"])
    mms = sorted((e for e in evs if e["name"] == "aten::mm" and e["tid"] == main), key=lambda e: e["ts"])
    seq = []
    prev_leave = None
    for e in ops:
        peer = int(e["args"]["Concrete Inputs"][2])
        leave = e["ts"] + e["dur"]
        for w in waits:
            if e["ts"] - 1 <= w["ts"] <= leave + 1000:
                leave = max(leave, w["ts"] + w["dur"])
                break
        lo = prev_leave if prev_leave is not None else float("-inf")
        seg_mms = [m for m in mms if m["ts"] >= lo and m["ts"] + m["dur"] <= e["ts"] + 1]
        seq.append({
            "pair": (me, peer) if e["name"] == "c10d::send" else (peer, me),
            "arrive": e["ts"],
            "leave": leave,
            "prev_leave": prev_leave,
            "planted": sum(m["dur"] for m in seg_mms[2:4]) if me == planted else 0.0,
        })
        prev_leave = leave
    return seq


def replay(ops, remove):
    """Each rank's last leave, replayed (µs)."""
    nodes = collections.defaultdict(list)
    for r, seq in ops.items():
        seen = collections.Counter()
        for i, op in enumerate(seq):
            nodes[(op["pair"], seen[op["pair"]])].append((r, i))
            seen[op["pair"]] += 1
    head = {r: 0 for r in ops}
    clock = {}
    done = set()
    progress = True
    while progress:
        progress = False
        for k, members in nodes.items():
            if k in done or not all(head[r] == i for r, i in members):
                continue
            rec_last = max(ops[r][i]["arrive"] for r, i in members)
            arrivals = []
            for r, i in members:
                op = ops[r][i]
                if op["prev_leave"] is None:
                    arrivals.append(op["arrive"])
                else:
                    gap = op["arrive"] - op["prev_leave"] - (op["planted"] if remove else 0.0)
                    arrivals.append(clock[r] + gap)
            last = max(arrivals)
            for r, i in members:
                clock[r] = last + max(0.0, ops[r][i]["leave"] - rec_last)
                head[r] += 1
            done.add(k)
            progress = True
    if len(done) != len(nodes):
        sys.exit("the ranks' orders cannot all be met")
    return clock


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if len(args) != 1:
        sys.exit(__doc__)
    folder = args[0]
    with open(os.path.join(folder, "plant.json")) as fh:
        plant = json.load(fh)
    planted = plant["planted_rank"]
    raw = load(folder)
    ops = {r: transfers(evs, r, planted) for r, evs in raw.items()}
    steps = sum(1 for e in raw[planted] if e["name"].startswith("ProfilerStep#"))
    as_recorded = replay(ops, False)
    recorded_end = max(op["leave"] for seq in ops.values() for op in seq)
    without = replay(ops, True)
    given_back = (max(as_recorded.values()) - max(without.values())) / 1e3 / steps
    out = {
        "planted_rank": planted,
        "steps": steps,
        "transfers": sum(len(s) for s in ops.values()) // 2,
        "replay_error_us": abs(max(as_recorded.values()) - recorded_end),
        "planted_ms_per_step_in_trace": sum(op["planted"] for op in ops[planted]) / 1e3 / steps,
        "plant_json_ms_per_step": sum(plant["per_step_planted_ms"]) / len(plant["per_step_planted_ms"]),
        "given_back_ms_per_step": given_back,
    }
    if "--json" in sys.argv:
        print(json.dumps(out))
    else:
        for k, v in out.items():
            print(f"{k}: {v}")


if __name__ == "__main__":
    main()
