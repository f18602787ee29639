#!/usr/bin/env python3
"""Independent ground truth for the real gloo fixtures (fixtures/real-gloo/<name>/).

Python 3 stdlib only (gzip, json); never reads rankprof's output and shares none of its code.

    python3 tests/truth_gloo.py fixtures/real-gloo/tp4-host-sleep [--brief]

Reads every `*.trace.json[.gz]` in the folder (not plant.json) and prints one JSON object.
plant.json is read for two things only: the recording's collective layout (which group / peer
each collective of a step belongs to -- CPU gloo events carry no group or peer) and, at the end,
the planted figures to compare against.  Every timing comes from the raw events.

THE RULE (all times in µs, the traces' own clock; all ranks ran on one host, one clock)
  rank        distributedInfo.rank, else the `rank<r>` prefix of the file name.
  main thread the tid holding the `ProfilerStep#N` events; step = [ts, ts+dur] of ProfilerStep#N.
  collective  a `c10d::*` event on the main thread inside a step (outermost only; names holding
              "wait" excluded).  arrival = its ts; return = ts+dur.
  the wait    found by structure, in this order:
              (a) the first main-thread event starting at/after `return` (before the next
                  collective) whose name contains "wait" (case-insensitive)  -> kind "wait-op";
                  (with with_stack=True torch records the Python call
                  `<built-in method wait of pybind11_... object at 0x…>` here);
              (b) else, if the very first main-thread event after `return` (not nested in the
                  c10d op; it may start a few µs before the c10d op's recorded end) is a
                  user_annotation (gloo's own RecordFunction, e.g. `gloo:recv`, `gloo:send`, run
                  on the calling thread by the synchronous p2p Work.wait)     -> kind "annotation";
              (c) else nothing is recorded for the wait (all_reduce in torch 2.4 / 2.15: the
                  gloo work runs on a gloo worker thread as `gloo:all_reduce`, and Work.wait is
                  not instrumented): the wait is the idle gap on the main thread from `return`
                  to the start of the next main-thread event (or step end)   -> kind "gap".
              wait_end = end of that wait; wait_ms = its length ("gross" wait).
              The worker-thread `gloo:*` event (first one on another thread starting at/after
              arrival) is printed as `backend` for information.
  compute     for each collective: the interval from the previous collective's wait_end (or the
              step start) to this arrival; busy = union of the top-level main-thread `cpu_op` /
              `user_annotation` events in it (not `gloo:*`, not python_function frames); idle = interval - busy, split into lead_idle (before its first op) and
              rest_idle; n_ops = number of top-level events in it.
  matching    instance = (step N, layout key, k-th occurrence of that key on the rank in that
              step); layout key = the group (e.g. "tp:0,1") or the p2p pair ("p2p:1>2") from
              plant.json `collective_layout`; without one, every collective is in the world
              group and key = the c10d name.
  last        the member with the latest arrival.
  waited_for_last(r) = max(0, min(arrival_last - arrival_r, wait_end_r - arrival_r)):
              the part of r's time in the collective that lies before the last member arrived
              ("net" wait: it leaves out the transfer time, which the last arriver pays too).
  imposed     per instance, on its last arriver: the median over the OTHER members of
              waited_for_last (net) -- and, as the brief literally asks, of their gross wait_ms.
              Per rank per step: the sum over the instances where it arrived last.
              peer_max: per step, for each other rank p, sum of waited_for_last(p) over the
              instances this rank was last; the max over p (how long one peer was held up).
  summary     culprit = the rank with the largest mean-over-steps net imposed wait; cost/step =
              that mean.  Cause, from the culprit's instances where it was last, summing the
              differences to the median of the other members:
                late_start  = d(lead_idle) at the first collective of the step (its first op
                              starts late), also shown: d(step start), d(first-op start)
                host_sleep  = d(idle) everywhere else (a gap with no op before its arrival)
                extra_ops   = d(busy) (more compute before arrival; d(n_ops) shown too)
              cause = the largest of the three.
  comparison  plant.json per_step_planted_ms vs the culprit's per-step net imposed wait (and
              peer_max); ok when within 10 % of the planted mean.  Known reasons for a
              mismatch are printed as notes (see the README of fixtures/real-gloo).
"""
import gzip
import json
import os
import re
import statistics
import sys


def load_trace(path):
    op = gzip.open if path.endswith(".gz") else open
    with op(path, "rt") as f:
        return json.load(f)


