//! `rankprof ls` as a user meets it: an empty folder is an error on stderr (exit 2) that
//! suggests `-r` when the traces are in subfolders; counts read as English ("1 rank"); a
//! training run named by torch's trace handler is one profile for ls, merge and analyze.

use std::process::Command;

fn rankprof(args: &[&str]) -> (Option<i32>, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_rankprof"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .expect("rankprof runs");
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn traces_only_in_subfolders_suggest_recursive() {
    let tmp = tempfile::tempdir().unwrap();
    let step = tmp.path().join("rollout_step_3");
    std::fs::create_dir(&step).unwrap();
    let src = format!("{}/fixtures/vllm-tp2", env!("CARGO_MANIFEST_DIR"));
    for e in std::fs::read_dir(&src).unwrap() {
        let p = e.unwrap().path();
        std::fs::copy(&p, step.join(p.file_name().unwrap())).unwrap();
    }
    let dir = tmp.path().to_string_lossy().into_owned();
    let (code, out, err) = rankprof(&["ls", &dir]);
    assert_eq!(code, Some(2), "{out}{err}");
    assert!(out.is_empty(), "stdout: {out}");
    assert!(err.starts_with("error: no rank traces found in "), "{err}");
    assert!(
        err.contains(&format!(
            "1 profile is in its subfolders: rankprof ls -r {dir}"
        )),
        "{err}"
    );
    let (code, out, _) = rankprof(&["ls", "-r", &dir]);
    assert_eq!(code, Some(0));
    assert!(out.contains(": 2 ranks, "), "{out}");
    // An empty folder: the error alone.
    let empty = tempfile::tempdir().unwrap();
    let (code, _, err) = rankprof(&["ls", &empty.path().to_string_lossy()]);
    assert_eq!(code, Some(2));
    assert!(!err.contains("subfolders"), "{err}");
}

#[test]
fn one_rank_is_one_rank() {
    let hta = format!("{}/../shared/fixtures/hta", env!("CARGO_MANIFEST_DIR"));
    let (code, out, err) = rankprof(&["ls", &hta]);
    assert_eq!(code, Some(0), "{err}");
    // nccl-a100-rank-0.json.gz is a profile of its own, of one rank.
    let line = out
        .lines()
        .find(|l| l.contains("profile nccl-a100"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(line.contains(": 1 rank, "), "{line}");
    assert!(!out.contains(" 1 ranks"), "{out}");
}

/// A small Kineto trace of rank `r` of `n` (a step, a launch and its kernel).
fn rank_trace(r: u32, n: u32) -> String {
    format!(
        r#"{{"schemaVersion": 1, "distributedInfo": {{"backend": "nccl", "rank": {r}, "world_size": {n}}},
"traceEvents": [
{{"ph":"M","name":"process_name","pid":100,"tid":0,"args":{{"name":"python3"}}}},
{{"ph":"X","cat":"user_annotation","name":"ProfilerStep#0","pid":100,"tid":1,"ts":1.0,"dur":90}},
{{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":100,"tid":1,"ts":2.0,"dur":5,"args":{{"correlation":7}}}},
{{"ph":"X","cat":"kernel","name":"gemm_kernel","pid":0,"tid":7,"ts":11.0,"dur":40,"args":{{"device":0,"stream":7,"correlation":7}}}}
], "traceName": "x"}}"#
    )
}

/// issue 43's run: `worker{r}_step_12.{ms}.pt.trace.json`, each rank stamped on its own. One
/// profile for ls, merge and analyze; stamped 20 minutes apart, merge refuses to write
/// one-rank traces and says how to merge them as one (naming the files), which works.
#[test]
fn a_training_run_named_by_the_trace_handler_is_one_profile() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    std::fs::create_dir(&run).unwrap();
    for r in 0..4u32 {
        let ms = 1_712_000_000_123u64 + u64::from((r * 3 + 1) % 4) * 15_000 + u64::from(r);
        std::fs::write(
            run.join(format!("worker{r}_step_12.{ms}.pt.trace.json")),
            rank_trace(r, 4),
        )
        .unwrap();
    }
    let dir = run.to_string_lossy().into_owned();
    let (code, out, err) = rankprof(&["ls", &dir]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert_eq!(out.matches("profile ").count(), 1, "{out}");
    assert!(
        out.contains("profile worker_step_12") && out.contains(": 4 ranks, "),
        "{out}"
    );
    let (code, out, err) = rankprof(&["ls", "--rank-from", "distributed-info", &dir]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("ranks from distributedInfo"), "{out}");
    let merged = tmp.path().join("m.json.gz");
    let m = merged.to_string_lossy().into_owned();
    let (code, out, err) = rankprof(&["merge", "--profile-dir", &dir, "-o", &m]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(merged.is_file());
    let (code, out, err) = rankprof(&["analyze", "--profile-dir", &dir]);
    assert!(matches!(code, Some(0) | Some(3)), "{out}{err}");
    assert!(!err.contains("profiles found"), "{err}");

    // The same ranks stamped 20 minutes apart.
    let apart = tmp.path().join("apart");
    std::fs::create_dir(&apart).unwrap();
    let mut files = Vec::new();
    for r in 0..3u32 {
        let ms = 1_712_000_000_000u64 + u64::from(r) * 1_200_000;
        let p = apart.join(format!("worker{r}_step_12.{ms}.pt.trace.json"));
        std::fs::write(&p, rank_trace(r, 3)).unwrap();
        files.push(p.to_string_lossy().into_owned());
    }
    let adir = apart.to_string_lossy().into_owned();
    let (code, out, err) = rankprof(&["merge", "--profile-dir", &adir]);
    assert_eq!(code, Some(2), "{out}{err}");
    assert!(
        err.contains("3 profiles of one rank each") && err.contains("name the files"),
        "{err}"
    );
    let left: Vec<_> = std::fs::read_dir(&apart)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with("merged")
        })
        .collect();
    assert!(left.is_empty(), "merge wrote {left:?}");
    let mut args = vec!["merge", "-o", &m];
    args.extend(files.iter().map(String::as_str));
    let (code, out, err) = rankprof(&args);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("3 ranks"), "{out}");
}

/// Every `damaged` value in a JSON tree.
fn damaged_values(v: &serde_json::Value, out: &mut Vec<serde_json::Value>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                if k == "damaged" {
                    out.push(x.clone());
                }
                damaged_values(x, out);
            }
        }
        serde_json::Value::Array(a) => a.iter().for_each(|x| damaged_values(x, out)),
        _ => {}
    }
}

