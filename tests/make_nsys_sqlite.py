#!/usr/bin/env python3
"""Builds Nsight Systems SQLite exports (`nsys export --type sqlite`) of a planted run, one per
rank, and the Kineto traces of the same run, for tests/nsys.rs. Python stdlib only.

The tables follow NVIDIA's "SQLite Export Schema Reference"
(https://docs.nvidia.com/nsight-systems/UserGuide/index.html#exporter-sqlite-schema), as
documented for Nsight Systems 2024.x (export schema 3.x): StringIds(id, value);
CUPTI_ACTIVITY_KIND_KERNEL with demangledName/shortName/mangledName as ids into StringIds;
CUPTI_ACTIVITY_KIND_RUNTIME with nameId; NVTX_EVENTS with both `text` and `textId`;
TARGET_INFO_GPU, TARGET_INFO_SESSION_START_TIME(utcEpochNs), META_DATA_EXPORT(name, value).
Only a subset of each table's columns is written (real exports have more; the reader picks
columns by name). Two variants:

- `v3` (2024.x): as above; names of NVTX ranges through `textId`; memcpy and memset rows;
  the session start present, so times land on the wall clock.
- `v2` (2021.5's layout): no `mangledName`, NVTX text inline (no `textId` column), no
  META_DATA_EXPORT, no TARGET_INFO_SESSION_START_TIME (times stay session-relative),
  TARGET_INFO_GPU without `cuDevice`, no memset table.

The plant (the same arithmetic as tests/common's `Planted`): RANKS ranks, STEPS steps of
10 ms (NVTX `ProfilerStep#N` ranges); per step a gemm (3 ms; 1.5x on rank SLOW from step
FROM), an attention kernel (2 ms) and a norm (0.5 ms) on stream 7, launched 6 ms before they
run (the GPU lags the CPU, so only the launch correlation puts them in their step), then an
NCCL all-reduce on stream 20 that starts when the rank's compute ends and ends on every rank
0.2 ms after the last rank's compute ends. `v3` adds per step a 100 us HtoD memcpy and a 50 us
memset before the kernels, and runtime calls and NVTX marks the reader must skip.

`v3` also names the host process and thread (PROCESSES, ThreadNames). `--multi-gpu NAME` writes
one export NAME.sqlite of every rank instead, as one nsys over a single-node run writes it: rank
r is process 1234+r on GPU r (`deviceId` r), correlation ids repeat across processes (CUPTI's
are per process), one StringIds.

`--one-process NAME` (v3) writes one export NAME.sqlite of a single process (pid 4321) driving
every GPU (a single controller, DataParallel): GPU r's work as rank r's above, launched by a
worker thread of its own (tid 4322+r) that also holds a `replica{r}` NVTX range per step and
launches one stray 10 us memset per step onto the next GPU (it still launched most onto its
own); the main thread (tid 4321) holds the `ProfilerStep#N` ranges and launches nothing (one
cudaDeviceSynchronize per step); a helper thread (tid 4331) launches one 20 us PtoP memcpy per
step onto GPU 0 and one onto GPU 1 (evenly: it goes to both) inside its `p2p` range. The
correlation ids are unique within the process (CUPTI's are per process).

`--nccl-ranges ok|bad` (v3) adds NCCL's own NVTX ranges with their binary payloads, as an
export of a run under NCCL >= 2.19 holds them (without the flag the outputs are unchanged, byte
for byte). What is assumed, and from where:
- NCCL pushes one range per API call, named after the function, in the NVTX domain `NCCL`
  (NVIDIA/nccl src/include/nvtx.h); its payload structs and their schema entries are NVIDIA/nccl
  src/include/nvtx_payload_schemas.h: all-reduce {uint64 comm "NCCL communicator ID"; size_t
  bytes "Message size [bytes]"; ncclRedOp_t op "Reduction operation"} (24 bytes), all-gather
  {comm; bytes} (16 bytes, the *send* size: one rank's share); entry types from NVTX's
  nvToolsExtPayload.h (18 uint64, 22 size_t, 5 int).
- In the export (Nsight Systems 2026.4, schema 3.28.1, as recorded in docs/nsys.md): the domain
  is named by an NVTX_EVENTS row of eventType 75 and text 'NCCL' whose domainId the ranges
  carry; the payload is NVTX_EVENTS.binaryData; the schemas are NVTX_PAYLOAD_SCHEMAS(domainId,
  schemaId, name, type, flags, numEntries, payloadSize, alignTo) and
  NVTX_PAYLOAD_SCHEMA_ENTRIES(domainId, schemaId, idx, flags, type, name, description,
  arrayOrUnionDetail, offset). The schema ids here (0x10001, 0x10002) are arbitrary.
- The blob: a 32-byte little-endian header (domainId u32, u32 0, schemaId u32, u32 0,
  payloadSize u64, totalSize u64) then the struct. NOT documented by NVIDIA ("see docs for
  format"): it is how a third-party reader decodes it (GindaChen/nsys-ai,
  nccl_payload_breakdown.py). Unconfirmed.
Per step, the all-reduce's launch lies inside an `ncclAllReduce` range of communicator
COMM_AR with NCCL_BYTES(s) bytes; a 50 us all-gather (communicator COMM_AG, stream 20, before the
compute) inside an `ncclAllGather` range; the last step's all-reduce is grouped: its
`ncclAllReduce` range ends before the launch, which lies in `ncclGroupEnd`. `bad`: every blob's
header gives a payload size 8 bytes short of its schema's (must not be used).

usage: make_nsys_sqlite.py OUT_DIR [--variant v3|v2] [--kineto DIR] [--names rank|profile]
       [--steps N] [--ranks N] [--multi-gpu NAME] [--one-process NAME] [--nccl-ranges ok|bad]
"""

