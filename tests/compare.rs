//! `rankprof compare` on generated base/current pairs with known differences (a planted +12 %
//! on one class of one rank, ±2 % noise, one slow step, renamed kernels) and on the real HTA
//! pair, whose figures `tests/check_compare.py` computes from the files independently.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

use rankprof::compare::diff::{Basis, Row, Status};
use rankprof::compare::{compare, Comparison};
use rankprof::compare::{CompareBasis, CompareOptions, GateRule};
use rankprof::synth::catalog::Class;
use rankprof::synth::{write_set, Slow, SynthOptions};
use serde_json::Value;

const STEPS: u32 = 12;

/// A TP=4 SGLang set, seed 1, 12 steps × 2 layers; `slow`: (rank, class, factor, from step).
fn synth(dir: &Path, slow: Option<(u32, Class, f64, u32)>) -> PathBuf {
    let cfg = SynthOptions {
        tp: 4,
        steps: STEPS,
        layers: 2,
        seed: 1,
        slow: slow.map(|(rank, class, factor, from_step)| Slow {
            rank,
            factor,
            from_step,
            class: Some(class),
        }),
        ..SynthOptions::default()
    };
    write_set(&cfg, dir).expect("synth");
    dir.to_path_buf()
}

fn args(base: &Path, cur: &Path) -> CompareOptions {
    CompareOptions {
        baseline: base.to_path_buf(),
        current: cur.to_path_buf(),
        ..CompareOptions::default()
    }
}

fn run_cmp(a: &CompareOptions) -> Comparison {
    compare(a)
        .unwrap_or_else(|e| panic!("compare: {e:#}"))
        .comparison
}

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_rankprof"))
}

/// Every time row of a comparison.
fn time_rows(c: &Comparison) -> impl Iterator<Item = &Row> {
    c.overall
        .iter()
        .chain(&c.ranks)
        .chain(&c.classes)
        .chain(&c.rank_classes)
}

fn find<'a>(rows: &'a [Row], name: &str) -> &'a Row {
    rows.iter()
        .find(|r| r.name == name)
        .unwrap_or_else(|| panic!("no row {name}"))
}

#[test]
fn planted_gemm_on_one_rank_fails_and_names_the_class_and_the_rank() {
    let t = tempfile::tempdir().unwrap();
    let base = synth(&t.path().join("base"), None);
    let cur = synth(&t.path().join("cur"), Some((2, Class::Gemm, 1.12, 0)));
    let c = run_cmp(&args(&base, &cur));
    assert_eq!(c.basis, Basis::Steps, "{}", c.basis_note);
    assert!(!c.passed);

    // Same seed: every kernel of rank 2's GEMMs is 1.12 × its baseline, everything else on
    // rank 2 and every other rank's compute kernels are unchanged.
    let g = find(&c.rank_classes, "gemm on TP02");
    assert_eq!(g.status, Status::Regression);
    let p = g.delta_pct.unwrap();
    assert!((11.99..=12.01).contains(&p), "gemm on TP02 {p}");
    for r in &c.rank_classes {
        let class = r.class.as_deref().unwrap();
        if class != "comm" && r.name != "gemm on TP02" {
            assert_eq!(r.delta_ns.get(), 0, "{}", r.name);
            assert_eq!(r.status, Status::Ok, "{}", r.name);
        }
    }
    assert_eq!(find(&c.ranks, "TP02").status, Status::Regression);
    for rank in ["TP00", "TP01", "TP03"] {
        assert_eq!(find(&c.ranks, rank).delta_ns.get(), 0, "{rank}");
    }
    // The failures name the class and the rank; the comm growth on the others is waiting.
    assert!(c.failures.iter().any(|f| f.kind == "rank-class"
        && f.class.as_deref() == Some("gemm")
        && f.rank.as_deref() == Some("TP02")
        && !f.waiting));
    assert!(c
        .failures
        .iter()
        .filter(|f| f.class.as_deref() == Some("comm") && f.rank.is_some())
        .all(|f| f.waiting && f.rank.as_deref() != Some("TP02")));
    let head = rankprof::report::compare::headline(&c);
    assert!(
        head.starts_with("FAIL") && head.contains("ranks TP02;"),
        "{head}"
    );
    assert!(head.contains("classes gemm"), "{head}");

    // The command line: exit 1, and every format names both.
    for (fmt, mark) in [
        ("table", "FAIL"),
        ("markdown", "❌"),
        ("json", "\"passed\": false"),
    ] {
        let out = bin()
            .args(["compare", "--format", fmt])
            .arg(&base)
            .arg(&cur)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{fmt}");
        let s = String::from_utf8_lossy(&out.stdout);
        assert!(s.contains(mark), "{fmt}: {s}");
        assert!(s.contains("gemm on rank TP02"), "{fmt}: {s}");
    }
}

