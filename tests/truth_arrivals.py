#!/usr/bin/env python3
"""What each rank's late arrivals cost the others, from the raw NCCL kernels alone.

    truth_arrivals.py DIR STEPS            ->  {"TP01-DP00": ms_per_step, ...} on stdout
    truth_arrivals.py DIR STEPS --what-if  ->  what each rank gives back if it came on time
    truth_arrivals.py DIR STEPS --worst K  ->  what the K ranks that give back the most alone
                                              give back if they all came on time

For SGLang-named GPU traces (`…-TP-{t}[-DP-{d}].trace.json.gz`) whose ranks meet at the same
collectives in the same order within each DP replica. A collective's kernel ends within µs on
every member (the early ones spin inside it), so a member that *starts* its kernel last holds
the others up by its start minus theirs. Per collective: the last starter is charged its start
minus the median start of the other members; the charges are summed per rank and divided by
STEPS. Nothing here uses the analyzer's segments, ties or slack: only kernel start times.

With --what-if, the counterfactual instead: had the last starter started with the median of
the others, the collective would have begun at the next-latest start (or that median, if
later), so it gives back only its lead over the next starter; summed per rank over STEPS.

With --worst K, the K ranks whose --what-if figure is largest start on time together: each
collective would have begun at the latest start of the other members, so it gives back the
latest start less that; summed over STEPS. Output: {"ranks": [...], "ms": per step}.
"""

import gzip
import json
import os
import re
import statistics
import sys
from collections import defaultdict


def label(name):
    m = re.search(r"-TP-(\d+)(?:-DP-(\d+))?\.trace\.json", name)
    if not m:
        return None, None
    tp, dp = int(m.group(1)), m.group(2)
    if dp is None:
        return f"TP{tp:02d}", 0
    return f"TP{tp:02d}-DP{int(dp):02d}", int(dp)


def starts(path):
    with gzip.open(path, "rt") as f:
        doc = json.load(f)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    return sorted(
        float(e["ts"])
        for e in events
        if e.get("ph") == "X" and e.get("cat") == "kernel" and e.get("name", "").startswith("nccl")
    )


def collectives(folder):
    """Each collective's start time per member: {who: start_us}, replica by replica."""
    replicas = defaultdict(dict)
    for name in sorted(os.listdir(folder)):
        who, dp = label(name)
        if who is not None:
            replicas[dp][who] = starts(os.path.join(folder, name))
    for members in replicas.values():
        counts = {len(s) for s in members.values()}
        if len(counts) != 1:
            sys.exit(f"members have different numbers of collectives: {counts}")
        for i in range(counts.pop()):
            yield {who: s[i] for who, s in members.items()}


def charges(folder, what_if):
    cost = defaultdict(float)
    for at in collectives(folder):
        last = max(at, key=lambda w: (at[w], w))
        others = [t for w, t in at.items() if w != last]
        if what_if:
            cost[last] += at[last] - max(max(others), statistics.median(others))
        else:
            cost[last] += at[last] - statistics.median(others)
    return cost


def worst(folder, k):
    alone = charges(folder, True)
    fixed = sorted((w for w in alone if alone[w] > 0), key=lambda w: (-alone[w], w))[:k]
    saved = 0.0
    for at in collectives(folder):
        rest = [t for w, t in at.items() if w not in fixed]
        if rest:
            saved += max(at.values()) - max(rest)
    return fixed, saved


def main():
    folder, steps = sys.argv[1], int(sys.argv[2])
    if "--worst" in sys.argv[3:]:
        k = int(sys.argv[sys.argv.index("--worst") + 1])
        fixed, us = worst(folder, k)
        print(json.dumps({"ranks": fixed, "ms": us / 1e3 / steps}))
        return
    cost = charges(folder, "--what-if" in sys.argv[3:])
    print(json.dumps({who: us / 1e3 / steps for who, us in sorted(cost.items())}))


if __name__ == "__main__":
    main()
