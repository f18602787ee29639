#!/usr/bin/env python3
"""Independent figures of Nsight Systems SQLite exports, for tests/nsys.rs: per file, from the
tables themselves (Python's sqlite3; nothing of rankprof's), the kernels' count and summed
time, the summed time of gemm kernels (name holds "gemm") and of NCCL kernels (name starts
with "nccl"), and the unions of the GPU timeline: busy (kernels, memcpy, memset), comm (NCCL
kernels), copies (memcpy and memset), and the span from the first GPU op's start to the last
one's end. Kernel names come from StringIds through demangledName (else shortName).

And what a merged trace must show of the file in a viewer (`viewer`): the slices (runtime calls,
NVTX ranges with an end, kernels, memcpy and memset rows), the flow arrows' starts (runtime calls
whose correlationId some GPU row has) and finishes (GPU rows whose correlationId some runtime
call has), the GPU streams (`stream N` per device) and the host threads (`thread TID (NAME)`,
NAME from ThreadNames when the export has it; TID the low 24 bits of globalTid).

usage: check_nsys.py FILE.sqlite... -> JSON list, one object per file, in the order given
"""

import json
import sqlite3
import sys


def union(ivs):
    total, cur_s, cur_e = 0, None, None
    for s, e in sorted(ivs):
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None:
        total += cur_e - cur_s
    return total


def tables(db):
    return {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}


def columns(db, t):
    return {r[1] for r in db.execute(f"PRAGMA table_info({t})")}


def figures(path):
    db = sqlite3.connect(path)
    names = dict(db.execute("SELECT id, value FROM StringIds"))
    kcols = columns(db, "CUPTI_ACTIVITY_KIND_KERNEL")
    col = "demangledName" if "demangledName" in kcols else "shortName"
    kernels = [(s, e, names[n]) for s, e, n in
               db.execute(f'SELECT start, "end", {col} FROM CUPTI_ACTIVITY_KIND_KERNEL')]
    copies = []
    for t in ("CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"):
        if t in tables(db):
            copies += list(db.execute(f'SELECT start, "end" FROM {t}'))
    gpu = [(s, e) for s, e, _ in kernels] + copies
    return {
        "path": path,
        "viewer": viewer(db),
        "kernels": len(kernels),
        "kernel_sum_ns": sum(e - s for s, e, _ in kernels),
        "gemm_ns": sum(e - s for s, e, n in kernels if "gemm" in n),
        "nccl_ns": sum(e - s for s, e, n in kernels if n.startswith("nccl")),
        "busy_ns": union(gpu),
        "comm_ns": union([(s, e) for s, e, n in kernels if n.startswith("nccl")]),
        "memcpy_memset_ns": union(copies),
        "span_ns": max(e for _, e in gpu) - min(s for s, _ in gpu),
    }


def viewer(db):
    have = tables(db)
    gpu_tables = [t for t in ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY",
                              "CUPTI_ACTIVITY_KIND_MEMSET") if t in have]
    gpu = []
    for t in gpu_tables:
        gpu += db.execute(f"SELECT deviceId, streamId, correlationId FROM {t}").fetchall()
    runtime = db.execute("SELECT correlationId, globalTid FROM CUPTI_ACTIVITY_KIND_RUNTIME"
                         ).fetchall()
    nvtx = db.execute('SELECT globalTid FROM NVTX_EVENTS WHERE "end" IS NOT NULL '
                      "AND eventType IN (59, 60)").fetchall()
    gpu_corr = {c for _, _, c in gpu if c is not None}
    host_corr = {c for c, _ in runtime if c is not None}
    names = dict(db.execute("SELECT id, value FROM StringIds"))
    tnames = {}
    if "ThreadNames" in have:
        tnames = {g: names[n] for n, g in db.execute("SELECT nameId, globalTid FROM ThreadNames")}
    threads = sorted({g for _, g in runtime} | {g for (g,) in nvtx})
    return {
        "slices": len(runtime) + len(nvtx) + len(gpu),
        "flow_starts": sum(1 for c, _ in runtime if c in gpu_corr),
        "flow_ends": sum(1 for _, _, c in gpu if c in host_corr),
        "streams": {str(d): sorted({f"stream {s}" for dd, s, _ in gpu if dd == d})
                    for d in {d for d, _, _ in gpu}},
        "threads": [f"thread {g & 0xFFFFFF}" + (f" ({tnames[g]})" if g in tnames else "")
                    for g in threads],
    }


if __name__ == "__main__":
    print(json.dumps([figures(p) for p in sys.argv[1:]]))