#[test]
fn imbalance_gate_names_the_slowest_rank() {
    let t = tempfile::tempdir().unwrap();
    let base = synth(&t.path().join("base"), None);
    let cur = synth(&t.path().join("cur"), Some((2, Class::Gemm, 1.12, 0)));
    let mut a = args(&base, &cur);
    a.max_regression = 100.0;
    a.max_imbalance = Some(1.02);
    let c = run_cmp(&a);
    assert!(!c.passed);
    assert!(c.imbalance.fails);
    assert_eq!(c.imbalance.current_slowest.as_deref(), Some("TP02"));
    assert!(c.imbalance.current > c.imbalance.baseline);
    assert_eq!(c.failures.len(), 1, "{:?}", c.failures);
    assert_eq!(c.failures[0].kind, "imbalance");
    // Rank 2's GEMMs are about two thirds of its work: +12 % on them is well below 1.10.
    a.max_imbalance = Some(1.10);
    assert!(run_cmp(&a).passed);
}

/// The slowdown gate on a real recording (`fixtures/real-gloo/tp4-host-sleep`: torch
/// profiler, 4 processes over gloo, RANK01 sleeps ~40 ms on the host before one collective a
/// step). From the recording's own figures (`plant.json`): each step takes the slowest rank's
/// time, and the sleep alone, removed, shortens it by itself: S ≥ step / (step − sleep),
/// ~1.68 here (S makes every rank typical, so the others' uneven gloo waits go too: the model
/// says ~1.9). A threshold halfway to that bound fails, naming RANK01; one at twice it passes;
/// the control run passes a threshold halfway to the sleep's; a current side with no trusted
/// what-if is not judged, and says so.
#[test]
fn slowdown_gate_fails_on_a_real_host_sleep() {
    let sleep_dir = common::manifest("fixtures/real-gloo/tp4-host-sleep");
    let control = common::manifest("fixtures/real-gloo/tp4-control");
    let plant: Value =
        serde_json::from_str(&std::fs::read_to_string(sleep_dir.join("plant.json")).unwrap())
            .unwrap();
    let num = |v: &Value| v.as_f64().unwrap();
    let sleeps: Vec<f64> = plant["per_step_planted_ms"]
        .as_array()
        .unwrap()
        .iter()
        .map(num)
        .collect();
    let per_rank = plant["per_rank_step_ms"].as_object().unwrap();
    let mut s_sleep: Vec<f64> = (0..sleeps.len())
        .map(|i| {
            let step = per_rank
                .values()
                .map(|v| num(&v[i]))
                .fold(f64::MIN, f64::max);
            step / (step - sleeps[i])
        })
        .collect();
    s_sleep.sort_by(f64::total_cmp);
    let bound = s_sleep[s_sleep.len() / 2];
    assert!(bound > 1.4, "the sleep's own slowdown {bound}");

    let mut a = args(&control, &sleep_dir);
    a.max_regression = 1000.0;
    a.allow_new_kernels = true;
    a.gate = GateRule::Fixed;
    a.max_slowdown = Some(1.0 + (bound - 1.0) / 2.0);
    let c = run_cmp(&a);
    let current = c
        .slowdown
        .slowdowns()
        .1
        .expect("a trusted what-if on the current side");
    assert!(
        current >= 0.9 * bound && current < 2.0 * bound,
        "S {current} vs the sleep's own {bound}"
    );
    assert!(c.slowdown.fails, "{:#?}", c.slowdown);
    let f: Vec<_> = c.failures.iter().filter(|f| f.kind == "slowdown").collect();
    assert_eq!(f.len(), 1, "{:#?}", c.failures);
    assert_eq!(f[0].rank.as_deref(), Some("RANK01"), "{:#?}", f[0]);
    assert!(
        f[0].message.contains("RANK01 typical gives back"),
        "{}",
        f[0].message
    );

    a.max_slowdown = Some(2.0 * bound);
    let c = run_cmp(&a);
    assert!(!c.slowdown.fails);
    assert!(
        c.failures.iter().all(|f| f.kind != "slowdown"),
        "{:#?}",
        c.failures
    );

    // The control run (nothing planted) as current: its slowdown is the noise of 4 processes
    // on 2 cores, under the threshold halfway to the sleep's.
    let mut a = args(&sleep_dir, &control);
    a.max_regression = 1000.0;
    a.allow_new_kernels = true;
    a.gate = GateRule::Fixed;
    a.max_slowdown = Some(1.0 + (bound - 1.0) / 2.0);
    let c = run_cmp(&a);
    let s = c.slowdown.slowdowns().1.expect("the control's what-if");
    assert!(!c.slowdown.fails, "the control's S {s}");

    // A current side with no what-if (a summary saved by a rankprof before it, or one whose
    // replay missed the recording): not judged, said.
    let tmp = tempfile::tempdir().unwrap();
    let saved = tmp.path().join("control.summary.json");
    let st = bin()
        .args(["analyze", "--profile-dir"])
        .arg(&control)
        .arg("--save-summary")
        .arg(&saved)
        .output()
        .unwrap();
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    let mut doc: Value = serde_json::from_str(&std::fs::read_to_string(&saved).unwrap()).unwrap();
    let dropped = doc["path"]
        .as_object_mut()
        .and_then(|p| p.remove("what_if"));
    assert!(dropped.is_some(), "the saved summary keeps the what-if");
    std::fs::write(&saved, serde_json::to_string(&doc).unwrap()).unwrap();
    a.current = saved.clone();
    a.max_slowdown = Some(1.01);
    let c = run_cmp(&a);
    assert_eq!(c.slowdown.current, None, "{:#?}", c.slowdown);
    assert!(c.failures.iter().all(|f| f.kind != "slowdown"));
    assert!(
        c.notes
            .iter()
            .any(|n| n.contains("--max-slowdown 1.01: not judged")),
        "{:#?}",
        c.notes
    );

    // The command line: exit 1, the row and the gate in the table.
    let out = bin()
        .args([
            "compare",
            "--gate",
            "fixed",
            "--max-regression",
            "1000",
            "--allow-new-kernels",
        ])
        .args(["--max-slowdown", "1.2"])
        .arg(&control)
        .arg(&sleep_dir)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("slowdown, re-simulated"), "{text}");
    assert!(text.contains("max slowdown 1.2"), "{text}");
}

