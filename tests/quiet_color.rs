//! `--quiet` (the verdict lines only, the exit code as without it), `--color` (the slow rank
//! highlighted: `always`; never when piped under `auto`, with `NO_COLOR`, or `never`), and
//! analyze on a by-stage folder (each stage in turn) (#43 item 9).

use std::path::Path;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_rankprof");
const ESC: &str = "\u{1b}[";

/// `rankprof ARGS` with `env`: (stdout, stderr, exit code).
fn run(args: &[&str], env: &[(&str, &str)]) -> (String, String, Option<i32>) {
    let mut c = Command::new(BIN);
    c.args(args).env_remove("NO_COLOR").env("COLUMNS", "100");
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().expect("rankprof runs");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code(),
    )
}

/// A TP4×DP2 synth set whose global rank 5 (TP01-DP01) is 1.3× slower.
fn slow_set(dir: &Path) -> String {
    let d = dir.to_str().expect("a UTF-8 path").to_string();
    let (_, err, code) = run(
        &[
            "synth",
            "-o",
            &d,
            "--tp",
            "4",
            "--dp",
            "2",
            "--steps",
            "4",
            "--layers",
            "1",
            "--slow-rank",
            "5",
        ],
        &[],
    );
    assert_eq!(code, Some(0), "{err}");
    d
}

#[test]
fn quiet_prints_the_verdict_lines_only() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let d = slow_set(&tmp.path().join("s"));
    let (full, _, code) = run(&["analyze", &d], &[]);
    let (quiet, _, qcode) = run(&["analyze", "-q", &d], &[]);
    assert_eq!(code, qcode);
    // The verdict block of the full report: the lines after "Profile …" up to the blank line.
    let verdict: Vec<&str> = full.lines().skip(1).take_while(|l| !l.is_empty()).collect();
    assert!(verdict.iter().any(|l| l.contains("TP01-DP01")), "{full}");
    assert_eq!(quiet.lines().collect::<Vec<_>>(), verdict, "{quiet}");
    assert!(
        !quiet.contains('┌') && !quiet.contains("Profile "),
        "{quiet}"
    );
    // --quiet is text: with a machine format it is refused in words.
    let (_, err, code) = run(&["analyze", "-q", "--json", &d], &[]);
    assert_eq!(code, Some(2));
    assert!(err.contains("--quiet"), "{err}");
}

#[test]
fn compare_quiet_prints_the_headline_and_failures() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let base = tmp.path().join("base");
    let (_, err, code) = run(
        &[
            "synth",
            "-o",
            base.to_str().expect("utf-8"),
            "--tp",
            "2",
            "--steps",
            "4",
            "--layers",
            "1",
        ],
        &[],
    );
    assert_eq!(code, Some(0), "{err}");
    let cur = tmp.path().join("cur");
    let (_, err, code) = run(
        &[
            "synth",
            "-o",
            cur.to_str().expect("utf-8"),
            "--tp",
            "2",
            "--steps",
            "4",
            "--layers",
            "1",
            "--slow-rank",
            "1",
            "--factor",
            "1.5",
        ],
        &[],
    );
    assert_eq!(code, Some(0), "{err}");
    let (b, c) = (base.to_str().expect("utf-8"), cur.to_str().expect("utf-8"));
    let (full, _, code) = run(&["compare", b, c], &[]);
    let (quiet, _, qcode) = run(&["compare", "--quiet", b, c], &[]);
    assert_eq!((code, qcode), (Some(1), Some(1)), "{full}");
    // The headline (wrapped where long) and the failure lines, as the full report has them.
    let lines: Vec<&str> = full.lines().collect();
    let head = lines
        .iter()
        .take_while(|l| !l.starts_with("  baseline"))
        .copied();
    let failures = lines
        .iter()
        .skip_while(|l| **l != "Failures:")
        .skip(1)
        .take_while(|l| !l.is_empty())
        .copied();
    let want: Vec<&str> = head.chain(failures).collect();
    assert!(want.len() > 1, "{full}");
    assert_eq!(quiet.lines().collect::<Vec<_>>(), want, "{quiet}");
    assert!(!quiet.contains('┌'), "{quiet}");
}

