//! The `analyze-profile` / `rankprof analyze` command lines: output formats, the saved summary
//! (stable bytes, loadable), exit codes on damaged and missing input, the Parquet message
//! without the feature, and the HTML file (self-contained).

mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::Planted;
use rankprof::analyze::load_summary;

fn planted_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    Planted {
        ranks: 4,
        steps: 8,
        slow: 2,
        from: 3,
        factor: 1.5,
    }
    .write_ranks(dir.path(), true);
    dir
}

fn run(bin: &str, args: &[&str]) -> Output {
    let exe = match bin {
        "analyze-profile" => env!("CARGO_BIN_EXE_analyze-profile"),
        _ => env!("CARGO_BIN_EXE_rankprof"),
    };
    Command::new(exe)
        .args(args)
        .env("COLUMNS", "160")
        .output()
        .expect("runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `o` exited 2 (usage or input error) saying `says` on stderr.
fn refused(o: &Output, says: &str) {
    assert_eq!(o.status.code(), Some(2), "{}", stderr(o));
    assert!(stderr(o).contains(says), "wanted {says:?}: {}", stderr(o));
}

#[test]
fn terminal_report_names_the_slow_rank() {
    let d = planted_dir();
    let dir = d.path().to_str().unwrap();
    for out in [
        run("analyze-profile", &["--profile-dir", dir, "--all-ranks"]),
        run("rankprof", &["analyze", "--profile-dir", dir]),
    ] {
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let s = stdout(&out);
        // The first line says "Imbalanced"; the work line below it does not again.
        assert!(s.contains("  Imbalanced, "), "{s}");
        assert!(s.contains("Rank TP02 is the slowest"), "{s}");
        assert!(!s.contains("Imbalanced: rank TP02"), "{s}");
        assert!(
            s.contains("Onset: rank TP02 slower by 27 % from step 3 (t = 30.0 ms) on."),
            "{s}"
        );
        for title in [
            "Rank summary",
            "Kernel classes × rank",
            "Top ",
            "Per-step GPU work",
            "Collectives × rank",
        ] {
            assert!(s.contains(title), "missing {title}: {s}");
        }
        // Fits the terminal width it was given.
        let widest = s.lines().map(|l| l.chars().count()).max().unwrap();
        assert!(widest <= 160, "a line of {widest} characters");
    }
}

#[test]
fn json_csv_and_markdown() {
    let d = planted_dir();
    let dir = d.path().to_str().unwrap();
    let o = run(
        "analyze-profile",
        &["--profile-dir", dir, "--format", "json"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    assert_eq!(v["verdict"]["slowest"], "TP02");
    assert_eq!(v["steps"]["onset"]["step"], "3");
    assert_eq!(v["ranks"].as_array().unwrap().len(), 4);
    // Rank 0: 8 steps of 5.5 ms compute.
    assert_eq!(v["ranks"][0]["compute_ns"], 44_000_000);

    let o = run(
        "analyze-profile",
        &["--profile-dir", dir, "--format", "csv"],
    );
    let s = stdout(&o);
    let section: Vec<&str> = s
        .split("\n\n")
        .find(|b| b.starts_with("# ranks:"))
        .expect("a ranks section")
        .lines()
        .collect();
    assert_eq!(section.len(), 1 + 1 + 4, "{section:?}");
    assert!(
        section[1].starts_with("rank,device,source,span,busy"),
        "{}",
        section[1]
    );
    let row0: Vec<&str> = section[2].split(',').collect();
    assert_eq!(row0[0], "TP00");
    assert_eq!(row0[7], "44", "compute ms of TP00: {row0:?}");
    for name in [
        "verdict",
        "classes",
        "kernels",
        "kernels_by_rank",
        "steps",
        "steps_by_rank",
        "collectives_ranks",
        "collectives",
        "collectives_worst",
    ] {
        assert!(s.contains(&format!("# {name}:")), "csv lacks {name}");
    }

    let o = run(
        "analyze-profile",
        &["--profile-dir", dir, "--format", "markdown"],
    );
    let s = stdout(&o);
    assert!(s.starts_with("# rankprof analyze: planted"), "{s}");
    assert!(
        s.contains("## Rank summary (ms)\n\n| rank | device |"),
        "{s}"
    );
    assert!(s.contains("| TP02 |"), "{s}");
}

#[test]
fn saved_summary_is_stable_small_and_loadable() {
    let d = planted_dir();
    let dir = d.path().to_str().unwrap();
    let out = tempfile::tempdir().unwrap();
    let p1 = out.path().join("a.json");
    let p2 = out.path().join("b.json");
    for p in [&p1, &p2] {
        let o = run(
            "analyze-profile",
            &[
                "--profile-dir",
                dir,
                "--save-summary",
                p.to_str().unwrap(),
                "-j",
                "2",
            ],
        );
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    }
    let (a, b) = (std::fs::read(&p1).unwrap(), std::fs::read(&p2).unwrap());
    assert_eq!(a, b, "re-runs must write the same bytes");
    assert!(a.len() < 16_000, "summary of {} bytes", a.len());
    let s = load_summary(&p1).unwrap();
    assert_eq!(s.version, 2);
    assert_eq!(s.profile.ranks, ["TP00", "TP01", "TP02", "TP03"]);
    assert_eq!(s.imbalance.slowest.as_deref(), Some("TP02"));
    assert_eq!(
        s.imbalance.onset.as_ref().map(|o| o.step.as_str()),
        Some("3")
    );
    let gemm = s.kernels.iter().find(|k| k.class == "gemm").unwrap();
    assert_eq!(
        gemm.total_ns,
        [24_000_000, 24_000_000, 31_500_000, 24_000_000]
    );
    assert_eq!(gemm.count, [8, 8, 8, 8]);
    // Steps of rank 2: five at 7.0 ms work, three at 5.5: median (nearest rank) 7.0, p90 7.0.
    assert_eq!(s.ranks[2].steps.work_median_ns.get(), 7_000_000);
    assert_eq!(s.ranks[0].steps.work_p90_ns.get(), 5_500_000);
    assert_eq!(s.ranks[0].steps.time_median_ns.get(), 10_000_000);
    assert_eq!(s.ranks[2].class_ns["gemm"], 31_500_000);
    // Version and kind are checked.
    let bad = out.path().join("bad.json");
    std::fs::write(
        &bad,
        String::from_utf8(a)
            .unwrap()
            .replacen("\"version\": 2", "\"version\": 99", 1),
    )
    .unwrap();
    let e = load_summary(&bad).unwrap_err().to_string();
    assert!(e.contains("version 99"), "{e}");
    std::fs::write(&bad, "{\"version\": 1}").unwrap();
    assert!(load_summary(&bad)
        .unwrap_err()
        .to_string()
        .contains("not a rankprof summary"));
}

#[test]
fn damaged_input_is_partial_and_named() {
    let d = tempfile::tempdir().unwrap();
    let files = Planted {
        ranks: 2,
        steps: 4,
        slow: 1,
        from: 1,
        factor: 1.2,
    }
    .write_ranks(d.path(), false);
    let text = std::fs::read(&files[1]).unwrap();
    std::fs::write(&files[1], &text[..text.len() * 2 / 3]).unwrap();
    let o = run(
        "analyze-profile",
        &["--profile-dir", d.path().to_str().unwrap()],
    );
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("planted-TP-1.trace.json is truncated at byte"),
        "{e}"
    );
    assert!(
        stdout(&o).contains("TP01"),
        "the damaged rank is still reported"
    );
}

/// Three ranks doing the same work (the planted generator, no slow rank), the third's file
/// cut in half: the set, its files, and the length the third was cut to.
fn even_set_with_third_cut() -> (tempfile::TempDir, Vec<std::path::PathBuf>, usize) {
    let d = tempfile::tempdir().unwrap();
    let files = Planted {
        ranks: 3,
        steps: 6,
        slow: 0,
        from: 0,
        factor: 1.0,
    }
    .write_ranks(d.path(), false);
    let text = std::fs::read(&files[2]).unwrap();
    let cut = text.len() / 2;
    std::fs::write(&files[2], &text[..cut]).unwrap();
    (d, files, cut)
}

/// Three ranks doing the same work; the third's file cut in half. Compared as it is, its work
/// would compare low and the complete ranks would look slower: it is left out, named with its
/// damage and byte offset on the report's first line, unless `--keep-partial`.
#[test]
fn a_rank_whose_trace_stops_early_is_left_out_of_the_comparison() {
    let (d, files, cut) = even_set_with_third_cut();
    let dir = d.path().to_str().unwrap();
    let json = |extra: &[&str]| {
        let mut args = vec!["--profile-dir", dir, "--format", "json"];
        args.extend(extra);
        let o = run("analyze-profile", &args);
        assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()
    };
    let name = files[2].file_name().unwrap().to_str().unwrap();
    let damage = format!("truncated at byte {cut}");

    let v = json(&[]);
    let first = v["verdict"]["lines"][0].as_str().unwrap();
    assert!(
        first.starts_with(&format!(
            "Left out of the comparison: TP02 ({name}: {damage}, "
        )),
        "{first}"
    );
    let ranks: Vec<&str> = v["ranks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["rank"].as_str().unwrap())
        .collect();
    assert_eq!(ranks, ["TP00", "TP01"]);
    assert_eq!(v["verdict"]["balanced"], true, "{:#}", v["verdict"]);
    let f = &v["files"][2];
    assert!(
        f["stopped_early"].as_str().unwrap().starts_with(&damage),
        "{f}"
    );
    assert_eq!(v["files"][0].get("stopped_early"), None);

    // Kept: the cut rank's work compares low, and a complete rank looks slower.
    let v = json(&["--keep-partial"]);
    let first = v["verdict"]["lines"][0].as_str().unwrap();
    assert!(
        first.starts_with(&format!("Caution: TP02 ({name}: {damage}, ")),
        "{first}"
    );
    assert_eq!(v["ranks"].as_array().unwrap().len(), 3);
    assert_eq!(v["verdict"]["balanced"], false, "{:#}", v["verdict"]);
    assert_ne!(v["verdict"]["slowest"], "TP02");

    // Every rank cut: nothing complete to compare with, all kept, with the caution.
    for f in &files[..2] {
        let text = std::fs::read(f).unwrap();
        std::fs::write(f, &text[..text.len() / 2]).unwrap();
    }
    let v = json(&[]);
    assert_eq!(v["ranks"].as_array().unwrap().len(), 3);
    let first = v["verdict"]["lines"][0].as_str().unwrap();
    assert!(first.starts_with("Caution: TP00 ("), "{first}");
    assert!(first.contains("; TP02 ("), "{first}");
}

/// The same cut, merged first: the merged trace's `ranks` list says which rank's file stopped
/// early, and analyzing the merged trace leaves out that rank as analyzing the files does.
#[test]
fn a_rank_cut_before_it_was_merged_is_left_out_of_the_merged_trace_analysis() {
    let (d, files, cut) = even_set_with_third_cut();
    let out = tempfile::tempdir().unwrap();
    // `-o` an existing directory: the merged trace goes there under its default name.
    let o = run(
        "rankprof",
        &[
            "merge",
            "--profile-dir",
            d.path().to_str().unwrap(),
            "-o",
            out.path().to_str().unwrap(),
            "--format",
            "json",
        ],
    );
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let merged = out.path().join("merged-planted.trace.json.gz");
    assert!(merged.is_file(), "{}", stdout(&o));
    let merged = merged.to_str().unwrap();
    // merge's own report says which rank stops early, and where.
    let m: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(m["profiles"][0]["output"], merged);
    let early: Vec<&serde_json::Value> = m["ranks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["stopped_early"])
        .collect();
    assert!(early[0].is_null() && early[1].is_null(), "{early:?}");
    let why = early[2].as_str().unwrap();
    assert!(
        why.starts_with(&format!("truncated at byte {cut}, ")),
        "{why}"
    );
    let o = run("analyze-profile", &[merged, "--format", "json"]);
    assert_eq!(
        o.status.code(),
        Some(3),
        "a rank's data is partial: {}",
        stderr(&o)
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let first = v["verdict"]["lines"][0].as_str().unwrap();
    let name = files[2].file_name().unwrap().to_str().unwrap();
    assert!(
        first.starts_with(&format!(
            "Left out of the comparison: TP02 (merged-planted.trace.json.gz: merged from {name}, \
             truncated at byte {cut}, "
        )),
        "{first}"
    );
    assert_eq!(v["ranks"].as_array().unwrap().len(), 2);
    assert_eq!(v["verdict"]["balanced"], true, "{:#}", v["verdict"]);
    let named = format!(
        "TP02 (merged-planted.trace.json.gz: merged from {name}, truncated at byte {cut}, "
    );
    let listed = v["stopped_early"].as_str().unwrap();
    assert!(listed.starts_with(&named), "{listed}");
    // compare will not gate on it, and says why (the file itself is whole).
    let o = run("rankprof", &["compare", merged, merged]);
    refused(
        &o,
        &format!("baseline: {merged}: data stops early for {named}"),
    );
}

/// `merge -o` is checked before any rank is read: an existing directory takes every
/// profile's merged trace under its default name; a file in a directory that does not exist,
/// or a directory that does not, is refused at once and nothing is written.
#[test]
fn merge_output_is_checked_before_the_merge() {
    let d = tempfile::tempdir().unwrap();
    for f in (Planted {
        ranks: 2,
        steps: 2,
        slow: 0,
        from: 0,
        factor: 1.0,
    })
    .write_ranks(d.path(), true)
    {
        // A second profile, `other`, with the same ranks.
        let name = f.file_name().unwrap().to_str().unwrap();
        std::fs::copy(&f, d.path().join(name.replace("planted", "other"))).unwrap();
    }
    let dir = d.path().to_str().unwrap();
    let out = tempfile::tempdir().unwrap();
    let out_str = out.path().to_str().unwrap();
    let o = run("rankprof", &["merge", "--profile-dir", dir, "-o", out_str]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let mut written: Vec<String> = std::fs::read_dir(out.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    written.sort();
    assert_eq!(
        written,
        ["merged-other.trace.json.gz", "merged-planted.trace.json.gz"]
    );
    let missing = out.path().join("no-such-dir");
    for (o_arg, says) in [
        (
            missing.join("m.trace.json.gz"),
            format!("the directory {} does not exist", missing.display()),
        ),
        (
            Path::new(&format!("{}/", missing.display())).to_path_buf(),
            "no such directory".to_string(),
        ),
    ] {
        let o = run(
            "rankprof",
            &[
                "merge",
                "--profile-dir",
                dir,
                "--profile-id",
                "planted",
                "-o",
                o_arg.to_str().unwrap(),
            ],
        );
        refused(&o, &says);
        assert!(stdout(&o).is_empty(), "no rank was merged: {}", stdout(&o));
    }
    assert!(!missing.exists());
    // The same profile in two folders (`-r` over per-step folders): one name in `-o DIR`,
    // so refused before either is merged rather than one replacing the other.
    let steps = tempfile::tempdir().unwrap();
    for step in ["step1", "step2"] {
        let sub = steps.path().join(step);
        std::fs::create_dir(&sub).unwrap();
        for f in ["planted-TP-0.trace.json.gz", "planted-TP-1.trace.json.gz"] {
            std::fs::copy(d.path().join(f), sub.join(f)).unwrap();
        }
    }
    let o = run(
        "rankprof",
        &[
            "merge",
            "--profile-dir",
            steps.path().to_str().unwrap(),
            "-r",
            "-o",
            out_str,
        ],
    );
    refused(&o, "would both be written as");
    assert!(stdout(&o).is_empty(), "no rank was merged: {}", stdout(&o));
    // A file named with two profiles found: refused, and the directory form offered.
    let o = run(
        "rankprof",
        &[
            "merge",
            "--profile-dir",
            dir,
            "-o",
            out.path().join("m.trace.json.gz").to_str().unwrap(),
        ],
    );
    refused(&o, "give -o an existing directory");
}

/// analyze's and compare's output files are checked before any trace is read: a directory
/// that does not exist, or a directory where a file is wanted, is said at once (exit 2) and
/// nothing is printed; before, the whole analysis ran and then failed to write.
#[test]
fn report_files_are_checked_before_any_trace_is_read() {
    let d = planted_dir();
    let dir = d.path().to_str().unwrap();
    let out = tempfile::tempdir().unwrap();
    let missing = out.path().join("no-such-dir");
    let in_missing = missing.join("r.out");
    let (in_missing, out_dir) = (in_missing.to_str().unwrap(), out.path().to_str().unwrap());
    let gone = format!("the directory {} does not exist", missing.display());
    let a_dir = format!("{out_dir}: is a directory; name a file");
    let a_file = out.path().join("a-file");
    std::fs::write(&a_file, b"").unwrap();
    let a_file = a_file.to_str().unwrap();
    let not_dir = format!("--csv-dir {a_file}: is a file; name a directory");
    for (bin, args, says) in [
        (
            "analyze-profile",
            vec!["--profile-dir", dir, "--html", in_missing],
            &gone,
        ),
        (
            "analyze-profile",
            vec!["--profile-dir", dir, "--save-summary", out_dir],
            &a_dir,
        ),
        (
            "analyze-profile",
            vec!["--profile-dir", dir, "--save-partial", in_missing],
            &gone,
        ),
        (
            "rankprof",
            vec!["compare", dir, dir, "-o", in_missing],
            &gone,
        ),
        ("rankprof", vec!["compare", dir, dir, "-o", out_dir], &a_dir),
        (
            "analyze-profile",
            vec!["--profile-dir", dir, "--csv-dir", a_file],
            &not_dir,
        ),
    ] {
        let o = run(bin, &args);
        refused(&o, says);
        assert!(
            stdout(&o).is_empty(),
            "{args:?}: nothing read: {}",
            stdout(&o)
        );
    }
    assert!(!missing.exists());
}

/// One trace file whose name carries no rank (a merged trace renamed, a download): its
/// profile is named after the file, and no note about file-name order is made (one file has
/// none to give).
#[test]
fn a_single_unnamed_trace_is_named_after_its_file() {
    let d = tempfile::tempdir().unwrap();
    let merged = Planted {
        ranks: 2,
        steps: 4,
        slow: 1,
        from: 0,
        factor: 1.5,
    }
    .write_merged(d.path());
    let renamed = d.path().join("run42.trace.json.gz");
    std::fs::rename(&merged, &renamed).unwrap();
    let o = run(
        "analyze-profile",
        &[renamed.to_str().unwrap(), "--format", "json"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["profile_id"], "run42");
    assert_eq!(
        v["ranks"].as_array().unwrap().len(),
        2,
        "read as the merged trace it is"
    );
    let notes = format!("{} {}", v["notes"], stderr(&o));
    assert!(!notes.contains("file-name order"), "{notes}");
    // `--rank` picks among the ranks it holds, as for a merged trace under its own name: the
    // drill-down is about it, against the others (#43 item 6).
    let o = run(
        "analyze-profile",
        &[renamed.to_str().unwrap(), "--rank", "1", "--format", "json"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let ranks: Vec<&str> = v["ranks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["rank"].as_str().unwrap())
        .collect();
    assert_eq!(ranks, ["TP00", "TP01"]);
    assert_eq!(v["drill"]["rank"], "TP01");
    assert_eq!(v["depth"]["rank"], "TP01");
    let o = run(
        "analyze-profile",
        &[renamed.to_str().unwrap(), "--rank", "2"],
    );
    refused(&o, "--rank 2: the trace has 2 ranks (0-1)");
}

#[test]
fn bad_usage_exits_2_with_a_clear_message() {
    let o = run("analyze-profile", &["/no/such/trace.json.gz"]);
    refused(&o, "/no/such/trace.json.gz: no such file");
    let o = run("analyze-profile", &[]);
    refused(&o, "nothing to analyze");
    let d = planted_dir();
    let dir = d.path().to_str().unwrap();
    let o = run(
        "analyze-profile",
        &["--profile-dir", dir, "--step-marker", "("],
    );
    refused(&o, "--step-marker");
    let o = run(
        "analyze-profile",
        &["--profile-dir", dir, "--threshold", "lots"],
    );
    assert_eq!(o.status.code(), Some(2));
    // An output may not replace an input.
    let input = d.path().join("planted-TP-0.trace.json.gz");
    let before = std::fs::read(&input).unwrap();
    let o = run(
        "analyze-profile",
        &["--profile-dir", dir, "--html", input.to_str().unwrap()],
    );
    refused(&o, "is an input trace");
    assert_eq!(std::fs::read(&input).unwrap(), before);
}

#[test]
fn threshold_takes_a_percent_sign() {
    let d = planted_dir();
    let o = run(
        "analyze-profile",
        &[
            "--profile-dir",
            d.path().to_str().unwrap(),
            "--threshold",
            "30%",
            "--format",
            "json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["threshold_pct"], 30.0);
    assert_eq!(v["verdict"]["balanced"], true);
}

#[cfg(not(feature = "parquet"))]
#[test]
fn parquet_without_the_feature_says_how_to_get_it() {
    let d = planted_dir();
    let out = tempfile::tempdir().unwrap();
    let o = run(
        "analyze-profile",
        &[
            "--profile-dir",
            d.path().to_str().unwrap(),
            "--parquet",
            out.path().to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--features parquet"), "{}", stderr(&o));
}

#[test]
fn html_is_one_self_contained_file() {
    let d = planted_dir();
    let out = tempfile::tempdir().unwrap();
    let html = out.path().join("report.html");
    let o = run(
        "analyze-profile",
        &[
            "--profile-dir",
            d.path().to_str().unwrap(),
            "--html",
            html.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let s = std::fs::read_to_string(&html).unwrap();
    for id in [
        "id=\"verdict\"",
        "id=\"heat-classes\"",
        "id=\"heat-steps\"",
        "id=\"t-ranks\"",
        "id=\"t-kernels\"",
        "id=\"t-steps\"",
        "id=\"t-collectives\"",
    ] {
        assert!(s.contains(id), "missing {id}");
    }
    // Self-contained: its one script (table sorting) is inline; nothing is fetched.
    for fetch in ["http://", "https://", "<script src", "<link", "src="] {
        assert!(!s.contains(fetch), "the HTML refers to {fetch}");
    }
    assert_eq!(s.matches("<script>").count(), s.matches("<script").count());
    // Nothing but the report was left in the directory (atomic write, no temp file).
    let names: Vec<_> = std::fs::read_dir(out.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, [std::ffi::OsString::from("report.html")]);
    assert!(Path::new(&html).metadata().unwrap().len() > 2_000);
}

#[cfg(feature = "parquet")]
#[test]
fn parquet_writes_one_typed_file_per_table() {
    use parquet::basic::Type;
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use parquet::record::RowAccessor;
    let d = planted_dir();
    let out = tempfile::tempdir().unwrap();
    let pq = out.path().join("pq");
    let o = run(
        "analyze-profile",
        &[
            "--profile-dir",
            d.path().to_str().unwrap(),
            "--parquet",
            pq.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    for name in [
        "verdict",
        "ranks",
        "classes",
        "kernels",
        "kernels_by_rank",
        "steps",
        "steps_by_rank",
        "collectives_ranks",
        "collectives",
        "collectives_worst",
    ] {
        assert!(
            pq.join(format!("{name}.parquet")).is_file(),
            "no {name}.parquet"
        );
    }
    // Read back with the parquet crate's record reader (pyarrow and pandas read the files in
    // tests/parquet.rs): the planted figures, and the column types.
    let f = std::fs::File::open(pq.join("ranks.parquet")).unwrap();
    let r = SerializedFileReader::new(f).unwrap();
    let schema = r.metadata().file_metadata().schema_descr_ptr();
    let col = |name: &str| {
        (0..schema.num_columns())
            .find(|&i| schema.column(i).name() == name)
            .unwrap_or_else(|| panic!("no column {name}"))
    };
    // The tidy form (the tables --csv-dir writes too): integer ns, the unit in the name.
    assert_eq!(
        schema.column(col("kernel_count")).physical_type(),
        Type::INT64
    );
    assert_eq!(
        schema.column(col("compute_ns")).physical_type(),
        Type::INT64
    );
    assert_eq!(
        schema.column(col("utilization_pct")).physical_type(),
        Type::DOUBLE
    );
    let rows: Vec<_> = r.get_row_iter(None).unwrap().map(|x| x.unwrap()).collect();
    assert_eq!(rows.len(), 4);
    let compute: Vec<i64> = rows
        .iter()
        .map(|x| x.get_long(col("compute_ns")).unwrap())
        .collect();
    assert_eq!(compute, [44_000_000, 44_000_000, 51_500_000, 44_000_000]);
    assert_eq!(rows[2].get_string(col("rank")).unwrap(), "TP02");
}

/// A JSON file that is not a trace (no `traceEvents`), named like a rank: named as damage with
/// the reason, exit 3, left out of the comparison (even with --keep-partial); no output format
/// prints `inf` or `NaN`. With one real rank beside it, the ratios that would divide by its
/// nothing never appear either.
#[test]
fn a_file_that_is_not_a_trace_is_damage_left_out() {
    for ranks in [4usize, 1] {
        let dir = tempfile::tempdir().unwrap();
        Planted {
            ranks,
            steps: 8,
            slow: 0,
            from: 3,
            factor: 1.5,
        }
        .write_ranks(dir.path(), true);
        let bad = format!("planted-TP-{ranks}.trace.json");
        std::fs::write(dir.path().join(&bad), r#"{"model": "llama", "tp": 4}"#).unwrap();
        let d = dir.path().to_str().unwrap();
        for extra in [&[][..], &["--keep-partial"][..]] {
            for format in ["table", "json", "csv", "markdown"] {
                let mut args = vec!["analyze", "--profile-dir", d, "--format", format];
                args.extend(extra);
                let o = run("rankprof", &args);
                let (out, err) = (stdout(&o), stderr(&o));
                assert_eq!(
                    o.status.code(),
                    Some(3),
                    "{ranks} {format} {extra:?}: {out}{err}"
                );
                assert!(out.contains("not a trace"), "{ranks} {format}: {out}");
                for word in ["inf", "NaN", "nan×", "inf×"] {
                    let hit = out
                        .split(|c: char| !c.is_alphanumeric() && c != '×')
                        .any(|w| w.eq_ignore_ascii_case(word));
                    assert!(!hit, "{ranks} {format} {extra:?}: '{word}' in\n{out}");
                }
                if format == "json" {
                    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
                    let n = v["ranks"].as_array().map_or(0, Vec::len);
                    assert_eq!(
                        n, ranks,
                        "{ranks} {extra:?}: the bad file is no rank: {out}"
                    );
                }
            }
        }
    }
}

/// A valid trace with no events beside one real rank: every ratio against it divides by
/// nothing, and no output format prints `inf` or `NaN` (the verdict says it in words).
#[test]
fn ratios_over_an_empty_rank_print_no_inf_or_nan() {
    let dir = tempfile::tempdir().unwrap();
    Planted {
        ranks: 1,
        steps: 8,
        slow: 0,
        from: 3,
        factor: 1.5,
    }
    .write_ranks(dir.path(), true);
    std::fs::write(
        dir.path().join("planted-TP-1.trace.json"),
        r#"{"schemaVersion": 1, "traceEvents": []}"#,
    )
    .unwrap();
    let d = dir.path().to_str().unwrap();
    for format in ["table", "json", "csv", "markdown"] {
        let o = run(
            "rankprof",
            &["analyze", "--profile-dir", d, "--format", format],
        );
        let (out, err) = (stdout(&o), stderr(&o));
        assert!(
            matches!(o.status.code(), Some(0) | Some(3)),
            "{format}: {out}{err}"
        );
        for w in out.split(|c: char| !c.is_alphanumeric()) {
            assert!(
                !w.eq_ignore_ascii_case("inf") && !w.eq_ignore_ascii_case("nan"),
                "{format}: '{w}' in\n{out}"
            );
        }
        if format == "table" {
            assert!(out.contains("recorded no kernel time"), "{out}");
        }
    }
}
