#!/usr/bin/env python3
"""Independent checker for `rankprof analyze` (stdlib only: gzip + json).

Computes, from the trace files themselves and without any rankprof code, the figures the
analysis reports, so the Rust tests can compare against them:

  per rank:  GPU op totals by name (kernels, memcpy, memset), kernel count and time,
             GPU busy (union of kernel + memcpy + memset intervals over all streams),
             compute (union of non-communication kernels), communication (union),
             exposed communication (comm minus the union of compute), memcpy/memset (union),
             span; per step (ProfilerStep#N, SGLang step[...], vLLM execute_..., or --step-marker REGEX;
             without any, the windows between consecutive CUDA-graph launches) the
             busy and work (busy without communication) time, ops put in the step whose
             window holds their CPU launch (by correlation), else their own start;
             CPU-only traces: the same from `cpu_op` events, step time = annotation duration,
             work = duration minus the time covered by communication inside the step:
             communication ops, and each `c10d::` op extended to the end of the waits after it
             (Python's `<built-in method wait of …>`, gloo's `gloo:…` ranges: each starting at
             or after the op, before the next `c10d::` op, and within 1 ms of its end or with
             no non-communication op started in between).
  across the given ranks (one world): collectives matched by key and position, arrival skew,
             per-rank wait and last arrivals; a collective whose two latest starts are
             less than TIE_NS (1 µs) apart has no last arrival and counts as a tie.

Usage: check_analyze.py [--step-marker REGEX] [--comm-regex REGEX] [--dir DIR] FILE...
A merged trace (pids like "[TP01] 1234") is split into its ranks. Output: JSON on stdout,
ranks keyed by file path (or by label for merged traces). Times are integer nanoseconds.
"""

import bisect
import argparse
import gzip
import json
import os
import re
import sys
from decimal import Decimal, ROUND_HALF_UP

# vLLM's per-step annotations (gpu_worker.annotate_profile): current, detailed, older.
VLLM_STEP = re.compile(
    r"^execute_(?:new_\d+_cached_\d+|(?:\d+_)?context_\d+\(.*\)_generation_.*)$")

GPU_COMM = r"nccl|rccl"
TIE_NS = 1000
CPU_COMM = r"c10d::|record_param_comms|gloo|nccl"


def ns(v):
    """Kineto microseconds (number) -> integer nanoseconds, rounding half away from zero."""
    if isinstance(v, int):
        return v * 1000
    return int((Decimal(v) * 1000).to_integral_value(rounding=ROUND_HALF_UP))


def load(path):
    with open(path, "rb") as f:
        magic = f.read(2)
    opener = gzip.open if magic == b"\x1f\x8b" else open
    with opener(path, "rt", encoding="utf-8") as f:
        doc = json.load(f, parse_float=Decimal)
    if isinstance(doc, list):
        return doc, {}
    return doc.get("traceEvents", []), doc


def union(ivs):
    """Sorted, merged list of [start, end) intervals."""
    out = []
    for s, e in sorted(ivs):
        if e <= s:
            continue
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


def length(u):
    return sum(e - s for s, e in u)


def overlap_fast(a, b):
    i = j = total = 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if hi > lo:
            total += hi - lo
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def within(u, lo, hi):
    return sum(max(0, min(e, hi) - max(s, lo)) for s, e in u)