import argparse
import json
import os
import sqlite3
import struct

RANKS, STEPS, SLOW, FROM, FACTOR = 4, 8, 2, 3, 1.5
STEP_NS, LAG_NS = 10_000_000, 6_000_000
GEMM_NS, ATTN_NS, NORM_NS, TAIL_NS = 3_000_000, 2_000_000, 500_000, 200_000
BASE_NS = 1_700_000_000_000_000_000
COPY_AT, COPY_NS, SET_AT, SET_NS = 1_000_000, 100_000, 1_200_000, 50_000
GPU_NAME = "NVIDIA H100 80GB HBM3"
NCCL_RANGES = None  # --nccl-ranges: None, "ok" or "bad"
NCCL_DOMAIN, AR_SCHEMA, AG_SCHEMA = 3, 0x10001, 0x10002
COMM_AR, COMM_AG = 0x9E3779B97F4A7C15, 0x2545F4914F6CDD1D
AG_BYTES = 1 << 16


def NCCL_BYTES(s):
    return (1 << 20) * (s + 1)


def nccl_blob(schema, body):
    """The payload as the export holds it (the third-party header, then the struct)."""
    size = len(body) - (8 if NCCL_RANGES == "bad" else 0)
    return struct.pack("<IIIIQQ", NCCL_DOMAIN, 0, schema, 0, size, 32 + len(body)) + body

GEMM = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1"
ATTN = ("void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 64, 64, 4, false, false, "
        "cutlass::bfloat16_t> >(Flash_fwd_params)")
NORM = ("void vllm::rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, c10::BFloat16 const*, "
        "float, int, int)")
NCCL = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
AG = "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
SHORT = {GEMM: GEMM, ATTN: "flash_fwd_kernel", NORM: "rms_norm_kernel",
         NCCL: "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", AG: "ncclDevKernel_AllGather_RING_LL"}


def gemm(r, s):
    return round(GEMM_NS * FACTOR) if r == SLOW and s >= FROM else GEMM_NS


def work(r, s):
    return gemm(r, s) + ATTN_NS + NORM_NS


def gpu_start(r, s):
    return s * STEP_NS + LAG_NS + r * 1_000


def allreduce(r, s):
    end = max(gpu_start(q, s) + work(q, s) for q in range(RANKS)) + TAIL_NS
    return gpu_start(r, s) + work(r, s), end


