#!/usr/bin/env python3
"""Independent checker for the grouped views of `rankprof analyze --format json` (#11).

Reads the analysis JSON (a file argument) and recomputes, from its per-rank records only
(`ranks[]` and `steps.by_rank[]`), what the `groups` section must say:

  work per rank    = the sum of the rank's `work_ns` over the steps (`compute_ns` without steps);
  distributions    = min / p50 / p90 / max / mean over ranks, percentiles interpolated linearly
                     between the nearest ranks (numpy's default, here by hand);
  groups by DP     = ranks grouped by the `DPnn` in their label: mean / min / max / p50 of work,
                     ranks, busiest rank, and the mean over the median of the groups' means;
  outliers         = ranks ordered by |work / mean work of its peers - 1|, largest first (index
                     breaks ties), the rank furthest above its peers first, the verdict's lead
                     (when a rank) second; a rank's peers are
                     the other ranks of its collective world (`collectives.worlds`) when that
                     world has two or more ranks, else every other rank.

Prints JSON: {"work": {...}, "busy": {...}, "dp": {name: {...}}, "outliers": [labels],
"vs_peers_pct": {label: percent}}.
"""

import json
import re
import sys


def quantile(sorted_v, p):
    n = len(sorted_v)
    if n == 0:
        return 0.0
    pos = p * (n - 1)
    lo = int(pos)
    hi = min(lo + 1, n - 1)
    return sorted_v[lo] + (sorted_v[hi] - sorted_v[lo]) * (pos - lo)


def dist(values):
    s = sorted(float(v) for v in values)
    return {
        "n": len(s),
        "min": s[0] if s else 0.0,
        "p50": quantile(s, 0.5),
        "p90": quantile(s, 0.9),
        "max": s[-1] if s else 0.0,
        "mean": sum(s) / len(s) if s else 0.0,
    }


def main():
    a = json.load(open(sys.argv[1]))
    labels = [r["rank"] for r in a["ranks"]]
    by_rank = a["steps"]["by_rank"]
    if by_rank:
        work = {l: 0 for l in labels}
        for rec in by_rank:
            work[rec["rank"]] += rec["work_ns"]
    else:
        work = {r["rank"]: r["compute_ns"] for r in a["ranks"]}
    busy = {r["rank"]: r["busy_ns"] for r in a["ranks"]}
    out = {
        "work": dist(work[l] for l in labels),
        "busy": dist(busy[l] for l in labels),
    }
    by_world = {}
    for rec in a["collectives"].get("worlds", []):  # flat records {world, rank}
        by_world.setdefault(rec["world"], []).append(rec["rank"])
    worlds = [w for w in by_world.values() if len(w) >= 2]
    dev = []
    for i, l in enumerate(labels):
        world = next((w for w in worlds if l in w), None)
        peers = [p for p in (world if world else labels) if p != l]
        mean = sum(work[p] for p in peers) / len(peers) if peers else 0.0
        dev.append(100.0 * (work[l] / mean - 1.0) if mean > 0 else 0.0)
    order = sorted(range(len(labels)), key=lambda i: (-abs(dev[i]), i))
    top = max(range(len(labels)), key=lambda i: (dev[i], -i))
    lead = a["verdict"].get("lead")
    pins = [top] + ([labels.index(lead)] if lead in labels and labels.index(lead) != top else [])
    order = pins + [i for i in order if i not in pins]
    out["outliers"] = [labels[i] for i in order[:20]]
    out["vs_peers_pct"] = {l: dev[i] for i, l in enumerate(labels)}
    groups = {}
    for l in labels:
        m = re.search(r"DP(\d+)", l)
        if m:
            groups.setdefault("DP%02d" % int(m.group(1)), []).append(l)
    dp = {}
    for name, members in groups.items():
        d = dist(work[l] for l in members)
        busiest = max(members, key=lambda l: (work[l], -labels.index(l)))
        dp[name] = {"ranks": len(members), "work": d, "busiest": busiest}
    means = sorted(g["work"]["mean"] for g in dp.values())
    mmed = quantile(means, 0.5)
    for g in dp.values():
        g["vs_median_pct"] = 100.0 * (g["work"]["mean"] / mmed - 1.0) if mmed > 0 else 0.0
    out["dp"] = dp
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