/// Copies a set, scaling every GPU op's `dur` by `1 + rank_bias + kernel_jitter`, each
/// uniform in ±1 %: the current side differs from the baseline by noise within ±2 % only.
fn noisy_copy(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        // splitmix64
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    };
    let mut paths: Vec<PathBuf> = std::fs::read_dir(from)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    paths.sort();
    for p in paths {
        let bias = next() * 0.01;
        let r = BufReader::new(flate2::read::GzDecoder::new(
            std::fs::File::open(&p).unwrap(),
        ));
        let mut out = String::new();
        let mut gpu_op = false;
        for line in r.lines() {
            let mut line = line.unwrap();
            if line.contains("\"cat\": \"kernel\"")
                || line.contains("\"cat\": \"gpu_memcpy\"")
                || line.contains("\"cat\": \"gpu_memset\"")
            {
                gpu_op = true;
            }
            if gpu_op {
                if let Some(i) = line.find("\"dur\": ") {
                    let rest = &line[i + 7..];
                    let end = rest
                        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
                        .unwrap_or(rest.len());
                    let us: f64 = rest[..end].parse().unwrap();
                    let f = 1.0 + bias + next() * 0.01;
                    let ns = (us * 1000.0 * f).round() as i64;
                    line = format!(
                        "{}\"dur\": {}.{:03}{}",
                        &line[..i],
                        ns / 1000,
                        ns % 1000,
                        &rest[end..]
                    );
                    gpu_op = false;
                }
            }
            out.push_str(&line);
            out.push('\n');
        }
        common::write_gz(&to.join(p.file_name().unwrap()), out.as_bytes());
    }
}

