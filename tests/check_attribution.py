#!/usr/bin/env python3
"""Independent checker for the attribution of `rankprof analyze` (stdlib only).

From the trace files alone: per rank and step the work the step was asked to do — sequences
and tokens from SGLang's `step[EXTEND bs=B toks=T]` / `step[DECODE bs=B]` (tokens = B) or
vLLM's `execute_context_N(T)_generation_M(U)` (N + M sequences, T + U tokens; detailed form
`execute_S_context_N(sqT...)_generation_M(sqU...)`) or older `execute_new_N_cached_M` (N + M
sequences), CPU-side annotations preferred, each put in the step whose window holds its start
(the steps: ProfilerStep#N, else the forward annotations themselves) — and the kernel launches of the step (kernels put in
the step of their CPU launch, by correlation; CPU-only traces: the cpu_ops that start in the
step). The step's time is its work time as check_analyze.py computes it.

Per rank: time, tokens, sequences, launches, time per token / sequence / launch. Per rank
against the other given ranks of its DP replica (from `-DP-n` in the file name; all ranks
when there is none): time, token and launch ratios over the peers' median.

MoE (EP): per rank the kernel time of dispatch/combine (names with dispatch, combine or
all-to-all) and of expert GEMMs (names with fused_moe, grouped/group gemm, m_grouped or expert,
routing kernels — topk, align, sort, gating, scatter, gather, permute — left out), and the
routed tokens: the summed token dimension of `…fused_moe…` CPU ops' `Input Dims`. EP peers of a
rank with `-EP-n` in its file name: the other ranks with another EP index and the same DP index
— any DP index when no TP index appears under two DP indices (SGLang's DP attention names
`TP-17-DP-1-EP-1`); `ep_peers` is how many, `ep_peer_median` the median of each part over them
and `ep_ratio` the rank's parts over those medians.

Usage: check_attribution.py FILE...   Output: JSON on stdout, ranks keyed by file path.
"""

import json
import os
import re
import statistics
import sys
from types import SimpleNamespace

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_analyze as ca  # noqa: E402

SGLANG = re.compile(r"^step\[(\w+)((?: \w+=\d+)*)\]$")
VLLM = re.compile(r"^execute_new_(\d+)_cached_(\d+)$")
VLLM_TOKENS = re.compile(
    r"^execute_(?:\d+_)?context_(\d+)\((?:sq)?(\d+)[^()]*\)_generation_(\d+)\((?:sq)?(\d+)[^()]*\)$")


def batch(name):
    m = SGLANG.match(name)
    if m:
        kv = dict(p.split("=") for p in m.group(2).split())
        if "bs" not in kv:
            return None
        bs = int(kv["bs"])
        toks = int(kv["toks"]) if "toks" in kv else (bs if m.group(1) == "DECODE" else None)
        return bs, toks
    m = VLLM.match(name)
    if m:
        return int(m.group(1)) + int(m.group(2)), None
    m = VLLM_TOKENS.match(name)
    if m:
        return int(m.group(1)) + int(m.group(3)), int(m.group(2)) + int(m.group(4))
    return None


GEMMS = {"aten::mm", "aten::addmm", "aten::linear", "aten::matmul", "aten::_scaled_mm"}


def gemm_m(dims):
    if not isinstance(dims, list) or not dims or not isinstance(dims[0], list):
        return None
    d = dims[0]
    if len(d) < 2 or not all(isinstance(x, int) for x in d):
        return None
    m = 1
    for x in d[:-1]:
        m *= x
    return m


