#!/usr/bin/env python3
"""The truth of one real 8-rank NCCL DDP step, from raw Kineto events (Python 3 stdlib only).

Usage: truth_dlrm.py [DIR] [--json] [--overlap]

DIR defaults to ../../shared/fixtures/param-dlrm-v100x8 (relative to this file): eight
`worker{r}_step_12.{ms}.pt.trace.json` traces (*.json / *.json.gz are read) of one profiled
iteration of DLRM (torchrec-style pipeline) under DistributedDataParallel over NCCL on 8x V100.
Prints a human-readable report, or with --json one JSON object. Asserts nothing about the
figures (they are the truth to check rankprof against); exits 1 when DIR holds no trace, 2 when
the traces cannot be matched at all (no common ProfilerStep, a rank without NCCL kernels).
With --overlap it prints instead what each collective's end actually held up, read from the
launches and the GPU timeline, and how much of each last arriver's lead the overlap hid
(`overlap_truth`'s docstring gives the rules).

This script does NOT model segments between collectives the way rankprof does. It works from
three raw tables: the arrival/end table of the NCCL kernels, the launch table (runtime events
joined by args.correlation) and each rank's host timeline (intervals of ops). The rules:

Reading (times in µs, as the files give them, floats):
- rank: distributedInfo.rank, else the number in "worker{r}" of the file name.
- step: the `ProfilerStep#N` event (cat user_annotation or cpu_op); its pid is the host pid.
  When a rank has several, the first N that every rank has is used.
- host events: ph "X", pid = the host pid, cat cpu_op / user_annotation / cuda_runtime /
  cuda_driver / python_function, all threads.
- GPU events: cat kernel (and gpu_memcpy / gpu_memset for "any GPU activity").
  NCCL kernels: kernels whose name contains nccl/rccl (case-insensitive).
- launch of a kernel: the cuda_runtime/cuda_driver event with the same args.correlation.
  A kernel with no such event was launched before the profiler window opened ("orphan").

Clocks:
- In NCCL every member's kernel ends within µs of the others (early members spin inside the
  kernel). Per collective, end spread = max(end) - min(end). Per rank, offset = median over
  collectives of (its end - the collective's median end). Clocks agree when every end spread
  <= 50 µs. Otherwise, when removing the per-rank offsets brings every spread under 50 µs,
  those offsets are a clock offset: reported, and subtracted from all that rank's times.

Matching:
- Per rank, NCCL kernels are grouped by stream (args.stream, else tid), streams in ascending
  id, kernels by (start, end). The n-th kernel of the i-th NCCL stream on every rank is one
  collective. Counts, short names (before "(") and grids are compared; any disagreement is
  reported and only the common prefix is matched. Collectives are ordered by median start.

Per collective:
- arrival = kernel start on the GPU; L = the last arriver (largest start; ties -> lower rank);
  median arrival = statistics.median over the members other than L; imposed wait = start_L -
  median arrival (the median over the others of how long each waited for L, as
  tests/truth_gloo.py defines it);
  marginal = start_L - second-latest start (what L alone costs; < 20 µs = a tie, flagged);
  wait of rank r = start_L - start_r (and also dur_r - dur_L, the spin inside the kernel).
- launch queue = start - launch ts (GPU-side delay: large = the GPU was busy before it).

Host accounting (the "different method": a host-timeline budget, per rank, per interval):
- For an interval [a, b] on rank r, over all its host threads:
    waits = time inside blocking runtime calls, union of intervals: names containing
            "Synchronize", cudaMemcpy / cudaMemcpy2D, and any *Memcpy* call (e.g. cudaMemcpyAsync
            to pageable memory) that returned only after its own GPU copy (same correlation)
            ended (within 1 µs): the host sat in it until the stream drained;
    ops   = time covered by any host op (cpu_op, runtime, python_function) minus waits;
    gap   = time covered by no host op at all (user annotations do not count: they are
            containers; a gap is Python / untraced host time, or the host idle).
  so b - a = waits + ops + gap exactly.
- The anchor of collective k on rank r: its step start for the first collective, else its
  launch of collective k-1. Against R = the member at the lower-median arrival position:
    start_L - start_R = carried + waits + ops + gap + queue     (exact identity)
  with carried = anchor_L - anchor_R, the others = L's minus R's in [anchor, launch_k], and
  queue = the launch queue difference. carried + waits = "carried_net" (lateness that survived
  the syncs since the anchor). L's cause at k = the largest positive of carried_net ("late step
  start" at the first collective, "lag carried from collective k-1" after it), ops ("more host
  work"), gap ("host gap"), queue ("more GPU work before the collective"). A carried cause is
  traced back through L's own decomposition at k-1, k-2, ... to its root.

Cost (the step's critical chain):
- Per collective, the wait L imposes = start_L - median arrival. Summed per last-arriver rank
  and per root cause; in ms and as % of (a) the step = the median of the ranks' ProfilerStep
  durations, (b) the GPU span = earliest kernel start to latest kernel end over all ranks.
- The rank that most costs the step = the largest such sum.
"""
import glob
import gzip
import json
import os
import re
import statistics
import sys

CLOCK_TOL_US = 50.0
TIE_US = 20.0
HOST_CATS = {"cpu_op", "user_annotation", "cuda_runtime", "cuda_driver", "python_function"}
OP_CATS = {"cpu_op", "cuda_runtime", "cuda_driver", "python_function"}
RT_CATS = {"cuda_runtime", "cuda_driver"}
GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset"}
NCCL_RE = re.compile(r"nccl|rccl", re.I)
STEP_RE = re.compile(r"^ProfilerStep#(\d+)$")
SYNC_RE = re.compile(r"Synchronize|^cudaMemcpy$|^cudaMemcpy2D$")


def default_dir():
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.normpath(os.path.join(here, "..", "..", "shared", "fixtures", "param-dlrm-v100x8"))


