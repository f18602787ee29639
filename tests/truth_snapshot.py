#!/usr/bin/env python3
"""Independent truth for rankprof's reading of PyTorch CUDA memory snapshots
(`torch.cuda.memory._dump_snapshot` pickles). Python 3 stdlib only (pickle, gzip, json);
never reads rankprof's output and shares none of its code.

    python3 tests/truth_snapshot.py DIR_OR_FILE...

Loads each `*.pickle[.gz]` whole with `pickle.load` and prints one JSON object, file name →
list of devices (those with a segment or a trace entry, by index), each:

  device              `cuda:N` (segment `device`; a trace's device is its index in
                      `device_traces`)
  segments            the device's segments
  allocated_bytes     sum of the segments' `allocated_size`
  reserved_bytes      sum of the segments' `total_size`
  trace_entries       entries of `device_traces[N]`
  peak_allocated_bytes  before_trace_bytes + the largest prefix sum of the trace, where an
                      `alloc` adds `size` and a `free_completed` subtracts it (0 before the first
                      entry); null without a trace
  peak_entry          the first index at which the prefix sum reaches that largest value (null
                      when it is never above 0)
  peak_time_us        that entry's `time_us`
  before_trace_bytes  max(0, sum of the segments' `active_size` - the trace's final prefix sum)
  oom_entries         entries with `action` `oom`
  top_frames_at       `peak` with a trace, else `snapshot`
  top_frames          at the peak: the trace's allocations live after entry peak_entry (replayed
                      again from the start: an `alloc` makes its `addr` live, a
                      `free_completed` ends it); at the snapshot: the blocks with `state`
                      `active_allocated`. Grouped by top user frame: the first frame of
                      `frames` whose `filename` is not empty, not `??`, does not end in
                      .c/.cc/.cpp/.cxx/.h/.hpp/.cu/.cuh and has no `torch/` directory (starts
                      with `torch/` or contains `/torch/`), as `filename:line name`;
                      `(no user frame)` when there are frames but none is a user's,
                      `(no frames)` when there are none. Rows {frame, bytes, count}, bytes
                      descending, then count descending, then frame; groups with bytes > 0; 5.
"""

import gzip
import json
import os
import pickle
import sys

NATIVE = (".c", ".cc", ".cpp", ".cxx", ".h", ".hpp", ".cu", ".cuh")


def internal(fn):
    return fn in ("", "??") or fn.endswith(NATIVE) or fn.startswith("torch/") or "/torch/" in fn


def group(frames):
    if not frames:
        return "(no frames)"
    for f in frames:
        if not internal(f.get("filename", "")):
            return f"{f['filename']}:{f.get('line', 0)} {f.get('name', '')}"
    return "(no user frame)"


def top(rows):
    g = {}
    for frames, size in rows:
        k = group(frames)
        b, n = g.get(k, (0, 0))
        g[k] = (b + size, n + 1)
    out = [{"frame": k, "bytes": b, "count": n} for k, (b, n) in g.items() if b > 0]
    out.sort(key=lambda r: (-r["bytes"], -r["count"], r["frame"]))
    return out[:5]


def replay(trace):
    s, best, best_i, sums = 0, 0, None, []
    for i, e in enumerate(trace):
        a = e.get("action")
        if a == "alloc":
            s += e["size"]
        elif a == "free_completed":
            s -= e["size"]
        if s > best:
            best, best_i = s, i
    return s, best, best_i


def live_after(trace, last):
    live = {}
    for e in trace[: last + 1]:
        a = e.get("action")
        if a == "alloc":
            live[e["addr"]] = (e.get("frames", []), e["size"])
        elif a == "free_completed":
            live.pop(e["addr"], None)
    return list(live.values())


def device_rows(snap):
    segs = {}
    for s in snap.get("segments", []):
        segs.setdefault(s["device"], []).append(s)
    traces = {i: t for i, t in enumerate(snap.get("device_traces", [])) if t}
    rows = []
    for d in sorted(set(segs) | set(traces)):
        ss = segs.get(d, [])
        t = traces.get(d)
        row = {
            "device": f"cuda:{d}",
            "segments": len(ss),
            "allocated_bytes": sum(s["allocated_size"] for s in ss),
            "reserved_bytes": sum(s["total_size"] for s in ss),
            "trace_entries": len(t) if t else 0,
            "peak_allocated_bytes": None,
            "peak_entry": None,
            "peak_time_us": None,
            "before_trace_bytes": None,
            "oom_entries": sum(1 for e in t if e.get("action") == "oom") if t else 0,
        }
        if t:
            end, best, best_i = replay(t)
            before = max(0, sum(s["active_size"] for s in ss) - end)
            row.update(peak_allocated_bytes=before + best, peak_entry=best_i, before_trace_bytes=before,
                       peak_time_us=t[best_i].get("time_us") if best_i is not None else None,
                       top_frames_at="peak", top_frames=top(live_after(t, best_i) if best_i is not None else []))
        else:
            blocks = [(b.get("frames", []), b["size"]) for s in ss for b in s.get("blocks", []) if b.get("state") == "active_allocated"]
            row.update(top_frames_at="snapshot", top_frames=top(blocks))
        rows.append(row)
    return rows


def load(path):
    with open(path, "rb") as f:
        head = f.read(2)
    opener = gzip.open if head == b"\x1f\x8b" else open
    with opener(path, "rb") as f:
        return pickle.load(f)


def main():
    files = []
    for a in sys.argv[1:]:
        if os.path.isdir(a):
            files += [os.path.join(a, n) for n in sorted(os.listdir(a)) if n.endswith((".pickle", ".pickle.gz"))]
        else:
            files.append(a)
    print(json.dumps({os.path.basename(p): device_rows(load(p)) for p in files}, indent=1))


if __name__ == "__main__":
    main()
