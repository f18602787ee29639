//! `analyze` in bounded memory (#14): GPU ops and launches spill to temporary files and are
//! folded from an external sort. Every test here runs with spools of a few records, so the
//! real traces take the spilling path, and with events written in another order than the file
//! had (real Kineto traces are already out of time order: GPU ops neither globally nor per
//! stream sorted, launches after their kernels). The figures must equal what the independent
//! checker `tests/check_analyze.py` computes, and not move when the order changes.

mod common;

use std::path::{Path, PathBuf};

use common::{analyze_files, assert_matches_checker, checker, shared, write_gz};
use rankprof::analyze::collect::spill;
use serde_json::Value;

/// Records each spool keeps in memory in these tests: every fixture spills many runs.
const TINY: usize = 7;

const GPU_FIXTURES: &[&str] = &[
    "hta/nccl-a100-rank-0.json.gz",
    "hta/sampled-rank-0.json.gz",
    "hta/sampled-rank-1.json.gz",
    "hta/rocm-mi250.json.gz",
    "hta/alexnet-single-gpu.json.gz",
    "hta/triton-example.json.gz",
];

fn is_gpu_op(e: &Value) -> bool {
    matches!(
        e["cat"].as_str(),
        Some("kernel" | "gpu_memcpy" | "gpu_memset")
    )
}

fn is_launch(e: &Value) -> bool {
    matches!(e["cat"].as_str(), Some("cuda_runtime" | "cuda_driver"))
}

/// Writes `src` with its GPU ops permuted among their own places (a deterministic shuffle)
/// and its runtime events (the launches) reversed among theirs; every other event stays.
/// Returns how many GPU ops moved.
fn write_reordered(src: &Path, dst: &Path) -> usize {
    let text = {
        use std::io::Read;
        let mut s = String::new();
        flate2::read::GzDecoder::new(std::fs::File::open(src).unwrap())
            .read_to_string(&mut s)
            .unwrap();
        s
    };
    let mut doc: Value = serde_json::from_str(&text).unwrap();
    let evs = doc["traceEvents"].as_array_mut().unwrap();
    let gpu: Vec<usize> = (0..evs.len()).filter(|&i| is_gpu_op(&evs[i])).collect();
    let launch: Vec<usize> = (0..evs.len()).filter(|&i| is_launch(&evs[i])).collect();
    let mut perm = gpu.clone();
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    for i in (1..perm.len()).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        perm.swap(i, (x % (i as u64 + 1)) as usize);
    }
    let old = evs.clone();
    for (&to, &from) in gpu.iter().zip(&perm) {
        evs[to] = old[from].clone();
    }
    for (&to, &from) in launch.iter().zip(launch.iter().rev()) {
        evs[to] = old[from].clone();
    }
    write_gz(dst, serde_json::to_string(&doc).unwrap().as_bytes());
    gpu.iter().zip(&perm).filter(|(a, b)| a != b).count()
}

/// The figures of an analysis, without what names the files.
fn figures(a: &rankprof::analyze::Analysis) -> Value {
    let mut v = serde_json::to_value(a).unwrap();
    let o = v.as_object_mut().unwrap();
    for k in ["files", "notes", "profile_id", "merged_trace"] {
        o.remove(k);
    }
    v
}

#[test]
fn spilled_figures_match_the_checker_on_every_gpu_fixture() {
    spill::set_cap(TINY);
    for f in GPU_FIXTURES {
        let files = [shared(f)];
        let a = analyze_files(&files, |_| {});
        assert_eq!(a.ranks[0].figures.source, "gpu", "{f}");
        assert_matches_checker(&a, &checker(&files, &[]));
    }
    let pair = [
        shared("hta/sampled-rank-0.json.gz"),
        shared("hta/sampled-rank-1.json.gz"),
    ];
    let a = analyze_files(&pair, |_| {});
    assert_matches_checker(&a, &checker(&pair, &[]));
    assert_eq!(a.collectives.matched, 10);
}

#[test]
fn events_out_of_order_give_the_same_figures() {
    spill::set_cap(TINY);
    let dir = tempfile::tempdir().unwrap();
    for f in GPU_FIXTURES {
        let src = shared(f);
        let dst: PathBuf = dir.path().join(Path::new(f).file_name().unwrap());
        let moved = write_reordered(&src, &dst);
        let a = analyze_files(&[src], |_| {});
        let b = analyze_files(std::slice::from_ref(&dst), |_| {});
        if a.ranks[0].figures.kernels > 10 {
            assert!(moved > 10, "{f}: only {moved} GPU ops moved");
        }
        assert_eq!(figures(&a), figures(&b), "{f}");
        assert_matches_checker(&b, &checker(&[dst], &[]));
    }
}

