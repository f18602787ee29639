#!/usr/bin/env python3
"""Independent checker of the critical-path model (issue #42), Python stdlib only.

Usage: check_critical_path.py DIR

Reads every *.json / *.json.gz trace in DIR (SGLang or vLLM file names) and implements the
critical-path model of `rankprof analyze` from the raw events, written again from its spec:

Per rank (times in integer ns, ns = round(us * 1000)):
- collectives: GPU communication kernels (cat "kernel", name matching nccl|rccl|msccl,
  case-insensitive), keyed by (args["Process Group Name"] or "", the stream's position among
  that group's streams on the rank, streams in ascending id order). In a CPU-only trace (no
  kernel at all) a collective is a "c10d::" cpu_op, keyed by its name;
- compute: the union of the rank's non-communication kernels (memcpy/memset are not kernels);
  CPU-only: the union of its cpu_ops that are not "c10d::" ops, over all threads; a gloo
  collective ends where the waits that follow it end: Python `<built-in method wait of …>`
  python_functions and gloo's `gloo:…` user_annotations (every one starting at or after the
  op's start, within 1 ms of its end and before the next collective's start);
- step marks: ProfilerStep#N user annotations (their start); in a CPU-only trace each mark's
  host start is its first cpu_op starting inside it (not one spanning exactly the mark), else
  its start (torch opens ProfilerStep#N at the previous iteration's prof.step(): a rank that
  begins an iteration late shows it before its first op).
- Collectives sorted by (start, end, file order); prev_end(c) = the largest end among those
  before c. Segment [prev_end, start], seg = max(0, start - prev_end); busy = compute inside the
  segment; pre = min(host start of the first step mark t0 with prev_end < t0 <= start, start)
  - prev_end, else 0; late = min(pre, seg - busy); host = seg - busy - late. The rank's first
  collective: prev_end = the start of the step mark open at its arrival (else the latest mark
  starting at or before it; none without one), "from_step", pre = min(that mark's host start,
  start) - prev_end.

Across ranks, per world (one per DP replica when distributedInfo.world_size < number of files
and every file has a DP id; else all files; files of different SGLang stages never match):
the n-th collective of a key on each rank having it forms one instance. Instances where a
member has no prev_end are skipped. Members "from_step" start their segment at the earliest
"from_step" member's prev_end (t_c) instead: seg = start - t_c, late = their own prev_end - t_c
plus their own pre (clamped to seg - busy), busy as before (inside [own prev_end, start]).
L = the latest start; a tie (another member starting less
than 1000 ns before L) costs nothing. cost = seg_L - lowermedian(seg); when > 0 it is split over
work/host/late by the excesses e_k = max(0, x_k(L) - lowermedian(x_k)) (floor for work and late,
host the rest; all host when every excess is 0). transfer = end_L - start_L. On GPU ranks
(every file has kernels) a late arrival's lag carries: taking each rank's late arrivals in time
order, when one's segment starts at the end of the rank's previous late arrival's collective, up
to that one's cost of its host part is re-split as that one was settled (work and late by floor,
host the rest).

Prints one JSON object, asserts nothing:
- "ranks": per rank label (as `rankprof ls` labels ranks: TP00, TP00-DP01, ...): file, mode
  ("gpu"/"cpu"), collectives, steps (ProfilerStep marks), mean_step_ns, cost_ns {work, host,
  late} (totals), per_step_ns (totals / steps), charged (instances it was charged for),
  by_step {step index: {work, host, late}} (each charge in the ProfilerStep mark of the last
  arriver that holds its arrival);
- "host_gaps": per rank charged a host part, what its launching thread ran while its GPU was
  idle inside the segments of those instances ([prev_end, start] of each one whose host part
  is > 0): idle_ns (the segments less the union of kernels, gpu_memcpy and gpu_memset),
  thread (the tid with the most launch calls, cuda_runtime/cuda_driver names containing
  Launch, Memcpy or Memset, overlapping the segments), ops {name: self ns inside the idle
  time} over that thread's cpu_op / cuda_runtime / cuda_driver / python_function events
  (nested by (start, -end); a child's overlap is taken off its parent), unrecorded_ns (idle
  time outside every outermost op of the thread);
- "worlds": per world its members, instances, skipped (no prev_end), ties, charged, and the
  lower-median transfer in ns per collective name (args "Collective name", else the kernel or op
  name) and over all ("*"); per name, the lower-median size in bytes (max of "In msg nelems" and
  "Out msg nelems" times the dtype's size; None unless every one has it) and the lower-median
  bus bandwidth in GB/s (size / transfer times NCCL's factor for the instance's member count:
  all-reduce 2(n-1)/n, all-gather / reduce-scatter / all-to-all (n-1)/n, else 1).
"""

