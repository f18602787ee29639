#!/usr/bin/env python3
"""Independent ground truth for real SGLang data-parallel traces (per DP replica load).

Python 3 stdlib only (json, gzip, re, sys, os); never reads rankprof's output and shares none of
its code.

    python3 tests/truth_sglang_dp.py fixtures/real-sglang/dp2-skew-8x [--json]

Reads every `*.trace.json[.gz]` in the folder (never plant.json) and prints a human table and one
JSON summary (with --json: the JSON only).  Exit status 1 when a file has no forward step, 2 on
bad usage.  When the folder holds a plant.json (written by fixtures/real-sglang/record.py), the
figures are compared with what the load generator sent and the server answered -- reported, not
forced.

THE RULE (times in µs, the traces' own clock)
  replica    the DP rank from the file name (`-DP-<d>`, as SGLang writes it; no `-DP-` = DP 0),
             cross-checked with the `process_name` metadata (`sglang::scheduler_DP<d>` at TP=1,
             `sglang::scheduler_DP<d>_TP<t>` with TP > 1).
             TP rank from `-TP-<t>`; PP/EP likewise.  A replica's figures come from its lowest
             (TP, PP, EP) file; the other files of the replica are only compared with it (they run
             the same batches, so their step names must match one for one).
  step       an `X` event whose name matches `step[<MODE> bs=<B>( toks=<T>)?...]` (SGLang's
             forward-step annotation, model_runner.forward -> build_step_span_name; cat
             user_annotation).  Its duration is its `dur`.
  iteration  counted once: only the OUTERMOST step events count.  A step event that lies inside
             another step event on the same (pid, tid) (ts >= outer.ts, ts+dur <= outer end) is
             dropped as nested; the number dropped is printed.  Step events on several threads of
             one file are reported (`step_tids`); all outermost ones count.
             For information the script also prints which span encloses each step (its nearest
             enclosing X event on that thread that is not a step), e.g. `scheduler.run_batch`.
  sequences  sum of bs over the counted steps.
  tokens     EXTEND: toks (prefill tokens of the batch); DECODE: bs (one new token per sequence);
             other modes (MIXED, IDLE, VERIFY, ...) are listed by mode; their tokens count as toks
             when the name has toks=, else as 0 and flagged in `modes_without_toks`.
  window     first counted step start .. last counted step end (`busy window`); tokens_per_s =
             tokens / window length.  Also total and median step duration (median of an even
             count = mean of the middle two), busy fraction = total / window.
  unix time  ts + baseTimeNanoseconds/1000 (SGLang 0.5.x / torch write ts relative to it), used
             only to compare the window with plant.json's load-generator clock.
"""
import gzip
import json
import os
import re
import sys

STEP_RE = re.compile(r"^step\[([A-Z_]+)((?:\s+[A-Za-z_]+=[^\s\]]+)*)\s*\]$")
KV_RE = re.compile(r"([A-Za-z_]+)=([^\s\]]+)")
FILE_RE = re.compile(r"\.trace\.json(\.gz)?$")


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return json.load(f)


def ranks_from_name(fname):
    out = {}
    for key in ("TP", "DP", "PP", "EP"):
        m = re.search(r"-%s-(\d+)(?=[-.])" % key, fname)
        out[key] = int(m.group(1)) if m else None
    return out


def median(xs):
    s = sorted(xs)
    n = len(s)
    if n == 0:
        return None
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2.0


