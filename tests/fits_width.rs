//! Every line the terminal shows fits its width (#43 item 4): `analyze` (every table, title,
//! note and verdict line, per rank and grouped), `compare`, `ls` and `merge`'s summary, and
//! `--help`, at 80, 100 and 120 columns (`$COLUMNS`, as a piped run reads it), on the real
//! fixtures and on synth plants. Widths are counted in `char`s (the reports' box drawing, `µ`,
//! `…` and `×` are one column each).

use std::path::Path;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_rankprof");
const WIDTHS: [usize; 3] = [80, 100, 120];

fn fixture(rel: &str) -> String {
    format!("{}/../shared/fixtures/{rel}", env!("CARGO_MANIFEST_DIR"))
}

/// `rankprof ARGS` with `COLUMNS=width`: (stdout, stderr, exit code).
fn run(width: usize, args: &[&str]) -> (String, String, Option<i32>) {
    let out = Command::new(BIN)
        .args(args)
        .env("COLUMNS", width.to_string())
        .env("NO_COLOR", "1")
        .output()
        .expect("rankprof runs");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code(),
    )
}

/// Panics with the lines of `text` longer than `width`.
fn assert_fits(what: &str, text: &str, width: usize) {
    let over: Vec<String> = text
        .lines()
        .filter(|l| l.chars().count() > width)
        .map(|l| format!("{:>4}: {l}", l.chars().count()))
        .collect();
    assert!(
        over.is_empty(),
        "{what} at {width} columns: {} lines longer:\n{}\n\n{text}",
        over.len(),
        over.join("\n")
    );
}

/// A synth set in `dir` (`rankprof synth -o dir ARGS`, short).
fn synth(dir: &Path, args: &[&str]) -> String {
    let d = dir.to_str().expect("a UTF-8 path").to_string();
    let out = Command::new(BIN)
        .args(["synth", "-o", &d, "--steps", "4", "--layers", "1"])
        .args(args)
        .output()
        .expect("synth runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    d
}

/// Runs analyze on `args` at every width: stdout and the notes on stderr fit; the report is a
/// report (a profile line and tables); (the outputs by width).
fn analyze_fits(args: &[&str], widths: &[usize]) -> Vec<String> {
    let mut outs = Vec::new();
    for &w in widths {
        let mut a = vec!["analyze"];
        a.extend(args);
        let (out, err, code) = run(w, &a);
        assert!(
            matches!(code, Some(0 | 3)),
            "analyze {args:?}: {code:?}\n{err}"
        );
        assert!(out.starts_with("Profile "), "{out}");
        assert!(out.contains('┌'), "no table: {out}");
        assert_fits(&format!("analyze {args:?}"), &out, w);
        assert_fits(&format!("analyze {args:?} (stderr)"), &err, w);
        outs.push(out);
    }
    outs
}

#[test]
fn analyze_fits_on_real_traces() {
    let sampled = fixture("hta");
    let outs = analyze_fits(&[&sampled, "--profile-id", "sampled"], &WIDTHS);
    // At 80 columns the rank summary (ten columns) is split: its label column repeated.
    assert!(outs[0].contains("Rank summary") && outs[0].contains("(continued)"));
    // The tables stay whole where they fit.
    assert!(!outs[2]
        .lines()
        .any(|l| l.starts_with("Rank summary") && l.contains("(continued)")));
    analyze_fits(&[&fixture("hta/nccl-a100-rank-0.json.gz")], &WIDTHS);
    let outs = analyze_fits(&[&fixture("sglang-cpu/tp2")], &WIDTHS);
    // The long "Unclassified" line is wrapped, not cut: every name is there.
    for o in &outs {
        let flat = o.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(flat.contains("Unclassified (\"other\")"), "{o}");
        assert!(flat.contains("(--classes rules.toml sorts them)"), "{o}");
    }
    analyze_fits(&[&fixture("sglang-cpu/by_stage")], &WIDTHS);
    // The large one (a million events) at the narrowest width only.
    analyze_fits(&[&fixture("sglang-cpu/tp2dp2")], &[80]);
}

#[test]
fn analyze_fits_on_synth_plants() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let slow = synth(
        &tmp.path().join("slow"),
        &["--tp", "4", "--dp", "2", "--slow-rank", "5"],
    );
    let outs = analyze_fits(&[&slow], &WIDTHS);
    // The verdict's rank label is never broken to fit.
    for o in &outs {
        assert!(o.contains("TP01-DP01"), "{o}");
    }
    // The drill-down of one rank against its peers.
    analyze_fits(&[&slow, "--rank", "TP01-DP01"], &WIDTHS);
    let host = synth(
        &tmp.path().join("host"),
        &["--tp", "2", "--host-delay-rank", "1"],
    );
    analyze_fits(&[&host], &WIDTHS);
    let heavy = synth(
        &tmp.path().join("heavy"),
        &[
            "--tp",
            "2",
            "--dp",
            "2",
            "--heavy-rank",
            "2",
            "--record-shapes",
        ],
    );
    analyze_fits(&[&heavy], &WIDTHS);
    // 64 ranks: the grouped view (distributions, outliers, groups).
    let many = synth(
        &tmp.path().join("many"),
        &["--tp", "8", "--dp", "8", "--slow-rank", "37"],
    );
    let outs = analyze_fits(&[&many], &WIDTHS);
    assert!(outs[0].contains("TP05-DP04"), "{}", outs[0]);
    analyze_fits(&[&many, "--view", "ranks"], &[80]);
}