#[test]
fn noise_within_two_percent_passes() {
    let t = tempfile::tempdir().unwrap();
    let base = synth(&t.path().join("base"), None);
    let cur = t.path().join("noisy");
    noisy_copy(&base, &cur);
    let c = run_cmp(&args(&base, &cur));
    assert!(c.passed, "{:#?}", c.failures);
    assert_eq!(c.basis, Basis::Steps);
    // Something did change, and nothing by more than the noise: sums (classes) of values each
    // scaled within ±2 %, and their medians, stay within ±2 %; unions (busy, work) too.
    let mut moved = 0;
    for r in time_rows(&c) {
        let p = r
            .delta_pct
            .unwrap_or_else(|| panic!("{} has no baseline", r.name));
        assert!(p.abs() <= 2.0 + 1e-6, "{}: {p}", r.name);
        if r.delta_ns.get() != 0 {
            moved += 1;
        }
    }
    assert!(moved > 10, "the noise changed only {moved} rows");
    assert!(c.appeared.is_empty() && c.vanished.is_empty());
    let out = bin().arg("compare").arg(&base).arg(&cur).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("PASS"));
}

#[test]
fn one_slow_step_fails_totals_but_not_per_step_medians() {
    let t = tempfile::tempdir().unwrap();
    let base = synth(&t.path().join("base"), None);
    // Rank 2's GEMMs twice as slow in the last step only.
    let cur = synth(
        &t.path().join("cur"),
        Some((2, Class::Gemm, 2.0, STEPS - 1)),
    );
    let c = run_cmp(&args(&base, &cur));
    assert_eq!(c.basis, Basis::Steps);
    assert!(c.passed, "{:#?}", c.failures);
    // The slow step moves past the median, so the median may become a neighbouring step's
    // value (steps differ in batch size), but not by anything near the step's +100 %.
    let g = find(&c.rank_classes, "gemm on TP02").delta_pct.unwrap();
    assert!(g.abs() < 2.0, "gemm on TP02 {g}");

    let mut a = args(&base, &cur);
    a.basis = CompareBasis::Totals;
    let c = run_cmp(&a);
    assert_eq!(c.basis, Basis::Totals);
    assert!(!c.passed);
    let g = find(&c.rank_classes, "gemm on TP02");
    assert_eq!(g.status, Status::Regression);
    assert!(g.delta_pct.unwrap() > 5.0);
}

#[test]
fn saved_summaries_and_merged_traces_compare_like_directories() {
    let t = tempfile::tempdir().unwrap();
    let base = synth(&t.path().join("base"), None);
    let cur = synth(&t.path().join("cur"), Some((2, Class::Gemm, 1.12, 0)));
    let save = |dir: &Path, name: &str| -> PathBuf {
        let out = t.path().join(name);
        let st = bin()
            .args(["analyze", "--profile-dir"])
            .arg(dir)
            .arg("--save-summary")
            .arg(&out)
            .output()
            .unwrap();
        assert_eq!(st.status.code(), Some(0), "{st:?}");
        out
    };
    let sb = save(&base, "base.summary.json");
    let sc = save(&cur, "cur.summary.json");
    let dirs = run_cmp(&args(&base, &cur));
    let sums = run_cmp(&args(&sb, &sc));
    assert_eq!(sums.baseline.kind, "summary");
    assert_eq!(dirs.baseline.kind, "directory");
    assert_eq!(sums.overall, dirs.overall);
    assert_eq!(sums.ranks, dirs.ranks);
    assert_eq!(sums.classes, dirs.classes);
    assert_eq!(sums.rank_classes, dirs.rank_classes);
    assert_eq!(sums.kernels, dirs.kernels);
    assert_eq!(sums.failures, dirs.failures);

    // A merged trace of the baseline against the baseline's directory: nothing changed.
    let merged = t.path().join("merged-base.trace.json.gz");
    let st = bin()
        .args(["merge", "--profile-dir"])
        .arg(&base)
        .arg("-o")
        .arg(&merged)
        .output()
        .unwrap();
    assert_eq!(st.status.code(), Some(0), "{st:?}");
    let c = run_cmp(&args(&merged, &base));
    assert_eq!(c.baseline.kind, "trace");
    assert!(c.passed, "{:#?}", c.failures);
    assert_eq!(c.ranks.len(), 4);
    for r in time_rows(&c) {
        assert_eq!(r.delta_ns.get(), 0, "{}", r.name);
    }
}

/// Rewrites a saved summary's kernel names as a rebuilt library would: other template
/// arguments, other tile shapes.
fn renamed(summary: &Path, to: &Path) -> usize {
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(summary).unwrap()).unwrap();
    let mut changed = 0;
    for k in v["kernels"].as_array_mut().unwrap() {
        let name = k["name"].as_str().unwrap().to_string();
        let new = if let Some(i) = name.find('<') {
            format!("{}<Tweaked, {}", &name[..i], &name[i + 1..])
        } else {
            name.replace("128x256_64x4", "256x128_64x8")
                .replace("tilesize128x128x64", "tilesize64x128x64")
        };
        if new != name {
            changed += 1;
        }
        k["name"] = Value::String(new);
    }
    std::fs::write(to, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    changed
}

