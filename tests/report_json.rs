//! `analyze --format json` streamed (#14): the per-step lists and `kernels_by_rank` are written
//! record by record (`report::json::write`) instead of building the whole document as a
//! `serde_json::Value`.
//! The streamed bytes must be those of the whole document (`report::json::flat_json`, the
//! serialized analysis reshaped), on every kind of input: GPU and CPU-only traces, DP
//! replicas, EP, vLLM, a real HTA trace, one rank in depth, and the command line's stdout.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{analyze_files, shared, Planted};
use rankprof::analyze::{Analysis, AnalyzeOptions};
use rankprof::report::json;
use serde_json::Value;

const PLANTED: Planted = Planted {
    ranks: 4,
    steps: 24,
    slow: 1,
    from: 9,
    factor: 1.3,
};

fn rank_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().contains(".json"))
        .collect();
    v.sort();
    v
}

/// Streamed and whole documents, byte for byte; returns the document parsed.
fn same_bytes(what: &str, a: &Analysis) -> Value {
    let streamed = rankprof::report::formats::json(a).unwrap();
    let whole = serde_json::to_string_pretty(&json::flat_json(a).unwrap()).unwrap() + "\n";
    assert!(
        streamed == whole,
        "{what}: streamed JSON differs from the whole document"
    );
    // The shell leaves exactly the streamed lists empty: the per-step lists and the record
    // per kernel and rank.
    let shell = json::shell(a).unwrap();
    assert_eq!(shell["kernels_by_rank"], Value::Array(Vec::new()), "{what}");
    for (top, key) in [
        ("steps", "rows"),
        ("steps", "by_rank"),
        ("attribution", "per_step"),
    ] {
        assert_eq!(
            shell[top][key],
            Value::Array(Vec::new()),
            "{what}: {top}.{key}"
        );
    }
    serde_json::from_str(&streamed).unwrap()
}

#[test]
fn streamed_json_is_the_whole_document_on_every_fixture() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    for name in [
        "sglang-tp4",
        "sglang-tp2dp2",
        "sglang-tp2pp2ep2",
        "vllm-tp2",
    ] {
        let files = rank_files(&root.join(name));
        let a = analyze_files(&files, |_| {});
        let v = same_bytes(name, &a);
        let rows = v["steps"]["rows"].as_array().unwrap().len();
        assert!(rows > 0, "{name}: no steps");
    }
    // Real traces: a CPU-only SGLang pair, HTA's A100 NCCL rank (also in depth) and its
    // sampled pair.
    let cpu = rank_files(&shared("sglang-cpu/tp2"));
    same_bytes("sglang-cpu/tp2", &analyze_files(&cpu, |_| {}));
    let nccl = [shared("hta/nccl-a100-rank-0.json.gz")];
    same_bytes("hta nccl", &analyze_files(&nccl, |_| {}));
    same_bytes(
        "hta nccl rank 0",
        &analyze_files(&nccl, |o| {
            o.rank = Some(rankprof::analyze::RankSel::Index(0))
        }),
    );
    let sampled: Vec<PathBuf> = ["sampled-rank-0", "sampled-rank-1"]
        .iter()
        .map(|n| shared(&format!("hta/{n}.json.gz")))
        .collect();
    same_bytes("hta sampled", &analyze_files(&sampled, |_| {}));
    // A real gloo run recorded with profile_memory: its `memory` list streamed in place.
    let mut mem = rank_files(&root.join("real-gloo/tp4-extra-memory"));
    mem.retain(|p| p.to_string_lossy().contains(".trace.json"));
    let v = same_bytes("tp4-extra-memory", &analyze_files(&mem, |_| {}));
    assert_eq!(v["memory"].as_array().map(Vec::len), Some(4));
}

#[test]
fn streamed_per_step_lists_hold_every_step_and_rank() {
    let dir = tempfile::tempdir().unwrap();
    let files = PLANTED.write_ranks(dir.path(), true);
    let a = analyze_files(&files, |_| {});
    let v = same_bytes("planted", &a);
    let (n, r) = (PLANTED.steps, PLANTED.ranks);
    let steps = v["steps"]["rows"].as_array().unwrap();
    assert_eq!(steps.len(), n);
    let by_rank = v["steps"]["by_rank"].as_array().unwrap();
    assert_eq!(by_rank.len(), n * r);
    // Record k is step k / r on rank k % r, in the table's rank order.
    let ranks = v["steps"]["ranks"].as_array().unwrap();
    for (k, rec) in by_rank.iter().enumerate() {
        assert_eq!(rec["step"], steps[k / r]["step"], "record {k}");
        assert_eq!(rec["rank"], ranks[k % r], "record {k}");
    }
    // Every step's work on every rank is the planted model's.
    for (k, rec) in by_rank.iter().enumerate() {
        let want = PLANTED.work(k % r, k / r);
        assert_eq!(rec["work_ns"].as_i64(), Some(want), "record {k}");
    }
    let per_step = v["attribution"]["per_step"].as_array().unwrap();
    assert_eq!(per_step.len(), n * r);

    // The command line streams the same bytes to stdout.
    let out = Command::new(env!("CARGO_BIN_EXE_rankprof"))
        .arg("analyze")
        .args(&files)
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let again = rankprof::analyze::analyze(&AnalyzeOptions {
        files: files.clone(),
        ..Default::default()
    })
    .unwrap();
    let expected = rankprof::report::formats::json(&again).unwrap();
    assert!(out.stdout == expected.as_bytes(), "stdout differs");
}