def analyse_file(path):
    d = load(path)
    evs = d["traceEvents"] if isinstance(d, dict) else d
    base_ns = d.get("baseTimeNanoseconds") if isinstance(d, dict) else None
    proc_names = sorted({e.get("args", {}).get("name") for e in evs
                         if e.get("ph") == "M" and e.get("name") == "process_name"
                         and isinstance(e.get("args", {}).get("name"), str)})
    cats = {}
    for e in evs:
        k = "%s/%s" % (e.get("ph"), e.get("cat"))
        cats[k] = cats.get(k, 0) + 1
    xs = [e for e in evs if e.get("ph") == "X" and "dur" in e and "ts" in e]
    steps = []
    for e in xs:
        name = e.get("name")
        if not isinstance(name, str):
            continue
        m = STEP_RE.match(name)
        if not m:
            continue
        kv = dict(KV_RE.findall(m.group(2)))
        steps.append({"name": name, "mode": m.group(1),
                      "bs": int(kv["bs"]) if kv.get("bs", "").isdigit() else None,
                      "toks": int(kv["toks"]) if kv.get("toks", "").isdigit() else None,
                      "ts": float(e["ts"]), "dur": float(e["dur"]),
                      "pid": e.get("pid"), "tid": e.get("tid"), "cat": e.get("cat")})
    # outermost per (pid, tid)
    by_thread = {}
    for s in steps:
        by_thread.setdefault((s["pid"], s["tid"]), []).append(s)
    counted, nested = [], []
    for key, ss in by_thread.items():
        ss.sort(key=lambda s: (s["ts"], -s["dur"]))
        outer_end = None
        for s in ss:
            if outer_end is not None and s["ts"] + s["dur"] <= outer_end + 1e-3:
                nested.append(s)
                continue
            counted.append(s)
            outer_end = s["ts"] + s["dur"]
    counted.sort(key=lambda s: s["ts"])
    # enclosing span of each counted step (information only)
    parents = {}
    step_threads = set(by_thread)
    cands = {}
    for e in xs:
        k = (e.get("pid"), e.get("tid"))
        if k in step_threads and not (isinstance(e.get("name"), str) and STEP_RE.match(e["name"])):
            cands.setdefault(k, []).append(e)
    parents_ann = {}
    for s in counted:
        best = None
        best_ann = None
        for e in cands.get((s["pid"], s["tid"]), ()):
            t0, t1 = float(e["ts"]), float(e["ts"]) + float(e["dur"])
            if t0 <= s["ts"] + 1e-3 and s["ts"] + s["dur"] <= t1 + 1e-3:
                if best is None or float(e["dur"]) < float(best["dur"]):
                    best = e
                if e.get("cat") != "python_function" and \
                        (best_ann is None or float(e["dur"]) < float(best_ann["dur"])):
                    best_ann = e
        pn = best.get("name") if best else "(none: top level)"
        parents[pn] = parents.get(pn, 0) + 1
        pa = best_ann.get("name") if best_ann else "(none: top level)"
        parents_ann[pa] = parents_ann.get(pa, 0) + 1
    ann = {}
    for e in xs:
        if e.get("cat") == "user_annotation" and isinstance(e.get("name"), str) \
                and not STEP_RE.match(e["name"]):
            ann[e["name"]] = ann.get(e["name"], 0) + 1
    return {"file": os.path.basename(path), "events": len(evs), "by_ph_cat": cats,
            "process_names": proc_names, "base_ns": base_ns,
            "distributed_rank": (d.get("distributedInfo") or {}).get("rank") if isinstance(d, dict) else None,
            "step_events": len(steps), "nested_dropped": len(nested),
            "nested_names": sorted({s["name"] for s in nested}),
            "step_tids": sorted(str(k[1]) for k in by_thread),
            "enclosing_span": parents, "enclosing_non_python_span": parents_ann, "other_annotations": ann, "steps": counted}


def summarize(fa):
    st = fa["steps"]
    modes = {}
    toks_by_mode = {}
    seqs = 0
    toks = 0
    no_toks = set()
    for s in st:
        modes[s["mode"]] = modes.get(s["mode"], 0) + 1
        bs = s["bs"] or 0
        seqs += bs
        if s["mode"] == "EXTEND" or s["toks"] is not None:
            t = s["toks"] or 0
        elif s["mode"] == "DECODE":
            t = bs
        else:
            t = 0
            no_toks.add(s["mode"])
        toks += t
        toks_by_mode[s["mode"]] = toks_by_mode.get(s["mode"], 0) + t
    durs = [s["dur"] for s in st]
    w0 = min(s["ts"] for s in st) if st else None
    w1 = max(s["ts"] + s["dur"] for s in st) if st else None
    win = (w1 - w0) if st else 0.0
    ext = [s for s in st if s["mode"] == "EXTEND"]
    out = {
        "steps": len(st), "steps_by_mode": modes,
        "sequences": seqs, "tokens": toks, "tokens_by_mode": toks_by_mode,
        "extend_sequences": sum(s["bs"] or 0 for s in ext),
        "extend_batches": [s["bs"] for s in ext],
        "total_step_ms": round(sum(durs) / 1e3, 3),
        "median_step_ms": round(median(durs) / 1e3, 3) if durs else None,
        "median_step_ms_by_mode": {m: round(median([s["dur"] for s in st if s["mode"] == m]) / 1e3, 3)
                                   for m in modes},
        "window_start_us": w0, "window_end_us": w1, "window_ms": round(win / 1e3, 3),
        "busy_fraction": round(sum(durs) / win, 4) if win > 0 else None,
        "tokens_per_s": round(toks / (win / 1e6), 1) if win > 0 else None,
        "modes_without_toks": sorted(no_toks),
    }
    if fa["base_ns"] is not None and st:
        out["window_unix_ns"] = [int(round(w0 * 1e3)) + int(fa["base_ns"]),
                                 int(round(w1 * 1e3)) + int(fa["base_ns"])]
    return out