#[test]
fn compare_ls_and_merge_fit() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let base = synth(&tmp.path().join("base"), &["--tp", "4", "--dp", "2"]);
    let cur = synth(
        &tmp.path().join("cur"),
        &[
            "--tp",
            "4",
            "--dp",
            "2",
            "--slow-rank",
            "3",
            "--factor",
            "1.5",
        ],
    );
    for w in WIDTHS {
        let (out, err, code) = run(w, &["compare", &base, &cur]);
        assert_eq!(code, Some(1), "a regression: {out}\n{err}");
        assert!(
            out.starts_with("rankprof compare:") && out.contains('┌'),
            "{out}"
        );
        assert_fits("compare", &out, w);
        assert_fits("compare (stderr)", &err, w);

        let (out, err, code) = run(w, &["ls", "-r", &fixture("")]);
        assert_eq!(code, Some(0), "{err}");
        assert!(out.contains("by_stage"), "{out}");
        assert_fits("ls -r", &out, w);
        assert_fits("ls -r (stderr)", &err, w);

        let o = tmp.path().join(format!("merged-{w}"));
        std::fs::create_dir(&o).expect("mkdir");
        let o = o.to_str().expect("a UTF-8 path").to_string();
        let (out, err, code) = run(w, &["merge", &cur, "-o", &o]);
        assert_eq!(code, Some(0), "{err}");
        assert!(out.contains("8 ranks"), "{out}");
        assert_fits("merge", &out, w);
        assert_fits("merge (stderr)", &err, w);
    }
}

#[test]
fn help_is_wrapped_to_the_terminal() {
    for path in [
        "",
        "analyze",
        "compare",
        "merge",
        "ls",
        "capture",
        "capture run",
        "capture start",
        "synth",
        "watch",
    ] {
        let mut args: Vec<&str> = path.split_whitespace().collect();
        args.push("--help");
        for w in [60, 80] {
            let (out, err, code) = run(w, &args);
            assert_eq!(code, Some(0), "{args:?}: {err}");
            assert!(out.contains("Exit codes:"), "{out}");
            assert_fits(&format!("{args:?}"), &out, w);
            // Doc comments are the help text: a rustdoc link (`[`x`]`) reads as noise there.
            assert!(
                !out.contains("[`"),
                "{args:?}: a rustdoc link in --help:\n{out}"
            );
        }
    }
    // A long example command goes on after ` \`: still one command to paste.
    let (out, _, _) = run(60, &["analyze", "--help"]);
    let ex = &out[out.find("Examples:").expect("examples")..];
    let cont: Vec<&str> = ex.lines().filter(|l| l.ends_with(" \\")).collect();
    assert!(!cont.is_empty(), "{ex}");
    for l in cont {
        assert!(!l.trim_start().starts_with('#'), "{l}");
    }
}
