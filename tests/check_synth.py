#!/usr/bin/env python3
"""Independent checker for a set of per-rank Kineto traces (Python stdlib only).

Usage: check_synth.py DIR

Reads every *.json / *.json.gz trace in DIR with the standard json module (timestamps as exact
Decimals), and prints one JSON object with what it measured:

- per file: rank identity from the file name (SGLang or vLLM naming), top-level key order,
  baseTimeNanoseconds, distributedInfo rank/world, event counts, flow and correlation problems,
  overlapping GPU activities on one stream, the step annotations, and per step (ProfilerStep#N)
  the summed GPU time in ns per kernel class (a kernel belongs to the step whose ProfilerStep
  span holds the CUDA call that launched it);
- across files: every NCCL collective, keyed by (DP replica, process group, seq, and for
  send/recv the pair), with the spread of its kernels' absolute end times across ranks.

It asserts nothing: the Rust test compares these figures with the generator's configuration.
"""

import gzip
import json
import os
import re
import sys
from decimal import Decimal

SGLANG = re.compile(
    r"^(?P<key>.+?)-TP-(?P<tp>\d+)(?:-DP-(?P<dp>\d+))?(?:-PP-(?P<pp>\d+))?(?:-EP-(?P<ep>\d+))?"
    r"(?:-(?P<stage>EXTEND|DECODE))?\.trace\.json(?:\.gz)?$"
)
VLLM = re.compile(
    r"^(?:(?P<key>.+)_)?dp(?P<dp>\d+)_pp(?P<pp>\d+)_tp(?P<tp>\d+)_dcp(?P<dcp>\d+)_ep(?P<ep>\d+)"
    r"_rank(?P<rank>\d+)\.(?P<ns>\d+)\.pt\.trace\.json(?:\.gz)?$"
)
STEP = re.compile(r"^ProfilerStep#(\d+)$")
FORWARD = re.compile(r"^step\[(EXTEND|DECODE) bs=(\d+)(?: toks=(\d+))?\]$")
CLASSES = ["gemm", "attention", "norm", "elementwise", "moe", "comm", "memory"]


def classify(cat, name):
    if cat in ("gpu_memcpy", "gpu_memset"):
        return "memory"
    n = name.lower()
    if "nccl" in n or "deep_ep" in n:
        return "comm"
    if "moe" in n or "topkgating" in n:
        return "moe"
    if "gemm" in n or n.startswith("nvjet"):
        return "gemm"
    if "norm" in n:
        return "norm"
    if "flash_fwd" in n or "batchdecode" in n or "batchprefill" in n or "attention" in n:
        return "attention"
    return "elementwise"


def ns(v):
    """Kineto microseconds (a Decimal) as integer nanoseconds."""
    return int((Decimal(v) * 1000).to_integral_value())


def identity(name):
    m = SGLANG.match(name)
    if m:
        g = m.groupdict()
        return {
            "naming": "sglang",
            "tp": int(g["tp"]),
            "dp": int(g["dp"] or 0),
            "pp": int(g["pp"] or 0),
            "ep": int(g["ep"] or 0),
            "stage": g["stage"],
            "rank": None,
        }
    m = VLLM.match(name)
    if m:
        g = m.groupdict()
        return {
            "naming": "vllm",
            "tp": int(g["tp"]),
            "dp": int(g["dp"]),
            "pp": int(g["pp"]),
            "ep": int(g["ep"]),
            "stage": None,
            "rank": int(g["rank"]),
        }
    return None


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return json.load(f, parse_float=Decimal)


