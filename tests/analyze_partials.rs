//! `analyze --save-partial` / `--from-partials` (#11): the reduce over partials gives the
//! same report (JSON and terminal text, byte for byte) as one run over all the files, however
//! the ranks are split; and it refuses, with the file's name and exit code 2, what cannot be
//! combined.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::rank_files;

const BIN: &str = env!("CARGO_BIN_EXE_rankprof");

/// (exit code, stdout, stderr).
fn run(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(BIN).args(args).output().expect("run rankprof");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn s(p: &Path) -> String {
    p.display().to_string()
}

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(rel)
}

/// The direct run's stdout in `format` (table or json).
fn direct(files: &[PathBuf], extra: &[&str], format: &str) -> (i32, String) {
    let mut a: Vec<String> = vec!["analyze".into(), "--format".into(), format.into()];
    a.extend(extra.iter().map(|x| x.to_string()));
    a.extend(files.iter().map(|f| s(f)));
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    let (code, out, err) = run(&a);
    assert!(code == 0 || code == 3, "{a:?}: {code} {err}");
    (code, out)
}

/// Saves one partial per group of files, then reduces them (in reverse order, to show that the
/// order of the partials does not matter); the reduce's stdout in `format`.
fn via_partials(groups: &[&[PathBuf]], extra: &[&str], format: &str) -> (i32, String) {
    via_partials_with(groups, extra, &[], format)
}

/// [`via_partials`] with `reduce` given to the reduce (`--from-partials`) as well.
fn via_partials_with(
    groups: &[&[PathBuf]],
    extra: &[&str],
    reduce: &[&str],
    format: &str,
) -> (i32, String) {
    let t = tempfile::tempdir().unwrap();
    let mut parts = Vec::new();
    for (i, g) in groups.iter().enumerate() {
        let p = t.path().join(format!("part{i}.json.gz"));
        let mut a: Vec<String> = vec!["analyze".into(), "--save-partial".into(), s(&p)];
        a.extend(extra.iter().map(|x| x.to_string()));
        a.extend(g.iter().map(|f| s(f)));
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        let (code, out, err) = run(&a);
        assert!(code == 0 || code == 3, "{a:?}: {code} {err}");
        assert!(out.is_empty(), "--save-partial prints no report: {out}");
        parts.push(s(&p));
    }
    parts.reverse();
    let mut a: Vec<&str> = vec!["analyze", "--format", format];
    a.extend(reduce);
    a.push("--from-partials");
    a.extend(parts.iter().map(String::as_str));
    let (code, out, err) = run(&a);
    assert!(code == 0 || code == 3, "{a:?}: {code} {err}");
    (code, out)
}

/// Splits `files` several ways and checks every reduce against the direct run.
fn check_splits(files: &[PathBuf], extra: &[&str]) {
    let n = files.len();
    let mut splits: Vec<Vec<&[PathBuf]>> = vec![
        vec![files],
        files.chunks(1).collect(),
        vec![&files[..n / 2], &files[n / 2..]],
    ];
    if n > 2 {
        splits.push(vec![&files[..1], &files[1..]]);
        splits.push(vec![&files[..n - 1], &files[n - 1..]]);
    }
    splits.retain(|s| s.iter().all(|g| !g.is_empty()));
    for format in ["json", "table"] {
        let (code, want) = direct(files, extra, format);
        assert!(!want.is_empty());
        for split in &splits {
            let sizes: Vec<usize> = split.iter().map(|g| g.len()).collect();
            let (c, got) = via_partials(split, extra, format);
            assert_eq!(c, code, "exit code, split {sizes:?}");
            assert!(
                got == want,
                "{format} differs for split {sizes:?} of {files:?}:\n--- direct\n{want}\n--- partials\n{got}"
            );
        }
    }
}

#[test]
fn partials_equal_one_run_on_the_synthetic_fixtures() {
    for dir in [
        "sglang-tp4",
        "sglang-tp2dp2",
        "sglang-tp2pp2ep2",
        "vllm-tp2",
    ] {
        check_splits(&rank_files(&fixture(dir)), &[]);
    }
    // Two stages in one directory: each partial is saved with --stage, which it carries.
    check_splits(
        &rank_files(&fixture("sglang-bystage-tp2"))
            .into_iter()
            .filter(|p| p.to_string_lossy().contains("EXTEND"))
            .collect::<Vec<_>>(),
        &[],
    );
}

#[test]
fn partials_equal_one_run_on_the_real_sglang_traces() {
    for dir in ["sglang-cpu/tp2", "sglang-cpu/tp2dp2", "sglang-cpu/tp1"] {
        check_splits(&rank_files(&common::shared(dir)), &[]);
    }
}

