#!/usr/bin/env python3
"""Measures `rankprof compare`'s default gate on real A/A captures, with the real binary
(standard library only).

The captures are fixtures/real-gloo/tp4-aa-*: the same toy TP4 torch workload (4 processes,
gloo, real torch profiler, 12 profiled steps), recorded one after the other with nothing
planted (fixtures/real-gloo/README.md). Any regression between two of them is a false alarm.

- **one baseline**: every ordered pair (a, b), `compare a b`: counts of exit 1 (false alarm),
  4 (inconclusive; of which how many only because one baseline cannot tell a change in times
  from the machine's drift: rows with `drift`) and 0;
- **three baselines**: for each capture as CURRENT, --triples samples of three other captures
  (a fixed seed) as `--baseline x y z CURRENT`: the same counts, for all and for those whose
  four captures are of one recording session (the sessions are told apart by the ranks' own
  clocks in plant.json); and each capture against all the others (leave one out);
- **job-wide plant** (synth, TP2, 16 steps, 2 % step noise): every rank +F % (the current side's
  traces stretched in time by 1 + F/100 from their first event: every op, gap and step of every
  rank; F = --job-plant, 20). Against one baseline it must be inconclusive (exit 4) with the class
  rows held for drift; against three baselines a regression (exit 1) whose change holds F.

    python3 tests/compare_real_aa.py                 # the figures in docs/compare.md
    python3 tests/compare_real_aa.py --json          # the counts (tests/real_runs.rs)

Prints a markdown report; --json prints the counts.
"""
import argparse
import glob
import gzip
import json
import os
import random
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BIN = os.environ.get("RANKPROF", os.path.join(ROOT, "target", "release", "rankprof"))


def run(args):
    return subprocess.run([BIN, *args], capture_output=True, text=True)


def save_summary(profile, out):
    r = run(["analyze", "--profile-dir", profile, "--save-summary", out])
    if r.returncode != 0:
        sys.exit(f"analyze {profile} failed: {r.stderr}")
    return out


def captures():
    """The committed A/A captures, in their recording order."""
    dirs = glob.glob(os.path.join(ROOT, "fixtures", "real-gloo", "tp4-aa-*"))
    return sorted(dirs, key=lambda d: int(re.search(r"-(\d+)$", d).group(1)))


def compare(baselines, current):
    if len(baselines) == 1:
        args = ["compare", baselines[0], current, "--json"]
    else:
        args = ["compare", "--json", "--baseline", *baselines, current]
    r = run(args)
    if r.returncode not in (0, 1, 4):
        sys.exit(f"compare failed ({r.returncode}): {r.stderr}")
    return r.returncode, json.loads(r.stdout)


def rows(c):
    return c["overall"] + c["ranks"] + c["classes"] + c["rank_classes"]


def tally(results):
    """Counts by exit code, how many exit-4 comparisons hold rows for drift, and examples."""
    t = {"comparisons": len(results), "regression": 0, "inconclusive": 0, "no_change": 0,
         "held_for_drift": 0, "false_alarms": []}
    for name, code, c in results:
        t[{0: "no_change", 1: "regression", 4: "inconclusive"}[code]] += 1
        if any(r.get("drift") for r in rows(c)):
            t["held_for_drift"] += 1
        if code == 1:
            t["false_alarms"].append(f"{name}: {c['failures'][0]['message']}")
    t["false_alarm_rate"] = t["regression"] / max(1, len(results))
    return t


def one_baseline(summ):
    """Every ordered pair; `fixed_fails` counts those `--gate fixed` fails (exit 1)."""
    out, fixed = [], 0
    for i, a in enumerate(summ):
        for j, b in enumerate(summ):
            if i != j:
                code, c = compare([a], b)
                out.append((f"{i + 1}->{j + 1}", code, c))
                fixed += run(["compare", "-q", "--gate", "fixed", a, b]).returncode == 1
    return dict(tally(out), fixed_fails=fixed)


def sessions(caps):
    """Each capture's recording session (0, 1, ...): captures whose first step started within
    an hour of the previous capture's are one session (plant.json, the ranks' own clocks)."""
    starts = []
    for d in caps:
        with open(os.path.join(d, "plant.json")) as f:
            p = json.load(f)
        starts.append(min(min(v) for v in p["per_rank_step_start_unix_ns"].values()))
    order = sorted(range(len(caps)), key=lambda i: starts[i])
    out, s, prev = [0] * len(caps), 0, None
    for i in order:
        if prev is not None and starts[i] - prev > 3600 * 10**9:
            s += 1
        out[i], prev = s, starts[i]
    return out


def three_baselines(summ, triples, seed, sess):
    """Per capture as CURRENT, `triples` random triples of the others as baselines; tallied
    for all, and for those whose four captures are of one session."""
    rng = random.Random(seed)
    out = []
    for j, cur in enumerate(summ):
        others = [i for i in range(len(summ)) if i != j]
        for _ in range(triples):
            pick = rng.sample(others, 3)
            code, c = compare([summ[i] for i in pick], cur)
            one = len({sess[i] for i in pick + [j]}) == 1
            out.append((f"{'+'.join(str(i + 1) for i in pick)}->{j + 1}", code, c, one))
    return (tally([r[:3] for r in out]), tally([r[:3] for r in out if r[3]]))