def rank_figures(events, base, args):
    gpu_comm = re.compile(args.comm_regex or GPU_COMM, re.I)
    cpu_comm = re.compile(args.cpu_comm_regex or CPU_COMM, re.I)
    marker = re.compile(args.step_marker) if args.step_marker else None
    gpu, cpu, launches, graphs, waits = [], [], {}, [], []
    ops = {}
    marks = {"custom": [], "profiler": [], "sglang": []}
    for e in events:
        if e.get("ph") != "X" or "ts" not in e or "dur" not in e:
            continue
        cat, name = e.get("cat"), e.get("name", "")
        ts, dur = ns(e["ts"]), max(0, ns(e["dur"]))
        a = e.get("args") or {}
        if cat in ("kernel", "gpu_memcpy", "gpu_memset"):
            kind = {"kernel": "kernel", "gpu_memcpy": "copy", "gpu_memset": "copy"}[cat]
            comm = kind == "kernel" and bool(gpu_comm.search(name))
            stream = e.get("tid") if isinstance(e.get("tid"), int) else a.get("stream", -1)
            gpu.append(dict(start=ts, end=ts + dur, kind=kind, comm=comm, corr=a.get("correlation"),
                            name=name, stream=stream, pg=a.get("Process Group Name"),
                            cname=a.get("Collective name")))
            t = ops.setdefault(name, [0, 0])
            t[0] += dur
            t[1] += 1
        elif cat in ("cuda_runtime", "cuda_driver"):
            if any(w in name for w in ("Launch", "Memcpy", "Memset")) and "correlation" in a:
                launches[a["correlation"]] = ts
            if "GraphLaunch" in name:
                graphs.append(ts)
        elif cat == "cpu_op":
            cpu.append(dict(start=ts, end=ts + dur, comm=bool(cpu_comm.search(name)), name=name))
        elif (cat == "python_function" and name.startswith("<built-in method wait of ")) or (
                cat == "user_annotation" and name.startswith("gloo:")):
            waits.append((ts, ts + dur))
        if cat in ("user_annotation", "gpu_user_annotation") or (cat == "cpu_op" and name.startswith("ProfilerStep#")):
            m = dict(start=ts, dur=dur, name=name, gpu=cat == "gpu_user_annotation")
            if marker is not None:
                if cat != "cpu_op" and marker.search(name):
                    marks["custom"].append(m)
            elif name.startswith("ProfilerStep#"):
                m["number"] = int(name.split("#", 1)[1]) if name.split("#", 1)[1].isdigit() else None
                marks["profiler"].append(m)
            elif (name.startswith("step[") or VLLM_STEP.match(name)) and cat != "cpu_op":
                marks["sglang"].append(m)
    steps = marks["custom"] if marker is not None else (marks["profiler"] or marks["sglang"])
    if marker is None and not steps and len(graphs) > 1:
        # No step markers: each CUDA-graph launch opens a step that lasts until the next one.
        graphs.sort()
        steps = [dict(start=a, dur=b - a, name=f"graph launch {i + 1}", gpu=False)
                 for i, (a, b) in enumerate(zip(graphs, graphs[1:]))]
    if any(not m["gpu"] for m in steps):
        steps = [m for m in steps if not m["gpu"]]
    steps.sort(key=lambda m: (m["start"], m["dur"]))
    gpu_marks = bool(steps) and all(m["gpu"] for m in steps)

    def step_of(t):
        best = None
        for i, m in enumerate(steps):
            if m["start"] <= t < m["start"] + max(m["dur"], 1):
                best = i
        return best

    out = {"mode": "gpu" if gpu else "cpu"}
    if gpu:
        items = gpu
        allu = union([(g["start"], g["end"]) for g in gpu])
        comp = union([(g["start"], g["end"]) for g in gpu if g["kind"] == "kernel" and not g["comm"]])
        comm = union([(g["start"], g["end"]) for g in gpu if g["comm"]])
        copy = union([(g["start"], g["end"]) for g in gpu if g["kind"] == "copy"])
        kernels = [g for g in gpu if g["kind"] == "kernel"]
        out["kernel_count"] = len(kernels)
        out["kernel_total_ns"] = sum(g["end"] - g["start"] for g in kernels)
        out["ops"] = ops
    else:
        items = cpu
        allu = union([(c["start"], c["end"]) for c in cpu])
        comp = union([(c["start"], c["end"]) for c in cpu if not c["comm"]])
        # gloo: a c10d:: op returns once queued; the waits after it (Work.wait(), gloo's own
        # gloo:<op> range; each starting at or after the op, before the next c10d:: op, and
        # within 1 ms of its end or with the thread idle since: no non-communication op started
        # in between) are communication too, up to the last one's end.
        waited = []
        comp_starts = sorted(c["start"] for c in cpu if not c["comm"])
        c10d = sorted((c["start"], c["end"]) for c in cpu if c["name"].startswith("c10d::"))
        ws = sorted(waits)
        wi = 0
        for i, (a, b) in enumerate(c10d):
            nxt = c10d[i + 1][0] if i + 1 < len(c10d) else float("inf")
            end = b
            while wi < len(ws) and ws[wi][0] < a:
                wi += 1
            def idle_until(w, b=b):
                k = bisect.bisect_right(comp_starts, b)
                return k == len(comp_starts) or comp_starts[k] >= w

            while wi < len(ws) and ws[wi][0] < nxt and (ws[wi][0] <= b + 1_000_000 or idle_until(ws[wi][0])):
                end = max(end, ws[wi][1])
                wi += 1
            waited.append((a, end))
        comm = union([(c["start"], c["end"]) for c in cpu if c["comm"]] + waited)
        allu = union([(c["start"], c["end"]) for c in cpu] + waited)
        copy = []
        out["kernel_count"] = len(cpu)
        out["kernel_total_ns"] = sum(c["end"] - c["start"] for c in cpu)
    out["busy_ns"] = length(allu)
    out["compute_ns"] = length(comp)
    out["comm_ns"] = length(comm)
    out["exposed_comm_ns"] = length(comm) - overlap_fast(comm, comp)
    out["copy_ns"] = length(copy)
    out["span_ns"] = (allu[-1][1] - allu[0][0]) if allu else 0

    figs = []
    if gpu:
        groups = [[] for _ in steps]
        for g in gpu:
            t = g["start"]
            if not gpu_marks and g["corr"] is not None and g["corr"] in launches:
                t = launches[g["corr"]]
            i = step_of(t)
            if i is not None:
                groups[i].append(g)
        for m, grp in zip(steps, groups):
            figs.append(dict(name=m["name"], start_ns=m["start"] + base, dur_ns=m["dur"],
                             busy_ns=length(union([(g["start"], g["end"]) for g in grp])),
                             work_ns=length(union([(g["start"], g["end"]) for g in grp if not g["comm"]]))))
    else:
        for m in steps:
            figs.append(dict(name=m["name"], start_ns=m["start"] + base, dur_ns=m["dur"], busy_ns=m["dur"],
                             work_ns=m["dur"] - within(comm, m["start"], m["start"] + m["dur"])))
    out["steps"] = figs

    # Collectives.
    colls = {}
    if gpu:
        streams = {}
        for g in gpu:
            if g["comm"]:
                streams.setdefault(g["pg"] or "", set()).add(g["stream"])
        for g in sorted((g for g in gpu if g["comm"]), key=lambda g: (g["start"], g["end"])):
            pg = g["pg"] or ""
            ordinal = sorted(streams[pg]).index(g["stream"])
            key = f"pg {pg} stream #{ordinal}" if pg else f"stream #{ordinal}"
            colls.setdefault(key, []).append((g["cname"] or g["name"], g["start"] + base))
    else:
        for c in sorted((c for c in cpu if c["name"].startswith("c10d::")), key=lambda c: (c["start"], c["end"])):
            colls.setdefault(c["name"], []).append((c["name"], c["start"] + base))
    out["colls"] = colls
    return out


