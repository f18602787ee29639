#!/usr/bin/env python3
"""Independent truth for the real NCCL recordings in fixtures/real-nccl (stdlib only; raw events).

It shares nothing with rankprof's model. The rule, per folder:

1. Each rank's file (its rank: `distributedInfo.rank`) gives its NCCL kernels (`cat` "kernel",
   name starting `nccl`), in start order, and its CPU `ProfilerStep#N` spans (`user_annotation`).
   A kernel belongs to the step whose CPU span holds its launch: the `cuda_runtime` or
   `cuda_driver` event with the same `correlation`.
2. The n-th NCCL kernel of every rank is one collective (one process group and one stream in
   these recordings; the script checks every rank has the same count per step). A send or
   receive (`Collective name` `send` / `recv`, peer in `Dst Rank` / `Src Rank`: a rank of the
   kernel's group, turned into a world rank by its `Process Group Ranks`) is one end of a transfer instead: the n-th send from s to d and
   the n-th receive at d from s are one, of two members.
3. A member *arrives* when its kernel starts: an NCCL kernel cannot finish before every member's
   has started, so a member that started early spins in it until the last one arrives. The last
   arriver *imposes* on the others the median over them of (last start - their start).
4. Per step and rank: the sum of what it imposed at the collectives it arrived last at. The
   culprit is the rank with the largest mean per step; `per_step_imposed_ms` lists its steps.
   `mean_wait_ms`: per rank, the mean per step of (last start - its start) over every
   collective it is a member of: how long it waited for others (a pipeline stage's bubble).
5. `end_spread_us`: per collective, the latest member's kernel end minus the earliest's.
6. `exposed_wait_ms`: per step and rank, how long the rank's compute (its non-NCCL kernels)
   sat idle right before the first compute kernel that starts after the step's last NCCL
   kernel ended (the optimizer waiting for the last bucket's all-reduce): that kernel's start
   minus the latest end of the compute kernels that started before that NCCL end. With
   `--control`, `exposed_wait_over_control_ms` is the culprit's peers' mean of it minus the
   control's mean over all ranks: what the plant added to the wait the others saw.
   `exposed_wait_over_culprit_ms`, from the run alone: the peers' mean minus the culprit's own
   (it arrived last, so its optimizer waited only for the all-reduce itself).
7. Step time: the CPU `ProfilerStep#N` span, per rank and step. With `--control DIR` (the same
   workload, nothing planted, recorded on the same machine in the same session) it reports the
   mean step time difference: what the plant cost the step there, end to end.

Usage:  python3 tests/truth_nccl.py fixtures/real-nccl/ddp4-late-start [--control DIR] [--brief]
"""
import argparse
import glob
import gzip
import json
import os
import statistics
import sys


def load_rank(path):
    with gzip.open(path, "rt") as f:
        t = json.load(f)
    rank = t["distributedInfo"]["rank"]
    ev = t["traceEvents"]
    launch = {}
    for e in ev:
        if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {}):
            launch.setdefault(e["args"]["correlation"], e["ts"])
    steps = sorted((e["ts"], e["ts"] + e["dur"], int(e["name"].split("#")[1]))
                   for e in ev if e.get("cat") == "user_annotation"
                   and e.get("name", "").startswith("ProfilerStep#"))
    compute = sorted((e["ts"], e["ts"] + e["dur"]) for e in ev
                     if e.get("cat") == "kernel" and not e.get("name", "").startswith("nccl"))
    kernels = []
    for e in ev:
        if e.get("cat") != "kernel" or not e.get("name", "").startswith("nccl"):
            continue
        t_launch = launch.get(e["args"].get("correlation"))
        step = next((n for s, end, n in steps if t_launch is not None and s <= t_launch <= end),
                    None)
        a = e.get("args", {})
        pair = None
        # The peer is a rank of the kernel's group (`Process Group Ranks` lists its world
        # ranks; the default group's are the world's own).
        try:
            group = json.loads(a.get("Process Group Ranks") or "null")
        except ValueError:
            group = None
        def world(p):
            return group[p] if isinstance(group, list) and 0 <= p < len(group) else p
        if a.get("Collective name") == "send" and "Dst Rank" in a:
            pair = (rank, world(a["Dst Rank"]))
        elif a.get("Collective name") == "recv" and "Src Rank" in a:
            pair = (world(a["Src Rank"]), rank)
        kernels.append(dict(start=e["ts"], end=e["ts"] + e["dur"], step=step, name=e["name"],
                            pair=pair))
    kernels.sort(key=lambda k: k["start"])
    kernels = [k for k in kernels if k["step"] is not None]
    exposed = {}
    for n in sorted({k["step"] for k in kernels}):
        last_end = max(k["end"] for k in kernels if k["step"] == n)
        after = [s for s, _ in compute if s >= last_end]
        before = [e for s, e in compute if s < last_end]
        if after and before:
            exposed[n] = (min(after) - max(before)) / 1e3
    return rank, dict(kernels=kernels, exposed=exposed,
                      step_ms={n: (end - s) / 1e3 for s, end, n in steps})