def trace_files(folder):
    out = []
    for fn in sorted(os.listdir(folder)):
        if re.search(r"\.trace\.json(\.gz)?$", fn) and not fn.startswith("plant"):
            out.append(os.path.join(folder, fn))
    return out


def union_len(iv):
    iv = sorted(iv)
    tot, cur_s, cur_e = 0.0, None, None
    for s, e in iv:
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                tot += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None:
        tot += cur_e - cur_s
    return tot


def top_level(events):
    """Events (sorted by ts, -dur) not contained in an earlier kept event."""
    out, end = [], -1e300
    for e in events:
        if e["ts"] >= end - 1e-6:
            out.append(e)
            end = e["ts"] + e["dur"]
        # contained (or overlapping) -> skip
    return out


def analyse_rank(path, layout):
    d = load_trace(path)
    fn = os.path.basename(path)
    di = d.get("distributedInfo") or {}
    rank = di.get("rank")
    m = re.match(r"rank(\d+)\.", fn)
    if rank is None and m:
        rank = int(m.group(1))
    xs = [e for e in d["traceEvents"] if e.get("ph") == "X" and isinstance(e.get("tid"), int)
          and "dur" in e]
    steps = [e for e in xs if e["name"].startswith("ProfilerStep#")]
    main = steps[0]["tid"]
    main_ev = sorted((e for e in xs if e["tid"] == main), key=lambda e: (e["ts"], -e["dur"]))
    other_ev = sorted((e for e in xs if e["tid"] != main and e["name"].startswith("gloo:")),
                      key=lambda e: e["ts"])
    used_backend = set()
    wait_names = {}
    per_step = []
    for st in sorted(steps, key=lambda e: e["ts"]):
        n = int(st["name"].split("#")[1])
        s0, s1 = st["ts"], st["ts"] + st["dur"]
        inside = [e for e in main_ev if e is not st and s0 <= e["ts"] < s1]
        # compute = cpu_ops and user annotations other than gloo's own and the step itself
        # (python_function frames from with_stack are not compute: they wrap everything)
        tl = top_level([e for e in inside if e.get("cat") in ("cpu_op", "user_annotation")
                        and not e["name"].startswith("gloo:")])
        colls = [e for e in top_level([e for e in inside if e["name"].startswith("c10d::")
                                       and "wait" not in e["name"].lower()])]
        first_op = tl[0]["ts"] if tl else None
        out = []
        prev_end = s0
        occ = {}
        keys = (layout or {}).get(str(rank))
        for i, c in enumerate(colls):
            arr, ret = c["ts"], c["ts"] + c["dur"]
            nxt = colls[i + 1]["ts"] if i + 1 < len(colls) else s1
            # everything after arrival that is not nested inside the c10d op (gloo's own
            # annotation may start a few µs before the c10d op's recorded end)
            after = [e for e in inside if e is not c and e["ts"] >= arr and e["ts"] < nxt
                     and e["ts"] + e["dur"] > ret + 1e-3]
            w = next((e for e in after if "wait" in e["name"].lower()), None)
            if w is not None:
                kind, wend, wname = "wait-op", w["ts"] + w["dur"], w["name"]
            elif after and after[0].get("cat") == "user_annotation":
                w = after[0]
                kind, wend, wname = "annotation", w["ts"] + w["dur"], w["name"]
            else:
                kind, wname = "gap", None
                wend = max(ret, after[0]["ts"]) if after else s1
                if not after:  # last collective of the step: next event may be the next step
                    later = [e for e in main_ev if e["ts"] >= ret - 1e-3 and e is not st]
                    wend = min(later[0]["ts"], s1) if later else s1
            wait_names.setdefault(kind, set()).add(
                re.sub(r"0x[0-9a-f]+", "0x…", wname) if wname else None)
            be = None
            for j, b in enumerate(other_ev):
                if j not in used_backend and b["ts"] >= arr - 1.0:
                    used_backend.add(j)
                    be = b
                    break
            # compute before arrival
            lo = prev_end
            pre = [e for e in tl if e["ts"] < arr and e["ts"] + e["dur"] > lo and e is not c]
            iv = [(max(e["ts"], lo), min(e["ts"] + e["dur"], arr)) for e in pre]
            iv = [x for x in iv if x[1] > x[0]]
            busy = union_len(iv)
            lead = (min(x[0] for x in iv) - lo) if iv else (arr - lo)
            idle = (arr - lo) - busy
            key = keys[i] if keys and i < len(keys) else c["name"]
            k = occ.get(key, 0)
            occ[key] = k + 1
            out.append(dict(
                name=c["name"], key=key, occ=k, arrival=arr, ret=ret,
                c10d_ms=c["dur"] / 1e3, wait_kind=kind, wait_name=wname,
                wait_end=wend, wait_ms=(wend - ret) / 1e3,
                backend=(dict(name=be["name"], tid=be["tid"], start=be["ts"],
                              end=be["ts"] + be["dur"]) if be else None),
                interval_ms=(arr - lo) / 1e3, busy_ms=busy / 1e3, idle_ms=idle / 1e3,
                lead_idle_ms=lead / 1e3, rest_idle_ms=(idle - lead) / 1e3,
                n_ops=len(pre)))
            prev_end = wend
        per_step.append(dict(step=n, start=s0, end=s1, first_op=first_op, collectives=out))
    return dict(rank=rank, file=fn, torch_main_tid=main, steps=per_step,
                wait_names={k: sorted(x for x in v if x) for k, v in wait_names.items()})


