//! `analyze --rank LABEL|INDEX` drills down against the peers (#43 item 6): the whole profile
//! is analyzed, and the named rank's classes, kernels, steps and collectives are set against
//! its peers' median. A TP=4 synthetic set with TP01's GEMMs planted ×1.3: `--rank TP01` (or
//! `--rank 1`) lists gemm first and the GEMM kernels first, each at ≈ 1.3× (checked against
//! the planted factor and, figure by figure, against tests/check_drill.py, which reads the
//! traces itself); `--rank TP02` says it is in line with its peers. Also the command line's
//! terminal, JSON and markdown forms.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use rankprof::analyze::{analyze, Analysis, AnalyzeOptions, RankSel};
use rankprof::synth::catalog::Class;
use rankprof::synth::{write_set, Slow, SynthOptions};
use serde_json::Value;

const FACTOR: f64 = 1.3;

fn plant(dir: &Path) -> Vec<PathBuf> {
    let cfg = SynthOptions {
        tp: 4,
        steps: 8,
        layers: 2,
        seed: 1,
        slow: Some(Slow {
            rank: 1,
            factor: FACTOR,
            from_step: 0,
            class: Some(Class::Gemm),
        }),
        ..SynthOptions::default()
    };
    write_set(&cfg, dir).expect("synth");
    common::rank_files(dir)
}

fn drill(dir: &Path, rank: &str) -> Analysis {
    analyze(&AnalyzeOptions {
        profile_dir: Some(dir.to_path_buf()),
        rank: Some(RankSel::parse(rank)),
        ..Default::default()
    })
    .unwrap_or_else(|e| panic!("analyze --rank {rank}: {e:#}"))
}

fn close(x: f64, y: f64, tol: f64, what: &str) {
    assert!((x - y).abs() <= tol, "{what}: {x} vs {y}");
}

#[test]
fn the_culprit_shows_the_planted_class_first_and_a_healthy_rank_is_in_line() {
    let t = tempfile::tempdir().unwrap();
    let files = plant(t.path());
    assert_eq!(files.len(), 4);
    let a = drill(t.path(), "TP01");
    assert_eq!(a.ranks.len(), 4, "the whole profile is analyzed");
    let d = a.drill.as_ref().expect("a drill-down");
    assert_eq!((d.rank.as_str(), d.peer_count), ("TP01", 3));
    assert_eq!(d.peers, "TP00, TP02, TP03");
    // The planted class leads, at the planted factor; the other compute classes are even.
    assert_eq!(d.classes[0].name, "gemm");
    close(d.classes[0].ratio.unwrap(), FACTOR, 0.02, "gemm ratio");
    for c in &d.classes[1..] {
        if c.name != "comm" {
            close(c.ratio.unwrap_or(1.0), 1.0, 0.02, &c.name);
        }
    }
    // The GEMM kernels come first, each ≈ the factor; every other kernel is even.
    let gemms = d
        .kernels
        .iter()
        .take_while(|k| k.class.as_deref() == Some("gemm"))
        .count();
    assert!(
        gemms >= 4,
        "{:?}",
        d.kernels.iter().map(|k| &k.short).collect::<Vec<_>>()
    );
    for k in &d.kernels {
        let want = if k.class.as_deref() == Some("gemm") {
            FACTOR
        } else {
            1.0
        };
        close(k.ratio.unwrap(), want, 0.03, &k.short);
    }
    assert!(d.kernels.iter().all(|k| k.class.as_deref() != Some("comm")));
    assert!(!d.in_line);
    assert!(
        d.summary.contains("differs most in gemm: 1.30×"),
        "{}",
        d.summary
    );
    assert!(!d.verdict.is_empty());
    assert!(
        d.verdict.iter().all(|l| l.contains("rank TP01")),
        "{:?}",
        d.verdict
    );
    assert_eq!(d.steps.len(), 8);
    for s in &d.steps {
        assert!(s.ratio.unwrap() > 1.1, "step {}: {:?}", s.name, s.ratio);
    }
    // It arrived last at (nearly) every collective; its peers never did.
    let last = d
        .collectives
        .iter()
        .find(|c| c.name.starts_with("arrived last"))
        .expect("arrivals");
    assert!(last.rank >= 28.0 && last.peers_median == 0.0, "{last:?}");

    // Figure by figure against the traces.
    if common::have_python("check_drill.py") {
        let mut order = files.clone();
        let me = order.remove(1);
        order.insert(0, me);
        let c = common::python_json("tests/check_drill.py", &[], &order);
        for k in &d.kernels {
            let ck = &c["kernels"][&k.name];
            assert_eq!(ck["rank"].as_f64(), Some(k.rank), "{}", k.name);
            close(
                ck["median"].as_f64().unwrap(),
                k.peers_median,
                1e-6,
                &k.name,
            );
            close(
                ck["ratio"].as_f64().unwrap(),
                k.ratio.unwrap(),
                1e-9,
                &k.name,
            );
        }
        close(
            c["gemm"]["ratio"].as_f64().unwrap(),
            d.classes[0].ratio.unwrap(),
            1e-9,
            "gemm over the GEMM kernels",
        );
    }

    // By index: the same rank; a healthy rank is in line with its peers.
    let b = drill(t.path(), "1");
    assert_eq!(b.drill.as_ref().map(|d| d.rank.as_str()), Some("TP01"));
    let h = drill(t.path(), "[tp02]");
    let d = h.drill.as_ref().unwrap();
    assert_eq!(d.rank, "TP02");
    assert!(d.in_line, "{}", d.summary);
    assert!(
        d.summary.contains("TP02 is in line with its peers"),
        "{}",
        d.summary
    );
    assert!(d.verdict.is_empty(), "{:?}", d.verdict);
    close(d.work.ratio.unwrap(), 1.0, 0.02, "TP02 work");
}

fn run(args: &[&str]) -> (i32, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_rankprof"))
        .args(args)
        .env("COLUMNS", "120")
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
    )
}

#[test]
fn the_command_line_prints_the_drill_down_in_every_format() {
    let t = tempfile::tempdir().unwrap();
    plant(t.path());
    let dir = t.path().to_str().unwrap();
    let (code, text) = run(&["analyze", dir, "--rank", "TP01"]);
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains("Rank TP01 against its peers (TP00, TP02, TP03):"),
        "{text}"
    );
    assert!(
        text.contains("kernel classes (ms), furthest first"),
        "{text}"
    );
    let gemm_row = text
        .lines()
        .find(|l| l.starts_with("│ gemm "))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(gemm_row.contains("1.30"), "{gemm_row}");
    let (code, json) = run(&["analyze", dir, "--rank", "TP01", "--format", "json"]);
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["ranks"].as_array().map(Vec::len), Some(4));
    assert_eq!(v["drill"]["rank"], "TP01");
    assert_eq!(v["drill"]["classes"][0]["name"], "gemm");
    assert_eq!(v["drill"]["in_line"], false);
    let (code, md) = run(&["analyze", dir, "--rank", "TP02", "--format", "markdown"]);
    assert_eq!(code, 0);
    assert!(md.contains("TP02 is in line with its peers"), "{md}");
    assert!(
        md.contains("Rank TP02 vs the median of its 3 peers: kernel classes"),
        "{md}"
    );
}
