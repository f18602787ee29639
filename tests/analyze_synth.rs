//! `analyze` on the generated fixtures, whose imbalance is planted (fixtures/README.md,
//! fixtures/make.sh): the verdict must name the planted rank, class and onset step, and every
//! figure must equal the independent Python checker's.

mod common;

use std::path::PathBuf;

use common::{analyze_files, assert_matches_checker, checker};

fn set(dir: &str) -> Vec<PathBuf> {
    let d = rankprof::trace::discover(
        &PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures")
            .join(dir),
        false,
    )
    .unwrap();
    assert_eq!(d.groups.len(), 1, "{dir}");
    d.groups[0].files.iter().map(|f| f.path.clone()).collect()
}

/// (fixture, planted rank label, planted class, first slow step) as fixtures/make.sh plants them.
const PLANTED: &[(&str, &str, &str, &str)] = &[
    ("sglang-tp4", "TP02", "gemm", "5"),
    // Attention ×1.5 on DP replica 1's TP rank 1; replicas run different batches, so the
    // onset compares it with its own replica.
    ("sglang-tp2dp2", "TP01-DP01", "attention", "3"),
    // vLLM: all compute ×1.25 on rank 1; GEMM is the largest compute class there.
    ("vllm-tp2", "TP01", "gemm", "4"),
    ("sglang-tp2pp2ep2", "TP01-PP00-EP01", "moe", "2"),
];

#[test]
fn names_the_planted_rank_class_and_onset() {
    for &(dir, rank, class, step) in PLANTED {
        let a = analyze_files(&set(dir), |_| {});
        let v = &a.verdict;
        let onset = v
            .onset
            .as_ref()
            .unwrap_or_else(|| panic!("{dir}: no onset: {:?}", v.lines));
        assert_eq!(onset.rank, rank, "{dir}: {:?}", v.lines);
        assert_eq!(onset.step, step, "{dir}: {:?}", v.lines);
        assert_eq!(
            v.classes.first().map(|c| c.class.as_str()),
            Some(class),
            "{dir}: {:?}",
            v.lines
        );
        assert!(!v.balanced, "{dir}");
        assert!(
            v.lines
                .iter()
                .any(|l| l.contains(&format!("rank {rank} slower by"))
                    && l.contains(&format!("from step {step} "))),
            "{dir}: {:?}",
            v.lines
        );
    }
}

#[test]
fn balanced_control_set_has_no_onset() {
    let files = set_stage("sglang-bystage-tp2", "DECODE");
    let a = analyze_files(&files, |_| {});
    assert!(a.verdict.balanced, "{:?}", a.verdict.lines);
    assert!(a.verdict.onset.is_none());
}

fn set_stage(dir: &str, stage: &str) -> Vec<PathBuf> {
    let mut d = rankprof::trace::discover(
        &PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures")
            .join(dir),
        false,
    )
    .unwrap();
    d.select(None, Some(stage));
    d.groups[0].files.iter().map(|f| f.path.clone()).collect()
}

#[test]
fn generated_sets_match_the_checker() {
    for dir in ["sglang-tp4", "vllm-tp2"] {
        let files = set(dir);
        let a = analyze_files(&files, |_| {});
        assert_matches_checker(&a, &checker(&files, &[]));
    }
    // TP2 x DP2: collectives match within each DP replica, so each replica is checked on its
    // own two files (the set is in rank order: DP0's TP0, TP1, then DP1's).
    let files = set("sglang-tp2dp2");
    let a = analyze_files(&files, |_| {});
    for replica in files.chunks(2) {
        assert_matches_checker(&a, &checker(replica, &[]));
    }
}

#[test]
fn a_rank_cut_before_its_base_time_keeps_the_common_clock() {
    // Kineto writes baseTimeNanoseconds after the events: cut rank 1 in the middle.
    let t = tempfile::tempdir().unwrap();
    for f in set("sglang-tp4") {
        let dest = t.path().join(f.file_name().unwrap());
        if f.to_string_lossy().contains("-TP-1.") {
            let mut text = Vec::new();
            let (mut r, _) = rankprof::trace::read::reader::open(&f).unwrap();
            std::io::Read::read_to_end(&mut r, &mut text).unwrap();
            std::fs::write(&dest, &text[..text.len() / 2]).unwrap();
        } else {
            std::fs::copy(&f, &dest).unwrap();
        }
    }
    let files = set_in(t.path());
    // Compared although cut (by default it would be left out: `tests/analyze_cli.rs`).
    let a = analyze_files(&files, |o| o.keep_partial = true);
    assert!(a.damaged);
    assert!(
        a.notes
            .iter()
            .any(|n| n.contains("rank TP01 has no baseTimeNanoseconds")),
        "{:?}",
        a.notes
    );
    // Collective waits stay those of one clock: each rank waits less than the profile's span.
    let span = a
        .ranks
        .iter()
        .map(|r| r.figures.span_ns.get())
        .max()
        .unwrap();
    assert!(
        a.collectives
            .ranks
            .iter()
            .all(|r| r.wait_ns.get() >= 0 && r.wait_ns.get() < span),
        "{:?}",
        a.collectives.ranks
    );
    assert_eq!(a.verdict.slowest.as_deref(), Some("TP02"));
}

fn set_in(dir: &std::path::Path) -> Vec<PathBuf> {
    let d = rankprof::trace::discover(dir, false).unwrap();
    d.groups[0].files.iter().map(|f| f.path.clone()).collect()
}
