#!/usr/bin/env python3
"""Builds a large multi-rank benchmark set from a real Kineto trace (stdlib only).

Each rank file is the real trace `--src` (default: the HTA A100 NCCL trace in ../shared)
repeated `--copies` times back to back: times shifted by the trace's span per copy,
correlation / External ids / flow ids made unique, ProfilerStep numbers continued. Rank
`--slow-rank` gets its GEMM kernels `--factor` times longer from copy `--from-copy` on, so the
set has a known imbalance. Output: DIR/bench-TP-{r}.trace.json.gz (gzip level 6), SGLang names.

  python3 benches/make_bench_set.py --out bench-data/big8 --ranks 8 --copies 13   # ~1 GB
"""

import argparse
import gzip
import json
import os
import re
import sys
from multiprocessing import Pool

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_SRC = os.path.join(HERE, "..", "..", "shared", "fixtures", "hta", "nccl-a100-rank-0.json.gz")
GEMM = re.compile(r"gemm|cutlass|cublas", re.I)


def build(job):
    args, rank = job
    with gzip.open(args.src, "rt") as f:
        doc = json.load(f)
    events = doc["traceEvents"]
    xs = [e for e in events if e.get("ph") == "X" and "ts" in e]
    t0 = min(e["ts"] for e in xs)
    t1 = max(e["ts"] + e.get("dur", 0) for e in xs)
    span = (t1 - t0) + 1000.0
    head = {k: v for k, v in doc.items() if k not in ("traceEvents", "baseTimeNanoseconds", "traceName")}
    if isinstance(head.get("distributedInfo"), dict):
        head["distributedInfo"] = dict(head["distributedInfo"], rank=rank, world_size=args.ranks)
    path = os.path.join(args.out, f"bench-TP-{rank}.trace.json.gz")
    tmp = path + ".tmp"
    with gzip.open(tmp, "wt", compresslevel=6) as out:
        out.write(json.dumps(head)[:-1] + ', "traceEvents": [\n')
        first = True
        for c in range(args.copies):
            shift = c * span + rank * 0.5
            for e in events:
                e2 = dict(e)
                if "ts" in e2 and e2.get("ph") != "M":
                    e2["ts"] = round(e["ts"] + shift, 3)
                if "id" in e2 and isinstance(e2["id"], int):
                    e2["id"] = e["id"] + c * 10_000_000
                name = e2.get("name", "")
                if name.startswith("ProfilerStep#"):
                    e2["name"] = "ProfilerStep#%d" % (int(name[13:]) + 3 * c)
                a = e2.get("args")
                if isinstance(a, dict) and ("correlation" in a or "External id" in a):
                    a = dict(a)
                    for k in ("correlation", "External id"):
                        if isinstance(a.get(k), int):
                            a[k] = a[k] + c * 10_000_000
                    e2["args"] = a
                if (rank == args.slow_rank and c >= args.from_copy and e2.get("cat") == "kernel"
                        and GEMM.search(name)):
                    e2["dur"] = round(e["dur"] * args.factor, 3)
                if c == 0 and e2.get("ph") == "M" or e2.get("ph") != "M":
                    out.write(("" if first else ",\n") + json.dumps(e2))
                    first = False
        base = doc.get("baseTimeNanoseconds")
        tail = "\n]"
        if base is not None:
            tail += ', "baseTimeNanoseconds": %d' % base
        out.write(tail + "}\n")
    os.replace(tmp, path)
    return path, os.path.getsize(path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--src", default=DEFAULT_SRC)
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--copies", type=int, default=13)
    ap.add_argument("--slow-rank", type=int, default=3)
    ap.add_argument("--from-copy", type=int, default=5)
    ap.add_argument("--factor", type=float, default=1.3)
    ap.add_argument("-j", type=int, default=os.cpu_count())
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    with Pool(args.j) as p:
        for path, size in p.imap(build, [(args, r) for r in range(args.ranks)]):
            print(f"{path}: {size / 1e6:.1f} MB", file=sys.stderr)


if __name__ == "__main__":
    main()