/// `damaged` is a JSON boolean wherever it is known — analyze, merge and `ls --count` — and
/// null in `ls` without `--count` (not read, not known); never the string "false".
#[test]
fn damaged_is_a_boolean_in_every_json() {
    let tmp = tempfile::tempdir().unwrap();
    for r in 0..2u32 {
        std::fs::write(
            tmp.path()
                .join(format!("worker{r}.1712000000{r:03}.pt.trace.json")),
            rank_trace(r, 2),
        )
        .unwrap();
    }
    let dir = tmp.path().to_string_lossy().into_owned();
    let out = tmp.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let o = out.to_string_lossy().into_owned();
    for (args, want_null) in [
        (vec!["ls", &dir, "--format", "json"], true),
        (vec!["ls", &dir, "--count", "--format", "json"], false),
        (
            vec!["merge", "--profile-dir", &dir, "-o", &o, "--format", "json"],
            false,
        ),
        (
            vec!["analyze", "--profile-dir", &dir, "--format", "json"],
            false,
        ),
    ] {
        let (code, stdout, err) = rankprof(&args);
        assert_eq!(code, Some(0), "{args:?}: {stdout}{err}");
        let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
        let mut found = Vec::new();
        damaged_values(&v, &mut found);
        assert!(!found.is_empty(), "{args:?}: {stdout}");
        for d in found {
            if want_null {
                assert!(d.is_null(), "{args:?}: {d}");
            } else {
                assert_eq!(d, serde_json::Value::Bool(false), "{args:?}");
            }
        }
    }
}
