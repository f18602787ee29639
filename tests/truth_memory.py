#!/usr/bin/env python3
"""Independent truth for `rankprof analyze`'s memory table: per rank and device, from Kineto's
`[memory]` and `[OutOfMemory]` instant events (written with `profile_memory=True`).

Python 3 stdlib only (gzip, json); never reads rankprof's output and shares none of its code.

    python3 tests/truth_memory.py fixtures/real-gloo/tp4-extra-memory

Reads every `*.trace.json[.gz]` in the folder (not plant.json) and prints one JSON object:
`ranks`, one row per (rank, device) that has a memory event, sorted by rank then device, and
`planted` (from plant.json, when there is one).

The rules, per file (rank = `distributedInfo.rank` of the header, else the file's order):
  memory event  `ph` `i`, `name` `[memory]`; its device = (`args` `Device Type`, `Device Id`).
  OOM event     `ph` `i`, `name` `[OutOfMemory]`, counted on its device the same way.
  ts_ns         round(ts * 1000) + `baseTimeNanoseconds` (ts is in us; the common clock).
  peak_allocated_bytes  the largest `Total Allocated` of the device's memory events; the
                peak is the earliest event (smallest ts, then file order) holding it.
  peak_reserved_bytes   the largest `Total Reserved`.
  peak_ts_ns    the peak's ts_ns.
  peak_step     N of the `ProfilerStep#N` complete event of the file whose [ts, ts + dur)
                (in ns) holds the peak; null when none does.
  peak_op       the name of the innermost CPU op at the peak: among the complete events with
                `cat` `cpu_op` of the peak event's `pid` whose [ts, ts + max(dur, 1)) (ns)
                holds the peak's ts, those on the peak's `tid` first, then the shortest, then
                the latest start; null when none holds it.
  baseline_bytes `Total Allocated` - `Bytes` of the device's first memory event (smallest
                ts, then file order): what was live when the window opened.
  growth_steps  the ProfilerStep#N windows [ts, ts + dur) holding a memory event of the device;
                each gives (N, `Total Allocated` of the last event (by ts, then file order)
                in it).
  growth_bytes_per_step, growth_stderr_bytes_per_step  the least-squares slope of those
                points (allocated over N) and its standard error sqrt(SSE / (n - 2) / Sxx),
                rounded half away from zero; null with fewer than 3 points.
  oom_events    the number of the device's `[OutOfMemory]` events.
  memory_events the number of its `[memory]` events.
"""
import gzip
import json
import math
import os
import re
import sys


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def ns(ts):
    return int(round(float(ts) * 1000))


def device_of(args):
    return (int(args.get("Device Type", 0)), int(args.get("Device Id", -1)))


def steps_of(events):
    out = []
    for e in events:
        m = re.fullmatch(r"ProfilerStep#(\d+)", str(e.get("name", "")))
        if e.get("ph") == "X" and m:
            out.append((ns(e["ts"]), ns(e["ts"]) + ns(e["dur"]), int(m.group(1))))
    return out


def step_at(steps, t):
    for start, end, n in steps:
        if start <= t < end:
            return n
    return None


def rnd(x):
    return int(math.copysign(math.floor(abs(x) + 0.5), x))


def op_at(events, pid, tid, t):
    best = None
    for e in events:
        if e.get("ph") != "X" or e.get("cat") != "cpu_op" or e.get("pid") != pid:
            continue
        start, dur = ns(e["ts"]), ns(e.get("dur", 0))
        if start <= t < start + max(dur, 1):
            key = (e.get("tid") == tid, -dur, start)
            if best is None or key > best[0]:
                best = (key, e["name"])
    return best and best[1]


def growth(steps, mem):
    pts = []
    for start, end, n in sorted(steps):
        inside = [m for m in mem if start <= m[0] < end]
        if inside:
            last = max(inside, key=lambda m: (m[0], m[1]))
            pts.append((float(n), float(last[2]["Total Allocated"])))
    if len(pts) < 3:
        return None, None, len(pts)
    k = len(pts)
    mx = sum(p[0] for p in pts) / k
    my = sum(p[1] for p in pts) / k
    sxx = sum((p[0] - mx) ** 2 for p in pts)
    slope = sum((p[0] - mx) * (p[1] - my) for p in pts) / sxx
    sse = sum((p[1] - my - slope * (p[0] - mx)) ** 2 for p in pts)
    return rnd(slope), rnd(math.sqrt(sse / (k - 2) / sxx)), k


def rank_rows(doc, rank):
    base = int(doc.get("baseTimeNanoseconds", 0))
    events = doc.get("traceEvents", [])
    steps = steps_of(events)
    devs = {}
    for order, e in enumerate(events):
        if e.get("ph") != "i" or e.get("name") not in ("[memory]", "[OutOfMemory]"):
            continue
        args = e.get("args", {})
        d = devs.setdefault(device_of(args), dict(mem=[], oom=0))
        if e["name"] == "[OutOfMemory]":
            d["oom"] += 1
        else:
            d["mem"].append((ns(e["ts"]), order, args, e.get("pid"), e.get("tid")))
    rows = []
    for (dtype, did), d in sorted(devs.items()):
        mem = d["mem"]
        row = dict(rank=rank, device_type=dtype, device_id=did, memory_events=len(mem),
                   oom_events=d["oom"])
        if mem:
            peak = max(mem, key=lambda m: (m[2]["Total Allocated"], -m[0], -m[1]))
            first = min(mem, key=lambda m: (m[0], m[1]))
            row.update(
                peak_allocated_bytes=int(peak[2]["Total Allocated"]),
                peak_reserved_bytes=max(int(m[2].get("Total Reserved", 0)) for m in mem),
                peak_ts_ns=peak[0] + base,
                peak_step=step_at(steps, peak[0]),
                peak_op=op_at(events, peak[3], peak[4], peak[0]),
                baseline_bytes=int(first[2]["Total Allocated"]) - int(first[2]["Bytes"]),
            )
            g, se, k = growth(steps, mem)
            row.update(growth_bytes_per_step=g, growth_stderr_bytes_per_step=se, growth_steps=k)
        rows.append(row)
    return rows


def main():
    folder = sys.argv[1]
    files = sorted(fn for fn in os.listdir(folder)
                   if re.search(r"\.trace\.json(\.gz)?$", fn) and not fn.startswith("plant"))
    rows = []
    for k, fn in enumerate(files):
        doc = load(os.path.join(folder, fn))
        rank = doc.get("distributedInfo", {}).get("rank", k)
        rows += rank_rows(doc, rank)
    rows.sort(key=lambda r: (r["rank"], r["device_type"], r["device_id"]))
    out = dict(ranks=rows)
    plant_path = os.path.join(folder, "plant.json")
    if os.path.exists(plant_path):
        with open(plant_path) as f:
            p = json.load(f)
        out["planted"] = dict(rank=p.get("planted_rank"), bytes=p.get("planted_bytes"),
                              cause=p.get("cause"))
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