def match(ranks):
    """Matches collectives across all given ranks (one world)."""
    names = list(ranks)
    keys = set()
    for r in names:
        keys.update(ranks[r]["colls"])
    per_rank = {r: dict(wait_ns=0, arrived_last=0, matched=0) for r in names}
    groups = {}
    if len(names) < 2:
        return dict(ranks=per_rank, groups=groups, ties=0)
    ties_all = 0
    for key in sorted(keys):
        # Only the ranks that have the key take part (a process group of a subset of the
        # world, as DP attention's attention-TP groups are).
        have = [r for r in names if ranks[r]["colls"].get(key)]
        lists = [ranks[r]["colls"][key] for r in have]
        n = min(len(x) for x in lists) if len(have) >= 2 else 0
        skews = []
        ties = 0
        for i in range(n):
            starts = [x[i][1] for x in lists]
            hi, lo = max(starts), min(starts)
            skews.append(hi - lo)
            second = sorted(starts)[-2]
            if hi - second < TIE_NS:
                ties += 1
            else:
                per_rank[have[starts.index(hi)]]["arrived_last"] += 1
            for r, s in zip(have, starts):
                per_rank[r]["wait_ns"] += hi - s
                per_rank[r]["matched"] += 1
        if n:
            groups[key] = dict(matched=n, skew_sum_ns=sum(skews), skew_max_ns=max(skews), ties=ties)
        ties_all += ties
    return dict(ranks=per_rank, groups=groups, ties=ties_all)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("files", nargs="*")
    ap.add_argument("--dir")
    ap.add_argument("--step-marker")
    ap.add_argument("--comm-regex")
    ap.add_argument("--cpu-comm-regex")
    args = ap.parse_args()
    files = list(args.files)
    if args.dir:
        files += sorted(os.path.join(args.dir, f) for f in os.listdir(args.dir)
                        if (f.endswith(".json") or f.endswith(".json.gz")) and not f.startswith("merged-"))
    ranks = {}
    for path in files:
        events, doc = load(path)
        base = int(doc.get("baseTimeNanoseconds") or 0)
        labeled = {}
        rest = []
        for e in events:
            pid = e.get("pid")
            m = re.match(r"^\[([^\]]*)\]", pid) if isinstance(pid, str) else None
            if m:
                labeled.setdefault(m.group(1), []).append(e)
            else:
                rest.append(e)
        if labeled:
            for label, evs in labeled.items():
                ranks[label] = rank_figures(evs, base, args)
        else:
            ranks[path] = rank_figures(rest, base, args)
    out = dict(ranks=ranks, collectives=match(ranks))
    for r in out["ranks"].values():
        r["colls"] = {k: len(v) for k, v in r["colls"].items()}
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
