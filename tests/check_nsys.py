#!/usr/bin/env python3
"""Independent figures of Nsight Systems SQLite exports, for tests/nsys.rs: per file, from the
tables themselves (Python's sqlite3; nothing of rankprof's), the kernels' count and summed
time, the summed time of gemm kernels (name holds "gemm") and of NCCL kernels (name starts
with "nccl"), and the unions of the GPU timeline: busy (kernels, memcpy, memset), comm (NCCL
kernels), copies (memcpy and memset), and the span from the first GPU op's start to the last
one's end. Kernel names come from StringIds through demangledName (else shortName).

And what a merged trace must show of the file in a viewer (`viewer`): the slices (runtime calls,
NVTX ranges with an end, kernels, memcpy and memset rows), the flow arrows' starts (runtime calls
whose correlationId some GPU row has) and finishes (GPU rows whose correlationId some runtime
call has), the GPU streams (`stream N` per device) and the host threads (`thread TID (NAME)`,
NAME from ThreadNames when the export has it; TID the low 24 bits of globalTid).

`--by-device FILE.sqlite`: one report holding several GPUs, each GPU (`deviceId`) a rank: the
figures of each, ascending by device, from its GPU rows and the runtime calls and NVTX ranges of
the process that owns it (the globalPid of its kernels; globalTid >> 24 names a thread's process).
When that process drives several GPUs, only this GPU's host rows: the runtime calls whose
correlationId is one of this GPU's kernels, memcpy or memset rows, and the other runtime calls
and the NVTX ranges of the threads given to it: a thread that launched GPU work goes to each GPU
that got at least half as many of its launches as the GPU it launched most onto; a thread that
launched nothing goes to every GPU of the process.

`nccl` (only when the export has NVTX_PAYLOAD_SCHEMAS): what NCCL's own NVTX ranges give the NCCL
kernels, decoded here on its own: the domain named 'NCCL' (NVTX_EVENTS eventType 75); per NCCL
kernel, its launch (the runtime call of its correlationId in its process) and the innermost
push/pop range of that domain on the launching thread enclosing it (the latest start); the
range's binaryData read as a 32-byte header (<IIIIQQ: domainId, -, schemaId, -, payloadSize,
totalSize; a third party's layout, see make_nsys_sqlite.py) and the struct, used only when the
header's domain is the range's, its schema and payload size are NVTX_PAYLOAD_SCHEMAS's and the
blob holds it; the entries by name and type ('Message size [bytes]' size_t 22, 'NCCL
communicator ID' uint64 18). ncclAllReduce/Broadcast/Reduce/Send/Recv give bytes and comm,
ncclAllGather/ReduceScatter the comm only, other ranges (ncclGroupEnd) nothing. `by_corr`:
correlationId -> {"bytes", "comm" ("nccl:<hex>")} of the kernels that got something; `in_order`:
every NCCL kernel in start order, that object or null; the counts
`kernels`, `sized`, `share`, `outside`, `invalid`.

usage: check_nsys.py FILE.sqlite... -> JSON list, one object per file, in the order given
       check_nsys.py --by-device FILE.sqlite -> JSON list, one object per GPU
"""

import json
import sqlite3
import struct
import sys

WHOLE = {"ncclAllReduce", "ncclBroadcast", "ncclReduce", "ncclSend", "ncclRecv"}
SHARE = {"ncclAllGather", "ncclReduceScatter"}