def load_json(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return json.load(f)


def short(name):
    return name.split("(")[0].strip()


# ---------------------------------------------------------------- intervals
def merge(iv):
    out = []
    for a, b in sorted(iv):
        if out and a <= out[-1][1]:
            if b > out[-1][1]:
                out[-1][1] = b
        else:
            out.append([a, b])
    return out


def measure(merged, a, b):
    t = 0.0
    for x, y in merged:
        lo, hi = max(x, a), min(y, b)
        if hi > lo:
            t += hi - lo
    return t


def holes(merged, a, b):
    """Uncovered sub-intervals of [a, b] given merged intervals."""
    out, cur = [], a
    for x, y in merged:
        if y <= cur:
            continue
        if x >= b:
            break
        if x > cur:
            out.append((cur, min(x, b)))
        cur = max(cur, y)
        if cur >= b:
            break
    if cur < b:
        out.append((cur, b))
    return out


# ---------------------------------------------------------------- reading
class Rank:
    pass


def read_rank(path):
    d = load_json(path)
    ev = d["traceEvents"] if isinstance(d, dict) else d
    info = d.get("distributedInfo", {}) if isinstance(d, dict) else {}
    rk = Rank()
    rk.file = os.path.basename(path)
    if "rank" in info:
        rk.rank = int(info["rank"])
    else:
        m = re.search(r"worker(\d+)", rk.file)
        rk.rank = int(m.group(1)) if m else None
    rk.world = info.get("world_size")
    rk.steps = {}
    for e in ev:
        if e.get("ph") == "X" and e.get("cat") in ("user_annotation", "cpu_op"):
            m = STEP_RE.match(e.get("name", ""))
            if m:
                rk.steps.setdefault(int(m.group(1)), e)
    rk.events = ev
    rk.window = None
    for e in ev:
        if e.get("cat") == "Trace" and e.get("ph") == "X":
            rk.window = (float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0)))
    return rk


def finish_rank(rk, stepn):
    st = rk.steps[stepn]
    rk.step_name = st["name"]
    rk.pid = st["pid"]
    rk.main_tid = st["tid"]
    rk.step_start = float(st["ts"])
    rk.step_end = rk.step_start + float(st["dur"])
    host, gpu, rt = [], [], {}
    for e in rk.events:
        if e.get("ph") != "X":
            continue
        cat = (e.get("cat") or "").lower()
        if cat in HOST_CATS and e.get("pid") == rk.pid:
            host.append(e)
            if cat in RT_CATS:
                c = (e.get("args") or {}).get("correlation")
                if c is not None:
                    rt[c] = e
        elif cat in GPU_CATS:
            gpu.append(e)
    rk.host = host
    rk.rt = rt
    rk.kernels = sorted((e for e in gpu if (e.get("cat") or "").lower() == "kernel"),
                        key=lambda e: (float(e["ts"]), float(e["ts"]) + float(e["dur"])))
    rk.gpu_any = gpu
    rk.orphans = [k for k in rk.kernels if (k.get("args") or {}).get("correlation") not in rt]
    # host interval tables
    rk.op_iv = merge([(float(e["ts"]), float(e["ts"]) + float(e["dur"]))
                      for e in host if e["cat"].lower() in OP_CATS])
    gpu_by_corr = {}
    for g in gpu:
        c = (g.get("args") or {}).get("correlation")
        if c is not None:
            gpu_by_corr[c] = g
    waits = []
    for e in host:
        if e["cat"].lower() not in RT_CATS:
            continue
        s, f = float(e["ts"]), float(e["ts"]) + float(e["dur"])
        if SYNC_RE.search(e["name"]):
            waits.append((s, f))
        elif "Memcpy" in e["name"]:
            g = gpu_by_corr.get((e.get("args") or {}).get("correlation"))
            if g is not None and f >= float(g["ts"]) + float(g["dur"]) - 1.0:
                waits.append((s, f))  # returned only after its copy ended on the GPU: it blocked
    rk.wait_iv = merge(waits)
    # NCCL kernels by stream
    by = {}
    for k in rk.kernels:
        if NCCL_RE.search(k["name"]):
            s = (k.get("args") or {}).get("stream", k.get("tid"))
            by.setdefault(s, []).append(k)
    rk.nccl_streams = [by[s] for s in sorted(by, key=lambda s: (str(type(s)), s))]
    rk.nccl_stream_ids = sorted(by, key=lambda s: (str(type(s)), s))
    # depth-1 annotations under the step on the main thread ("phases")
    ph = [e for e in host if e["tid"] == rk.main_tid and e["cat"] == "user_annotation"
          and e is not st and rk.step_start <= float(e["ts"]) < rk.step_end]
    ph.sort(key=lambda e: (float(e["ts"]), -float(e["dur"])))
    rk.phases, last_end = [], -1e30
    for e in ph:
        if float(e["ts"]) >= last_end:
            rk.phases.append(e)
            last_end = float(e["ts"]) + float(e["dur"])


def host_budget(rk, a, b):
    if b <= a:
        return {"waits": 0.0, "ops": 0.0, "gap": 0.0, "largest_gap": None}
    w = measure(rk.wait_iv, a, b)
    cov = measure(rk.op_iv, a, b)
    hs = holes(rk.op_iv, a, b)
    big = max(hs, key=lambda h: h[1] - h[0]) if hs else None
    return {"waits": w, "ops": cov - w, "gap": (b - a) - cov,
            "largest_gap": (big[0], big[1] - big[0]) if big else None}


def enclosing(rk, tid, t):
    """Host events on thread tid that contain instant t, outermost first."""
    c = [e for e in rk.host if e["tid"] == tid and float(e["ts"]) <= t <= float(e["ts"]) + float(e["dur"])]
    c.sort(key=lambda e: (float(e["ts"]), -float(e["dur"])))
    return c


def phase_at(rk, t):
    for e in rk.phases:
        if float(e["ts"]) <= t <= float(e["ts"]) + float(e["dur"]):
            return e["name"]
    return None


def top_ops(rk, a, b, n=10):
    """Top-level cpu_ops (not inside another cpu_op on the same thread) in [a, b] by inclusive
    time, and all cpu_ops by self time (inclusive minus direct cpu_op/runtime children), clipped."""
    byt = {}
    for e in rk.host:
        if e["cat"].lower() in OP_CATS:
            byt.setdefault(e["tid"], []).append(e)
    incl, selft = {}, {}
    for tid, L in byt.items():
        L.sort(key=lambda e: (float(e["ts"]), -float(e["dur"])))
        stack = []
        kids = {}
        for e in L:
            s, f = float(e["ts"]), float(e["ts"]) + float(e["dur"])
            while stack and s >= float(stack[-1]["ts"]) + float(stack[-1]["dur"]):
                stack.pop()
            parent = stack[-1] if stack else None
            lo, hi = max(s, a), min(f, b)
            clip = max(0.0, hi - lo)
            if parent is None and clip > 0 and e["cat"].lower() == "cpu_op":
                incl[e["name"]] = incl.get(e["name"], 0.0) + clip
            if parent is not None:
                kids.setdefault(id(parent), []).append(e)
            stack.append(e)
        for e in L:
            if e["cat"].lower() != "cpu_op":
                continue
            s, f = float(e["ts"]), float(e["ts"]) + float(e["dur"])
            own = merge([(s, f)])
            ch = merge([(float(c["ts"]), float(c["ts"]) + float(c["dur"])) for c in kids.get(id(e), [])])
            v = measure(own, a, b) - measure(ch, max(s, a), min(f, b))
            if v > 0:
                selft[e["name"]] = selft.get(e["name"], 0.0) + v
    top = lambda m: sorted(m.items(), key=lambda kv: -kv[1])[:n]
    return top(incl), top(selft)