def all_others(summ):
    """Per capture as CURRENT, every other capture as a baseline (leave one out)."""
    out = []
    for j, cur in enumerate(summ):
        code, c = compare([b for i, b in enumerate(summ) if i != j], cur)
        out.append((f"others->{j + 1}", code, c))
    return tally(out)


def synth(tmp, name, noise_seed):
    d = os.path.join(tmp, name)
    r = run(["synth", "-o", d, "--tp", "2", "--steps", "16", "--seed", "7",
             "--noise-seed", str(noise_seed), "--step-noise", "2"])
    if r.returncode != 0:
        sys.exit(f"synth failed: {r.stderr}")
    return d


def stretch(src, dst, factor):
    """Every rank's trace in `src`, slower by `factor` as a whole (a slower machine): every
    event's start moves away from the set's first event and every duration grows by `factor`."""
    files = sorted(glob.glob(os.path.join(src, "*.trace.json.gz")))
    docs = [json.load(gzip.open(f, "rt")) for f in files]
    t0 = min(e["ts"] for d in docs for e in d["traceEvents"] if "ts" in e)
    os.makedirs(dst)
    for f, d in zip(files, docs):
        for e in d["traceEvents"]:
            if "ts" in e:
                e["ts"] = t0 + (e["ts"] - t0) * factor
            if "dur" in e:
                e["dur"] = e["dur"] * factor
        with gzip.open(os.path.join(dst, os.path.basename(f)), "wt") as out:
            json.dump(d, out)
    return dst


def job_plant(tmp, pct):
    base = [save_summary(synth(tmp, f"b{n}", n), os.path.join(tmp, f"b{n}.json"))
            for n in (1, 2, 4)]
    cur = stretch(synth(tmp, "c", 3), os.path.join(tmp, "c-slow"), 1 + pct / 100)
    res = {}
    for label, bs in (("one", base[:1]), ("three", base)):
        code, c = compare(bs, cur)
        cls = [r for r in c["classes"] if r.get("stat")]
        res[label] = {
            "exit": code,
            "held_for_drift": sum(bool(r.get("drift")) for r in rows(c)),
            "class_regressions": sum(r["status"] == "regression" for r in c["classes"]),
            "class_changes_pct": {r["name"]: round(r["stat"]["change_pct"], 1) for r in cls},
            "first": (c["failures"] or c.get("inconclusive") or [{"message": ""}])[0]["message"],
        }
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--triples", type=int, default=5, help="baseline triples per capture")
    ap.add_argument("--seed", type=int, default=52)
    ap.add_argument("--job-plant", type=float, default=20.0, help="every rank +F %%")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    caps = captures()
    if len(caps) < 4:
        sys.exit(f"need at least 4 captures, found {len(caps)}")
    with tempfile.TemporaryDirectory() as tmp:
        summ = [save_summary(d, os.path.join(tmp, f"{os.path.basename(d)}.json")) for d in caps]
        one = one_baseline(summ)
        three, three_same = three_baselines(summ, a.triples, a.seed, sessions(caps))
        others = all_others(summ)
        plant = job_plant(tmp, a.job_plant)
    res = {"captures": len(caps), "sessions": len(set(sessions(caps))), "one_baseline": one,
           "three_baselines": three, "three_baselines_one_session": three_same,
           "all_others": others, "job_plant": plant}
    if a.json:
        print(json.dumps(res))
        return
    report(res, a.job_plant)


def report(res, pct):
    print(f"Real A/A: {res['captures']} captures of fixtures/real-gloo/tp4-aa-* "
          f"({res['sessions']} recording sessions), default settings\n")
    print("| baselines | comparisons | exit 1 (false alarm) | exit 4 (held for drift) | exit 0 |")
    print("|---|---:|---:|---:|---:|")
    lines = (("one (every ordered pair)", "one_baseline"),
             ("three (sampled)", "three_baselines"),
             ("three, all four of one session", "three_baselines_one_session"),
             ("every other capture (leave one out)", "all_others"))
    for name, key in lines:
        t = res[key]
        print(f"| {name} | {t['comparisons']} | {t['regression']} "
              f"({t['false_alarm_rate']:.1%}) | {t['inconclusive']} ({t['held_for_drift']}) "
              f"| {t['no_change']} |")
    print(f"\nWith one baseline, --gate fixed fails {res['one_baseline']['fixed_fails']} of "
          f"{res['one_baseline']['comparisons']}.")
    for _, key in lines:
        for f in res[key]["false_alarms"][:4]:
            print(f"- {key}: false alarm {f}")
    plant = res["job_plant"]
    print(f"\nJob-wide plant (synth TP2, every rank +{pct:g} %):")
    for label, r in plant.items():
        print(f"- {label} baseline(s): exit {r['exit']}, {r['held_for_drift']} rows held for "
              f"drift, {r['class_regressions']} class regressions, class changes "
              f"{r['class_changes_pct']}; first: {r['first']}")


if __name__ == "__main__":
    main()