#[test]
fn renamed_kernels_pass_only_with_normalize() {
    let t = tempfile::tempdir().unwrap();
    let base = synth(&t.path().join("base"), None);
    let sb = t.path().join("base.summary.json");
    let st = bin()
        .args(["analyze", "--profile-dir"])
        .arg(&base)
        .arg("--save-summary")
        .arg(&sb)
        .output()
        .unwrap();
    assert_eq!(st.status.code(), Some(0));
    let sr = t.path().join("renamed.summary.json");
    let n = renamed(&sb, &sr);
    assert!(n >= 5, "only {n} names changed");

    let c = run_cmp(&args(&sb, &sr));
    assert!(!c.passed);
    assert_eq!(c.appeared.len(), n);
    assert_eq!(c.vanished.len(), n);
    assert!(c.failures.iter().all(|f| f.kind == "new-kernel"));
    assert_eq!(c.failures.len(), n);
    assert!(time_rows(&c).all(|r| r.delta_ns.get() == 0));

    let mut a = args(&sb, &sr);
    a.normalize = true;
    let c = run_cmp(&a);
    assert!(c.passed, "{:#?}", c.failures);
    assert!(c.appeared.is_empty() && c.vanished.is_empty());
    assert!(c.kernels.iter().all(|k| k.delta_ns.get() == 0));
    assert!(c.kernels.iter().any(|k| k.name.contains("<…>")));

    // --allow-new-kernels lets the renamed pair pass too, still listing them.
    let mut a = args(&sb, &sr);
    a.allow_new_kernels = true;
    let c = run_cmp(&a);
    assert!(c.passed);
    assert_eq!(c.appeared.len(), n);
}

#[test]
fn hta_pair_matches_the_independent_checker() {
    let r0 = common::shared("hta/sampled-rank-0.json.gz");
    let r1 = common::shared("hta/sampled-rank-1.json.gz");
    let want = common::python("check_compare.py", &[&r0, &r1], &[]);
    let mut a = args(&r0, &r1);
    a.basis = CompareBasis::Totals;
    a.top_n = 1000;
    let c = run_cmp(&a);
    assert_eq!(c.basis, Basis::Totals);

    let classes = want["classes"].as_object().unwrap();
    let nonzero: Vec<&String> = classes.keys().collect();
    assert_eq!(
        c.classes.iter().map(|r| &r.name).collect::<Vec<_>>().len(),
        nonzero.len()
    );
    let check = |r: &Row, w: &Value| {
        assert_eq!(
            r.baseline_ns.get(),
            w["baseline"].as_i64().unwrap(),
            "{}",
            r.name
        );
        assert_eq!(
            r.current_ns.get(),
            w["current"].as_i64().unwrap(),
            "{}",
            r.name
        );
        let (p, q) = (r.delta_pct.unwrap(), w["delta_pct"].as_f64().unwrap());
        assert!((p - q).abs() < 1e-9, "{}: {p} vs {q}", r.name);
    };
    for r in &c.classes {
        check(r, &classes[&r.name]);
    }
    // One rank each side, matched by position; its classes are the same figures.
    assert_eq!(c.ranks.len(), 1);
    assert_eq!(c.ranks[0].name, "RANK00→RANK01");
    for r in &c.rank_classes {
        check(r, &classes[r.class.as_deref().unwrap()]);
    }
    // The fixture README's figures: NCCL 396,199.0 µs and 379,053.0 µs.
    assert_eq!(find(&c.classes, "comm").baseline_ns.get(), 396_199_000);
    assert_eq!(find(&c.classes, "comm").current_ns.get(), 379_053_000);

    let kernels = want["kernels"].as_object().unwrap();
    assert_eq!(c.kernels.len(), kernels.len());
    for k in &c.kernels {
        let w = &kernels[&k.name];
        assert_eq!(
            k.baseline_ns.get(),
            w["baseline"].as_i64().unwrap(),
            "{}",
            k.name
        );
        assert_eq!(
            k.current_ns.get(),
            w["current"].as_i64().unwrap(),
            "{}",
            k.name
        );
        assert_eq!(k.baseline_count, w["baseline_count"].as_u64().unwrap());
        assert_eq!(k.current_count, w["current_count"].as_u64().unwrap());
    }
    let names = |v: &Value| -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_str().unwrap().to_string())
            .collect()
    };
    let mut appeared: Vec<String> = c.appeared.iter().map(|k| k.name.clone()).collect();
    let mut vanished: Vec<String> = c.vanished.iter().map(|k| k.name.clone()).collect();
    appeared.sort();
    vanished.sort();
    assert_eq!(appeared, names(&want["appeared"]));
    assert_eq!(vanished, names(&want["vanished"]));
    assert!(!vanished.is_empty());
}