def main(argv):
    args = [a for a in argv[1:] if not a.startswith("--")]
    json_only = "--json" in argv
    if len(args) != 1 or not os.path.isdir(args[0]):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    folder = args[0]
    files = sorted(f for f in os.listdir(folder) if FILE_RE.search(f))
    if not files:
        print("no *.trace.json[.gz] in %s" % folder, file=sys.stderr)
        return 1
    per_file = []
    problems = []
    for f in files:
        fa = analyse_file(os.path.join(folder, f))
        r = ranks_from_name(f)
        fa["ranks"] = r
        dp = r["DP"] if r["DP"] is not None else 0
        fa["dp"] = dp
        # cross-check with process_name sglang::scheduler_DP<d>_TP<t>
        for pn in fa["process_names"]:
            m = re.search(r"_DP(\d+)", pn)
            if m and int(m.group(1)) != dp:
                problems.append("%s: file name says DP%d, process_name %s" % (f, dp, pn))
        if not fa["steps"]:
            problems.append("%s: no step[...] events" % f)
        per_file.append(fa)
    replicas = {}
    for fa in per_file:
        replicas.setdefault(fa["dp"], []).append(fa)
    summary = {"folder": folder, "files": [], "replicas": {}, "problems": problems}
    for fa in per_file:
        summary["files"].append({k: fa[k] for k in ("file", "ranks", "events", "by_ph_cat",
                                                    "process_names", "distributed_rank",
                                                    "step_events", "nested_dropped", "nested_names",
                                                    "step_tids", "enclosing_span",
                                                    "enclosing_non_python_span")}
                                | {"idle_loop_annotations": fa["other_annotations"].get("scheduler.idle", 0),
                                   "counted_steps": len(fa["steps"])})
    for dp in sorted(replicas):
        fs = sorted(replicas[dp], key=lambda fa: tuple(v if v is not None else -1 for v in
                                                       (fa["ranks"]["TP"], fa["ranks"]["PP"], fa["ranks"]["EP"])))
        rep = fs[0]
        s = summarize(rep)
        s["from_file"] = rep["file"]
        agree = []
        for other in fs[1:]:
            same = [x["name"] for x in other["steps"]] == [x["name"] for x in rep["steps"]]
            agree.append({"file": other["file"], "same_step_names": same,
                          "summary": {k: v for k, v in summarize(other).items()
                                      if k in ("steps", "tokens", "sequences", "median_step_ms", "window_ms")}})
            if not same:
                problems.append("DP%d: %s and %s disagree on the step sequence" % (dp, rep["file"], other["file"]))
        s["other_tp_files"] = agree
        s["step_names"] = [x["name"] for x in rep["steps"]]
        s["step_ms"] = [round(x["dur"] / 1e3, 3) for x in rep["steps"]]
        summary["replicas"]["DP%d" % dp] = s
    reps = summary["replicas"]
    if len(reps) >= 2:
        tok = {k: v["tokens"] for k, v in reps.items()}
        lo = min(tok.values())
        summary["most_tokens"] = max(tok, key=tok.get) if len(set(tok.values())) > 1 else "tie"
        summary["tokens_ratio_max_over_min"] = round(max(tok.values()) / lo, 3) if lo else None
        med = {k: v["median_step_ms"] for k, v in reps.items() if v["median_step_ms"]}
        if med:
            summary["slowest_median_step"] = max(med, key=med.get)
            summary["median_step_ratio_max_over_min"] = round(max(med.values()) / min(med.values()), 3)
        tot = {k: v["total_step_ms"] for k, v in reps.items()}
        summary["most_step_time"] = max(tot, key=tot.get)
        summary["total_step_ratio_max_over_min"] = round(max(tot.values()) / min(tot.values()), 3) \
            if min(tot.values()) else None
    plant_path = os.path.join(folder, "plant.json")
    if os.path.exists(plant_path):
        with open(plant_path) as f:
            plant = json.load(f)
        cmp_ = []
        for p in plant.get("replicas", []):
            k = "DP%d" % p["dp_rank"]
            r = reps.get(k)
            if r is None:
                cmp_.append({"replica": k, "note": "no trace for this replica"})
                continue
            n = p["requests_sent"]
            sent = p.get("prompt_tokens_sent", n * p["prompt_tokens_each"])
            usage = p.get("usage", {})
            exp_dec = usage.get("completion_tokens", n * p["max_new_tokens_each"]) - n
            c = {"replica": k,
                 "requests_sent": n, "extend_sequences": r["extend_sequences"],
                 "prompt_tokens_sent": sent, "usage_prompt_tokens": usage.get("prompt_tokens"),
                 "usage_cached_tokens": usage.get("cached_tokens"),
                 "extend_tokens": r["tokens_by_mode"].get("EXTEND", 0),
                 "usage_completion_tokens": usage.get("completion_tokens"),
                 "decode_tokens": r["tokens_by_mode"].get("DECODE", 0),
                 "expected_decode_tokens": exp_dec,
                 }
            c["extend_tokens_match"] = c["extend_tokens"] == sent - (usage.get("cached_tokens") or 0)
            c["extend_sequences_match"] = c["extend_sequences"] == n
            c["decode_tokens_match"] = c["decode_tokens"] == exp_dec
            cmp_.append(c)
        summary["plant_check"] = {
            "rule": "EXTEND toks = prompt tokens sent - cached tokens; EXTEND bs summed = requests; "
                    "DECODE tokens = completion tokens - requests (each request's first token comes "
                    "from its prefill step)",
            "replicas": cmp_}
        w = plant.get("window", {})
        if w.get("start_profile_sent_unix_ns") and w.get("stop_profile_sent_unix_ns"):
            inside = []
            for k, r in reps.items():
                if "window_unix_ns" in r:
                    a, b = r["window_unix_ns"]
                    inside.append({"replica": k,
                                   "starts_ms_after_start_profile": round((a - w["start_profile_sent_unix_ns"]) / 1e6, 3),
                                   "ends_ms_before_stop_profile": round((w["stop_profile_sent_unix_ns"] - b) / 1e6, 3)})
            summary["plant_check"]["window"] = inside
        summary["plant_check"]["planted"] = plant.get("planted")
    if not json_only:
        print_table(summary, per_file)
    print(json.dumps(summary, indent=1, sort_keys=False))
    bad = [p for p in problems if "no step" in p]
    return 1 if bad or not any(fa["steps"] for fa in per_file) else 0


