#!/usr/bin/env python3
"""Independent figures of Nsight Systems SQLite exports, for tests/nsys.rs: per file, from the
tables themselves (Python's sqlite3; nothing of rankprof's), the kernels' count and summed
time, the summed time of gemm kernels (name holds "gemm") and of NCCL kernels (name starts
with "nccl"), and the unions of the GPU timeline: busy (kernels, memcpy, memset), comm (NCCL
kernels), copies (memcpy and memset), and the span from the first GPU op's start to the last
one's end. Kernel names come from StringIds through demangledName (else shortName).

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
        "kernels": len(kernels),
        "kernel_sum_ns": sum(e - s for s, e, _ in kernels),
        "gemm_ns": sum(e - s for s, e, n in kernels if "gemm" in n),
        "nccl_ns": sum(e - s for s, e, n in kernels if n.startswith("nccl")),
        "busy_ns": union(gpu),
        "comm_ns": union([(s, e) for s, e, n in kernels if n.startswith("nccl")]),
        "memcpy_memset_ns": union(copies),
        "span_ns": max(e for _, e in gpu) - min(s for s, _ in gpu),
    }


if __name__ == "__main__":
    print(json.dumps([figures(p) for p in sys.argv[1:]]))