#[test]
fn shards_of_a_directory_equal_one_run() {
    let dir = fixture("sglang-tp2dp2");
    let (_, want) = direct(&[], &["--profile-dir", &s(&dir)], "json");
    let t = tempfile::tempdir().unwrap();
    let mut parts = Vec::new();
    for k in 1..=3 {
        let p = s(&t.path().join(format!("shard{k}.gz")));
        let shard = format!("{k}/3");
        let (code, _, err) = run(&[
            "analyze",
            "--profile-dir",
            &s(&dir),
            "--shard",
            &shard,
            "--save-partial",
            &p,
        ]);
        assert_eq!(code, 0, "{err}");
        parts.push(p);
    }
    let mut a = vec!["analyze", "--json", "--from-partials"];
    a.extend(parts.iter().map(String::as_str));
    let (code, got, err) = run(&a);
    assert_eq!(code, 0, "{err}");
    assert_eq!(got, want);
    let (code, _, err) = run(&["analyze", "--profile-dir", &s(&dir), "--shard", "4/3"]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn a_rank_cut_before_its_base_time_gets_the_common_base_across_partials() {
    // Kineto writes baseTimeNanoseconds after the events: cut rank 1 in the middle, and save
    // it in a partial of its own, so that the common base comes from the other partial.
    let t = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    for f in rank_files(&fixture("sglang-tp4")) {
        let dest = t.path().join(f.file_name().unwrap());
        if f.to_string_lossy().contains("-TP-1.") {
            let mut text = Vec::new();
            let (mut r, _) = rankprof::trace::read::reader::open(&f).unwrap();
            std::io::Read::read_to_end(&mut r, &mut text).unwrap();
            std::fs::write(&dest, &text[..text.len() / 2]).unwrap();
        } else {
            std::fs::copy(&f, &dest).unwrap();
        }
        files.push(dest);
    }
    let groups: &[&[PathBuf]] = &[
        &files[1..2],
        &[files[0].clone(), files[2].clone(), files[3].clone()],
    ];
    // Compared (kept although cut) only when asked.
    let (code, want) = direct(&files, &["--keep-partial"], "json");
    assert_eq!(code, 3, "a damaged input: exit code 3");
    assert!(want.contains("rank TP01 has no baseTimeNanoseconds"));
    let (c, got) = via_partials_with(groups, &[], &["--keep-partial"], "json");
    assert_eq!(c, 3);
    assert_eq!(got, want);
    // By default left out, and named, the same way through partials.
    let (code, want) = direct(&files, &[], "json");
    assert_eq!(code, 3);
    assert!(
        want.contains("Left out of the comparison: TP01 ("),
        "{want}"
    );
    assert!(!want.contains("rank TP01 has no baseTimeNanoseconds"));
    let (c, got) = via_partials(groups, &[], "json");
    assert_eq!(c, 3);
    assert_eq!(got, want);
}

/// Saves a partial of `files`; its path.
fn save(dir: &Path, name: &str, files: &[PathBuf], extra: &[&str]) -> String {
    let p = s(&dir.join(name));
    let mut a: Vec<String> = vec!["analyze".into(), "--save-partial".into(), p.clone()];
    a.extend(extra.iter().map(|x| x.to_string()));
    a.extend(files.iter().map(|f| s(f)));
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    let (code, _, err) = run(&a);
    assert_eq!(code, 0, "{err}");
    p
}

/// `--from-partials` on `parts` fails with exit 2 and a message holding every `needles`.
fn refused(parts: &[&str], extra: &[&str], needles: &[&str]) {
    let mut a = vec!["analyze", "--from-partials"];
    a.extend(parts);
    a.extend(extra);
    let (code, out, err) = run(&a);
    assert_eq!(code, 2, "{a:?} must fail: {out}{err}");
    assert!(out.is_empty(), "nothing on stdout: {out}");
    for n in needles {
        assert!(err.contains(n), "{a:?}: {n:?} not in {err}");
    }
}

#[test]
fn what_cannot_be_combined_is_refused_with_the_file_name() {
    let t = tempfile::tempdir().unwrap();
    let tp4 = rank_files(&fixture("sglang-tp4"));
    let a = save(t.path(), "a.gz", &tp4[..2], &[]);
    let b = save(t.path(), "b.gz", &tp4[1..], &[]);
    // A rank in two partials.
    refused(&[&a, &b], &[], &["rank TP01 is in two partials", &a, &b]);
    // Partials of another profile.
    let other = save(
        t.path(),
        "other.gz",
        &rank_files(&fixture("sglang-tp2dp2"))[..1],
        &[],
    );
    refused(&[&a, &other], &[], &["differ in profile id", &other]);
    // Another step marker.
    let c = save(
        t.path(),
        "c.gz",
        &tp4[2..],
        &["--step-marker", "ProfilerStep"],
    );
    refused(&[&a, &c], &[], &["differ in step marker", &c]);
    // Other class rules.
    let rules = t.path().join("rules.toml");
    std::fs::write(&rules, "[[rule]]\nclass = \"mine\"\npattern = \"gemm\"\n").unwrap();
    let d = save(t.path(), "d.gz", &tp4[2..], &["--classes", &s(&rules)]);
    refused(&[&a, &d], &[], &["differ in kernel classes", &d]);
    // A truncated partial, and a file that is no partial at all.
    let bytes = std::fs::read(&b).unwrap();
    let cut = s(&t.path().join("cut.gz"));
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    refused(&[&a, &cut], &[], &["cut.gz", "damaged or truncated"]);
    let trace = s(&tp4[3]);
    refused(&[&trace], &[], &[&trace, "not a rankprof partial"]);
    // Another format version (written as plain JSON, which the reader also takes).
    let mut v: serde_json::Value = {
        let mut text = Vec::new();
        let mut r = flate2::read::GzDecoder::new(bytes.as_slice());
        std::io::Read::read_to_end(&mut r, &mut text).unwrap();
        serde_json::from_slice(&text).unwrap()
    };
    assert_eq!(v["format"], "rankprof-analyze-partial");
    assert_eq!(v["version"], 2);
    v["version"] = 99.into();
    let future = s(&t.path().join("future.json"));
    std::fs::write(&future, v.to_string()).unwrap();
    refused(&[&future], &[], &[&future, "version 99"]);
    // Read-time options are refused with --from-partials (clap: exit 2).
    refused(&[&a], &["--classes", &s(&rules)], &["--classes"]);
    refused(&[&a], &["--step-marker", "x"], &["--step-marker"]);
    // A missing partial.
    refused(&[&s(&t.path().join("nope.gz"))], &[], &["nope.gz"]);
}
