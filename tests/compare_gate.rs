//! `compare`'s statistical gate (`--gate stats`) on synth profiles whose plants and noise are known: a planted
//! regression is found with an interval around the plant's own factor, A/A pairs that the fixed
//! threshold fails pass, several baselines set a noise floor equal to the range of their
//! medians (recomputed here from the summaries), an old summary without samples falls back to
//! the fixed rule and says so, and the measurement script runs a small A/A batch under CI.

use std::path::{Path, PathBuf};
use std::process::Command;

use rankprof::analyze::summary::{load_summary, Summary};
use rankprof::compare::diff::{Decision, Row, Status};
use rankprof::compare::{compare, CompareOptions, Comparison, GateRule};
use rankprof::synth::catalog::Class;
use rankprof::synth::{write_set, Slow, SynthOptions};

const STEPS: u32 = 16;

/// A TP2 synth set of `seed`'s batches with `noise_seed`'s 2 % step noise, gemm on TP01 × `factor`.
fn synth(dir: &Path, seed: u64, noise_seed: u64, gemm_factor: Option<f64>) -> PathBuf {
    let cfg = SynthOptions {
        tp: 2,
        steps: STEPS,
        seed,
        noise_seed: Some(noise_seed),
        step_noise: 0.02,
        slow: gemm_factor.map(|factor| Slow {
            rank: 1,
            factor,
            from_step: 0,
            class: Some(Class::Gemm),
        }),
        ..SynthOptions::default()
    };
    write_set(&cfg, dir).expect("synth");
    dir.to_path_buf()
}

fn run(base: &Path, cur: &Path, more: &[PathBuf]) -> Comparison {
    compare(&CompareOptions {
        baseline: base.into(),
        current: cur.into(),
        more_baselines: more.to_vec(),
        gate: GateRule::Stats,
        ..Default::default()
    })
    .expect("compare")
    .comparison
}

fn row<'a>(c: &'a Comparison, name: &str) -> &'a Row {
    c.rank_classes
        .iter()
        .find(|r| r.name == name)
        .unwrap_or_else(|| panic!("no row {name}"))
}

#[test]
fn a_planted_ten_percent_gemm_on_one_rank_is_found_with_its_interval() {
    let t = tempfile::tempdir().unwrap();
    let base = synth(&t.path().join("a"), 7, 1, None);
    let cur = synth(&t.path().join("b"), 7, 2, Some(1.10));
    let c = run(&base, &cur, &[]);
    assert_eq!(c.decision, Decision::Regression, "{:?}", c.failures);
    let r = row(&c, "gemm on TP01");
    assert_eq!(r.status, Status::Regression);
    let st = r.stat.as_ref().expect("tested");
    // The plant: +10 % on every gemm kernel of TP01; the interval holds it, and clears 5 %.
    assert!(
        st.ci_low_pct > 5.0 && st.ci_low_pct < 10.0 && st.ci_high_pct > 10.0,
        "{st:?}"
    );
    assert!(c.failures.iter().any(|f| f.message.contains("[+")));
    // The other rank's gemm did not move: it is not a regression.
    assert_ne!(row(&c, "gemm on TP00").status, Status::Regression);
}

#[test]
fn noisy_a_a_pairs_the_fixed_threshold_fails_do_not_fail() {
    let t = tempfile::tempdir().unwrap();
    let mut failing_today = 0;
    for seed in 1000..1012u64 {
        let a = synth(&t.path().join(format!("{seed}a")), seed, 1, None);
        let b = synth(&t.path().join(format!("{seed}b")), seed, 2, None);
        let c = run(&a, &b, &[]);
        // The fixed rule of before: any time row's median grew by more than 5 %.
        let today = c.time_rows().any(|r| r.delta_pct.is_some_and(|p| p > 5.0));
        if today {
            failing_today += 1;
            assert_ne!(
                c.decision,
                Decision::Regression,
                "seed {seed}: {:?}",
                c.failures
            );
        }
    }
    assert!(
        failing_today > 0,
        "no A/A pair fails the fixed rule: pick noisier pairs"
    );
}

/// The median by nearest rank, as the summary's.
fn median(v: &[i64]) -> i64 {
    let mut s = v.to_vec();
    s.sort_unstable();
    s[(s.len() - 1) / 2]
}

fn gemm_samples(s: &Summary, rank: usize) -> Vec<i64> {
    s.ranks[rank]
        .steps
        .samples
        .as_ref()
        .expect("samples")
        .class_ns["gemm"]
        .clone()
}

/// Rank `rank`'s gemm per step over the median of the other ranks' gemm in the same step, in
/// parts per million.
fn gemm_over_peers(s: &Summary, rank: usize) -> Vec<i64> {
    let own = gemm_samples(s, rank);
    let peers: Vec<Vec<i64>> = (0..s.ranks.len())
        .filter(|&r| r != rank)
        .map(|r| gemm_samples(s, r))
        .collect();
    (0..own.len())
        .map(|k| {
            let m = median(&peers.iter().map(|p| p[k]).collect::<Vec<_>>());
            (i128::from(own[k]) * 1_000_000 / i128::from(m)) as i64
        })
        .collect()
}