#[test]
fn exit_codes_and_input_errors() {
    let t = tempfile::tempdir().unwrap();
    let base = synth(&t.path().join("base"), None);
    let code = |args: &[&std::ffi::OsStr]| -> (Option<i32>, String) {
        let out = bin().arg("compare").args(args).output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    };
    let b = base.as_os_str();
    // Same profile on both sides: pass, 0; the report goes to -o too.
    let report = t.path().join("report.md");
    let out = bin()
        .args(["compare", "--format", "markdown", "-o"])
        .arg(&report)
        .arg(&base)
        .arg(&base)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(std::fs::read(&report).unwrap(), out.stdout);
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("### ✅"));

    let missing = t.path().join("nope");
    let (c, e) = code(&[b, missing.as_os_str()]);
    assert_eq!(c, Some(2));
    assert!(e.contains("current") && e.contains("nope"), "{e}");

    let (c, e) = code(&[b, b, "--max-regression".as_ref(), "lots".as_ref()]);
    assert_eq!(c, Some(2), "{e}");
    let (c, _) = code(&[b, b, "--max-imbalance".as_ref(), "0.9".as_ref()]);
    assert_eq!(c, Some(2));
    // `5%` and `5` are both accepted.
    let (c, _) = code(&[b, b, "--max-regression".as_ref(), "5%".as_ref()]);
    assert_eq!(c, Some(0));

    // A JSON file that is neither a summary nor a trace.
    let junk = t.path().join("junk.json");
    std::fs::write(&junk, "{\"kind\": \"rankprof-summary\", \"version\": 99}").unwrap();
    let (c, e) = code(&[junk.as_os_str(), b]);
    assert_eq!(c, Some(2));
    assert!(e.contains("version 99"), "{e}");

    // A damaged trace: cut in the middle. (Written with `baseTimeNanoseconds` before the
    // events, so that the cut file keeps its clock.)
    let whole = t.path().join("whole");
    write_set(
        &SynthOptions {
            tp: 4,
            steps: STEPS,
            layers: 2,
            base_first: true,
            ..SynthOptions::default()
        },
        &whole,
    )
    .unwrap();
    let files: Vec<PathBuf> = {
        let mut v: Vec<PathBuf> = std::fs::read_dir(&whole)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        v.sort();
        v
    };
    let cut = t.path().join("cut");
    std::fs::create_dir_all(&cut).unwrap();
    for f in &files {
        std::fs::copy(f, cut.join(f.file_name().unwrap())).unwrap();
    }
    let victim = cut.join(files[1].file_name().unwrap());
    let mut text = String::new();
    std::io::Read::read_to_string(
        &mut flate2::read::GzDecoder::new(std::fs::File::open(&files[1]).unwrap()),
        &mut text,
    )
    .unwrap();
    let mut w = flate2::write::GzEncoder::new(
        std::fs::File::create(&victim).unwrap(),
        flate2::Compression::fast(),
    );
    w.write_all(&text.as_bytes()[..text.len() / 2]).unwrap();
    w.finish().unwrap();
    let (c, e) = code(&[whole.as_os_str(), cut.as_os_str()]);
    assert_eq!(c, Some(2), "{e}");
    assert!(e.contains("damaged") && e.contains("TP-1"), "{e}");

    // -o onto an input is refused.
    let (c, e) = code(&[whole.as_os_str(), b, "-o".as_ref(), files[0].as_os_str()]);
    assert_eq!(c, Some(2));
    assert!(e.contains("is an input"), "{e}");
    assert!(files[0].exists());

    // --basis steps where a side has none: a usage error.
    let r0 = common::shared("hta/alexnet-single-gpu.json.gz");
    let (c, e) = code(&[
        r0.as_os_str(),
        r0.as_os_str(),
        "--basis".as_ref(),
        "steps".as_ref(),
    ]);
    assert_eq!(c, Some(2), "{e}");
    assert!(e.contains("--basis steps"), "{e}");
}