def rank_rows(r, variant):
    """The rows of rank r: dicts by table (ns relative to the session start)."""
    pid, tid = 1234 + r, 1234 + r
    gtid = (pid << 24) | tid
    gpid = pid << 24
    rows = {"kernel": [], "runtime": [], "nvtx": [], "memcpy": [], "memset": [], "nccl": []}
    corr = 1000
    for s in range(STEPS):
        t0 = s * STEP_NS
        rows["nvtx"].append((t0, t0 + STEP_NS, f"ProfilerStep#{s}", gtid))
        if variant == "v3":
            corr += 1
            rows["runtime"].append((t0 + 50_000, t0 + 55_000, "cudaMemcpyAsync_v3020", corr, gtid))
            rows["memcpy"].append((t0 + COPY_AT, t0 + COPY_AT + COPY_NS, corr, 7, 1, 1 << 20, gpid))
            corr += 1
            rows["runtime"].append((t0 + 60_000, t0 + 65_000, "cudaMemsetAsync_v3020", corr, gtid))
            rows["memset"].append((t0 + SET_AT, t0 + SET_AT + SET_NS, corr, 7, 4096, gpid))
            # Not a launch: the reader must skip it.
            rows["runtime"].append((t0 + 70_000, t0 + 80_000, "cudaStreamSynchronize_v3020", 0, gtid))
        t = gpu_start(r, s)
        for k, (name, dur) in enumerate([(GEMM, gemm(r, s)), (ATTN, ATTN_NS), (NORM, NORM_NS)]):
            corr += 1
            launch = t0 + 100_000 + k * 20_000
            rows["runtime"].append((launch, launch + 5_000, "cudaLaunchKernel_v7000", corr, gtid))
            rows["kernel"].append((t, t + dur, corr, 7, name, gpid))
            t += dur
        corr += 1
        a, b = allreduce(r, s)
        rows["runtime"].append((t0 + 200_000, t0 + 205_000, "cudaLaunchKernel_v7000", corr, gtid))
        rows["kernel"].append((a, b, corr, 20, NCCL, gpid))
        if NCCL_RANGES:
            nccl_rows(rows, s, t0, gtid, gpid, corr)
    return rows


def nccl_rows(rows, s, t0, gtid, gpid, corr):
    """NCCL's ranges around step s's all-reduce launch (at t0 + 200 us), and an all-gather."""
    ar = nccl_blob(AR_SCHEMA, struct.pack("<QQiI", COMM_AR, NCCL_BYTES(s), 0, 0))
    if s < STEPS - 1:
        rows["nccl"].append((t0 + 195_000, t0 + 208_000, "ncclAllReduce", gtid, ar))
    else:  # grouped: the kernel is launched in ncclGroupEnd, outside the call's range
        rows["nccl"].append((t0 + 180_000, t0 + 181_000, "ncclGroupStart", gtid, None))
        rows["nccl"].append((t0 + 182_000, t0 + 185_000, "ncclAllReduce", gtid, ar))
        rows["nccl"].append((t0 + 195_000, t0 + 208_000, "ncclGroupEnd", gtid, None))
    ag = nccl_blob(AG_SCHEMA, struct.pack("<QQ", COMM_AG, AG_BYTES))
    c = corr + 500_000
    rows["nccl"].append((t0 + 150_000, t0 + 160_000, "ncclAllGather", gtid, ag))
    rows["runtime"].append((t0 + 152_000, t0 + 157_000, "cudaLaunchKernel_v7000", c, gtid))
    g = s * STEP_NS + LAG_NS - 200_000
    rows["kernel"].append((g, g + 50_000, c, 20, AG, gpid))


class Strings:
    def __init__(self):
        self.ids = {}

    def __call__(self, s):
        if s not in self.ids:
            self.ids[s] = len(self.ids) + 1
        return self.ids[s]


