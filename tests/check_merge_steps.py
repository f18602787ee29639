#!/usr/bin/env python3
"""Independent checker for merge's clock shifts and --steps/--window filtering (stdlib only).

usage: check_merge_steps.py MERGED LABEL=INPUT... [--align none|base|first-step]
                            [--steps A:B] [--window LO_US:HI_US]

Works out here, from the inputs alone, each rank's clock shift (ns) and time window, and the
events the merge must keep; then compares every rank's non-metadata events in the merged file
(name and ts, in order) with that. Prints JSON: {"shifts_ns": {label: ns}, "windows_ns":
{label: [lo, hi] or null}, "kept": {label: n}, "problems": [...]}.

Rules, as docs/merge.md states them: a step is a complete ("X") CPU event named ProfilerStep#N (N a
number), SGLang's step[...] or vLLM's execute_... annotation; with any ProfilerStep#N present those alone are the steps. Steps A:B are
numbers A..B-1, or else the A-th to (B-1)-th step[...] by start. Base alignment puts every rank
on the earliest baseTimeNanoseconds; first-step then moves each rank so its first step starts
when the earliest one does. An event spanning ts..ts+dur is kept unless it ends before the
window or starts after it; metadata events and events without ts are always kept.
"""
import gzip, json, re, sys

# vLLM's per-step annotations (gpu_worker.annotate_profile): current, detailed, older.
VLLM_STEP = re.compile(
    r"^execute_(?:new_\d+_cached_\d+|(?:\d+_)?context_\d+\(.*\)_generation_.*)$")


def load(path):
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    doc = json.loads(raw)
    return doc if isinstance(doc, dict) else {"traceEvents": doc}


def ns(us):
    return round(us * 1000)


def steps_of(events):
    out = []
    for e in events:
        name = e.get("name", "")
        if e.get("ph") != "X" or e.get("cat") == "gpu_user_annotation" or "ts" not in e:
            continue
        lo = ns(e["ts"])
        hi = lo + ns(e.get("dur", 0))
        if name.startswith("ProfilerStep#") and name[len("ProfilerStep#"):].isdigit():
            out.append((int(name[len("ProfilerStep#"):]), lo, hi))
        elif name.startswith("step[") or VLLM_STEP.match(name):
            out.append((None, lo, hi))
    if any(n is not None for n, _, _ in out):
        out = [s for s in out if s[0] is not None]
    return sorted(out, key=lambda s: s[1])


def window_of(steps, a, b):
    numbered = any(n is not None for n, _, _ in steps)
    chosen = [(lo, hi) for i, (n, lo, hi) in enumerate(steps) if a <= (n if numbered else i) < b]
    if not chosen:
        return None
    return (min(lo for lo, _ in chosen), max(hi for _, hi in chosen))


def main():
    args = sys.argv[1:]
    opt = {}
    for key in ("--align", "--steps", "--window"):
        if key in args:
            i = args.index(key)
            opt[key] = args[i + 1]
            del args[i:i + 2]
    merged, pairs = args[0], [a.split("=", 1) for a in args[1:]]
    align = opt.get("--align", "base")
    docs = {label: load(p) for label, p in pairs}
    labels = [label for label, _ in pairs]

    bases = {l: docs[l].get("baseTimeNanoseconds") for l in labels}
    steps = {l: steps_of(docs[l]["traceEvents"]) for l in labels}
    shift = {l: 0 for l in labels}
    if align != "none" and all(b is not None for b in bases.values()):
        common = min(bases.values())
        shift = {l: bases[l] - common for l in labels}
    if align == "first-step":
        starts = {l: steps[l][0][1] + shift[l] for l in labels if steps[l]}
        if starts:
            t = min(starts.values())
            for l, s in starts.items():
                shift[l] += t - s

    window = {}
    for l in labels:
        w = None
        if "--steps" in opt:
            a, b = (int(x) for x in opt["--steps"].split(":"))
            w = window_of(steps[l], a, b)
        if "--window" in opt:
            lo, hi = (ns(float(x)) - shift[l] for x in opt["--window"].split(":"))
            w = (lo, hi) if w is None else (max(w[0], lo), min(w[1], hi))
        window[l] = w

    want = {}
    for l in labels:
        keep = []
        for e in docs[l]["traceEvents"]:
            if e.get("ph") == "M":
                continue
            if "ts" in e:
                t = ns(e["ts"])
                end = t + ns(e.get("dur", 0))
                w = window[l]
                if w is not None and (end < w[0] or t > w[1]):
                    continue
                keep.append((e.get("name"), t + shift[l]))
            else:
                keep.append((e.get("name"), None))
        want[l] = keep

    got = {l: [] for l in labels}
    problems = []
    for e in load(merged)["traceEvents"]:
        if e.get("ph") == "M":
            continue
        pid = e.get("pid")
        label = pid.split("]")[0] + "]" if isinstance(pid, str) and pid.startswith("[") else None
        if label not in got:
            problems.append(f"event of no input rank: {e.get('name')} pid {pid!r}")
            continue
        got[label].append((e.get("name"), ns(e["ts"]) if "ts" in e else None))
    for l in labels:
        if got[l] != want[l]:
            extra = [x for x in got[l] if x not in want[l]][:3]
            missing = [x for x in want[l] if x not in got[l]][:3]
            problems.append(
                f"{l}: {len(got[l])} events, expected {len(want[l])}; "
                f"unexpected {extra}, missing {missing}"
            )
    print(json.dumps({
        "shifts_ns": shift,
        "windows_ns": {l: list(w) if w else None for l, w in window.items()},
        "kept": {l: len(v) for l, v in want.items()},
        "problems": problems,
    }))


if __name__ == "__main__":
    main()