#[test]
fn formats_agree() {
    let t = tempfile::tempdir().unwrap();
    let base = synth(&t.path().join("base"), None);
    let cur = synth(&t.path().join("cur"), Some((2, Class::Gemm, 1.12, 0)));
    let c = run_cmp(&args(&base, &cur));
    let j: Value = serde_json::from_str(
        &rankprof::commands::compare::render(&c, rankprof::report::Format::Json).unwrap(),
    )
    .unwrap();
    assert_eq!(j["passed"], Value::Bool(false));
    assert_eq!(j["basis"], "steps");
    assert_eq!(j["failures"].as_array().unwrap().len(), c.failures.len());
    let g = j["rank_classes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "gemm on TP02")
        .unwrap();
    assert_eq!(g["status"], "regression");
    let md = rankprof::commands::compare::render(&c, rankprof::report::Format::Markdown).unwrap();
    let table =
        rankprof::commands::compare::render(&c, rankprof::report::Format::Terminal).unwrap();
    // Words compared with single spaces: the terminal wraps long lines to its width.
    let words = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    for f in &c.failures {
        assert!(words(&table).contains(&words(&f.message)), "{}", f.message);
        assert!(md.contains(&f.message.replace('|', "\\|")), "{}", f.message);
    }
    // Markdown tables are well formed: every row of a table has as many cells as its header.
    let mut cols = 0;
    for line in md.lines() {
        if line.starts_with("|-") {
            continue;
        }
        if line.starts_with('|') {
            let n = line.matches(" | ").count();
            if cols == 0 {
                cols = n;
            } else {
                assert_eq!(n, cols, "{line}");
            }
        } else {
            cols = 0;
        }
    }
}

#[test]
fn saved_summary_of_a_tp8_set_is_stable_and_small() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("tp8");
    write_set(
        &SynthOptions {
            tp: 8,
            ..SynthOptions::default()
        },
        &dir,
    )
    .unwrap();
    let save = |name: &str| -> Vec<u8> {
        let out = t.path().join(name);
        let st = bin()
            .args(["analyze", "--profile-dir"])
            .arg(&dir)
            .arg("--save-summary")
            .arg(&out)
            .output()
            .unwrap();
        assert_eq!(st.status.code(), Some(0), "{st:?}");
        std::fs::read(out).unwrap()
    };
    let a = save("a.json");
    let b = save("b.json");
    assert_eq!(a, b, "two runs, two different summaries");
    // docs/output-formats.md (the saved summary) gives 18,484 bytes for this set; anything near 64 KB would be news.
    assert!(a.len() < 64 * 1024, "{} bytes", a.len());
    let v: Value = serde_json::from_slice(&a).unwrap();
    assert_eq!(v["ranks"].as_array().unwrap().len(), 8);
    assert_eq!(v["overall"]["steps"]["count"], 8);
    for r in v["ranks"].as_array().unwrap() {
        assert!(r["steps"]["class_median_ns"]["gemm"].as_i64().unwrap() > 0);
        assert!(
            r["steps"]["time_p90_ns"].as_i64().unwrap()
                >= r["steps"]["time_median_ns"].as_i64().unwrap()
        );
    }
}

/// The headline of `rankprof compare BASE CUR [extra]` at 100 columns (its first line and the
/// indented lines it wraps onto, joined), and the exit code.
fn cli_headline(base: &Path, cur: &Path, extra: &[&str]) -> (String, i32) {
    let out = bin()
        .arg("compare")
        .arg(base)
        .arg(cur)
        .args(extra)
        .env("COLUMNS", "100")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut lines = text.lines();
    let mut head = lines.next().unwrap_or_default().to_string();
    assert!(head.chars().count() <= 100, "{head}");
    for l in lines.take_while(|l| l.starts_with("    ")) {
        assert!(l.chars().count() <= 100, "{l}");
        head.push(' ');
        head.push_str(l.trim_start());
    }
    (head, out.status.code().unwrap_or(-1))
}

