//! `rankprof ls` as a user meets it: an empty folder is an error on stderr (exit 2) that
//! suggests `-r` when the traces are in subfolders; counts read as English ("1 rank").

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