def instances(ranks, order):
    """Each collective as {rank: kernel}: the n-th all-rank kernel of every rank, and the n-th
    send from s to d with the n-th receive at d from s."""
    whole = {r: [k for k in ranks[r]["kernels"] if k["pair"] is None] for r in order}
    counts = {r: len(v) for r, v in whole.items()}
    if len(set(counts.values())) != 1:
        sys.exit(f"ranks hold different NCCL collective counts: {counts}")
    out = [{r: whole[r][i] for r in order} for i in range(counts[order[0]])]
    ends = {}
    for r in order:
        for k in ranks[r]["kernels"]:
            if k["pair"] is not None:
                ends.setdefault(k["pair"], {}).setdefault(r, []).append(k)
    for pair, by in sorted(ends.items()):
        s, d = pair
        sends, recvs = by.get(s, []), by.get(d, [])
        if len(sends) != len(recvs):
            sys.exit(f"transfer {s}>{d}: {len(sends)} sends, {len(recvs)} receives")
        out += [{s: a, d: b} for a, b in zip(sends, recvs)]
    out.sort(key=lambda ks: min(k["start"] for k in ks.values()))
    return out


def truth(folder):
    # torch's handler names its files `*.pt.trace.json.gz`; `rankprof synth`, SGLang's way.
    paths = sorted(glob.glob(os.path.join(folder, "*.pt.trace.json.gz"))) or sorted(
        glob.glob(os.path.join(folder, "*.trace.json.gz")))
    ranks = dict(load_rank(p) for p in paths)
    order = sorted(ranks)
    groups = instances(ranks, order)
    steps = sorted({k["step"] for r in order for k in ranks[r]["kernels"]})
    imposed = {r: {s: 0.0 for s in steps} for r in order}
    # Each member's wait at each collective: the last arrival less its own (a pipeline
    # stage's bubble, summed over its transfers).
    waited = {r: 0.0 for r in order}
    colls = []
    for i, ks in enumerate(groups):
        members = sorted(ks)
        step = ks[members[0]]["step"]
        if any(k["step"] != step for k in ks.values()):
            sys.exit(f"collective {i}: ranks put it in different steps")
        last = max(members, key=lambda r: ks[r]["start"])
        for r in members:
            waited[r] += (ks[last]["start"] - ks[r]["start"]) / 1e3
        waits = [ks[last]["start"] - ks[r]["start"] for r in members if r != last]
        imp = statistics.median(waits) / 1e3
        imposed[last][step] += imp
        colls.append(dict(index=i, step=step, last=last, imposed_ms=round(imp, 3),
                          pair=ks[members[0]]["pair"],
                          start_rel_ms={str(r): round((ks[r]["start"] - min(k["start"] for k in ks.values())) / 1e3, 3) for r in members},
                          end_spread_us=round(max(k["end"] for k in ks.values())
                                              - min(k["end"] for k in ks.values()), 1)))
    mean_imposed = {r: sum(imposed[r].values()) / len(steps) for r in order}
    culprit = max(order, key=lambda r: mean_imposed[r])
    step_ms = {str(r): [round(ranks[r]["step_ms"][s], 3) for s in steps] for r in order}
    return dict(
        folder=folder,
        world=len(order),
        steps=steps,
        collectives=len(colls),
        culprit=culprit,
        culprit_mean_imposed_ms=round(mean_imposed[culprit], 3),
        per_step_imposed_ms=[round(imposed[culprit][s], 3) for s in steps],
        mean_imposed_ms={str(r): round(v, 3) for r, v in mean_imposed.items()},
        mean_wait_ms={str(r): round(v / len(steps), 3) for r, v in waited.items()},
        end_spread_us_median=round(statistics.median(c["end_spread_us"] for c in colls), 1),
        end_spread_us_max=max(c["end_spread_us"] for c in colls),
        step_ms=step_ms,
        mean_step_ms=round(statistics.mean(v for r in step_ms.values() for v in r), 3),
        exposed_wait_ms={str(r): [round(ranks[r]["exposed"].get(s, 0.0), 3) for s in steps]
                         for r in order},
        peers_mean_exposed_wait_ms=round(statistics.mean(
            ranks[r]["exposed"].get(s, 0.0) for r in order if r != culprit for s in steps), 3),
        exposed_wait_over_culprit_ms=round(statistics.mean(
            ranks[r]["exposed"].get(s, 0.0) for r in order if r != culprit for s in steps)
            - statistics.mean(ranks[culprit]["exposed"].get(s, 0.0) for s in steps), 3),
        mean_exposed_wait_ms=round(statistics.mean(
            ranks[r]["exposed"].get(s, 0.0) for r in order for s in steps), 3),
        by_collective=colls,
    )


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("folder")
    ap.add_argument("--control")
    ap.add_argument("--brief", action="store_true")
    a = ap.parse_args()
    out = truth(a.folder)
    if a.control:
        c = truth(a.control)
        out["control_mean_step_ms"] = c["mean_step_ms"]
        out["step_ms_over_control"] = round(out["mean_step_ms"] - c["mean_step_ms"], 3)
        out["exposed_wait_over_control_ms"] = round(
            out["peers_mean_exposed_wait_ms"] - c["mean_exposed_wait_ms"], 3)
    plant_path = os.path.join(a.folder, "plant.json")
    if os.path.exists(plant_path):
        with open(plant_path) as f:
            p = json.load(f)
        out["plant"] = dict(rank=p["planted_rank"], cause=p["cause"],
                            per_step_planted_ms=p["per_step_planted_ms"])
    if a.brief:
        out.pop("by_collective")
    json.dump(out, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