def nccl(db):
    names = dict(db.execute("SELECT id, value FROM StringIds"))
    doms = {d for (d,) in db.execute(
        "SELECT domainId FROM NVTX_EVENTS WHERE eventType = 75 AND text = 'NCCL'")}
    size = {(d, i): n for d, i, n in db.execute(
        "SELECT domainId, schemaId, payloadSize FROM NVTX_PAYLOAD_SCHEMAS")}
    ent = {}
    for d, i, name, ty, off in db.execute(
            "SELECT domainId, schemaId, name, type, offset FROM NVTX_PAYLOAD_SCHEMA_ENTRIES"):
        ent[(d, i, name, ty)] = off
    ranges = [r for r in db.execute(
        'SELECT globalTid, start, "end", text, domainId, binaryData FROM NVTX_EVENTS '
        'WHERE eventType = 59 AND "end" IS NOT NULL') if r[4] in doms]
    launch = {(g >> 24, c): (g, t) for g, t, c in db.execute(
        "SELECT globalTid, start, correlationId FROM CUPTI_ACTIVITY_KIND_RUNTIME")}
    out = {"kernels": 0, "sized": 0, "share": 0, "outside": 0, "invalid": 0, "by_corr": {}}
    order = []
    for c, gpid, n, start in db.execute("SELECT correlationId, globalPid, demangledName, start "
                                        "FROM CUPTI_ACTIVITY_KIND_KERNEL"):
        if names[n].startswith("nccl"):
            order.append((start, str(c)))
        if not names[n].startswith("nccl") or (gpid >> 24, c) not in launch:
            continue
        out["kernels"] += 1
        g, t = launch[(gpid >> 24, c)]
        around = [r for r in ranges if r[0] == g and r[1] <= t <= r[2]]
        if not around:
            out["outside"] += 1
            continue
        _, _, _, text, dom, blob = max(around, key=lambda r: (r[1], -r[2]))
        if text not in WHOLE | SHARE:
            out["outside"] += 1
            continue
        got = None
        if blob is not None and len(blob) >= 32:
            hd, _, sid, _, psize, _ = struct.unpack_from("<IIIIQQ", blob)
            want = size.get((dom, sid))
            if hd == dom and want == psize and len(blob) >= 32 + psize:
                body = blob[32:32 + psize]
                b = ent.get((dom, sid, "Message size [bytes]", 22))
                m = ent.get((dom, sid, "NCCL communicator ID", 18))
                if b is not None and b + 8 <= psize:
                    got = {"bytes": struct.unpack_from("<Q", body, b)[0],
                           "comm": (f"nccl:{struct.unpack_from('<Q', body, m)[0]:x}"
                                    if m is not None and m + 8 <= psize else None)}
        if got is None:
            out["invalid"] += 1
            continue
        if text in SHARE:
            got["bytes"] = None
            out["share"] += 1
        else:
            out["sized"] += 1
        out["by_corr"][str(c)] = got
    out["in_order"] = [out["by_corr"].get(c) for _, c in sorted(order)]
    return out


def union(ivs):
    total, cur_s, cur_e = 0, None, None
    for s, e in sorted(ivs):
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None:
        total += cur_e - cur_s
    return total


def tables(db):
    return {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}


def columns(db, t):
    return {r[1] for r in db.execute(f"PRAGMA table_info({t})")}


def figures(path, dev=None):
    """`dev`: only GPU `dev`'s rows and its process's (all when None)."""
    db = sqlite3.connect(path)
    gpu_where = ""
    host = lambda gtid, corr: True  # noqa: E731
    if dev is not None:
        (gpid,) = db.execute("SELECT DISTINCT globalPid FROM CUPTI_ACTIVITY_KIND_KERNEL "
                             "WHERE deviceId = ?", (dev,)).fetchone()
        gpu_where = f" WHERE deviceId = {int(dev)}"
        host = host_rule(db, dev, gpid >> 24)
    names = dict(db.execute("SELECT id, value FROM StringIds"))
    kcols = columns(db, "CUPTI_ACTIVITY_KIND_KERNEL")
    col = "demangledName" if "demangledName" in kcols else "shortName"
    kernels = [(s, e, names[n]) for s, e, n in
               db.execute(f'SELECT start, "end", {col} FROM CUPTI_ACTIVITY_KIND_KERNEL{gpu_where}')]
    copies = []
    for t in ("CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"):
        if t in tables(db):
            copies += list(db.execute(f'SELECT start, "end" FROM {t}{gpu_where}'))
    gpu = [(s, e) for s, e, _ in kernels] + copies
    extra = {"nccl": nccl(db)} if "NVTX_PAYLOAD_SCHEMAS" in tables(db) else {}
    return {
        **extra,
        "path": path,
        "viewer": viewer(db, gpu_where, host),
        "kernels": len(kernels),
        "kernel_sum_ns": sum(e - s for s, e, _ in kernels),
        "gemm_ns": sum(e - s for s, e, n in kernels if "gemm" in n),
        "nccl_ns": sum(e - s for s, e, n in kernels if n.startswith("nccl")),
        "busy_ns": union(gpu),
        "comm_ns": union([(s, e) for s, e, n in kernels if n.startswith("nccl")]),
        "memcpy_memset_ns": union(copies),
        "span_ns": max(e for _, e in gpu) - min(s for s, _ in gpu),
    }


