#!/usr/bin/env bash
# Builds the seed corpora under fuzz/corpus/<target>/ from the repository's fixtures and, when
# present, /work/shared/fixtures (real Kineto traces, router answers). Every seed is < 100 KB.
# Idempotent: seeds are named by content; the fuzzer's own additions are left alone.
# Usage: fuzz/seed.sh [SHARED_FIXTURES_DIR]
set -euo pipefail
cd "$(dirname "$0")"
SHARED="${1:-/work/shared/fixtures}"
exec python3 - "$SHARED" <<'PY'
import gzip, hashlib, json, os, sys, glob, zlib

shared = sys.argv[1]
root = os.path.abspath("..")
MAX = 100_000

def put(target, data):
    if isinstance(data, str):
        data = data.encode()
    if len(data) > MAX:
        data = data[:MAX]
    d = os.path.join("corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "seed-" + hashlib.sha1(data).hexdigest()[:16]), "wb") as f:
        f.write(data)

fixtures = sorted(glob.glob(os.path.join(root, "fixtures", "*", "*.json.gz")))
hta = sorted(glob.glob(os.path.join(shared, "hta", "*.json.gz")))
router = sorted(glob.glob(os.path.join(shared, "router", "*.json")))

def small_trace(doc, n):
    """The header and the first n events of a parsed trace, as compact JSON."""
    if isinstance(doc, list):
        return json.dumps(doc[:n])
    d = dict(doc)
    d["traceEvents"] = d.get("traceEvents", [])[:n]
    return json.dumps(d)

# reader: the first byte picks the form (0 plain, 1 gzip-wrapped, 2 raw gzip stream).
for i, p in enumerate(fixtures + hta):
    raw = open(p, "rb").read()
    text = gzip.decompress(raw)
    if len(raw) < MAX and p in fixtures[::4] + hta:
        put("reader", b"\x02" + raw)
    doc = json.loads(text)
    put("reader", b"\x00" + small_trace(doc, 40).encode())
    put("reader", b"\x01" + small_trace(doc, 15).encode())
    # A truncated prefix (salvage) and a pretty-printed prefix (whitespace everywhere).
    put("reader", b"\x00" + text[: 4000 + 997 * i])
    if i % 3 == 0:
        put("reader", b"\x00" + json.dumps(json.loads(small_trace(doc, 10)), indent=1).encode())
put("reader", b'\x00[{"ph":"X","name":"a\x01b","ts":1,"dur":2,"pid":0,"tid":0},')
put("reader", b'\x00{"traceEvents":[{"ph":"i","ts":"x"},{"ph":"i","ts":2,"name":"b"}],"x":1}')
put("reader", b'\x00\xef\xbb\xbf{"baseTimeNanoseconds":1,"traceEvents":[]}')
# A header that lists a device, CPU ops by name (escaped, name not third), then a rank label.
put("reader", b'\x00{"deviceProperties": [{"id": 0}], "traceEvents": ['
    b'{"ph": "X", "cat": "cpu_op", "name": "keep", "pid": 1, "tid": 1, "ts": 1, "dur": 1},'
    b'{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 2, "dur": 1},'
    b'{"ph": "X", "cat": "cpu_op", "name": "k\\u0065ep", "pid": 1, "tid": 1, "ts": 3, "dur": 1},'
    b'{"ph": "X", "cat": "cpu_op", "pid": 1, "name": "late", "tid": 1, "ts": 4, "dur": 1},'
    b'{"ph": "M", "name": "process_name", "pid": "[TP00] 0", "tid": 0},'
    b'{"ph": "X", "cat": "cpu_op", "name": "after", "pid": "[TP00] 0", "tid": 1, "ts": 6, "dur": 1}]}')

# event: single event objects of every category seen, escapes and control bytes.
seen = set()
for p in fixtures + hta:
    doc = json.loads(gzip.decompress(open(p, "rb").read()))
    evs = doc if isinstance(doc, list) else doc.get("traceEvents", [])
    for e in evs:
        k = (e.get("ph"), e.get("cat"), tuple(sorted(e)))
        if k in seen:
            continue
        seen.add(k)
        put("event", json.dumps(e))
for s in [r'{"ph":"X","name":"a\"b\\c\u00e9\ud83d\ude00","ts":1.5,"dur":-0.0,"pid":"p","tid":null,"args":{"k":[1,{"x":true}]}}',
          '{"ph":"M","name":"a\x01b","args":{"name":"x\x1fy"}}', '"abc\\u12"', '"x\\/y"',
          '{"ph":"i","ts":1e3,"id":18446744073709551616}']:
    put("event", s)

# merge_output: byte 0 = one rank; odd byte = two ranks split at len*(b>>1)/127.
for p in fixtures:
    doc = json.loads(gzip.decompress(open(p, "rb").read()))
    a = small_trace(doc, 25).encode()
    put("merge_output", b"\x00" + a)
    b = small_trace(doc, 12).encode()
    both = a + b
    k = max(1, min(127, round(len(a) * 127 / len(both))))
    put("merge_output", bytes([(k << 1) | 1]) + both)

# discover_names: every fixture name and the naming forms discover.rs knows.
names = [os.path.basename(p) for p in fixtures + hta] + [
    "1790857300.25-TP-0-DP-1-PP-2-EP-3-DECODE.trace.json",
    "pre_dp1_pp0_tp3_dcp2_ep1_rank7.123.pt.trace.json.gz",
    "job-rank-12.99.pt.trace.json", "worker_3.json", "x.rank05-extra.pt.trace.json.gz",
    "[TP01-DP01].json", "RANK3.json",
]
for n in names:
    put("discover_names", n)

# workers: router answers (and the other router fixtures as negative examples).
for p in router:
    put("workers", open(p, "rb").read())
    put("loads", open(p, "rb").read())
# loads: SGLang /v1/loads and /get_load answers, /metrics pages of SGLang and vLLM.
for s in ['{"loads":[{"dp_rank":0,"num_running_reqs":3,"num_waiting_reqs":1,"num_used_tokens":900,"token_usage":0.2,"gen_throughput":41.5}]}',
          '[{"dp_rank":1,"num_reqs":4,"num_waiting_reqs":6,"num_tokens":12}]',
          '# TYPE sglang:num_running_reqs gauge\nsglang:num_running_reqs{dp_rank="0",model_name="m"} 3.0\nsglang:num_queue_reqs{dp_rank="1"} 7\n',
          'vllm:num_requests_running{engine="0",model_name="m"} 2\nvllm:kv_cache_usage_perc{engine="1"} 0.5\nvllm:generation_tokens_total{engine="0"} 1234\n']:
    put("loads", s)
for s in ['{"urls":["http://a:1","b:2@3"]}', '{"prefill":["http://p:1"],"decode":[{"url":"http://d:1"}]}',
          '["http://a:1@0","http://a:1@1"]', '{"workers":[{"worker_url":"h:1","type":{"Regular":{}}}]}']:
    put("workers", s)

# summary: a small valid summary (kind and version as summary.rs writes them) and variants.
steps = {"count": 2, "time_median_ns": 10, "time_p90_ns": 12, "busy_median_ns": 8,
         "busy_p90_ns": 9, "work_median_ns": 7, "work_p90_ns": 8, "class_median_ns": {"gemm": 5}}
rank = lambda r: {"rank": r, "device": "H100", "source": "f", "span_ns": 100, "busy_ns": 80,
                  "idle_ns": 20, "utilization_pct": 80.0, "compute_ns": 60, "comm_ns": 20,
                  "exposed_comm_ns": 5, "memcpy_memset_ns": 1, "kernels": 3, "kernel_sum_ns": 81,
                  "class_ns": {"gemm": 60}, "steps": steps}
summary = {
    "version": 1, "kind": "rankprof-summary",
    "profile": {"id": "p", "stage": None, "ranks": ["TP00", "TP01"], "source": "dir",
                "step_source": "ProfilerStep", "devices": ["H100", None]},
    "classes": ["gemm", "comm"],
    "overall": {"ranks": 2, "kernels": 6, "kernel_sum_ns": 162, "busy_ns_mean": 80,
                "busy_ns_max": 81, "work_ns_mean": 70, "work_ns_max": 71,
                "class_ns": {"gemm": 120}, "steps": steps},
    "ranks": [rank("TP00"), rank("TP01")],
    "kernels": [{"name": "k", "class": "gemm", "kind": "kernel", "total_ns": [1, 2], "count": [1, 1]}],
    "other_kernels": {"names": 0, "total_ns": [0, 0], "count": [0, 0]},
    "imbalance": {"balanced": False, "threshold_pct": 5.0, "metric": "work", "slowest": "TP01",
                  "excess_pct": 7.5, "work_max_over_mean": 1.07, "work_cv": 0.03,
                  "classes": [{"class": "gemm", "gap_ns": 10, "share_pct": 100.0}],
                  "onset": {"rank": "TP01", "rank_index": 1, "step": "s1", "step_index": 1,
                            "t_ms": 1.5, "excess_pct": 9.0},
                  "straggler": "TP01", "straggler_pct": 60.0},
}
put("summary", json.dumps(summary, indent=2))
s2 = json.loads(json.dumps(summary)); s2["imbalance"]["onset"] = None; s2["version"] = 2
put("summary", json.dumps(s2))
put("summary", '{"kind":"rankprof-summary"}')

# Inputs that once crashed a target (fuzz/regressions/<target>-*.bin), seeded into it so that
# every fuzz run replays them first, built as the fuzzer builds (debug assertions, overflow
# checks), which `cargo test --release --test fuzz_regressions` is not.
targets = [os.path.basename(d)[:-3] for d in glob.glob(os.path.join(root, "fuzz", "fuzz_targets", "*.rs"))]
for p in sorted(glob.glob(os.path.join(root, "fuzz", "regressions", "*.bin"))):
    name = os.path.basename(p)
    for t in targets:
        if name.startswith(t + "-"):
            put(t, open(p, "rb").read())
PY