def print_table(summary, per_file):
    print("== %s" % summary["folder"])
    for fa in per_file:
        print("  %s: %d events, %d step events, %d nested in another step (dropped) %s, step tids %s, "
              "enclosing span %s, enclosing non-python span %s, scheduler.idle annotations %d, "
              "python_function %d"
              % (fa["file"], fa["events"], fa["step_events"], fa["nested_dropped"],
                 fa["nested_names"][:3], fa["step_tids"], fa["enclosing_span"],
                 fa["enclosing_non_python_span"],
                 fa["other_annotations"].get("scheduler.idle", 0),
                 fa["by_ph_cat"].get("X/python_function", 0)))
    hdr = ("replica", "steps", "EXT/DEC", "seqs", "tokens", "ext tok", "dec tok",
           "total ms", "median ms", "window ms", "busy", "tok/s")
    print("  %-7s %6s %8s %6s %7s %8s %8s %10s %10s %10s %6s %9s" % hdr)
    for k, r in summary["replicas"].items():
        m = r["steps_by_mode"]
        print("  %-7s %6d %8s %6d %7d %8d %8d %10.1f %10.2f %10.1f %6.2f %9.1f"
              % (k, r["steps"], "%d/%d" % (m.get("EXTEND", 0), m.get("DECODE", 0)), r["sequences"],
                 r["tokens"], r["tokens_by_mode"].get("EXTEND", 0), r["tokens_by_mode"].get("DECODE", 0),
                 r["total_step_ms"], r["median_step_ms"] or 0, r["window_ms"], r["busy_fraction"] or 0,
                 r["tokens_per_s"] or 0))
        for o in r["other_tp_files"]:
            print("          also %s: same step names %s, %s" % (o["file"], o["same_step_names"], o["summary"]))
    for key in ("most_tokens", "tokens_ratio_max_over_min", "most_step_time", "total_step_ratio_max_over_min",
                "slowest_median_step", "median_step_ratio_max_over_min"):
        if key in summary:
            print("  %s: %s" % (key, summary[key]))
    pc = summary.get("plant_check")
    if pc:
        print("  plant.json (%s): %s" % (pc.get("planted"), pc["rule"]))
        for c in pc["replicas"]:
            print("    %s" % c)
        for c in pc.get("window", []):
            print("    window %s" % c)
    for p in summary["problems"]:
        print("  PROBLEM: %s" % p)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