def gpu_tables(db):
    have = tables(db)
    return [t for t in ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY",
                        "CUPTI_ACTIVITY_KIND_MEMSET") if t in have]


def host_rule(db, dev, proc):
    """Whether a host row (globalTid, correlationId; None for an NVTX range) of process `proc`
    belongs to GPU `dev` (see the module's words)."""
    mine = {d for (d, g) in db.execute("SELECT DISTINCT deviceId, globalPid FROM "
                                       "CUPTI_ACTIVITY_KIND_KERNEL") if g >> 24 == proc}
    in_proc = lambda g: g is not None and g >> 24 == proc  # noqa: E731
    if len(mine) == 1:
        return lambda gtid, corr: in_proc(gtid)
    work = {}  # correlationId -> the GPU its work ran on
    for t in gpu_tables(db):
        for d, c in db.execute(f"SELECT deviceId, correlationId FROM {t}"):
            if d in mine and c is not None:
                work[c] = d
    launches = {}  # thread -> {GPU: launches}
    for g, c in db.execute("SELECT globalTid, correlationId FROM CUPTI_ACTIVITY_KIND_RUNTIME"):
        if in_proc(g) and c in work:
            per = launches.setdefault(g, {})
            per[work[c]] = per.get(work[c], 0) + 1

    def thread_mine(g):
        if g not in launches:
            return True
        per = launches[g]
        return 2 * per.get(dev, 0) >= max(per.values()) and per.get(dev, 0) > 0

    def rule(gtid, corr):
        if not in_proc(gtid):
            return False
        if corr is not None and corr in work:
            return work[corr] == dev
        return thread_mine(gtid)
    return rule


def viewer(db, gpu_where, host):
    have = tables(db)
    gpu = []
    for t in gpu_tables(db):
        gpu += db.execute(f"SELECT deviceId, streamId, correlationId FROM {t}{gpu_where}"
                          ).fetchall()
    runtime = [(c, g) for c, g in db.execute(
        "SELECT correlationId, globalTid FROM CUPTI_ACTIVITY_KIND_RUNTIME") if host(g, c)]
    nvtx = [(g,) for (g,) in db.execute(
        'SELECT globalTid FROM NVTX_EVENTS WHERE "end" IS NOT NULL AND eventType IN (59, 60)')
        if host(g, None)]
    gpu_corr = {c for _, _, c in gpu if c is not None}
    host_corr = {c for c, _ in runtime if c is not None}
    names = dict(db.execute("SELECT id, value FROM StringIds"))
    tnames = {}
    if "ThreadNames" in have:
        tnames = {g: names[n] for n, g in db.execute("SELECT nameId, globalTid FROM ThreadNames")}
    threads = sorted({g for _, g in runtime} | {g for (g,) in nvtx})
    return {
        "slices": len(runtime) + len(nvtx) + len(gpu),
        "flow_starts": sum(1 for c, _ in runtime if c in gpu_corr),
        "flow_ends": sum(1 for _, _, c in gpu if c in host_corr),
        "streams": {str(d): sorted({f"stream {s}" for dd, s, _ in gpu if dd == d})
                    for d in {d for d, _, _ in gpu}},
        "threads": [f"thread {g & 0xFFFFFF}" + (f" ({tnames[g]})" if g in tnames else "")
                    for g in threads],
    }


if __name__ == "__main__":
    if sys.argv[1:2] == ["--by-device"]:
        db = sqlite3.connect(sys.argv[2])
        devs = [d for (d,) in db.execute(
            "SELECT DISTINCT deviceId FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY 1")]
        print(json.dumps([figures(sys.argv[2], d) for d in devs]))
    else:
        print(json.dumps([figures(p) for p in sys.argv[1:]]))