def write_export(path, ranks, variant, rows_of=None):
    """One export holding `ranks` (each its own process; with several, rank r on GPU r).
    `rows_of(r)`: the rows of rank r (default `rank_rows`); a GPU row may name its own device
    as one more element."""
    rows_of = rows_of or (lambda r: rank_rows(r, variant))
    if os.path.exists(path):
        os.remove(path)
    db = sqlite3.connect(path)
    db.execute("PRAGMA journal_mode = OFF")
    db.execute("PRAGMA synchronous = OFF")
    c = db.cursor()
    sid = Strings()
    v3 = variant == "v3"
    c.execute("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL)")
    names = "demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL" + (
        ", mangledName INTEGER" if v3 else "")
    c.execute(
        "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL, "
        "deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, "
        "correlationId INTEGER, globalPid INTEGER, " + names + ", gridX INTEGER NOT NULL, "
        "gridY INTEGER NOT NULL, gridZ INTEGER NOT NULL, blockX INTEGER NOT NULL, "
        "blockY INTEGER NOT NULL, blockZ INTEGER NOT NULL, registersPerThread INTEGER NOT NULL)")
    c.execute(
        "CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL, "
        "eventClass INTEGER NOT NULL, globalTid INTEGER, correlationId INTEGER, "
        "nameId INTEGER NOT NULL, returnValue INTEGER NOT NULL, callchainId INTEGER)")
    c.execute(
        "CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, end INTEGER NOT NULL, "
        "deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, "
        "correlationId INTEGER, globalPid INTEGER, bytes INTEGER NOT NULL, "
        "copyKind INTEGER NOT NULL, srcKind INTEGER, dstKind INTEGER)")
    if v3:
        c.execute(
            "CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER NOT NULL, end INTEGER NOT NULL, "
            "deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, "
            "correlationId INTEGER, globalPid INTEGER, value INTEGER NOT NULL, "
            "bytes INTEGER NOT NULL, memKind INTEGER)")
        c.execute(
            "CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, "
            "eventType INTEGER NOT NULL, rangeId INTEGER, category INTEGER, color INTEGER, "
            "text TEXT, globalTid INTEGER, endGlobalTid INTEGER, textId INTEGER, "
            "domainId INTEGER, uint64Value INTEGER, jsonTextId INTEGER, jsonText TEXT"
            + (", binaryData BLOB)" if NCCL_RANGES else ")"))
        if NCCL_RANGES:
            write_nccl_schemas(c)
        c.execute(
            "CREATE TABLE TARGET_INFO_GPU (vmId INTEGER NOT NULL, id INTEGER NOT NULL, "
            "name TEXT, busLocation TEXT, totalMemory INTEGER, smCount INTEGER, "
            "chipName TEXT, cuDevice INTEGER)")
        c.execute("CREATE TABLE TARGET_INFO_SESSION_START_TIME (utcEpochNs INTEGER, "
                  "utcTime TEXT, localTime TEXT)")
        c.execute("INSERT INTO TARGET_INFO_SESSION_START_TIME VALUES (?, ?, ?)",
                  (BASE_NS, "2023-11-14T22:13:20Z", "2023-11-14T22:13:20"))
        c.execute("CREATE TABLE META_DATA_EXPORT (name TEXT, value TEXT)")
        c.executemany("INSERT INTO META_DATA_EXPORT VALUES (?, ?)", [
            ("EXPORT_SCHEMA_VERSION", "3.11.1"), ("EXPORT_PRODUCT_VERSION", "2024.5.1"),
            ("EXPORT_TIME_UNIT", "ns")])
        for d in devices(ranks):
            c.execute("INSERT INTO TARGET_INFO_GPU VALUES (0, ?, ?, ?, 85899345920, "
                      "132, 'GH100', ?)", (d, GPU_NAME, f"0000:{0x18 + d:02x}:00.0", d))
    else:
        c.execute(
            "CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, "
            "eventType INTEGER NOT NULL, rangeId INTEGER, category INTEGER, color INTEGER, "
            "text TEXT, globalTid INTEGER, endGlobalTid INTEGER, domainId INTEGER)")
        c.execute(
            "CREATE TABLE TARGET_INFO_GPU (id INTEGER NOT NULL, name TEXT, busLocation TEXT, "
            "totalMemory INTEGER, smCount INTEGER)")
        for d in devices(ranks):
            c.execute("INSERT INTO TARGET_INFO_GPU VALUES (?, ?, ?, 85899345920, 132)",
                      (d, GPU_NAME, f"0000:{0x18 + d:02x}:00.0"))
    if v3:
        c.execute("CREATE TABLE PROCESSES (globalPid INTEGER, pid INTEGER, name TEXT)")
        c.execute("CREATE TABLE ThreadNames (nameId INTEGER NOT NULL, priority INTEGER, "
                  "globalTid INTEGER)")
    for r in ranks:
        dev = r if len(ranks) > 1 else 0
        rows = rows_of(r)
        on = lambda rest: rest[0] if rest else dev  # noqa: E731
        for (a, b, corr, stream, name, gpid, *rest) in rows["kernel"]:
            cols = [a, b, on(rest), 1, stream, corr, gpid, sid(name), sid(SHORT[name])]
            if v3:
                cols.append(sid("_Z" + SHORT[name]))
            cols += [132, 1, 1, 128, 1, 1, 96]
            c.execute(f"INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES ({','.join('?' * len(cols))})",
                      cols)
        for (a, b, name, corr, gtid) in rows["runtime"]:
            c.execute("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, 1, ?, ?, ?, 0, NULL)",
                      (a, b, gtid, corr, sid(name)))
        for (a, b, corr, stream, kind, n, gpid, *rest) in rows["memcpy"]:
            c.execute("INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (?, ?, ?, 1, ?, ?, ?, ?, ?, 0, 1)",
                      (a, b, on(rest), stream, corr, gpid, n, kind))
        for (a, b, corr, stream, n, gpid, *rest) in rows["memset"]:
            c.execute("INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET VALUES (?, ?, ?, 1, ?, ?, ?, 0, ?, 1)",
                      (a, b, on(rest), stream, corr, gpid, n))
        gtid = rows.get("main", (1234 + r) << 24 | (1234 + r))
        for (a, b, text, g) in rows["nvtx"]:
            if v3:
                # 59: NvtxPushPopRange, its text through StringIds (textId).
                c.execute("INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, textId, "
                          "domainId) VALUES (?, ?, 59, NULL, ?, ?, 0)", (a, b, g, sid(text)))
            else:
                c.execute("INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, domainId) "
                          "VALUES (?, ?, 59, ?, ?, 0)", (a, b, text, g))
        # A mark (34, no end) and a domain's creation (75): not ranges, never steps.
        c.execute("INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid) "
                  "VALUES (5, NULL, 34, 'ProfilerStep#99', ?)", (gtid,))
        if NCCL_RANGES and v3:
            c.execute("INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, domainId) "
                      "VALUES (1, NULL, 75, 'NCCL', ?, ?)", (gtid, NCCL_DOMAIN))
            for (a, b, text, g, blob) in rows["nccl"]:
                c.execute("INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, "
                          "domainId, binaryData) VALUES (?, ?, 59, ?, ?, ?, ?)",
                          (a, b, text, g, NCCL_DOMAIN, blob))
        else:
            c.execute("INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid) "
                      "VALUES (1, NULL, 75, 'NCCL', ?)", (gtid,))
        if v3 and rows.get("first", True):
            # The host process's and thread's names (what a viewer labels them with).
            c.execute("INSERT INTO PROCESSES VALUES (?, ?, 'python3')", ((gtid >> 24) << 24,
                                                                         gtid >> 24))
            c.execute("INSERT INTO ThreadNames VALUES (?, 0, ?)", (sid("pt_main_thread"), gtid))
    c.executemany("INSERT INTO StringIds VALUES (?, ?)", [(i, s) for s, i in sid.ids.items()])
    db.commit()
    db.close()


