#!/usr/bin/env python3
"""Independent checker for `rankprof analyze --rank` (#43 item 6), stdlib only.

Usage: check_drill.py RANK_FILE PEER_FILE...

From the Kineto traces themselves: each file's GPU op time by name (`cat` kernel, gpu_memcpy,
gpu_memset; `dur` in µs → ns, half away from zero), then for the first file against the others:
per name, the rank's total, the median over the peers (a peer without the kernel counts 0; the mean
of the two middle values for an even count) and the ratio; and the same for the GEMM kernels
taken together (names matching `gemm|nvjet|xmma`, case-insensitive).

Prints JSON: {"kernels": {name: {"rank": ns, "median": ns, "ratio": r|null}},
              "gemm": {"rank": ns, "median": ns, "ratio": r|null}}.
"""

import gzip
import json
import re
import sys
from decimal import Decimal, ROUND_HALF_UP

GPU_OPS = ("kernel", "gpu_memcpy", "gpu_memset")
GEMM = re.compile(r"gemm|nvjet|xmma", re.I)


def ns(v):
    return int((Decimal(str(v)) * 1000).to_integral_value(rounding=ROUND_HALF_UP))


def kernels(path):
    with open(path, "rb") as f:
        gz = f.read(2) == b"\x1f\x8b"
    with (gzip.open if gz else open)(path, "rt", encoding="utf-8") as f:
        doc = json.load(f, parse_float=Decimal)
    out = {}
    for e in doc.get("traceEvents", []):
        if e.get("ph") == "X" and e.get("cat") in GPU_OPS and "dur" in e:
            out[e.get("name", "")] = out.get(e.get("name", ""), 0) + max(0, ns(e["dur"]))
    return out


def median(v):
    s = sorted(v)
    n = len(s)
    if n == 0:
        return 0.0
    return float(s[n // 2]) if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2.0


def figure(mine, theirs):
    m = median(theirs)
    return {"rank": mine, "median": m, "ratio": (mine / m) if m > 0 else None}


def main():
    files = sys.argv[1:]
    me, peers = kernels(files[0]), [kernels(p) for p in files[1:]]
    names = set(me)
    for p in peers:
        names |= set(p)
    out = {
        "kernels": {n: figure(me.get(n, 0), [p.get(n, 0) for p in peers]) for n in sorted(names)},
        "gemm": figure(
            sum(t for n, t in me.items() if GEMM.search(n)),
            [sum(t for n, t in p.items() if GEMM.search(n)) for p in peers],
        ),
    }
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