/// #43 item 9 (a, b): a gemm plant ×1.2 on TP01 leads the headline in plain words, with the
/// planted factor (+20.0 %, same seed on both sides: independent of the tool); the ranks whose
/// communication grew only because they wait for TP01 are named as waiting, for TP01 — never
/// as "comm waits on TP00, …", which read as if they were slow.
#[test]
fn the_headline_leads_with_the_worst_regression_and_names_waiting_ranks_as_waiting() {
    let t = tempfile::tempdir().unwrap();
    let base = synth(&t.path().join("base"), None);
    let cur = synth(&t.path().join("cur"), Some((1, Class::Gemm, 1.2, 0)));
    // The default (statistical) gate: TP01's gemm over its peers', the plant's +20 % inside
    // the interval; the ranks that wait are not failures there (their waits are in times, and
    // no step-by-step shift is significant).
    let (head, code) = cli_headline(&base, &cur, &[]);
    assert_eq!(code, 1, "{head}");
    assert!(
        head.starts_with("rankprof compare: FAIL: TP01's gemm time per step +20.0 % ["),
        "{head}"
    );
    assert!(head.contains("(95 %) vs its peers"), "{head}");
    // The fixed gate: every grown row fails, and the waiting ranks are named as waiting.
    let (head, code) = cli_headline(&base, &cur, &["--gate", "fixed"]);
    assert_eq!(code, 1, "{head}");
    assert!(
        head.starts_with("rankprof compare: FAIL: TP01's gemm time per step +20.0 % ("),
        "{head}"
    );
    assert!(
        head.contains("TP00, TP02, TP03 wait longer in collectives, for TP01"),
        "{head}"
    );
    assert!(!head.contains("waits on"), "{head}");
    assert!(!head.contains("classes gemm, comm"), "{head}");
    let c = run_cmp(&CompareOptions {
        gate: GateRule::Fixed,
        ..args(&base, &cur)
    });
    for f in c.failures.iter().filter(|f| f.waiting) {
        assert!(
            f.message.contains("waits longer in collectives (for TP01)"),
            "{}",
            f.message
        );
    }
    assert_eq!(c.failures.iter().filter(|f| f.waiting).count(), 3);
}

/// #43 item 9 (c): `--min-time-us 50` (the README's example) floors times, not the time per
/// token (a few µs per token): that row stays judged while the work it divides (≈ 400 µs per
/// step) is above the floor, and is left out only when the work is below it.
#[test]
fn min_time_us_leaves_the_time_per_token_gate_on() {
    let t = tempfile::tempdir().unwrap();
    let base = synth(&t.path().join("base"), None);
    let cur = synth(&t.path().join("cur"), Some((1, Class::Gemm, 1.2, 0)));
    let per_token = |min_us: f64| {
        let c = run_cmp(&CompareOptions {
            min_time_us: min_us,
            ..args(&base, &cur)
        });
        let r = c
            .overall
            .iter()
            .find(|r| r.name.starts_with("time per token"))
            .expect("a time-per-token row")
            .clone();
        let work = find(&c.overall, "work per step (slowest rank)").clone();
        (r, work)
    };
    let (r, work) = per_token(50.0);
    assert!(
        r.baseline_ns.get() < 50_000 && r.current_ns.get() < 50_000,
        "{r:?}"
    );
    assert!(work.baseline_ns.get() > 50_000, "{work:?}");
    assert_eq!(r.status, Status::Regression, "{r:?}");
    let (r, work) = per_token(2_000.0);
    assert!(work.baseline_ns.get() < 2_000_000 && work.current_ns.get() < 2_000_000);
    assert_eq!(r.status, Status::BelowMinTime, "{r:?}");
}

/// #43 item 9 (d): a 4-rank synthetic H100 run against a 1-rank A100 trace: the first line says
/// the sides are different runs (other GPU, other ranks) before the failure count; two runs of
/// the same job say nothing of the kind.
#[test]
fn different_runs_are_said_first() {
    let t = tempfile::tempdir().unwrap();
    let base = synth(&t.path().join("base"), None);
    let a100 = common::shared("hta/nccl-a100-rank-0.json.gz");
    let (head, code) = cli_headline(&base, &a100, &[]);
    assert_eq!(code, 1, "{head}");
    assert!(
        head.starts_with("rankprof compare: FAIL: the sides look like different runs (other GPU ("),
        "{head}"
    );
    assert!(head.contains("A100"), "{head}");
    assert!(head.contains("other ranks (4 ranks → 1 rank)"), "{head}");
    let c = run_cmp(&args(&base, &a100));
    assert!(c.different_runs.len() >= 2, "{:?}", c.different_runs);
    let cur = synth(&t.path().join("cur"), Some((1, Class::Gemm, 1.2, 0)));
    let c = run_cmp(&args(&base, &cur));
    assert!(c.different_runs.is_empty(), "{:?}", c.different_runs);
    assert!(!rankprof::report::compare::headline(&c).contains("different runs"));
}