def write_nccl_schemas(c):
    """NVTX_PAYLOAD_SCHEMAS / _ENTRIES of NCCL's all-reduce and all-gather payloads."""
    c.execute("CREATE TABLE NVTX_PAYLOAD_SCHEMAS (domainId INTEGER, schemaId INTEGER, name TEXT, "
              "type INTEGER, flags INTEGER, numEntries INTEGER, payloadSize INTEGER, "
              "alignTo INTEGER)")
    c.execute("CREATE TABLE NVTX_PAYLOAD_SCHEMA_ENTRIES (domainId INTEGER, schemaId INTEGER, "
              "idx INTEGER, flags INTEGER, type INTEGER, name TEXT, description TEXT, "
              "arrayOrUnionDetail INTEGER, offset INTEGER)")
    for sid, name, size, entries in [
            (AR_SCHEMA, "NcclNvtxParamsAllReduce", 24,
             [(18, "NCCL communicator ID", 0), (22, "Message size [bytes]", 8),
              (0x10100, "Reduction operation", 16)]),
            (AG_SCHEMA, "NcclNvtxParamsAllGather", 16,
             [(18, "NCCL communicator ID", 0), (22, "Message size [bytes]", 8)])]:
        c.execute("INSERT INTO NVTX_PAYLOAD_SCHEMAS VALUES (?, ?, ?, 1, 0, ?, ?, 8)",
                  (NCCL_DOMAIN, sid, name, len(entries), size))
        for i, (ty, en, off) in enumerate(entries):
            c.execute("INSERT INTO NVTX_PAYLOAD_SCHEMA_ENTRIES VALUES (?, ?, ?, 0, ?, ?, NULL, 0, ?)",
                      (NCCL_DOMAIN, sid, i, ty, en, off))