# ---------------------------------------------------------------- analysis
def analyse(d):
    files = sorted(glob.glob(os.path.join(d, "*.json")) + glob.glob(os.path.join(d, "*.json.gz")))
    ranks = [read_rank(p) for p in files]
    ranks = [r for r in ranks if r.rank is not None]
    notes = []
    if not ranks:
        sys.exit("no traces in %s" % d)
    common = set.intersection(*(set(r.steps) for r in ranks))
    if not common:
        print("no ProfilerStep#N common to all ranks", file=sys.stderr)
        sys.exit(2)
    stepn = min(common)
    for r in ranks:
        if len(r.steps) > 1:
            notes.append("rank %d has steps %s; using #%d" % (r.rank, sorted(r.steps), stepn))
        finish_rank(r, stepn)
    ranks.sort(key=lambda r: r.rank)
    R = {r.rank: r for r in ranks}
    n = len(ranks)
    world = {r.world for r in ranks}
    if world != {n}:
        notes.append("world_size %s but %d files" % (sorted(world, key=str), n))

    # ---- matching
    nstreams = {r.rank: len(r.nccl_streams) for r in ranks}
    if len(set(nstreams.values())) != 1:
        notes.append("NCCL stream counts differ: %s" % nstreams)
    ns = min(nstreams.values())
    if ns == 0:
        print("a rank has no NCCL kernel", file=sys.stderr)
        sys.exit(2)
    colls = []
    for si in range(ns):
        counts = {r.rank: len(r.nccl_streams[si]) for r in ranks}
        if len(set(counts.values())) != 1:
            notes.append("stream #%d: NCCL kernel counts differ: %s" % (si, counts))
        for k in range(min(counts.values())):
            ks = {r.rank: r.nccl_streams[si][k] for r in ranks}
            names = {short(e["name"]) for e in ks.values()}
            grids = {json.dumps((e.get("args") or {}).get("grid")) for e in ks.values()}
            if len(names) != 1:
                notes.append("stream #%d kernel %d: names differ: %s" % (si, k, sorted(names)))
            if len(grids) != 1:
                notes.append("stream #%d kernel %d: grids differ: %s" % (si, k, sorted(grids)))
            colls.append({"stream_index": si, "n": k, "kernels": ks,
                          "name": short(ks[ranks[0].rank]["name"])})

    # ---- clock check (on the raw times)
    def ends(c):
        return {rk: float(e["ts"]) + float(e["dur"]) for rk, e in c["kernels"].items()}
    offsets = {}
    for r in ranks:
        offsets[r.rank] = statistics.median(
            ends(c)[r.rank] - statistics.median(ends(c).values()) for c in colls)
    raw_spreads = [max(ends(c).values()) - min(ends(c).values()) for c in colls]
    if max(raw_spreads) <= CLOCK_TOL_US:
        clock = {"verdict": "clocks agree", "applied_offsets_us": None}
        corr = {r.rank: 0.0 for r in ranks}
    else:
        fixed = [max(ends(c)[rk] - offsets[rk] for rk in R) - min(ends(c)[rk] - offsets[rk] for rk in R)
                 for c in colls]
        if max(fixed) <= CLOCK_TOL_US:
            corr = dict(offsets)
            clock = {"verdict": "clock offset: per-rank constant offsets removed",
                     "applied_offsets_us": {rk: round(v, 3) for rk, v in offsets.items()}}
        else:
            corr = {r.rank: 0.0 for r in ranks}
            clock = {"verdict": "ends NOT aligned and no constant offset explains it "
                                "(matching wrong or clocks unreliable)", "applied_offsets_us": None}
    clock.update({"max_end_spread_us": round(max(raw_spreads), 3),
                  "end_spread_us": [round(x, 3) for x in raw_spreads],
                  "per_rank_offset_us": {rk: round(v, 3) for rk, v in offsets.items()},
                  "tolerance_us": CLOCK_TOL_US})

    for r in ranks:
        r.corr = corr[r.rank]

    def T(rk, t):  # corrected time
        return t - corr[rk]

    t0 = min(T(r.rank, r.step_start) for r in ranks)

    # ---- per-collective tables
    for c in colls:
        m = {}
        for rk, e in c["kernels"].items():
            r = R[rk]
            st = T(rk, float(e["ts"]))
            en = st + float(e["dur"])
            corr_id = (e.get("args") or {}).get("correlation")
            lz = r.rt.get(corr_id)
            launch = T(rk, float(lz["ts"])) if lz else None
            info = {"start": st, "end": en, "dur": float(e["dur"]),
                    "launch": launch, "launch_tid": lz["tid"] if lz else None,
                    "launch_queue": (st - launch) if launch is not None else None,
                    "grid": (e.get("args") or {}).get("grid")}
            if lz:
                enc = enclosing(r, lz["tid"], float(lz["ts"]))
                c10d = [x["name"] for x in enc if x["name"].startswith("c10d::")]
                ann = [x["name"] for x in enc if x["name"].startswith("nccl:")]
                info["host_op"] = (c10d[-1] if c10d else None)
                info["nccl_annotation"] = (ann[-1] if ann else None)
                info["phase"] = phase_at(r, float(lz["ts"]))
            m[rk] = info
        c["m"] = m
        starts = {rk: v["start"] for rk, v in m.items()}
        order = sorted(starts, key=lambda rk: (starts[rk], -rk))
        L = order[-1]
        c["last"] = L
        c["second"] = order[-2]
        # The others' wait: the median over the OTHER members of how long each waited for L
        # (the same definition as tests/truth_gloo.py's "imposed"): start_L - the median of
        # their arrivals.
        c["median_arrival"] = statistics.median(v for rk, v in starts.items() if rk != L)
        c["imposed"] = starts[L] - c["median_arrival"]
        c["marginal"] = starts[L] - starts[order[-2]]
        c["tie"] = c["marginal"] < TIE_US
        c["ref"] = order[(n - 1) // 2]
        c["end_spread"] = max(v["end"] for v in m.values()) - min(v["end"] for v in m.values())
        c["start_spread"] = starts[L] - starts[order[0]]
    colls.sort(key=lambda c: statistics.median(v["start"] for v in c["m"].values()))
    for i, c in enumerate(colls):
        c["index"] = i

    # ---- host decomposition of each rank's arrival at each collective vs the median member
    def anchor(rk, i):
        return T(rk, R[rk].step_start) if i == 0 else colls[i - 1]["m"][rk]["launch"]

    def budget(rk, i):
        a = anchor(rk, i)
        b = colls[i]["m"][rk]["launch"]
        hb = host_budget(R[rk], a + corr[rk], b + corr[rk])
        hb["anchor"] = a
        return hb

    def decomp(rk, i):
        c = colls[i]
        ref = c["ref"]
        if rk == ref:
            ref = c["second"] if c["second"] != rk else c["last"]
        bl, br = budget(rk, i), budget(ref, i)
        carried = bl["anchor"] - br["anchor"]
        dw = bl["waits"] - br["waits"]
        parts = {"carried": carried, "waits": dw, "carried_net": carried + dw,
                 "ops": bl["ops"] - br["ops"], "gap": bl["gap"] - br["gap"],
                 "queue": c["m"][rk]["launch_queue"] - c["m"][ref]["launch_queue"]}
        total = c["m"][rk]["start"] - c["m"][ref]["start"]
        resid = total - (parts["carried_net"] + parts["ops"] + parts["gap"] + parts["queue"])
        assert abs(resid) < 1e-3, (rk, i, resid)
        cands = {"carried_net": parts["carried_net"], "ops": parts["ops"], "gap": parts["gap"],
                 "queue": parts["queue"]}
        key = max(cands, key=lambda k: cands[k])
        return {"vs": ref, "delta_arrival": total, "parts": parts, "key": key,
                "budget": bl, "ref_budget": br}

    LABEL = {"ops": "more host work", "gap": "host gap", "queue": "more GPU work before the collective"}

    def root(rk, i, depth=0):
        dc = decomp(rk, i)
        if dc["key"] != "carried_net":
            return LABEL[dc["key"]], i
        if i == 0 or depth > len(colls):
            return "late step start", 0
        return root(rk, i - 1, depth + 1)

    for c in colls:
        i = c["index"]
        dc = decomp(c["last"], i)
        c["decomp"] = dc
        if dc["key"] == "carried_net":
            c["cause"] = "late step start" if i == 0 else "lag carried from collective %d" % (i - 1)
        else:
            c["cause"] = LABEL[dc["key"]]
        c["root_cause"], c["root_at"] = root(c["last"], i)

    # ---- per rank summary
    durs = {r.rank: r.step_end - r.step_start for r in ranks}
    step_ref = statistics.median(durs.values())
    starts_med = statistics.median(T(r.rank, r.step_start) for r in ranks)
    gspan_a = min(T(r.rank, float(r.kernels[0]["ts"])) for r in ranks)
    gspan_b = max(T(r.rank, max(float(k["ts"]) + float(k["dur"]) for k in r.kernels)) for r in ranks)
    gspan = gspan_b - gspan_a
    launched_starts = [T(r.rank, float(k["ts"])) for r in ranks for k in r.kernels if k not in r.orphans]
    gspan_launched = gspan_b - min(launched_starts) if launched_starts else None
    per_rank = []
    for r in ranks:
        rk = r.rank
        kend = max(float(k["ts"]) + float(k["dur"]) for k in r.kernels)
        launched = [k for k in r.kernels if k not in r.orphans]
        per_rank.append({
            "rank": rk, "file": r.file, "step": r.step_name,
            "step_start": T(rk, r.step_start) - t0, "step_end": T(rk, r.step_end) - t0,
            "step_dur": durs[rk],
            "step_start_vs_earliest": T(rk, r.step_start) - t0,
            "step_start_vs_median": T(rk, r.step_start) - starts_med,
            "first_kernel_start": T(rk, float(r.kernels[0]["ts"])) - t0,
            "first_launched_kernel_start": (T(rk, float(launched[0]["ts"])) - t0) if launched else None,
            "last_kernel_end": T(rk, kend) - t0,
            "kernels": len(r.kernels), "nccl_kernels": sum(len(s) for s in r.nccl_streams),
            "nccl_streams": r.nccl_stream_ids,
            "orphan_kernels": len(r.orphans),
            "orphan_span": ([T(rk, float(r.orphans[0]["ts"])) - t0,
                             T(rk, max(float(k["ts"]) + float(k["dur"]) for k in r.orphans)) - t0]
                            if r.orphans else None),
            "profiler_window_start": (T(rk, r.window[0]) - t0) if r.window else None,
            "lead_in_to_first_launch": colls[0]["m"][rk]["launch"] - T(rk, r.step_start),
            "phases": [(e["name"], T(rk, float(e["ts"])) - t0, float(e["dur"])) for e in r.phases],
        })

    # ---- cost
    by_rank, by_root = {}, {}
    for c in colls:
        by_rank[c["last"]] = by_rank.get(c["last"], 0.0) + c["imposed"]
        key = (c["last"], c["root_cause"])
        by_root[key] = by_root.get(key, 0.0) + c["imposed"]
    alone = {}
    for c in colls:
        alone[c["last"]] = alone.get(c["last"], 0.0) + c["marginal"]
    total_imposed = sum(c["imposed"] for c in colls)

    # ---- host budget per rank between consecutive launches (step start, c0, ..., c_last, step end)
    segs = []
    for i in range(len(colls) + 1):
        row = {}
        for r in ranks:
            rk = r.rank
            a = T(rk, r.step_start) if i == 0 else colls[i - 1]["m"][rk]["launch"]
            b = colls[i]["m"][rk]["launch"] if i < len(colls) else T(rk, r.step_end)
            hb = host_budget(r, a + corr[rk], b + corr[rk])
            row[rk] = {"span": b - a, "busy": hb["ops"] + hb["gap"], "ops": hb["ops"],
                       "gap": hb["gap"], "waits": hb["waits"]}
        segs.append({"from": "step start" if i == 0 else "c%d launch" % (i - 1),
                     "to": "c%d launch" % i if i < len(colls) else "step end", "ranks": row})
    worst = max(by_rank, key=lambda rk: by_rank[rk])
    worst_roots = sorted(((cause, v) for (rk, cause), v in by_root.items() if rk == worst),
                         key=lambda kv: -kv[1])

    # ---- first collective in detail
    c0 = colls[0]
    L0, ref0 = c0["last"], c0["ref"]
    first = {"collective": 0, "name": c0["name"], "last": L0, "ref": ref0,
             "imposed_vs_median": c0["imposed"], "marginal_vs_second": c0["marginal"],
             "second": c0["second"], "decomp": c0["decomp"]}
    for who in (L0, ref0):
        r = R[who]
        a, b = r.step_start, c0["m"][who]["launch"] + corr[who]
        incl, selft = top_ops(r, a, b)
        first["rank%d" % who] = {
            "step_start_vs_earliest": T(who, r.step_start) - t0,
            "step_start_vs_median": T(who, r.step_start) - starts_med,
            "lead_in": b - a, "budget": host_budget(r, a, b),
            "phases_before_launch": [(e["name"], float(e["dur"]), min(float(e["ts"]) + float(e["dur"]), b) - float(e["ts"]))
                                     for e in r.phases if float(e["ts"]) < b],
            "top_inclusive": incl, "top_self": selft}

    return {"dir": d, "notes": notes, "ranks": per_rank, "clock": clock, "t0_abs_us": t0,
            "collectives": colls, "step_ref": step_ref, "gpu_span": gspan,
            "gpu_span_launched": gspan_launched,
            "by_rank": by_rank, "by_root": by_root, "total_imposed": total_imposed,
            "alone": alone, "segments": segs,
            "worst": worst, "worst_roots": worst_roots, "first": first, "R": R,
            "starts_med": starts_med}


# ---------------------------------------------------------------- overlap (--overlap)
def overlap_truth(A):
    """What each collective's end actually held up, from the launch table and the GPU timeline.

    The blocking model above takes every member to have waited for a collective's end. Here,
    per rank r and NCCL kernel k (end e_k), three ways the rank can have waited for e_k are
    read from the raw events, each with its slack: how much earlier the rank would have gone
    on, had k ended x earlier, is min(x, slack).
    - device: the first non-NCCL GPU op G (kernel, copy or set, any stream) that was already
      launched when k ended (launch_G < e_k) and started only at e_k (start_G >= e_k, within
      one launch latency of it), with a cudaStreamWaitEvent call (on any host thread: a wait is
      enqueued on a stream) between k's launch and G's (a stream told to wait for an event
      recorded after k). slack =
      e_k - max(launch_G + lat_r, end of the op before G on G's stream): lat_r, the rank's launch
      latency, is the median start - launch of its non-NCCL ops that found their stream idle.
    - host: a blocking call (the `waits` above: syncs, memcpys that returned after their copy)
      running at e_k (begun before, returned at or after it). slack = e_k - its start.
    - queue: r's next NCCL kernel on k's stream was launched before e_k and started within
      lat_r of it: the delay moves to that collective's start on r, and through it to that
      collective's end only as far as r's start there was the latest (a replay of that one
      collective's starts with the queued members' moved x earlier), then on by these rules.
    A collective's end held the step up by saved(x) = the most over the members; the lead of its
    last arriver L (x = start_L - second-latest start, or - the others' median) is hidden by
    overlap for the part x - saved(x). It takes none of rankprof's rule or constants: it reads
    launches (which the rankprof rule does not) and finds the slack, not a time window."""
    R, colls = A["R"], A["collectives"]

    def s_(g):
        return float(g["ts"])

    def e_(g):
        return float(g["ts"]) + float(g["dur"])

    per = {}
    for r in R.values():
        rk = r.rank
        ops = sorted((g for g in r.gpu_any if not NCCL_RE.search(g["name"])), key=s_)
        stream_of = lambda g: (g.get("args") or {}).get("stream", g.get("tid"))
        prev_end, last_on = {}, {}
        for g in ops:
            st = stream_of(g)
            prev_end[id(g)] = last_on.get(st)
            last_on[st] = max(last_on.get(st, -1e30), e_(g))
        launch = {}
        for g in ops:
            lz = r.rt.get((g.get("args") or {}).get("correlation"))
            if lz is not None:
                launch[id(g)] = float(lz["ts"])
        idle = [s_(g) - launch[id(g)] for g in ops
                if id(g) in launch and (prev_end[id(g)] is None or prev_end[id(g)] <= launch[id(g)])]
        lat = statistics.median(idle) if idle else 0.0
        sw = {}
        for e in r.host:
            if e["cat"].lower() in RT_CATS and e["name"] in ("cudaStreamWaitEvent", "hipStreamWaitEvent"):
                sw.setdefault(e["tid"], []).append(float(e["ts"]))
        per[rk] = {"ops": ops, "prev_end": prev_end, "launch": launch, "lat": lat, "sw": sw,
                   "stream_of": stream_of, "stream_waits": sum(len(v) for v in sw.values())}

    def member(c, rk):
        """(device, host, queue) of rank rk at collective c; raw times (uncorrected)."""
        r, P = R[rk], per[rk]
        k = c["kernels"][rk]
        ek = e_(k)
        lk = r.rt.get((k.get("args") or {}).get("correlation"))
        out = {"device": None, "host": None, "queued_next": False, "overlapped": False}
        out["overlapped"] = any(s_(g) < ek and e_(g) > s_(k) for g in P["ops"]
                                if (g.get("cat") or "").lower() == "kernel")
        g = next((g for g in P["ops"] if s_(g) >= ek - 0.5), None)
        if g is not None and id(g) in P["launch"] and lk is not None:
            lg = P["launch"][id(g)]
            # Any host thread: a wait is enqueued on a stream, not a thread (DDP's wait for its
            # last bucket is issued by the autograd thread, the optimizer launches from main).
            told = any(float(lk["ts"]) < t < lg for ts in P["sw"].values() for t in ts)
            if lg < ek and s_(g) - ek <= P["lat"] and told:
                pe = P["prev_end"][id(g)]
                ready = max(lg + P["lat"], pe if pe is not None else -1e30)
                out["device"] = {"op": g["name"][:60], "slack": max(0.0, ek - ready),
                                 "start_after_end": s_(g) - ek, "launched_before_end": ek - lg}
        hw = [(a, b) for a, b in r.wait_iv if a < ek <= b + 0.5]
        if hw:
            out["host"] = {"slack": max(ek - a for a, b in hw), "returned_after_end": max(b for a, b in hw) - ek}
        si, n = c["stream_index"], c["n"]
        if n + 1 < len(r.nccl_streams[si]):
            k2 = r.nccl_streams[si][n + 1]
            l2 = r.rt.get((k2.get("args") or {}).get("correlation"))
            if l2 is not None and float(l2["ts"]) < ek and s_(k2) - ek <= P["lat"]:
                out["queued_next"] = True
        return out

    by_pos = {(c["stream_index"], c["n"]): c for c in colls}
    M = {(c["index"], rk): member(c, rk) for c in colls for rk in c["kernels"]}

    def saved(c, x, depth=0):
        """How much of the step an end x µs earlier gives back (the most over the members)."""
        if x <= 0:
            return 0.0
        best = 0.0
        for rk in c["kernels"]:
            m = M[(c["index"], rk)]
            for ch in ("device", "host"):
                if m[ch] is not None:
                    best = max(best, min(x, m[ch]["slack"]))
        nxt = by_pos.get((c["stream_index"], c["n"] + 1))
        if nxt is not None and depth < len(colls):
            q = {rk for rk in nxt["kernels"] if M[(c["index"], rk)]["queued_next"]}
            if q:
                st = {rk: v["start"] for rk, v in nxt["m"].items()}
                now = max(st.values())
                moved = max(st[rk] - x if rk in q else st[rk] for rk in st)
                best = max(best, saved(nxt, now - moved, depth + 1))
        return min(best, x)

    rows = []
    hidden = {}
    for c in colls:
        L = c["last"]
        alone_saved = saved(c, c["marginal"])
        imposed_saved = saved(c, c["imposed"])
        h = hidden.setdefault(L, {"alone": 0.0, "alone_hidden": 0.0, "imposed": 0.0, "imposed_hidden": 0.0})
        h["alone"] += c["marginal"]
        h["alone_hidden"] += c["marginal"] - alone_saved
        h["imposed"] += c["imposed"]
        h["imposed_hidden"] += c["imposed"] - imposed_saved
        waited_by = sorted(rk for rk in c["kernels"]
                           if (M[(c["index"], rk)]["device"] or {}).get("slack", 0) > 0
                           or (M[(c["index"], rk)]["host"] or {}).get("slack", 0) > 0)
        rows.append({"index": c["index"], "name": c["name"], "last": L,
                     "marginal_us": c["marginal"], "marginal_saved_us": alone_saved,
                     "imposed_us": c["imposed"], "imposed_saved_us": imposed_saved,
                     "waited_by": waited_by,
                     "overlapped_on": sorted(rk for rk in c["kernels"] if M[(c["index"], rk)]["overlapped"]),
                     "queued_next_on": sorted(rk for rk in c["kernels"] if M[(c["index"], rk)]["queued_next"]),
                     "members": {str(rk): M[(c["index"], rk)] for rk in sorted(c["kernels"])}})
    # The worst k made typical together (k = 1..3, the ranks by their blocking cost alone): at
    # each collective whose last arriver is one of them, the end moves to the latest arrival of
    # the others (blocking: all of it given back; here: saved). Per collective, no replay: a lag
    # carried from one collective to the next is not followed.
    worst = sorted(A["alone"], key=lambda rk: (-A["alone"][rk], rk))
    fixed = []
    for S in (worst[:k] for k in range(1, min(3, len(worst)) + 1)):
        blk = ovl = 0.0
        for c in colls:
            st = {rk: v["start"] for rk, v in c["m"].items()}
            rest = [v for rk, v in st.items() if rk not in S]
            if c["last"] in S and rest:
                x = max(0.0, st[c["last"]] - max(rest))
                blk += x
                ovl += saved(c, x)
        fixed.append({"ranks": S, "blocking_us": blk, "overlap_us": ovl})
    return {"launch_latency_us": {str(rk): P["lat"] for rk, P in sorted(per.items())},
            "fixed_together": fixed,
            "stream_waits": {str(rk): P["stream_waits"] for rk, P in sorted(per.items())},
            "collectives": rows,
            "by_last_rank": {str(rk): v for rk, v in sorted(hidden.items())}}


def overlap_report(O):
    o = ["# Overlap: what each collective's end held up (--overlap)", ""]
    o.append("launch latency per rank (µs): " + ", ".join(
        "%s %.1f" % (rk, v) for rk, v in O["launch_latency_us"].items()))
    o.append("cudaStreamWaitEvent calls per rank: " + ", ".join(
        "%s %d" % (rk, v) for rk, v in O["stream_waits"].items()))
    o.append("")
    o.append("| coll | last | lead alone | given back | lead vs median | given back | waited by | compute ran during it on | queued next on |")
    o.append("|---|---|---|---|---|---|---|---|---|")
    for c in O["collectives"]:
        o.append("| c%d %s | %d | %.0f | %.0f | %.0f | %.0f | %s | %s | %s |" % (
            c["index"], c["name"][:28], c["last"], c["marginal_us"], c["marginal_saved_us"],
            c["imposed_us"], c["imposed_saved_us"], c["waited_by"] or "-", c["overlapped_on"] or "-",
            c["queued_next_on"] or "-"))
    o.append("")
    for rk, h in O["by_last_rank"].items():
        o.append("rank %s: lead alone %.3f ms, hidden %.3f ms (typical gives back %.3f); lead vs median "
                 "%.3f ms, hidden %.3f ms (charged %.3f)" % (
                     rk, h["alone"] / 1e3, h["alone_hidden"] / 1e3, (h["alone"] - h["alone_hidden"]) / 1e3,
                     h["imposed"] / 1e3, h["imposed_hidden"] / 1e3, (h["imposed"] - h["imposed_hidden"]) / 1e3))
    for f in O["fixed_together"]:
        o.append("ranks %s typical together: %.3f ms blocking, %.3f ms given back" % (
            ",".join(str(x) for x in f["ranks"]), f["blocking_us"] / 1e3, f["overlap_us"] / 1e3))
    return "\n".join(o)


# ---------------------------------------------------------------- output
def ms(x):
    return "%.3f ms" % (x / 1000.0)


def pct(x, ref):
    return "%.1f%%" % (100.0 * x / ref) if ref else "n/a"


def report(A):
    o = []
    p = o.append
    t0 = A["t0_abs_us"]
    p("truth_dlrm: %s" % A["dir"])
    p("t=0 is the earliest ProfilerStep start (%.3f µs epoch); times in µs" % t0)
    for nt in A["notes"]:
        p("NOTE: " + nt)
    p("")
    p("1. Per rank")
    p("%4s %-16s %10s %10s %9s %11s %11s %10s %10s %7s %7s" % (
        "rank", "step", "start", "end", "dur", "vs median", "1st kernel", "1st launched",
        "last kend", "orphan", "lead-in"))
    for x in A["ranks"]:
        p("%4d %-16s %10.1f %10.1f %9.1f %+11.1f %11.1f %10.1f %10.1f %7d %7.1f" % (
            x["rank"], x["step"], x["step_start"], x["step_end"], x["step_dur"],
            x["step_start_vs_median"], x["first_kernel_start"],
            x["first_launched_kernel_start"] if x["first_launched_kernel_start"] is not None else float("nan"),
            x["last_kernel_end"], x["orphan_kernels"], x["lead_in_to_first_launch"]))
    p("  (start = step start relative to the earliest rank's; lead-in = step start -> launch of "
      "the first NCCL kernel;\n   orphan = kernels whose launch is not in the trace, i.e. launched "
      "before the profiler window opened)")
    for x in A["ranks"]:
        if x["orphan_kernels"]:
            p("  rank %d: %d orphan kernels run at %.1f..%.1f (window opened at %.1f)" % (
                x["rank"], x["orphan_kernels"], x["orphan_span"][0], x["orphan_span"][1],
                x["profiler_window_start"]))
    p("  profiler window opens before the step by: " + ", ".join(
        "r%d %.0f" % (x["rank"], x["step_start"] - x["profiler_window_start"])
        for x in A["ranks"] if x["profiler_window_start"] is not None) + " µs")
    p("  step (median ProfilerStep duration) = %s; GPU span (first kernel start -> last kernel end, "
      "all ranks) = %s; without orphan kernels (previous step's) = %s" % (
          ms(A["step_ref"]), ms(A["gpu_span"]), ms(A["gpu_span_launched"])))
    p("")
    ck = A["clock"]
    p("Clock check: %s (max end spread over collectives %.1f µs; per-collective %s; per-rank "
      "offset of ends vs median %s)" % (ck["verdict"], ck["max_end_spread_us"], ck["end_spread_us"],
                                         {k: v for k, v in ck["per_rank_offset_us"].items()}))
    p("")
    p("2. NCCL collectives (matched by order on each rank's NCCL stream)")
    mism = [nt for nt in A["notes"] if "differ" in nt]
    p("   matching: %s" % ("; ".join(mism) if mism else
                           "every rank has the same NCCL kernel count per stream (%s), names and "
                           "grids agree in order" % ", ".join(
                               "r%d %d on stream %s" % (x["rank"], x["nccl_kernels"], x["nccl_streams"])
                               for x in A["ranks"])))
    for c in A["collectives"]:
        p("c%d %s  [stream #%d, #%d]  launched from %s / %s / phase %s" % (
            c["index"], c["name"], c["stream_index"], c["n"],
            c["m"][c["last"]].get("host_op"), c["m"][c["last"]].get("nccl_annotation"),
            c["m"][c["last"]].get("phase")))
        p("   %4s %10s %10s %8s %10s %7s %9s %9s" % ("rank", "arrival", "end", "dur", "launch",
                                                   "queue", "wait", "dur-durL"))
        L = c["last"]
        for rk in sorted(c["m"]):
            v = c["m"][rk]
            p("   %4d %10.1f %10.1f %8.1f %10.1f %7.1f %9.1f %9.1f%s" % (
                rk, v["start"] - t0, v["end"] - t0, v["dur"], v["launch"] - t0, v["launch_queue"],
                c["m"][L]["start"] - v["start"], v["dur"] - c["m"][L]["dur"],
                "  <- last" if rk == L else ""))
        p("   end spread %.1f µs; arrival spread %.1f µs; last = rank %d, %.1f µs after the median "
          "arrival, %.1f µs after the 2nd-last (rank %d)%s" % (
              c["end_spread"], c["start_spread"], L, c["imposed"], c["marginal"], c["second"],
              "  [TIE]" if c["tie"] else ""))
        dc = c["decomp"]
        pp = dc["parts"]
        p("   why (rank %d vs median member rank %d, Δarrival %.1f) = carried %.1f + Δwaits %.1f "
          "[net %.1f] + Δhost ops %.1f + Δhost gap %.1f + Δlaunch queue %.1f  -> %s (root: %s)" % (
              L, dc["vs"], dc["delta_arrival"], pp["carried"], pp["waits"], pp["carried_net"],
              pp["ops"], pp["gap"], pp["queue"], c["cause"], c["root_cause"]))
    p("")
    f = A["first"]
    L0, ref0 = f["last"], f["ref"]
    p("3. First collective (c0 %s)" % f["name"])
    p("   last arriver: rank %d, %.1f µs after the median arrival, %.1f µs after the 2nd-last "
      "(rank %d)" % (L0, f["imposed_vs_median"], f["marginal_vs_second"], f["second"]))
    for who in (L0, ref0):
        x = f["rank%d" % who]
        b = x["budget"]
        p("   rank %d%s: step start %+.1f µs vs earliest, %+.1f vs median; step start -> launch "
          "%.1f µs = ops %.1f + blocking waits %.1f + uncovered %.1f (largest gap %.1f µs at t=%.1f)" % (
              who, " (last)" if who == L0 else " (median member)", x["step_start_vs_earliest"],
              x["step_start_vs_median"], x["lead_in"], b["ops"], b["waits"], b["gap"],
              b["largest_gap"][1] if b["largest_gap"] else 0.0,
              (b["largest_gap"][0] - A["R"][who].corr - t0) if b["largest_gap"] else float("nan")))
        p("      phases: " + "; ".join("%s %.0f" % (n, dd) for n, full, dd in x["phases_before_launch"]))
        p("      top-level ops (inclusive): " + "; ".join("%s %.0f" % kv for kv in x["top_inclusive"][:6]))
        p("      ops by self time: " + "; ".join("%s %.0f" % kv for kv in x["top_self"][:6]))
    p("   lead-in (step start -> first NCCL launch) per rank: " + ", ".join(
        "r%d %.0f" % (x["rank"], x["lead_in_to_first_launch"]) for x in A["ranks"]))
    p("")
    p("4. Critical chain")
    for c in A["collectives"]:
        p("   c%d %-45s waits for rank %d: %7.1f µs (vs median)%s; cause %s" % (
            c["index"], c["name"][:45], c["last"], c["imposed"], " TIE" if c["tie"] else "",
            c["root_cause"] if c["root_cause"] == c["cause"] else "%s <- %s" % (c["cause"], c["root_cause"])))
    for rk, v in sorted(A["by_rank"].items(), key=lambda kv: -kv[1]):
        p("   rank %d: %s = %s of the step (%s), %s of the GPU span, %s of it without orphans" % (
            rk, ms(v), pct(v, A["step_ref"]), ms(A["step_ref"]), pct(v, A["gpu_span"]),
            pct(v, A["gpu_span_launched"])))
    p("   total imposed waits: %s" % ms(A["total_imposed"]))
    p("   what the last arriver alone costs (sum of last - 2nd-last arrival): " + ", ".join(
        "rank %d %s" % (rk, ms(v)) for rk, v in sorted(A["alone"].items(), key=lambda kv: -kv[1])))
    p("")
    p("   host budget between launches, per rank: busy = host ops + uncovered host time, "
      "excluding blocking waits (µs; '/w' = blocking waits)")
    rks = sorted(A["segments"][0]["ranks"])
    p("   %-24s " % "interval" + " ".join("%13s" % ("r%d" % rk) for rk in rks))
    for sg in A["segments"]:
        p("   %-24s " % ("%s -> %s" % (sg["from"], sg["to"])) + " ".join(
            "%6.0f/w%-5.0f" % (sg["ranks"][rk]["busy"], sg["ranks"][rk]["waits"]) for rk in rks))
    p("")
    w = A["worst"]
    p("5. TRUTH")
    p("   rank that most costs the step: %d" % w)
    for cause, v in A["worst_roots"]:
        p("   cause: %s: %s (%s of the step, %s of the GPU span)" % (
            cause, ms(v), pct(v, A["step_ref"]), pct(v, A["gpu_span"])))
    x = next(r for r in A["ranks"] if r["rank"] == w)
    p("   evidence: rank %d's %s starts %.1f µs after the earliest rank's and %+.1f µs vs the median; "
      "its lead-in to the first NCCL launch is %.1f µs (all ranks: %.0f..%.0f); at c0 it arrives "
      "%.1f µs after the median, %.1f after the 2nd-last" % (
          w, x["step"], x["step_start_vs_earliest"], x["step_start_vs_median"],
          x["lead_in_to_first_launch"], min(r["lead_in_to_first_launch"] for r in A["ranks"]),
          max(r["lead_in_to_first_launch"] for r in A["ranks"]),
          A["collectives"][0]["imposed"], A["collectives"][0]["marginal"]))
    return "\n".join(o)


def to_json(A):
    t0 = A["t0_abs_us"]
    r3 = lambda x: None if x is None else round(x, 3)
    colls = []
    for c in A["collectives"]:
        colls.append({
            "index": c["index"], "name": c["name"], "stream_index": c["stream_index"], "n": c["n"],
            "last": c["last"], "second": c["second"], "median_member": c["ref"],
            "median_arrival": r3(c["median_arrival"] - t0), "imposed_us": r3(c["imposed"]),
            "marginal_us": r3(c["marginal"]), "tie": c["tie"], "end_spread_us": r3(c["end_spread"]),
            "arrival_spread_us": r3(c["start_spread"]), "cause": c["cause"],
            "root_cause": c["root_cause"],
            "decomp": {"vs": c["decomp"]["vs"], "delta_arrival": r3(c["decomp"]["delta_arrival"]),
                       **{k: r3(v) for k, v in c["decomp"]["parts"].items()}},
            "members": {str(rk): {"arrival": r3(v["start"] - t0), "end": r3(v["end"] - t0),
                                  "dur": r3(v["dur"]), "launch": r3(v["launch"] - t0),
                                  "launch_queue": r3(v["launch_queue"]),
                                  "wait": r3(c["m"][c["last"]]["start"] - v["start"]),
                                  "spin_vs_last": r3(v["dur"] - c["m"][c["last"]]["dur"]),
                                  "host_op": v.get("host_op"), "phase": v.get("phase")}
                        for rk, v in sorted(c["m"].items())}})
    f = A["first"]
    first = {k: v for k, v in f.items() if k != "decomp"}
    out = {
        "dir": A["dir"], "notes": A["notes"], "t0_abs_us": t0, "clock": A["clock"],
        "step_us": r3(A["step_ref"]), "gpu_span_us": r3(A["gpu_span"]),
        "gpu_span_without_orphans_us": r3(A["gpu_span_launched"]),
        "ranks": [{k: (r3(v) if isinstance(v, float) else v) for k, v in x.items()} for x in A["ranks"]],
        "collectives": colls, "first_collective": first,
        "cost_by_last_rank_us": {str(k): r3(v) for k, v in A["by_rank"].items()},
        "cost_by_rank_and_root_cause_us": {"%d:%s" % k: r3(v) for k, v in A["by_root"].items()},
        "total_imposed_us": r3(A["total_imposed"]),
        "cost_alone_by_last_rank_us": {str(k): r3(v) for k, v in A["alone"].items()},
        "host_budget_between_launches": [
            {"from": sg["from"], "to": sg["to"],
             "ranks": {str(rk): {k: r3(v) for k, v in x.items()} for rk, x in sg["ranks"].items()}}
            for sg in A["segments"]],
        "truth": {"rank": A["worst"], "cost_us": r3(A["by_rank"][A["worst"]]),
                  "pct_of_step": round(100 * A["by_rank"][A["worst"]] / A["step_ref"], 2),
                  "pct_of_gpu_span": round(100 * A["by_rank"][A["worst"]] / A["gpu_span"], 2),
                  "causes": [[c, r3(v)] for c, v in A["worst_roots"]]},
    }
    return json.dumps(out, indent=1, default=lambda x: r3(x) if isinstance(x, float) else str(x))


def main(argv):
    args = [a for a in argv if not a.startswith("--")]
    d = args[0] if args else default_dir()
    A = analyse(d)
    if "--overlap" in argv:
        O = overlap_truth(A)
        r3 = lambda x: round(x, 3) if isinstance(x, float) else str(x)
        print(json.dumps(O, indent=1, default=r3) if "--json" in argv else overlap_report(O))
        return
    print(to_json(A) if "--json" in argv else report(A))


if __name__ == "__main__":
    main(sys.argv[1:])