/// The repository's synthetic fixtures (many collectives per rank) and a real pair.
fn collective_sets() -> Vec<Vec<PathBuf>> {
    let mut sets: Vec<Vec<PathBuf>> = ["sglang-tp4", "sglang-tp2dp2", "vllm-tp2"]
        .iter()
        .map(|d| {
            common::rank_files(
                &Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("fixtures")
                    .join(d),
            )
        })
        .collect();
    sets.push(vec![
        shared("hta/sampled-rank-0.json.gz"),
        shared("hta/sampled-rank-1.json.gz"),
    ]);
    sets
}

/// The collectives spilled to the shared temporary file and matched from it in lockstep
/// (#14): the JSON report equals, byte for byte, that of the `rankprof` process, whose
/// spools keep everything in memory; so does the reduce of a partial saved and read back with
/// the tiny spools.
#[test]
fn spilled_collectives_give_the_in_memory_json() {
    use rankprof::analyze::{partial, phases, AnalyzeOptions};
    spill::set_cap(TINY);
    for files in collective_sets() {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_rankprof"));
        cmd.args(["analyze", "--format", "json"]).args(&files);
        let out = cmd.output().unwrap();
        assert!(matches!(out.status.code(), Some(0 | 3)), "{files:?}");
        let want = String::from_utf8(out.stdout).unwrap();
        let opts = AnalyzeOptions {
            files: files.clone(),
            ..Default::default()
        };
        let (classifier, _) = phases::rules(&opts).unwrap();
        let read = phases::read(
            &opts,
            rankprof::analyze::find(&opts).unwrap(),
            &classifier,
            None,
        )
        .unwrap();
        let ranks: Vec<_> = read.files.iter().flat_map(|f| &f.ranks).collect();
        let counts: Vec<usize> = ranks.iter().map(|r| r.colls.count()).collect();
        assert!(
            ranks
                .iter()
                .any(|r| r.colls.spilled() && r.colls.count() > TINY),
            "{files:?}: no rank's collectives spilled"
        );
        let a = phases::reduce(read, &classifier, &opts).unwrap();
        assert!(a.collectives.matched > 0, "{files:?}");
        let got = rankprof::report::formats::json(&a).unwrap();
        assert!(
            got == want,
            "{files:?}: JSON differs from the in-memory run"
        );

        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("all.partial.gz");
        partial::write(&p, &partial::read_partial(&opts, None).unwrap()).unwrap();
        // Read back streamed, the partial's collectives go to the spilling store again.
        let loaded = partial::load(&p).unwrap();
        let back: Vec<_> = loaded.read.files.iter().flat_map(|f| &f.ranks).collect();
        assert!(
            back.iter()
                .any(|r| r.colls.spilled() && r.colls.count() > TINY),
            "{files:?}: the partial's collectives were read back whole"
        );
        let back_counts: Vec<usize> = back.iter().map(|r| r.colls.count()).collect();
        assert_eq!(back_counts, counts, "{files:?}");
        let b = partial::analyze_partials(&[p], &opts).unwrap();
        let got = rankprof::report::formats::json(&b).unwrap();
        assert!(got == want, "{files:?}: JSON from the partial differs");
    }
}

/// CPU ops are spooled too (Kineto writes them all before the first GPU op, so a GPU trace
/// would otherwise hold every one of them until then): a CPU-only trace, whose figures come
/// from them, gives the checker's figures when they spilled.
#[test]
fn spilled_cpu_ops_give_the_checker_figures_on_cpu_only_traces() {
    spill::set_cap(TINY);
    for d in ["sglang-cpu/tp1", "sglang-cpu/tp2"] {
        let files = common::rank_files(&shared(d));
        assert!(!files.is_empty(), "{d}");
        let a = analyze_files(&files, |_| {});
        assert!(a.ranks.iter().all(|r| r.figures.source == "cpu"), "{d}");
        assert!(
            a.ranks.iter().all(|r| r.figures.kernels > TINY as u64),
            "{d}"
        );
        assert_matches_checker(&a, &checker(&files, &[]));
    }
}
