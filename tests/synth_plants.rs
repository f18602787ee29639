//! `rankprof synth`'s waiting plants (`--host-delay-rank`, `--late-start-rank`, `--slow-link`)
//! against an independent implementation of the critical-path model:
//! `tests/check_critical_path.py` reads the raw traces the debug binary wrote and charges every
//! collective's wait to the last arriver as work, host or late. Each plant must cost its rank
//! what was planted, in the planted kind, and nothing else anywhere (the plants are clean).
//! Skipped, with a note, without python3.

mod common;

use std::path::Path;
use std::process::Command;

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_rankprof");
const D_NS: f64 = 2_000_000.0;
const STEPS: f64 = 6.0;

fn synth(dir: &Path, args: &[&str]) {
    let out = Command::new(BIN)
        .arg("synth")
        .arg("-o")
        .arg(dir)
        .args(["--steps", "6", "--layers", "2"])
        .args(args)
        .output()
        .expect("running rankprof synth");
    assert!(
        out.status.success(),
        "synth {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn critical(dir: &Path) -> Value {
    common::python_json(
        "tests/check_critical_path.py",
        &[dir.to_str().expect("a UTF-8 path")],
        &[],
    )
}

fn num(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// Total cost in ns of `kind` on rank `label`.
fn total(v: &Value, label: &str, kind: &str) -> f64 {
    num(&v["ranks"][label]["cost_ns"][kind])
}

/// Every (rank, kind) but `except` costs under `limit_ns` per step.
fn assert_quiet(v: &Value, except: Option<(&str, &str)>, limit_ns: f64) {
    let ranks = v["ranks"].as_object().expect("ranks");
    assert!(!ranks.is_empty());
    for (label, r) in ranks {
        assert_eq!(num(&r["steps"]), STEPS, "{label}");
        for kind in ["work", "host", "late"] {
            if except == Some((label.as_str(), kind)) {
                continue;
            }
            let per_step = num(&r["per_step_ns"][kind]);
            assert!(
                per_step < limit_ns,
                "{label} {kind}: {per_step} ns per step, want < {limit_ns} (all: {v})"
            );
        }
    }
}

fn assert_near(got: f64, want: f64, tol: f64, what: &str) {
    assert!(
        (got / want - 1.0).abs() <= tol,
        "{what}: {got}, want {want} ±{} %",
        tol * 100.0
    );
}

#[test]
fn the_balanced_control_costs_nobody_anything() {
    if !common::have_python("synth plant checks") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    synth(tmp.path(), &["--tp", "4"]);
    let v = critical(tmp.path());
    assert_eq!(v["ranks"].as_object().unwrap().len(), 4);
    assert_quiet(&v, None, 0.05 * D_NS);
}

#[test]
fn a_host_delay_costs_its_rank_host_time_once_per_step() {
    if !common::have_python("synth plant checks") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    synth(
        tmp.path(),
        &["--tp", "4", "--host-delay-rank", "2", "--delay-us", "2000"],
    );
    let v = critical(tmp.path());
    // The stall sits between the step's first two collectives, so every step's counts.
    assert_near(
        total(&v, "TP02", "host") / STEPS,
        D_NS,
        0.05,
        "TP02 host per step",
    );
    assert_quiet(&v, Some(("TP02", "host")), 0.10 * D_NS);

    // From step 3 on: half the steps.
    let later = tempfile::tempdir().unwrap();
    synth(
        later.path(),
        &[
            "--tp",
            "4",
            "--host-delay-rank",
            "1",
            "--delay-us",
            "2000",
            "--from-step",
            "3",
        ],
    );
    let v = critical(later.path());
    assert_near(total(&v, "TP01", "host"), 3.0 * D_NS, 0.05, "TP01 host");
    assert_quiet(&v, Some(("TP01", "host")), 0.10 * D_NS);
}

#[test]
fn a_late_start_costs_its_rank_late_time_at_each_step_s_first_collective() {
    if !common::have_python("synth plant checks") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    synth(
        tmp.path(),
        &["--tp", "4", "--late-start-rank", "1", "--delay-us", "2000"],
    );
    let v = critical(tmp.path());
    // The late start shows at each step's first collective, the profile's very first too
    // (its segment from the step's start, the members on the earliest step start): all 6.
    assert_eq!(num(&v["worlds"][0]["skipped"]), 0.0, "{v}");
    assert_near(total(&v, "TP01", "late"), STEPS * D_NS, 0.05, "TP01 late");
    assert_quiet(&v, Some(("TP01", "late")), 0.10 * D_NS);
    // Its steps are D shorter than its peers' (they wait D inside NCCL, it does not).
    let mean = |l: &str| num(&v["ranks"][l]["mean_step_ns"]);
    assert_near(mean("TP00") - mean("TP01"), D_NS, 0.05, "step difference");
}

#[test]
fn a_slow_link_lengthens_one_replica_s_transfers_and_costs_nobody() {
    if !common::have_python("synth plant checks") {
        return;
    }
    let control = tempfile::tempdir().unwrap();
    synth(control.path(), &["--dp", "2", "--tp", "2"]);
    let tmp = tempfile::tempdir().unwrap();
    synth(
        tmp.path(),
        &[
            "--dp",
            "2",
            "--tp",
            "2",
            "--slow-link",
            "1",
            "--factor",
            "3",
        ],
    );
    let c = critical(control.path());
    let v = critical(tmp.path());
    let median = |v: &Value, w: usize| num(&v["worlds"][w]["transfer_median_ns"]["allreduce"]);
    assert_eq!(
        v["worlds"].as_array().unwrap().len(),
        2,
        "one world per replica"
    );
    assert_eq!(v["worlds"][1]["members"][0], "TP00-DP01");
    assert_near(median(&v, 1) / median(&v, 0), 3.0, 0.05, "DP01 over DP00");
    assert_eq!(median(&v, 0), median(&c, 0), "DP00 unchanged");
    assert_near(median(&v, 1), 3.0 * median(&c, 1), 0.01, "DP01 vs control");
    // Every member sees the same longer collective: nobody waits for anybody.
    assert_quiet(&v, None, 0.05 * D_NS);
}

#[test]
fn the_plants_are_deterministic_and_validated() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let args = [
        "--tp",
        "4",
        "--host-delay-rank",
        "3",
        "--late-start-rank",
        "1",
        "--plain",
    ];
    synth(a.path(), &args);
    synth(b.path(), &args);
    let mut names: Vec<_> = std::fs::read_dir(a.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    names.sort();
    assert_eq!(names.len(), 4);
    for n in &names {
        let x = std::fs::read(a.path().join(n)).unwrap();
        let y = std::fs::read(b.path().join(n)).unwrap();
        assert!(x == y, "{n:?} differs between two runs");
    }
    let late = String::from_utf8(std::fs::read(a.path().join(&names[1])).unwrap()).unwrap();
    assert!(late.contains("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"));
    let stall = String::from_utf8(std::fs::read(a.path().join(&names[3])).unwrap()).unwrap();
    assert!(stall.contains("\"aten::_local_scalar_dense\""));
    let plain = String::from_utf8(std::fs::read(a.path().join(&names[0])).unwrap()).unwrap();
    assert!(!plain.contains("DataLoader") && !plain.contains("_local_scalar_dense"));

    for (args, says) in [
        (
            &["--tp", "4", "--host-delay-rank", "4"][..],
            "--host-delay-rank 4 is not a rank of a 4-rank layout",
        ),
        (
            &["--tp", "1", "--late-start-rank", "0"][..],
            "--tp 2 or more",
        ),
        (
            &["--tp", "2", "--late-start-rank", "0", "--delay-us", "0"][..],
            "--delay-us above 0",
        ),
        (
            &["--tp", "2", "--slow-link", "1"][..],
            "--slow-link 1 is not a DP replica of --dp 1",
        ),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let out = Command::new(BIN)
            .arg("synth")
            .arg("-o")
            .arg(tmp.path())
            .args(args)
            .output()
            .unwrap();
        assert!(!out.status.success(), "{args:?} was accepted");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

/// `--cpu-only`: the plants keep their meaning in a CPU-only (gloo) run, as clean as on GPUs,
/// and the files are shaped as a gloo run writes them: no device, no GPU event, a `c10d::` op
/// per collective on the main thread that holds every member until the last arrives (the n-th
/// op of every member ends at the same instant; the last to start is the shortest).
#[test]
fn cpu_only_plants_keep_their_meaning() {
    if !common::have_python("synth plant checks") {
        return;
    }
    let ck = |args: &[&str]| {
        let tmp = tempfile::tempdir().unwrap();
        let mut all = args.to_vec();
        all.push("--cpu-only");
        synth(tmp.path(), &all);
        let v = critical(tmp.path());
        for (label, r) in v["ranks"].as_object().expect("ranks") {
            assert_eq!(r["mode"], "cpu", "{label}");
        }
        (tmp, v)
    };
    let (_t, v) = ck(&["--tp", "4"]);
    assert_quiet(&v, None, 0.05 * D_NS);
    let (stall, v) = ck(&["--tp", "4", "--host-delay-rank", "2", "--delay-us", "2000"]);
    assert_near(
        total(&v, "TP02", "host") / STEPS,
        D_NS,
        0.05,
        "TP02 host per step",
    );
    assert_quiet(&v, Some(("TP02", "host")), 0.10 * D_NS);
    let (_t, v) = ck(&["--tp", "4", "--late-start-rank", "1", "--delay-us", "2000"]);
    assert_near(total(&v, "TP01", "late"), STEPS * D_NS, 0.05, "TP01 late");
    assert_quiet(&v, Some(("TP01", "late")), 0.10 * D_NS);
    let (_t, c) = ck(&["--dp", "2", "--tp", "2"]);
    let (_t, v) = ck(&[
        "--dp",
        "2",
        "--tp",
        "2",
        "--slow-link",
        "1",
        "--factor",
        "3",
    ]);
    let median =
        |v: &Value, w: usize| num(&v["worlds"][w]["transfer_median_ns"]["c10d::allreduce_"]);
    assert_near(median(&v, 1) / median(&v, 0), 3.0, 0.05, "DP01 over DP00");
    assert_eq!(median(&v, 0), median(&c, 0), "DP00 unchanged");
    assert_near(median(&v, 1), 3.0 * median(&c, 1), 0.01, "DP01 vs control");
    assert_quiet(&v, None, 0.05 * D_NS);

    // The files of the host-delay run, read as JSON.
    let mut names: Vec<_> = std::fs::read_dir(stall.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    names.sort();
    let mut ops: Vec<Vec<(i64, i64)>> = Vec::new();
    for p in &names {
        let bytes = std::fs::read(p).unwrap();
        let mut text = String::new();
        std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(&bytes[..]), &mut text)
            .unwrap();
        let doc: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(doc["deviceProperties"], serde_json::json!([]), "{p:?}");
        assert_eq!(doc["distributedInfo"]["backend"], "gloo", "{p:?}");
        let evs = doc["traceEvents"].as_array().unwrap();
        let ns = |v: &Value| (num(v) * 1e3).round() as i64;
        let mut mine = Vec::new();
        for e in evs {
            let cat = e["cat"].as_str().unwrap_or("");
            assert!(
                !matches!(
                    cat,
                    "kernel" | "gpu_memcpy" | "gpu_memset" | "cuda_runtime" | "ac2g"
                ),
                "{e}"
            );
            assert_ne!(
                e["name"], "aten::_local_scalar_dense",
                "the stall records no op"
            );
            if e["name"] == "c10d::allreduce_" {
                assert_eq!(e["tid"], e["pid"], "on the main thread: {e}");
                mine.push((ns(&e["ts"]), ns(&e["ts"]) + ns(&e["dur"])));
            }
        }
        assert!(evs.iter().any(|e| e["name"] == "gloo:all_reduce"));
        assert_eq!(
            evs.iter()
                .filter(|e| e["name"]
                    .as_str()
                    .is_some_and(|n| n.starts_with("ProfilerStep#")))
                .count(),
            STEPS as usize
        );
        ops.push(mine);
    }
    assert_eq!(ops.len(), 4);
    let (mut waited, n) = (0, ops[0].len());
    assert!(n > 0);
    for i in 0..n {
        let ends: Vec<i64> = ops.iter().map(|o| o[i].1).collect();
        assert!(
            ends.iter().all(|&e| e == ends[0]),
            "collective {i}: {ends:?}"
        );
        let last = ops.iter().max_by_key(|o| o[i].0).unwrap()[i];
        let shortest = ops.iter().map(|o| o[i].1 - o[i].0).min().unwrap();
        assert_eq!(last.1 - last.0, shortest, "collective {i}");
        // At the stalled collective the others wait about the delay inside their op.
        if ops.iter().any(|o| o[i].1 - o[i].0 > D_NS as i64 * 9 / 10) {
            waited += 1;
        }
    }
    assert_eq!(waited, STEPS as usize, "one long wait per step");
}