def med(xs):
    return statistics.median(xs) if xs else 0.0


def analyse(folder):
    plant = None
    pp = os.path.join(folder, "plant.json")
    if os.path.exists(pp):
        with open(pp) as f:
            plant = json.load(f)
    layout = (plant or {}).get("collective_layout")
    ranks = [analyse_rank(p, layout) for p in trace_files(folder)]
    ranks.sort(key=lambda r: r["rank"])
    by = {r["rank"]: r for r in ranks}
    step_ids = sorted({s["step"] for r in ranks for s in r["steps"]})
    inst = {}
    for r in ranks:
        for s in r["steps"]:
            for c in s["collectives"]:
                inst.setdefault((s["step"], c["key"], c["occ"]), {})[r["rank"]] = (c, s)
    imposed = {r["rank"]: {n: 0.0 for n in step_ids} for r in ranks}
    imposed_gross = {r["rank"]: {n: 0.0 for n in step_ids} for r in ranks}
    peer = {r["rank"]: {n: {} for n in step_ids} for r in ranks}
    cause = {r["rank"]: dict(late_start=0.0, host_sleep=0.0, extra_ops=0.0, d_ops=0)
             for r in ranks}
    instances = []
    for (n, key, k), mem in sorted(inst.items(), key=lambda x: (x[0][0], str(x[0][1]), x[0][2])):
        if len(mem) < 2:
            continue
        last = max(mem, key=lambda r: mem[r][0]["arrival"])
        al = mem[last][0]["arrival"]
        waits, gross = {}, {}
        for r, (c, s) in mem.items():
            if r == last:
                continue
            waits[r] = max(0.0, min(al - c["arrival"], c["wait_end"] - c["arrival"])) / 1e3
            gross[r] = c["wait_ms"]
            peer[last][n][r] = peer[last][n].get(r, 0.0) + waits[r]
        imp, impg = med(list(waits.values())), med(list(gross.values()))
        imposed[last][n] += imp
        imposed_gross[last][n] += impg
        lc, ls = mem[last]
        others = [mem[r][0] for r in mem if r != last]
        first = ls["collectives"].index(lc) == 0
        d_lead = lc["lead_idle_ms"] - med([o["lead_idle_ms"] for o in others])
        d_idle = lc["idle_ms"] - med([o["idle_ms"] for o in others])
        d_busy = lc["busy_ms"] - med([o["busy_ms"] for o in others])
        if first:
            cause[last]["late_start"] += max(0.0, d_lead)
            cause[last]["host_sleep"] += max(0.0, d_idle - max(0.0, d_lead))
        else:
            cause[last]["host_sleep"] += max(0.0, d_idle)
        cause[last]["extra_ops"] += max(0.0, d_busy)
        cause[last]["d_ops"] += lc["n_ops"] - med([o["n_ops"] for o in others])
        instances.append(dict(
            step=n, key=key, occ=k, name=lc["name"], members=sorted(mem), last=last,
            arrival_ms_after_first={str(r): round((mem[r][0]["arrival"] - min(
                m[0]["arrival"] for m in mem.values())) / 1e3, 3) for r in sorted(mem)},
            waited_for_last_ms={str(r): round(v, 3) for r, v in sorted(waits.items())},
            gross_wait_ms={str(r): round(v, 3) for r, v in sorted(gross.items())},
            imposed_net_ms=round(imp, 3), imposed_gross_ms=round(impg, 3)))
    nsteps = len(step_ids)
    mean_imp = {r: sum(imposed[r].values()) / nsteps for r in imposed}
    culprit = max(mean_imp, key=lambda r: mean_imp[r])
    per_step_cost = [imposed[culprit][n] for n in step_ids]
    per_step_peer = [max(peer[culprit][n].values(), default=0.0) for n in step_ids]
    cz = cause[culprit]
    # step-level late-start evidence: step start and first op vs the others (absolute µs)
    d_start, d_first = [], []
    for n in step_ids:
        ss = {r["rank"]: s for r in ranks for s in r["steps"] if s["step"] == n}
        oth = [ss[r] for r in ss if r != culprit]
        if culprit in ss and oth:
            d_start.append((ss[culprit]["start"] - med([o["start"] for o in oth])) / 1e3)
            if ss[culprit]["first_op"] is not None:
                d_first.append((ss[culprit]["first_op"]
                                - med([o["first_op"] for o in oth if o["first_op"]])) / 1e3)
    cause_name = max(("late_start", "host_sleep", "extra_ops"), key=lambda k: cz[k])
    summary = dict(
        culprit_rank=culprit,
        culprit_file=by[culprit]["file"],
        cause=cause_name,
        cause_evidence_ms_per_step={k: round(v / nsteps, 3) for k, v in cz.items()
                                    if k != "d_ops"},
        extra_top_level_ops_per_step=round(cz["d_ops"] / nsteps, 2),
        step_start_late_ms=[round(x, 3) for x in d_start],
        first_op_late_ms=[round(x, 3) for x in d_first],
        imposed_net_ms_per_step=[round(x, 3) for x in per_step_cost],
        imposed_net_ms_mean=round(sum(per_step_cost) / nsteps, 3),
        peer_max_ms_per_step=[round(x, 3) for x in per_step_peer],
        peer_max_ms_mean=round(sum(per_step_peer) / nsteps, 3),
        imposed_gross_ms_per_step=[round(imposed_gross[culprit][n], 3) for n in step_ids],
        all_ranks_imposed_net_ms_mean={str(r): round(v, 3) for r, v in sorted(mean_imp.items())},
        all_ranks_imposed_gross_ms_mean={
            str(r): round(sum(imposed_gross[r].values()) / nsteps, 3)
            for r in sorted(imposed_gross)},
    )
    comparison = None
    if plant is not None:
        pl = plant.get("per_step_planted_ms") or []
        plm = sum(pl) / len(pl) if pl else 0.0
        got = summary["imposed_net_ms_mean"]
        comparison = dict(
            planted_rank=plant.get("planted_rank"), planted_cause=plant.get("cause"),
            per_step_planted_ms=pl, planted_ms_mean=round(plm, 3),
            truth_rank=culprit, truth_cause=cause_name,
            truth_imposed_net_ms_per_step=summary["imposed_net_ms_per_step"],
            truth_imposed_net_ms_mean=got,
            truth_peer_max_ms_mean=summary["peer_max_ms_mean"],
            rank_agrees=(plant.get("planted_rank") is None
                         or plant.get("planted_rank") == culprit),
            ratio_net_over_planted=(round(got / plm, 3) if plm else None),
            ratio_peer_max_over_planted=(round(summary["peer_max_ms_mean"] / plm, 3)
                                         if plm else None),
            within_10pct=(abs(got - plm) <= 0.10 * plm if plm else None),
            notes=plant.get("truth_notes", []))
    wn = {}
    for r in ranks:
        for k, v in r["wait_names"].items():
            wn.setdefault(k, set()).update(v)
    return dict(
        folder=folder,
        torch_version=(plant or {}).get("torch_version"),
        wait_kinds_found={k: sorted(v) for k, v in wn.items()},
        ranks=ranks, instances=instances,
        imposed_net_ms={str(r): {str(n): round(v, 3) for n, v in imposed[r].items()}
                        for r in imposed},
        summary=summary, comparison=comparison)


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    brief = "--brief" in sys.argv
    for folder in args:
        res = analyse(folder)
        if brief:
            res = {k: res[k] for k in ("folder", "torch_version", "wait_kinds_found",
                                       "summary", "comparison")}
        print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