ONE_PID = 4321


def one_process_rows(r):
    """GPU r's rows in the single process driving every GPU (`--one-process`)."""
    gpid = ONE_PID << 24
    main, worker, helper = gpid | ONE_PID, gpid | (ONE_PID + 1 + r), gpid | (ONE_PID + 10)
    base = r * 1_000_000  # correlation ids unique within the process
    src = rank_rows(r, "v3")
    rows = {"main": main, "first": r == 0, "nvtx": [], "runtime": [],
            "kernel": [(a, b, base + c, st, n, gpid) for (a, b, c, st, n, _) in src["kernel"]],
            "memcpy": [(a, b, base + c, st, k, n, gpid) for (a, b, c, st, k, n, _) in src["memcpy"]],
            "memset": [(a, b, base + c, st, n, gpid) for (a, b, c, st, n, _) in src["memset"]]}
    rows["runtime"] = [(a, b, n, base + c if c else 0, worker) for (a, b, n, c, _) in src["runtime"]]
    for (a, b, text, _) in src["nvtx"]:
        s = int(text.split("#")[1])
        rows["nvtx"].append((a, b, f"replica{r}", worker))
        if r == 0:
            rows["nvtx"].append((a, b, text, main))
            rows["runtime"].append((a + 9_000_000, a + 9_100_000,
                                    "cudaDeviceSynchronize_v3020", 0, main))
        # One stray memset onto the next GPU, launched by this GPU's worker.
        corr = base + 900_000 + s
        t = a + 1_400_000
        rows["runtime"].append((a + 90_000, a + 95_000, "cudaMemsetAsync_v3020", corr, worker))
        rows["memset"].append((t, t + 10_000, corr, 9, 256, gpid, (r + 1) % RANKS))
        if r == 0:
            # The helper's peer copies onto GPUs 0 and 1, inside its `p2p` range.
            rows["nvtx"].append((a + 1_550_000, a + 1_700_000, "p2p", helper))
            for d in (0, 1):
                corr = 9_000_000 + 10 * s + d
                rows["runtime"].append((a + 1_560_000 + d * 10_000, a + 1_565_000 + d * 10_000,
                                        "cudaMemcpyPeerAsync_v4000", corr, helper))
                t = a + 1_600_000 + d * 30_000
                rows["memcpy"].append((t, t + 20_000, corr, 11, 10, 1 << 16, gpid, d))
    return rows


def devices(ranks):
    return list(ranks) if len(ranks) > 1 else [0]


def us(ns):
    return f"{ns // 1000}.{ns % 1000:03d}"