def check_file(path, collectives):
    name = os.path.basename(path)
    ident = identity(name)
    doc = load(path)
    events = doc["traceEvents"]
    base = int(doc.get("baseTimeNanoseconds", 0))
    dist = doc.get("distributedInfo", {})
    out = {
        "name": name,
        "identity": ident,
        "top_keys": list(doc.keys()),
        "base_time_ns": base,
        "dist_rank": dist.get("rank"),
        "world_size": dist.get("world_size"),
        "events": len(events),
    }

    by_ph = {}
    by_cat = {}
    flows_s, flows_f = {}, {}
    launches = {}  # correlation -> ts (ns) of the launch call
    calls = {}  # correlation -> ts (ns) of any CUDA call
    gpu = []  # (cat, name, pid, tid, start, dur, corr, args)
    steps = []  # (index, start, end)
    forward = []  # (start, kind)
    bad_numbers = 0
    for e in events:
        ph = e.get("ph")
        by_ph[ph] = by_ph.get(ph, 0) + 1
        cat = e.get("cat")
        if cat is not None:
            by_cat[cat] = by_cat.get(cat, 0) + 1
        ts = e.get("ts")
        if ts is not None and not isinstance(ts, Decimal) and not isinstance(ts, int):
            bad_numbers += 1
        if ph == "s":
            flows_s.setdefault(e["id"], []).append(e)
        elif ph == "f":
            flows_f.setdefault(e["id"], []).append(e)
        if ph != "X":
            continue
        args = e.get("args", {})
        if cat in ("cuda_runtime", "cuda_driver"):
            corr = args.get("correlation")
            calls[corr] = ns(ts)
            if "LaunchKernel" in e["name"]:
                launches[corr] = ns(ts)
        elif cat in ("kernel", "gpu_memcpy", "gpu_memset"):
            gpu.append((cat, e["name"], e["pid"], e["tid"], ns(ts), ns(e["dur"]), args.get("correlation"), args))
        elif cat == "user_annotation":
            m = STEP.match(e["name"])
            if m:
                steps.append((int(m.group(1)), ns(ts), ns(ts) + ns(e["dur"])))
            m = FORWARD.match(e["name"])
            if m:
                forward.append((ns(ts), m.group(1)))
    out["by_ph"] = by_ph
    out["by_cat"] = by_cat
    out["bad_numbers"] = bad_numbers

    # Flows: one s and one f per id, f bound ("bp": "e") to a GPU activity with that correlation
    # starting at the same ts on the same pid/tid.
    gpu_at = {(g[6], g[2], g[3]): g[4] for g in gpu}
    unmatched = len(set(flows_s) ^ set(flows_f))
    dup = sum(1 for v in flows_s.values() if len(v) != 1) + sum(1 for v in flows_f.values() if len(v) != 1)
    unbound = 0
    for fid, fs in flows_f.items():
        for f in fs:
            if f.get("bp") != "e" or f.get("cat") != "ac2g":
                unbound += 1
                continue
            start = gpu_at.get((fid, f["pid"], f["tid"]))
            if start is None or start != ns(f["ts"]):
                unbound += 1
    out["flows_s"] = sum(len(v) for v in flows_s.values())
    out["flows_f"] = sum(len(v) for v in flows_f.values())
    out["flows_unmatched"] = unmatched + dup
    out["flows_unbound"] = unbound

    kernels = [g for g in gpu if g[0] == "kernel"]
    out["kernels"] = len(kernels)
    out["kernels_without_launch"] = sum(1 for g in kernels if g[6] not in launches)
    out["gpu_without_runtime"] = sum(1 for g in gpu if g[6] not in calls)
    out["kernel_before_launch"] = sum(1 for g in kernels if g[6] in launches and g[4] < launches[g[6]])

    # GPU activities on one stream must not overlap.
    overlaps = 0
    last_end = {}
    for g in sorted(gpu, key=lambda g: (g[2], g[3], g[4])):
        k = (g[2], g[3])
        if k in last_end and g[4] < last_end[k]:
            overlaps += 1
        last_end[k] = max(last_end.get(k, 0), g[4] + g[5])
    out["stream_overlaps"] = overlaps

    # Steps and per-step class sums.
    steps.sort()
    out["steps"] = [s[0] for s in steps]
    out["step_kinds"] = [k for _, k in sorted(forward)]
    sums = {c: [0] * len(steps) for c in CLASSES}
    outside = 0
    for g in gpu:
        t = calls.get(g[6])
        idx = None
        if t is not None:
            for i, (_, a, b) in enumerate(steps):
                if a <= t <= b:
                    idx = i
                    break
        if idx is None:
            outside += 1
            continue
        sums[classify(g[0], g[1])][idx] += g[5]
    out["gpu_outside_steps"] = outside
    out["step_class_ns"] = sums

    # Collectives: absolute end time of each NCCL kernel, keyed across ranks.
    dp = ident["dp"] if ident else 0
    local = dist.get("rank")
    for g in kernels:
        args = g[7]
        coll = args.get("Collective name")
        if coll is None:
            continue
        end_abs = base + g[4] + g[5]
        if coll in ("send", "recv"):
            # torch names the peer by its rank in the group: the group's ranks give the
            # world's.
            group = json.loads(args.get("Process Group Ranks") or "null")
            def world(p):
                return group[p] if isinstance(group, list) and 0 <= p < len(group) else p
            src = local if coll == "send" else world(args.get("Src Rank"))
            dst = world(args.get("Dst Rank")) if coll == "send" else local
            key = (dp, args["Process Group Name"], int(args["seq"]), src, dst)
            size = 2
        else:
            key = (dp, args["Process Group Name"], int(args["seq"]), None, None)
            size = int(args["Group size"])
        collectives.setdefault(key, {"size": size, "ends": [], "names": set()})
        collectives[key]["ends"].append(end_abs)
        collectives[key]["names"].add(name)
    return out


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    d = sys.argv[1]
    names = sorted(n for n in os.listdir(d) if n.endswith(".json") or n.endswith(".json.gz"))
    collectives = {}
    files = [check_file(os.path.join(d, n), collectives) for n in names]
    spreads = [max(c["ends"]) - min(c["ends"]) for c in collectives.values()]
    complete = sum(1 for c in collectives.values() if len(c["ends"]) == c["size"] == len(c["names"]))
    result = {
        "files": files,
        "collectives": {
            "total": len(collectives),
            "complete": complete,
            "max_end_spread_ns": max(spreads) if spreads else 0,
        },
    }
    json.dump(result, sys.stdout, default=str)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