#[test]
fn several_baselines_set_the_noise_floor_to_the_prediction_bound_of_their_medians() {
    let t = tempfile::tempdir().unwrap();
    let mut summaries = Vec::new();
    for n in 1..=3u64 {
        let d = synth(&t.path().join(format!("b{n}")), 7, n, None);
        let out = t.path().join(format!("b{n}.json"));
        let st = Command::new(env!("CARGO_BIN_EXE_rankprof"))
            .args(["analyze", "--profile-dir"])
            .arg(&d)
            .arg("--save-summary")
            .arg(&out)
            .output()
            .expect("analyze");
        assert!(st.status.success());
        summaries.push(out);
    }
    let cur = synth(&t.path().join("cur"), 7, 9, None);
    let c = run(&summaries[0], &cur, &summaries[1..]);
    assert!(c.noise.starts_with("3 baselines"), "{}", c.noise);
    assert_eq!(c.more_baselines.len(), 2);
    // TP01's gemm is tested over its peers' in the same step (parts per million), so its
    // noise floor is that ratio's run-to-run spread.
    let meds: Vec<i64> = summaries
        .iter()
        .map(|p| median(&gemm_over_peers(&load_summary(p).expect("summary"), 1)))
        .collect();
    // One more run's one-sided 95 % prediction bound over the runs' mean, from a textbook t
    // table: t(0.95, 2 df) = 2.920.
    let n = meds.len() as f64;
    let mean = meds.iter().sum::<i64>() as f64 / n;
    let sd = (meds.iter().map(|&m| (m as f64 - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
    let want = 2.920 * sd * (1.0 + 1.0 / n).sqrt() / mean * 100.0;
    let st = row(&c, "gemm on TP01").stat.as_ref().expect("tested");
    assert_eq!(st.baseline_runs, 3);
    assert_eq!(st.baseline_steps, 3 * STEPS as usize);
    assert!(
        (st.noise_floor_pct - want).abs() < 1e-9,
        "{} vs {want}",
        st.noise_floor_pct
    );
}

#[test]
fn an_old_summary_without_samples_is_judged_by_the_fixed_threshold_and_says_so() {
    let t = tempfile::tempdir().unwrap();
    let a = synth(&t.path().join("a"), 7, 1, None);
    let out = t.path().join("a.json");
    let st = Command::new(env!("CARGO_BIN_EXE_rankprof"))
        .args(["analyze", "--profile-dir"])
        .arg(&a)
        .arg("--save-summary")
        .arg(&out)
        .output()
        .expect("analyze");
    assert!(st.status.success());
    // Strip every "samples" object, as a summary saved before them reads.
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    fn strip(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::Object(m) => {
                m.remove("samples");
                m.values_mut().for_each(strip);
            }
            serde_json::Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    strip(&mut v);
    let old = t.path().join("old.json");
    std::fs::write(&old, v.to_string()).unwrap();
    let c = run(&old, &a, &[]);
    assert!(c.rule.starts_with("fixed threshold"), "{}", c.rule);
    assert!(c.notes.iter().any(|n| n.contains("fixed --max-regression")));
    assert!(c.time_rows().all(|r| r.stat.is_none()));
}

#[test]
fn exit_codes_follow_the_decision() {
    let t = tempfile::tempdir().unwrap();
    let a = synth(&t.path().join("a"), 7, 1, None);
    let b = synth(&t.path().join("b"), 7, 2, Some(1.10));
    let code = |extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_rankprof"))
            .args(["compare", "--gate", "stats"])
            .arg(&a)
            .arg(&b)
            .args(extra)
            .output()
            .expect("compare")
            .status
            .code()
    };
    assert_eq!(code(&["-q"]), Some(1));
    // `--baseline` with a lone positional: it is CURRENT.
    let out = Command::new(env!("CARGO_BIN_EXE_rankprof"))
        .args(["compare", "-q", "--gate", "stats", "--baseline"])
        .arg(&a)
        .arg("--")
        .arg(&a)
        .output()
        .expect("compare");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    // The docs' form, `--baseline a b CURRENT`: the last path is CURRENT (b against a, b
    // regressed: exit 1, where CURRENT = a would pass); one path alone is no comparison.
    let out = Command::new(env!("CARGO_BIN_EXE_rankprof"))
        .args(["compare", "--json", "--baseline"])
        .args([&a, &a, &b])
        .output()
        .expect("compare");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(out.status.code(), Some(1), "{v}");
    assert_eq!(v["current"]["path"], b.to_string_lossy().as_ref(), "{v}");
    let out = Command::new(env!("CARGO_BIN_EXE_rankprof"))
        .args(["compare", "-q", "--baseline"])
        .arg(&a)
        .output()
        .expect("compare");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--baseline a b c CURRENT"));
}

#[test]
fn the_measurement_script_finds_no_false_alarm_in_a_small_a_a_batch() {
    // The CI-sized run of tests/compare_gate.py (the full one is in docs/compare.md): 20 A/A
    // pairs with the real binary.
    let out = Command::new("python3")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/compare_gate.py"))
        .args(["--pairs", "20", "--power-pairs", "0", "--json"])
        .env("RANKPROF", env!("CARGO_BIN_EXE_rankprof"))
        .output()
        .expect("python3");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["pairs"], 20);
    assert_eq!(v["regression"], 0, "{v}");
}