def write_kineto(path, r, variant):
    """The same run as Kineto writes it (the events the exports' rows stand for)."""
    rows = rank_rows(r, variant)
    ev = []
    for (a, b, text, _) in rows["nvtx"]:
        ev.append({"ph": "X", "cat": "user_annotation", "name": text, "pid": 1234 + r, "tid": 1,
                   "ts": us(a), "dur": us(b - a)})
    for (a, b, name, corr, _) in rows["runtime"]:
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": name.rsplit("_v", 1)[0],
                   "pid": 1234 + r, "tid": 1, "ts": us(a), "dur": us(b - a),
                   "args": {"correlation": corr}})
    for (a, b, corr, stream, name, _) in rows["kernel"]:
        ev.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": stream,
                   "ts": us(a), "dur": us(b - a),
                   "args": {"device": 0, "stream": stream, "correlation": corr}})
    for (a, b, corr, stream, _k, n, _) in rows["memcpy"]:
        ev.append({"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD", "pid": 0,
                   "tid": stream, "ts": us(a), "dur": us(b - a),
                   "args": {"device": 0, "stream": stream, "correlation": corr, "bytes": n}})
    for (a, b, corr, stream, n, _) in rows["memset"]:
        ev.append({"ph": "X", "cat": "gpu_memset", "name": "Memset (Device)", "pid": 0,
                   "tid": stream, "ts": us(a), "dur": us(b - a),
                   "args": {"device": 0, "stream": stream, "correlation": corr, "bytes": n}})
    # Kineto writes ts as numbers: the strings above are spliced in unquoted.
    text = json.dumps({"schemaVersion": 1,
                       "deviceProperties": [{"id": 0, "name": GPU_NAME}],
                       "traceEvents": ev,
                       "baseTimeNanoseconds": BASE_NS})
    import re
    text = re.sub(r'"(ts|dur)": "(-?\d+\.\d{3})"', r'"\1": \2', text)
    with open(path, "w") as f:
        f.write(text)


def main():
    global STEPS, RANKS, NCCL_RANGES
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--variant", choices=["v3", "v2"], default="v3")
    ap.add_argument("--kineto", help="also write the Kineto traces of the same run here")
    ap.add_argument("--steps", type=int, default=STEPS,
                    help="steps per rank (large values: a memory check of the reader)")
    ap.add_argument("--ranks", type=int, default=RANKS)
    ap.add_argument("--names", choices=["rank", "profile"], default="rank",
                    help="rank{r}.sqlite, or profile_{r}.sqlite (nsys -o profile_%%q{RANK})")
    ap.add_argument("--multi-gpu", metavar="NAME",
                    help="instead of one export per rank, one export NAME.sqlite holding every "
                         "rank (a single-node run under one nsys: rank r a process on GPU r)")
    ap.add_argument("--one-process", metavar="NAME",
                    help="one export NAME.sqlite of a single process driving every GPU")
    ap.add_argument("--nccl-ranges", choices=["ok", "bad"],
                    help="v3: NCCL's own NVTX ranges with payloads (bad: blobs that must not "
                         "validate)")
    a = ap.parse_args()
    STEPS, RANKS, NCCL_RANGES = a.steps, a.ranks, a.nccl_ranges
    os.makedirs(a.out, exist_ok=True)
    if a.multi_gpu:
        write_export(os.path.join(a.out, a.multi_gpu + ".sqlite"), list(range(RANKS)), a.variant)
    if a.one_process:
        write_export(os.path.join(a.out, a.one_process + ".sqlite"), list(range(RANKS)), "v3",
                     one_process_rows)
        return
    for r in range(RANKS):
        name = f"rank{r}.sqlite" if a.names == "rank" else f"profile_{r}.sqlite"
        if not a.multi_gpu:
            write_export(os.path.join(a.out, name), [r], a.variant)
        if a.kineto:
            os.makedirs(a.kineto, exist_ok=True)
            write_kineto(os.path.join(a.kineto, f"rank{r}.trace.json"), r, a.variant)


if __name__ == "__main__":
    main()