import bisect
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
COMM = re.compile(r"nccl|rccl|msccl", re.IGNORECASE)
DIMS = ["tp", "dp", "pp", "ep", "dcp"]
KINDS = ["work", "host", "late"]
TIE_NS = 1000
WAIT_SLACK_NS = 1_000_000
# torch scalar types as Kineto writes a collective's "dtype", bytes per element.
DTYPE_BYTES = {"Double": 8, "Long": 8, "Float": 4, "Int": 4, "BFloat16": 2, "Half": 2, "Short": 2,
               "Byte": 1, "Char": 1, "Bool": 1, "Float8_e4m3fn": 1, "Float8_e5m2": 1}


def bus_factor(name, n):
    """nccl-tests' PERFORMANCE.md: busbw = algbw x this factor for n ranks."""
    l = re.sub("[^a-z0-9]", "", name.lower())
    if "allreduce" in l:
        return 2 * (n - 1) / n
    if "allgather" in l or "reducescatter" in l or "alltoall" in l:
        return (n - 1) / n
    if any(w in l for w in ("broadcast", "reduce", "send", "recv")):
        return 1.0
    return None


def ns(v):
    """Kineto microseconds as integer nanoseconds (exact: parsed as Decimal)."""
    return int((Decimal(v) * 1000).to_integral_value())


def identity(name):
    """The file's naming and dimensions (None where the name has no such part)."""
    m = SGLANG.match(name)
    if m:
        g = m.groupdict()
        ids = {d: (int(g[d]) if g.get(d) is not None else None) for d in DIMS}
        return "sglang", ids, g["stage"]
    m = VLLM.match(name)
    if m:
        g = m.groupdict()
        return "vllm", {d: int(g[d]) for d in DIMS}, None
    return None, {d: None for d in DIMS}, None


def labels(files):
    """rankprof's labels: every dimension the name has (SGLang); for vLLM, which names every
    dimension, only those that vary across the files (TP when none does)."""
    vllm = any(f["naming"] == "vllm" for f in files)
    shown = {d: True for d in DIMS}
    if vllm:
        varies = {d: len({f["ids"][d] for f in files}) > 1 for d in DIMS}
        others = any(varies[d] for d in DIMS if d != "tp")
        shown = dict(varies)
        shown["tp"] = varies["tp"] or not others
    out = []
    for i, f in enumerate(files):
        parts = ["%s%02d" % (d.upper(), f["ids"][d]) for d in DIMS if shown[d] and f["ids"][d] is not None]
        label = "-".join(parts) if parts else "RANK%02d" % (f["dist_rank"] if f["dist_rank"] is not None else i)
        if f["stage"]:
            label += "-" + f["stage"]
        out.append(label)
    return out


def union(intervals):
    """Sorted, disjoint union of [start, end) intervals."""
    out = []
    for a, b in sorted(intervals):
        if b <= a:
            continue
        if out and a <= out[-1][1]:
            if b > out[-1][1]:
                out[-1][1] = b
        else:
            out.append([a, b])
    return out