#[test]
fn color_highlights_the_slow_rank_only_when_asked_or_on_a_terminal() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let d = slow_set(&tmp.path().join("s"));
    let (always, _, _) = run(&["analyze", "--color", "always", &d], &[]);
    let lead = "\u{1b}[1;31mTP01-DP01\u{1b}[0m";
    assert!(always.contains(lead), "{always}");
    // In the verdict and in a table.
    let verdict_at = always.find("Profile ").expect("profile line");
    let first_table = always.find('┌').expect("a table");
    assert!(always[verdict_at..first_table].contains(lead), "{always}");
    assert!(
        always
            .lines()
            .any(|l| l.starts_with('│') && l.contains(lead)),
        "{always}"
    );
    // Only the lead: every escape opens its highlight of TP01-DP01 (and its reset).
    let opened = always.matches(ESC).count();
    assert_eq!(opened, 2 * always.matches(lead).count(), "{always}");
    // NO_COLOR wins over --color always too? No: an explicit flag wins (no-color.org).
    let (forced, _, _) = run(&["analyze", "--color", "always", &d], &[("NO_COLOR", "1")]);
    assert!(forced.contains(lead));
    for (args, env) in [
        (vec!["analyze", &d], vec![]),
        (
            vec!["analyze", "--color", "auto", &d],
            vec![("NO_COLOR", "1")],
        ),
        (vec!["analyze", "--color", "never", &d], vec![]),
    ] {
        let (out, _, _) = run(&args, &env);
        assert!(!out.contains(ESC), "{args:?} {env:?}: {out}");
        assert!(out.contains("TP01-DP01"), "{out}");
    }
    // Coloured, the lines still fit (escapes take no column).
    let (narrow, _, _) = run(&["analyze", "--color", "always", &d], &[("COLUMNS", "80")]);
    for l in narrow.lines() {
        let plain = l.replace("\u{1b}[1;31m", "").replace("\u{1b}[0m", "");
        assert!(plain.chars().count() <= 80, "{l}");
    }
}

#[test]
fn a_by_stage_folder_is_analyzed_stage_by_stage() {
    let dir = format!(
        "{}/../shared/fixtures/sglang-cpu/by_stage",
        env!("CARGO_MANIFEST_DIR")
    );
    let (out, err, code) = run(&["analyze", &dir], &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("each stage analyzed on its own"), "{err}");
    let decode = out
        .find("Profile bystage-1 (stage DECODE): 2 ranks")
        .expect("DECODE");
    let extend = out
        .find("Profile bystage-1 (stage EXTEND): 2 ranks")
        .expect("EXTEND");
    assert!(decode < extend, "{out}");
    // Each is the report --stage gives.
    for st in ["DECODE", "EXTEND"] {
        let (one, _, _) = run(&["analyze", &dir, "--stage", st], &[]);
        assert!(out.contains(&one), "{st}:\n{one}\n---\n{out}");
    }
    // One document, one stage: JSON asks for --stage.
    let (_, err, code) = run(&["analyze", &dir, "--json"], &[]);
    assert_eq!(code, Some(2));
    assert!(err.contains("--stage DECODE"), "{err}");
}

/// No "1 ranks", "1 steps", "1 files" or "0.0 MB" anywhere a person reads (#43 item 9): one
/// rank of one step, analyzed and listed; a tiny file listed in kB.
#[test]
fn one_is_singular_and_small_sizes_are_not_zero_megabytes() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let d = tmp.path().join("one");
    let ds = d.to_str().expect("utf-8");
    let (out, err, code) = run(
        &[
            "synth", "-o", ds, "--tp", "1", "--steps", "1", "--layers", "1",
        ],
        &[],
    );
    assert_eq!(code, Some(0), "{err}");
    let all = format!("{out}{err}");
    assert!(
        all.contains("1 step ") && all.contains("wrote 1 file,"),
        "{all}"
    );
    let (ls, err, _) = run(&["ls", ds], &[]);
    let (an, aerr, _) = run(&["analyze", ds], &[]);
    let html = tmp.path().join("r.html");
    run(
        &["analyze", ds, "--html", html.to_str().expect("utf-8")],
        &[],
    );
    let page = std::fs::read_to_string(&html).expect("html");
    let re = regex::Regex::new(r"\b1 (ranks|steps|files|collectives|kernels|rows)\b").expect("re");
    for text in [&all, &ls, &err, &an, &aerr, &page] {
        assert!(!re.is_match(text), "{:?}\n{text}", re.find(text));
        assert!(!text.contains("0.0 MB"), "{text}");
    }
    assert!(ls.contains("1 rank") && ls.contains(" kB"), "{ls}");
    assert!(page.contains("1 rank · 1 file"), "html meta");
}