def work_of(events):
    marks, ann, gpu, cpu, launches = {"profiler": [], "sglang": []}, [], [], [], {}
    shapes, cpu_nel, gpu_nel = [], [], []
    for e in events:
        if e.get("ph") != "X" or "ts" not in e or "dur" not in e:
            continue
        cat, name = e.get("cat"), e.get("name", "")
        ts, dur = ca.ns(e["ts"]), max(0, ca.ns(e["dur"]))
        a = e.get("args") or {}
        if cat == "kernel":
            gpu.append((ts, a.get("correlation")))
            # A send or receive moves what the stage's place in a pipeline makes it move,
            # not its work: rankprof's rule too (a shared rule, stated here).
            if isinstance(a.get("In msg nelems"), int) and a.get("Collective name") not in ("send", "recv"):
                gpu_nel.append((ts, a.get("correlation"), a["In msg nelems"]))
        elif cat in ("cuda_runtime", "cuda_driver"):
            if any(w in name for w in ("Launch", "Memcpy", "Memset")) and "correlation" in a:
                launches[a["correlation"]] = ts
        elif cat == "cpu_op":
            cpu.append(ts)
            if name in GEMMS and gemm_m(a.get("Input Dims")) is not None:
                shapes.append((ts, gemm_m(a["Input Dims"])))
            if (name == "record_param_comms" and isinstance(a.get("In msg nelems"), int)
                    and a.get("Collective name") not in ("send", "recv")):
                cpu_nel.append((ts, a["In msg nelems"]))
        is_step = cat in ("user_annotation", "gpu_user_annotation") or (
            cat == "cpu_op" and name.startswith("ProfilerStep#"))
        if is_step:
            m = dict(start=ts, dur=dur, gpu=cat == "gpu_user_annotation")
            if name.startswith("ProfilerStep#") and name.split("#", 1)[1].isdigit():
                marks["profiler"].append(m)
            elif (name.startswith("step[") or (VLLM.match(name) or VLLM_TOKENS.match(name))) \
                    and cat != "cpu_op":
                marks["sglang"].append(m)
        if cat in ("user_annotation", "gpu_user_annotation"):
            b = batch(name)
            if b:
                ann.append((ts, cat == "gpu_user_annotation", b))
    steps = marks["profiler"] or marks["sglang"]
    if any(not m["gpu"] for m in steps):
        steps = [m for m in steps if not m["gpu"]]
    steps.sort(key=lambda m: (m["start"], m["dur"]))

    def step_of(t):
        best = None
        for i, m in enumerate(steps):
            if m["start"] <= t < m["start"] + max(m["dur"], 1):
                best = i
        return best

    per = [dict(seqs=None, tokens=None, launches=0, shape_tokens=None, nelems=None,
                counts={}) for _ in steps]
    for ts, m in shapes:
        i = step_of(ts)
        if i is not None:
            per[i]["counts"][m] = per[i]["counts"].get(m, 0) + 1
    for p in per:
        c = p.pop("counts")
        if c:
            p["shape_tokens"] = max(c, key=lambda m: (c[m], m))
    nel = [(ts, n) for ts, n in cpu_nel] if cpu_nel else [
        (launches.get(corr, ts) if corr is not None else ts, n) for ts, corr, n in gpu_nel]
    if nel:
        for p in per:
            p["nelems"] = 0
        for t, n in nel:
            i = step_of(t)
            if i is not None:
                per[i]["nelems"] += n
    if any(not g for _, g, _ in ann):
        ann = [x for x in ann if not x[1]]
    for ts, _, (seqs, toks) in ann:
        i = step_of(ts)
        if i is None:
            continue
        p = per[i]
        first = p["seqs"] is None
        p["seqs"] = (p["seqs"] or 0) + seqs
        if first:
            p["tokens"] = toks
        elif p["tokens"] is not None and toks is not None:
            p["tokens"] += toks
        else:
            p["tokens"] = None
    if gpu:
        for ts, corr in gpu:
            t = launches.get(corr, ts) if corr is not None else ts
            i = step_of(t)
            if i is not None:
                per[i]["launches"] += 1
    else:
        for ts in cpu:
            i = step_of(ts)
            if i is not None:
                per[i]["launches"] += 1
    return per


DC = re.compile(r"dispatch|combine|all_?to_?all", re.I)
EXPERT = re.compile(r"fused_moe|grouped_gemm|group_gemm|m_grouped|expert", re.I)
ROUTING = re.compile(r"topk|align|sort|gating|scatter|gather|permute|count_and", re.I)