def covered(merged, lo, hi):
    """Length of the union `merged` inside [lo, hi]."""
    total = 0
    for a, b in merged:
        if b <= lo:
            continue
        if a >= hi:
            break
        total += min(b, hi) - max(a, lo)
    return total


def lower_median(values):
    v = sorted(values)
    return v[(len(v) - 1) // 2]


def read_rank(path):
    name = os.path.basename(path)
    opener = gzip.open if name.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        doc = json.load(f, parse_float=Decimal)
    dist = doc.get("distributedInfo") or {}
    naming, ids, stage = identity(name)
    kernels = []  # (start, end, order, name, args, stream)
    cpu_ops = []  # (start, end, order, name)
    gpu_ivs = []  # (start, end): kernels, copies, sets
    host = []  # (start, end, tid, cat, name)
    marks = []  # (start, dur)
    gloo_ranges = []  # (start, end): gloo's own range around a transfer
    for order, e in enumerate(doc.get("traceEvents", [])):
        if e.get("ph") != "X" or "ts" not in e:
            continue
        cat = e.get("cat")
        nm = e.get("name", "")
        if cat in ("kernel", "gpu_memcpy", "gpu_memset"):
            start = ns(e["ts"])
            gpu_ivs.append((start, start + ns(e.get("dur", 0))))
        if cat in ("cpu_op", "cuda_runtime", "cuda_driver", "python_function"):
            start = ns(e["ts"])
            host.append((start, start + max(0, ns(e.get("dur", 0))), str(e.get("tid")), cat, nm))
        if cat == "kernel":
            start = ns(e["ts"])
            kernels.append((start, start + ns(e.get("dur", 0)), order, nm, e.get("args") or {}, e.get("tid")))
        elif cat == "cpu_op":
            start = ns(e["ts"])
            cpu_ops.append((start, start + ns(e.get("dur", 0)), order, nm))
        elif cat == "user_annotation" and STEP.match(nm):
            marks.append((ns(e["ts"]), ns(e.get("dur", 0))))
        elif cat == "user_annotation" and nm.startswith("gloo:"):
            start = ns(e["ts"])
            gloo_ranges.append((start, start + max(0, ns(e.get("dur", 0)))))
    gpu = bool(kernels)
    colls = []  # (start, end, order, key, name)
    if gpu:
        comm = [k for k in kernels if COMM.search(k[3])]
        compute = union((k[0], k[1]) for k in kernels if not COMM.search(k[3]))
        streams = {}
        for k in comm:
            pg = str(k[4].get("Process Group Name", ""))
            streams.setdefault(pg, set()).add(k[5])
        position = {
            pg: {s: i for i, s in enumerate(sorted(ss, key=lambda s: (not isinstance(s, int), str(s) if not isinstance(s, int) else s)))}
            for pg, ss in streams.items()
        }
        for k in comm:
            pg = str(k[4].get("Process Group Name", ""))
            cname = k[4].get("Collective name") or k[3]
            size = DTYPE_BYTES.get(k[4].get("dtype"), 0)
            nel = max(int(k[4].get("In msg nelems") or 0), int(k[4].get("Out msg nelems") or 0))
            colls.append((k[0], k[1], k[2], (pg, position[pg][k[5]]), cname, nel * size))
    else:
        compute = union((c[0], c[1]) for c in cpu_ops if not c[3].startswith("c10d::"))
        for c in cpu_ops:
            if c[3].startswith("c10d::"):
                colls.append((c[0], c[1], c[2], c[3], c[3], 0))
        # gloo: the op returns once queued; Python's work.wait() and gloo's range after it
        # (starting at or after the op, before the next collective, and either within 1 ms of
        # its end or with no compute op started in between) is where the thread waits for the
        # others: the collective ends with it. Each wait extends one.
        compute_starts = sorted(c[0] for c in cpu_ops if not c[3].startswith("c10d::") and "record_param_comms" not in c[3])
        waits = sorted([(h[0], h[1]) for h in host if h[3] == "python_function" and h[4].startswith("<built-in method wait of ")] + gloo_ranges)
        colls.sort(key=lambda c: (c[0], c[2]))
        wi = 0
        for i, c in enumerate(colls):
            nxt = colls[i + 1][0] if i + 1 < len(colls) else float("inf")
            while wi < len(waits) and waits[wi][0] < c[0]:
                wi += 1
            queued = c[1]
            def attached(w):
                nc = bisect.bisect_right(compute_starts, queued)
                idle = nc == len(compute_starts) or compute_starts[nc] >= w
                return w < nxt and (w <= queued + WAIT_SLACK_NS or idle)
            while wi < len(waits) and attached(waits[wi][0]):
                colls[i] = (c[0], max(colls[i][1], waits[wi][1])) + c[2:]
                wi += 1
    colls.sort(key=lambda c: (c[0], c[1], c[2]))
    mark_starts = sorted(m[0] for m in marks)
    op_starts = sorted((c[0], c[1]) for c in cpu_ops) if not gpu else []

    def host_start(t0):
        if gpu:
            return t0
        dur = next(m[1] for m in marks if m[0] == t0)
        end = t0 + max(1, dur)
        first = next((o[0] for o in op_starts if t0 <= o[0] < end and not (o[0] == t0 and o[1] == end)), None)
        return first if first is not None else t0

    segs = []  # per collective: dict
    prev_end = None
    for c in colls:
        start, end = c[0], c[1]
        from_step = None
        if prev_end is None:
            open_ = [m[0] for m in sorted(marks) if m[0] <= start < m[0] + max(1, m[1])]
            before = [m[0] for m in marks if m[0] <= start]
            from_step = open_[-1] if open_ else (max(before) if before else None)
        p = prev_end if prev_end is not None else from_step
        rec = {"start": start, "end": end, "key": c[3], "name": c[4], "prev_end": p, "bytes": c[5], "from_step": from_step is not None}
        if p is not None:
            seg = max(0, start - p)
            busy = covered(compute, p, start) if start > p else 0
            if from_step is None:
                t0 = next((t for t in mark_starts if p < t <= start), None)
                pre = min(host_start(t0), start) - p if t0 is not None else 0
            else:
                pre = max(0, min(host_start(from_step), start) - from_step)
            late = min(pre, seg - busy)
            rec.update(seg=seg, work=busy, late=late, host=seg - busy - late, pre=pre)
        segs.append(rec)
        prev_end = end if prev_end is None else max(prev_end, end)
    by_key = {}
    for rec in segs:
        by_key.setdefault(rec["key"], []).append(rec)
    return {
        "file": name,
        "naming": naming,
        "ids": ids,
        "stage": stage,
        "dist_rank": dist.get("rank"),
        "world_size": dist.get("world_size"),
        "mode": "gpu" if gpu else "cpu",
        "collectives": len(colls),
        "steps": len(marks),
        "mean_step_ns": (sum(m[1] for m in marks) / len(marks)) if marks else None,
        "by_key": by_key,
        "marks": sorted(marks),
        "gpu_ivs": gpu_ivs,
        "host": host,
    }


def subtract(a, b):
    """Sorted disjoint intervals a less sorted disjoint intervals b."""
    out = []
    for s0, e0 in a:
        cur = s0
        for s1, e1 in b:
            if e1 <= cur or s1 >= e0:
                continue
            if s1 > cur:
                out.append((cur, s1))
            cur = max(cur, e1)
        if cur < e0:
            out.append((cur, e0))
    return out


def host_gaps(f, windows):
    wins = union(windows)
    hits = lambda a, b: any(a < we and max(b, a + 1) > ws for ws, we in wins)
    idle = subtract(wins, union(iv for iv in f["gpu_ivs"] if hits(*iv)))
    launches = {}
    for a, b, tid, cat, nm in f["host"]:
        if cat != "cpu_op" and re.search("Launch|Memcpy|Memset", nm) and hits(a, b):
            launches[tid] = launches.get(tid, 0) + 1
    thread = max(sorted(launches), key=lambda t: launches[t]) if launches else None
    ops = sorted(
        (h for h in f["host"] if hits(h[0], h[1]) and (thread is None or h[2] == thread)),
        key=lambda h: (h[2], h[0], -h[1]),
    )
    inside = lambda a, b: covered(idle, a, b) if b > a else 0
    selfs = [inside(h[0], h[1]) for h in ops]
    unrec = sum(e - s for s, e in idle)
    stack = []
    tid = None
    for i, h in enumerate(ops):
        if h[2] != tid:
            stack, tid = [], h[2]
        while stack and stack[-1][0] <= h[0]:
            stack.pop()
        if stack:
            end, parent = stack[-1]
            inner = inside(h[0], min(h[1], end))
            selfs[parent] -= inner
            if h[1] > end:
                selfs[i] = inner
        else:
            unrec -= inside(h[0], h[1])
        stack.append((h[1], i))
    by = {}
    for h, v in zip(ops, selfs):
        if v > 0:
            by[h[4]] = by.get(h[4], 0) + v
    return {
        "idle_ns": sum(e - s for s, e in idle),
        "unrecorded_ns": max(0, unrec),
        "thread": thread,
        "ops": by,
    }


def worlds_of(files):
    n = len(files)
    sizes = [f["world_size"] for f in files]
    per_dp = all(f["ids"]["dp"] is not None for f in files) and all(
        isinstance(s, int) and s < n for s in sizes
    )
    worlds = {}
    for i, f in enumerate(files):
        key = (f["stage"] or "", f["ids"]["dp"] if per_dp else None)
        worlds.setdefault(key, []).append(i)
    return [worlds[k] for k in sorted(worlds, key=lambda k: (k[0], -1 if k[1] is None else k[1]))]


def settle(files, pending, cost, by_step, gap_windows):
    """Charges each late arrival, each rank's in time order (arrival, then end); on GPU ranks
    (every file "gpu") with the lag carried from the rank's previous one: when this segment
    starts at that collective's end, up to that one's cost of this one's host part moves to work
    and late in that one's proportions (as settled; floor each)."""
    gpu = all(f["mode"] == "gpu" for f in files)
    prev = None
    for lm, start, end, seg_start, c, split in sorted(pending, key=lambda x: (x[0], x[1], x[2])):
        if gpu and prev is not None and prev[0] == lm and prev[1] == seg_start:
            _, _, budget, was = prev
            total = sum(was.values())
            if total > 0:
                moved = max(0, min(split["host"], budget))
                work = moved * was["work"] // total
                late = moved * was["late"] // total
                split = {"work": split["work"] + work, "late": split["late"] + late, "host": split["host"] - work - late}
        prev = (lm, end, c, split)
        if split["host"] > 0:
            gap_windows[lm].append((seg_start, start))
        for k in KINDS:
            cost[lm][k] += split[k]
        # The step (ProfilerStep mark of the last arriver) holding its arrival.
        step = next((i for i, (t0, dur) in enumerate(files[lm]["marks"]) if t0 <= start < t0 + dur), None)
        if step is not None:
            row = by_step[lm].setdefault(step, {k: 0 for k in KINDS})
            for k in KINDS:
                row[k] += split[k]


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    d = sys.argv[1]
    names = sorted(n for n in os.listdir(d) if n.endswith(".json") or n.endswith(".json.gz"))
    files = [read_rank(os.path.join(d, n)) for n in names]
    labs = labels(files)
    cost = [{k: 0 for k in KINDS} for _ in files]
    charged = [0] * len(files)
    gap_windows = [[] for _ in files]
    by_step = [{} for _ in files]
    pending = []  # (rank, arrival, end, segment start, cost, split) of every late arrival
    worlds_out = []
    for members in worlds_of(files):
        keys = []
        for m in members:
            for k in files[m]["by_key"]:
                if k not in keys:
                    keys.append(k)
        w = {"members": [labs[m] for m in members], "instances": 0, "skipped": 0, "ties": 0, "charged": 0}
        transfers = {}
        sizes = {}
        bws = {}
        for key in keys:
            have = [m for m in members if key in files[m]["by_key"]]
            count = max(len(files[m]["by_key"][key]) for m in have)
            for n in range(count):
                inst = [(m, files[m]["by_key"][key][n]) for m in have if n < len(files[m]["by_key"][key])]
                w["instances"] += 1
                if any(r["prev_end"] is None for _, r in inst):
                    w["skipped"] += 1
                    continue
                firsts = [r["prev_end"] for _, r in inst if r["from_step"]]
                if firsts:
                    t_c = min(firsts)
                    aligned = []
                    for m, r in inst:
                        if r["from_step"]:
                            seg = max(0, r["start"] - t_c)
                            late = min(r["prev_end"] - t_c + r["pre"], seg - r["work"])
                            r = dict(r, seg=seg, late=late, host=seg - r["work"] - late, prev_end=t_c)
                        aligned.append((m, r))
                    inst = aligned
                # The last arriver: the latest start (the first such member on equal starts).
                li = max(range(len(inst)), key=lambda i: (inst[i][1]["start"], -i))
                lm, lr = inst[li]
                transfers.setdefault(lr["name"], []).append(lr["end"] - lr["start"])
                sizes.setdefault(lr["name"], []).append(lr["bytes"])
                f = bus_factor(lr["name"], len(inst))
                t = lr["end"] - lr["start"]
                if f is not None and t > 0 and lr["bytes"] > 0:
                    bws.setdefault(lr["name"], []).append(int(lr["bytes"] * f / t * 1e3 + 0.5))
                transfers.setdefault("*", []).append(lr["end"] - lr["start"])
                if any(i != li and lr["start"] - r["start"] < TIE_NS for i, (_, r) in enumerate(inst)):
                    w["ties"] += 1
                    continue
                c = lr["seg"] - lower_median([r["seg"] for _, r in inst])
                if c <= 0:
                    continue
                e = {k: max(0, lr[k] - lower_median([r[k] for _, r in inst])) for k in KINDS}
                total = sum(e.values())
                if total == 0:
                    split = {"work": 0, "late": 0, "host": c}
                else:
                    work = c * e["work"] // total
                    late = c * e["late"] // total
                    split = {"work": work, "late": late, "host": c - work - late}
                pending.append((lm, lr["start"], lr["end"], lr["prev_end"], c, split))
                charged[lm] += 1
                w["charged"] += 1
        w["transfer_median_ns"] = {k: lower_median(v) for k, v in sorted(transfers.items())}
        w["bytes_median"] = {k: (lower_median(v) if all(b > 0 for b in v) else None) for k, v in sorted(sizes.items())}
        w["busbw_gbps"] = {k: lower_median(v) / 1e3 for k, v in sorted(bws.items())}
        worlds_out.append(w)
    settle(files, pending, cost, by_step, gap_windows)
    ranks = {}
    for i, f in enumerate(files):
        steps = f["steps"]
        ranks[labs[i]] = {
            "file": f["file"],
            "mode": f["mode"],
            "collectives": f["collectives"],
            "steps": steps,
            "mean_step_ns": f["mean_step_ns"],
            "cost_ns": cost[i],
            "per_step_ns": {k: (cost[i][k] / steps if steps else None) for k in KINDS},
            "charged": charged[i],
            "by_step": {str(s): v for s, v in sorted(by_step[i].items())},
        }
    gaps = {labs[i]: host_gaps(files[i], w) for i, w in enumerate(gap_windows) if w and files[i]["mode"] == "gpu"}
    json.dump({"dir": d, "ranks": ranks, "worlds": worlds_out, "host_gaps": gaps}, sys.stdout, default=str)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
