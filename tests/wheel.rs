//! `pip install rankprof` (#12 item 4): the wheel maturin builds from pyproject.toml, installed
//! into a fresh venv by `.ci/run` (which sets `RANKPROF_WHEEL_VENV` to it), puts the three
//! binaries on the venv's PATH, and they work: `--version` says this crate's version, and
//! `analyze-profile` analyzes a real fixture exactly as this build's `rankprof analyze` does.
//! Skips loudly when `RANKPROF_WHEEL_VENV` is unset.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn run(exe: &Path, args: &[&str]) -> Output {
    Command::new(exe)
        .args(args)
        .env("COLUMNS", "160")
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", exe.display()))
}

#[test]
fn wheel_installs_the_three_binaries_and_they_run() {
    let Some(venv) = std::env::var_os("RANKPROF_WHEEL_VENV").map(PathBuf::from) else {
        eprintln!(
            "\n**** SKIPPED wheel_installs_the_three_binaries_and_they_run: RANKPROF_WHEEL_VENV \
             is not set (.ci/run builds the wheel with maturin and installs it into a fresh \
             venv; by hand: pip install maturin && maturin build --release && python3 -m venv \
             /tmp/w && /tmp/w/bin/pip install target/wheels/rankprof-*.whl && \
             RANKPROF_WHEEL_VENV=/tmp/w cargo test --release --test wheel) ****\n"
        );
        return;
    };
    let bin = venv.join("bin");
    let version = env!("CARGO_PKG_VERSION");
    for name in ["rankprof", "merge-traces", "analyze-profile"] {
        let exe = bin.join(name);
        assert!(exe.is_file(), "{} is not installed", exe.display());
        let o = run(&exe, &["--version"]);
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(o.status.success(), "{name} --version: {o:?}");
        assert!(out.contains(version), "{name} --version: {out}");
    }
    // pip knows the package, at this version
    let o = run(&bin.join("python"), &["-m", "pip", "show", "rankprof"]);
    let show = String::from_utf8_lossy(&o.stdout);
    assert!(show.contains(&format!("Version: {version}")), "{show}");

    // analyze-profile from the wheel on a real two-rank fixture: the same JSON as this build
    let files = [
        common::shared("hta/sampled-rank-0.json.gz"),
        common::shared("hta/sampled-rank-1.json.gz"),
    ];
    let mut args = vec!["--format", "json"];
    let paths: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    args.extend(paths.iter().map(String::as_str));
    let wheel = run(&bin.join("analyze-profile"), &args);
    assert!(
        matches!(wheel.status.code(), Some(0) | Some(1)),
        "{}",
        String::from_utf8_lossy(&wheel.stderr)
    );
    let mut here_args = vec!["analyze"];
    here_args.extend(args.iter());
    let here = run(Path::new(env!("CARGO_BIN_EXE_rankprof")), &here_args);
    assert_eq!(wheel.status.code(), here.status.code());
    let a: serde_json::Value = serde_json::from_slice(&wheel.stdout).expect("JSON");
    let b: serde_json::Value = serde_json::from_slice(&here.stdout).expect("JSON");
    assert_eq!(a, b);
    // and its figures are the independent checker's (kernel count per rank)
    let c = common::checker(&files, &[]);
    let ranks = a["ranks"].as_array().expect("ranks");
    assert_eq!(ranks.len(), 2);
    for (r, f) in ranks.iter().zip(&paths) {
        assert_eq!(r["kernels"], c["ranks"][f]["kernel_count"], "{r}");
    }
}
