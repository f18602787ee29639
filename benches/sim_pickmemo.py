#!/usr/bin/env python3
"""Simulates the pick memo's name tables (src/trace/pickmemo.rs) over one trace: how many of
the peek's name lookups miss (each miss costs the name's scan and the lists' tests).

    python3 benches/sim_pickmemo.py TRACE.json.gz [--first16]

`--first16`: long names (32 bytes or more) placed by their first 16 bytes alone, as before
#14's seventeenth round; by default by those and bytes 32 to 47, as now. Stdlib only; models
the layout Kineto writes (`{"ph": "X", "cat": "…", "name": "…"`), the categories analyze names
(`cpu_op`, `cuda_runtime`), and one reader's memo over the whole file."""
import collections
import gzip
import re
import sys

M = (1 << 64) - 1


def slot_of(b16, salt, n):
    lo = int.from_bytes(b16[:8], "little")
    hi = int.from_bytes(b16[8:16], "little")
    x = lo ^ (((hi << 29) | (hi >> 35)) & M) ^ salt
    return (((x * 0x9E3779B97F4A7C15) & M) >> 58) % n


def rotl128(b16, r):
    x = int.from_bytes(b16, "little")
    x = ((x << r) | (x >> (128 - r))) & ((1 << 128) - 1)
    return x.to_bytes(16, "little")


def main():
    path = sys.argv[1]
    first16 = "--first16" in sys.argv
    data = gzip.open(path).read()
    pat = re.compile(rb'\{"ph": "X", "cat": "(cpu_op|cuda_runtime)", "name": "')
    sets = [[None, None] for _ in range(64)]
    next_way = [0] * 64
    long = [None] * 64
    misses = collections.Counter()
    lookups = 0
    for m in pat.finditer(data):
        cat, at = m.group(1), m.end()
        name = data[at : data.index(b'"', at)]
        salt = slot_of(data[m.start(1) : m.start(1) + 16], 0, 32) + 1
        lookups += 1
        key = (cat, name)
        if len(name) < 32:
            s = slot_of(data[at : at + 16], salt, 64)
            if key in sets[s]:
                continue
            misses[key] += 1
            sets[s][next_way[s]] = key
            next_way[s] ^= 1
        elif len(name) <= 255:
            lo = data[at : at + 16]
            if not first16:
                lo = bytes(x ^ y for x, y in zip(lo, rotl128(data[at + 32 : at + 48], 17)))
            k = slot_of(lo, salt, 64)
            if long[k] == key:
                continue
            misses[key] += 1
            long[k] = key
    print(f"name lookups {lookups}, misses {sum(misses.values())}")
    for key, n in misses.most_common(8):
        print(f"  {n:7d}  {key[0].decode()}  {key[1].decode(errors='replace')}")


if __name__ == "__main__":
    main()