def ep_parts(events):
    d = x = 0
    routed = None
    for e in events:
        if e.get("ph") != "X" or "dur" not in e:
            continue
        name = e.get("name", "")
        if e.get("cat") == "kernel":
            if DC.search(name):
                d += max(0, ca.ns(e["dur"]))
            elif EXPERT.search(name) and not ROUTING.search(name):
                x += max(0, ca.ns(e["dur"]))
        elif e.get("cat") == "cpu_op" and "fused_moe" in name:
            m = gemm_m((e.get("args") or {}).get("Input Dims"))
            if m is not None:
                routed = (routed or 0) + m
    return dict(dispatch_ns=d, expert_ns=x, routed_tokens=routed)


def total(v):
    return None if any(x is None for x in v) or not v else sum(v)


def ep_peers(ranks):
    ids = {}
    for path in ranks:
        name = os.path.basename(path)
        ep, tp = re.search(r"-EP-(\d+)", name), re.search(r"-TP-(\d+)", name)
        if ep:
            ids[path] = (int(ep.group(1)), int(tp.group(1)) if tp else None, ranks[path]["dp"])
    dp_of = {}
    across = True
    for _, tp, dp in ids.values():
        if tp is not None and dp_of.setdefault(tp, dp) != dp:
            across = False
    across = across and len({dp for _, _, dp in ids.values()}) > 1
    for path, (ep, _, dp) in ids.items():
        peers = [ranks[q]["ep"] for q, (e, _, d) in ids.items()
                 if e != ep and (across or d == dp)]
        if not peers:
            continue
        med = {k: statistics.median(p[k] for p in peers) for k in ("dispatch_ns", "expert_ns")}
        routed = [p["routed_tokens"] for p in peers]
        med["routed_tokens"] = None if None in routed else statistics.median(routed)
        me = ranks[path]["ep"]
        r = ranks[path]
        r["ep_peers"] = len(peers)
        r["ep_peer_median"] = med
        r["ep_ratio"] = {k: (me[k] / med[k] if me[k] is not None and med[k] else None)
                         for k in med}


def main():
    files = sys.argv[1:]
    args = SimpleNamespace(step_marker=None, comm_regex=None, cpu_comm_regex=None)
    ranks = {}
    for path in files:
        events, doc = ca.load(path)
        base = int(doc.get("baseTimeNanoseconds") or 0)
        figs = ca.rank_figures(events, base, args)
        per = work_of(events)
        time = sum(s["work_ns"] for s in figs["steps"])
        tokens = total([p["tokens"] for p in per])
        seqs = total([p["seqs"] for p in per])
        launches = sum(p["launches"] for p in per)
        m = re.search(r"-DP-(\d+)", os.path.basename(path))
        ranks[path] = dict(
            dp=int(m.group(1)) if m else None, steps=len(per), time_ns=time, tokens=tokens,
            seqs=seqs, launches=launches,
            step_tokens=[p["tokens"] for p in per], step_launches=[p["launches"] for p in per],
            step_shape_tokens=[p["shape_tokens"] for p in per],
            step_nelems=[p["nelems"] for p in per],
            shape_tokens=total([p["shape_tokens"] for p in per]),
            nelems=total([p["nelems"] for p in per]),
            ep=ep_parts(events),
            time_per_token_ns=time / tokens if tokens else None,
            time_per_seq_ns=time / seqs if seqs else None,
            time_per_launch_ns=time / launches if launches else None)
    for path, r in ranks.items():
        peers = [q for p, q in ranks.items() if p != path and q["dp"] == r["dp"]]
        if not peers:
            continue
        med = lambda k: statistics.median(q[k] for q in peers)  # noqa: E731
        r["time_ratio"] = r["time_ns"] / med("time_ns")
        r["launch_ratio"] = r["launches"] / med("launches")
        if r["tokens"] is not None and all(q["tokens"] is not None for q in peers):
            r["token_ratio"] = r["tokens"] / med("tokens")
        for k in ("shape_tokens", "nelems"):
            if r[k] is not None and all(q[k] is not None for q in peers) and med(k):
                r[k + "_ratio"] = r[k] / med(k)
    ep_peers(ranks)
    json.dump(dict(ranks=ranks), sys.stdout, indent=1, sort_keys=True)
    print()


if __name__ == "__main__":
    main()
