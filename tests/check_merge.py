#!/usr/bin/env python3
"""Independent checker for merged traces (stdlib only; loads whole files, fine for test sizes).

usage: check_merge.py MERGED INPUT... [--drop-cat a,b] [--gpu-only]
Prints JSON: input event counts (after the same filters, computed here), output figures, and
violations of the merge invariants (a pid in two ranks, a flow/correlation id in two ranks).
"""
import gzip, json, sys, collections

GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation", "Kernel", "Memcpy", "Memset"}


def load(path):
    with open(path, "rb") as f:
        head = f.read(2)
    op = gzip.open if head == b"\x1f\x8b" else open
    with op(path, "rt", encoding="utf-8") as f:
        doc = json.load(f)
    return doc if isinstance(doc, dict) else {"traceEvents": doc}


def main():
    args = sys.argv[1:]
    drop, gpu_only = set(), False
    if "--drop-cat" in args:
        i = args.index("--drop-cat"); drop = set(args[i + 1].split(",")); del args[i:i + 2]
    other = None
    if "--same-as" in args:
        i = args.index("--same-as"); other = args[i + 1]; del args[i:i + 2]
    if "--gpu-only" in args:
        args.remove("--gpu-only"); gpu_only = True
    merged, inputs = args[0], args[1:]
    kept, need_sort = [], []
    for p in inputs:
        n, pids, sorted_pids = 0, set(), set()
        for e in load(p)["traceEvents"]:
            if e.get("ph") != "M":
                if gpu_only and e.get("cat") not in GPU_CATS:
                    continue
                if e.get("cat") in drop:
                    continue
            n += 1
            if e.get("pid") is not None:
                pids.add(str(e["pid"]))
                if e.get("ph") == "M" and e.get("name") == "process_sort_index":
                    sorted_pids.add(str(e["pid"]))
        kept.append(n)
        need_sort.append(len(pids - sorted_pids))
    doc = load(merged)
    ev = doc["traceEvents"]
    label_of = lambda pid: pid.split("]")[0] + "]" if isinstance(pid, str) and pid.startswith("[") else None
    per_label = collections.Counter()
    unlabelled = 0
    ids = collections.defaultdict(set)  # (kind, value) -> labels
    for e in ev:
        lab = label_of(e.get("pid"))
        if lab is None:
            unlabelled += 1
            continue
        per_label[lab] += 1
        if e.get("ph") in ("s", "t", "f") and "id" in e:
            ids[("flow", json.dumps(e["id"]))].add(lab)
        a = e.get("args") or {}
        for k in ("correlation", "External id"):
            if k in a:
                ids[(k, json.dumps(a[k]))].add(lab)
    diff = None
    if other is not None:
        key = lambda e: json.dumps([e.get(k) for k in ("pid", "tid", "ph", "name", "cat", "ts", "dur")])
        mine = collections.Counter(key(e) for e in ev if e.get("name") != "process_sort_index")
        theirs = collections.Counter(key(e) for e in load(other)["traceEvents"] if e.get("name") != "process_sort_index")
        diff = sum(((mine - theirs) + (theirs - mine)).values())
    print(json.dumps({
        "diff_vs_other": diff,
        "inputs_kept": kept,
        "sort_index_to_add": need_sort,
        "output_events": len(ev),
        "per_label": per_label,
        "unlabelled": unlabelled,
        "shared_ids": sum(1 for v in ids.values() if len(v) > 1),
        "flow_ids": sum(1 for k in ids if k[0] == "flow"),
        "keys": sorted(k for k in doc if k != "traceEvents"),
        "ranks": [r.get("label") for r in doc.get("ranks", [])],
    }))


main()
