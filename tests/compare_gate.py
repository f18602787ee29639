#!/usr/bin/env python3
"""Measures `rankprof compare`'s statistical gate with the real binary (standard library only).

A/A: pairs of synth profiles that differ only in noise (same --seed: the same batches and
kernels; other --noise-seed: other per-step noise, --step-noise 2 %) are compared at the default
settings; each outcome is counted by exit code (0 no change, 1 regression = a false alarm, 4
inconclusive), and "today" counts what the fixed rule (any time row's median +5 %) would say.

Detection: the current side of each pair gets a planted regression (--slow-rank 1 --slow-class
gemm --factor 1+E) for E in 2, 5, 10 % and 8, 16, 32 steps; a pair counts as detected when the
comparison exits 1 *and* names gemm on TP01 (the plant's own rank and class) a regression.

    python3 tests/compare_gate.py --pairs 200 --power-pairs 50   # the figures in docs/compare.md
    python3 tests/compare_gate.py --pairs 20 --power-pairs 0     # quick (tests/compare_gate.rs)
    python3 tests/compare_gate.py --tp 4 --pairs 100 --power-pairs 20   # 4 ranks

Prints a markdown report; --json prints the counts.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
BIN = os.environ.get("RANKPROF", os.path.join(HERE, "..", "target", "release", "rankprof"))


def run(args):
    return subprocess.run([BIN, *args], capture_output=True, text=True)


def summary(tmp, name, steps, seed, noise_seed, plant=None, tp=2):
    d = os.path.join(tmp, name)
    args = ["synth", "-o", d, "--tp", str(tp), "--steps", str(steps), "--seed", str(seed),
            "--noise-seed", str(noise_seed), "--step-noise", "2"]
    if plant:
        args += ["--slow-rank", "1", "--slow-class", "gemm", "--factor", str(1 + plant / 100)]
    r = run(args)
    if r.returncode != 0:
        sys.exit(f"synth failed: {r.stderr}")
    out = d + ".json"
    r = run(["analyze", "--profile-dir", d, "--save-summary", out])
    if r.returncode != 0:
        sys.exit(f"analyze failed: {r.stderr}")
    return out


def compare(a, b):
    r = run(["compare", a, b, "--gate", "stats", "--json"])
    if r.returncode not in (0, 1, 4):
        sys.exit(f"compare failed ({r.returncode}): {r.stderr}")
    return r.returncode, json.loads(r.stdout)


def today_fails(c, pct=5.0):
    """The fixed rule of before: any judged time row's median grew by more than pct."""
    rows = c["overall"] + c["ranks"] + c["classes"] + c["rank_classes"]
    return any(r["delta_pct"] is not None and r["delta_pct"] > pct for r in rows)


def aa(tmp, pairs, steps, tp):
    counts = {0: 0, 1: 0, 4: 0}
    today = 0
    for i in range(pairs):
        a = summary(tmp, f"aa{i}a", steps, 1000 + i, 1, tp=tp)
        b = summary(tmp, f"aa{i}b", steps, 1000 + i, 2, tp=tp)
        code, c = compare(a, b)
        counts[code] += 1
        today += today_fails(c)
    return counts, today


def detected(c):
    return any(r["name"] == "gemm on TP01" and r["status"] == "regression"
               for r in c["rank_classes"])


def power(tmp, pairs, tp):
    table = {}
    for steps in (8, 16, 32):
        for e in (2, 5, 10):
            hits = 0
            for i in range(pairs):
                a = summary(tmp, f"p{steps}_{e}_{i}a", steps, 5000 + i, 1, tp=tp)
                b = summary(tmp, f"p{steps}_{e}_{i}b", steps, 5000 + i, 2, plant=e, tp=tp)
                code, c = compare(a, b)
                hits += code == 1 and detected(c)
            table[(steps, e)] = hits / pairs
    return table


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=200)
    ap.add_argument("--power-pairs", type=int, default=50)
    ap.add_argument("--steps", type=int, default=16)
    ap.add_argument("--tp", type=int, default=2, help="ranks (3 or more: one baseline's rank "
                    "rows are held to the ranks' spread)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        counts, today = aa(tmp, a.pairs, a.steps, a.tp)
        table = power(tmp, a.power_pairs, a.tp) if a.power_pairs else {}
    if a.json:
        print(json.dumps({"pairs": a.pairs, "no_change": counts[0], "regression": counts[1],
                          "inconclusive": counts[4], "today_fails": today,
                          "detection": {f"{s}x{e}": v for (s, e), v in table.items()}}))
        return
    n = a.pairs
    print(f"A/A, {n} synth pairs (TP{a.tp}, {a.steps} steps, 2 % step noise, same batches):")
    print(f"- false alarms (exit 1): {counts[1]} ({counts[1] / n:.1%})")
    print(f"- inconclusive (exit 4): {counts[4]} ({counts[4] / n:.1%})")
    print(f"- no change (exit 0): {counts[0]} ({counts[0] / n:.1%})")
    print(f"- the fixed rule of before (any median +5 %) fails: {today} ({today / n:.1%})")
    if table:
        print(f"\nDetection of gemm +E % on TP01, {a.power_pairs} pairs per cell:\n")
        print("| steps per side | +2 % | +5 % | +10 % |\n|---:|---:|---:|---:|")
        for s in (8, 16, 32):
            print(f"| {s} | " + " | ".join(f"{table[(s, e)]:.0%}" for e in (2, 5, 10)) + " |")


if __name__ == "__main__":
    main()
