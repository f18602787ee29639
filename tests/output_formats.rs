//! Output conventions (#12 items 2 and 3): tidy CSVs read back by pandas and polars, JSON lists
//! of flat records, GitHub-safe markdown, `--format`/`--json` on `ls` and `merge`, shell
//! completions, man pages and the exit codes in every `--help`.
//!
//! Figures are checked against the planted traces' own model (tests/common, `Planted`), summed
//! by pandas / polars in tests/check_tidy.py.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use common::{Planted, ATTN_NS, NORM_NS};
use serde_json::Value;

const PLANTED: Planted = Planted {
    ranks: 4,
    steps: 8,
    slow: 2,
    from: 3,
    factor: 1.5,
};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rankprof"))
        .args(args)
        .env("COLUMNS", "160")
        .env_remove("RANKPROF_API_KEY")
        .output()
        .expect("runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn planted_dir(gzip: bool) -> (tempfile::TempDir, Vec<PathBuf>) {
    let dir = tempfile::tempdir().unwrap();
    let files = PLANTED.write_ranks(dir.path(), gzip);
    (dir, files)
}

/// A Python with pandas and polars: `RANKPROF_TIDY_PYTHON`, `RANKPROF_SGLANG_ROUTER_PYTHON`
/// (`.ci/run` installs both into .venv), or the project's `.venv/bin/python`.
fn tidy_python() -> Option<PathBuf> {
    ["RANKPROF_TIDY_PYTHON", "RANKPROF_SGLANG_ROUTER_PYTHON"]
        .iter()
        .filter_map(|v| std::env::var_os(v).map(PathBuf::from))
        .chain(std::iter::once(common::manifest(".venv/bin/python")))
        .find(|py| {
            Command::new(py)
                .args(["-c", "import pandas, polars"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        })
}

#[test]
fn tidy_csvs_read_back_in_pandas_and_polars() {
    let Some(py) = tidy_python() else {
        eprintln!(
            "\n**** SKIPPED tidy_csvs_read_back_in_pandas_and_polars: no Python with pandas and \
             polars. Install: python3 -m venv .venv && .venv/bin/pip install pandas polars \
             (or run .ci/run) ****\n"
        );
        return;
    };
    let (d, _) = planted_dir(true);
    let out = tempfile::tempdir().unwrap();
    let csv = out.path().join("tables");
    let o = run(&[
        "analyze",
        "--profile-dir",
        d.path().to_str().unwrap(),
        "--csv-dir",
        csv.to_str().unwrap(),
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let r = Command::new(&py)
        .arg(common::manifest("tests/check_tidy.py"))
        .arg(&csv)
        .output()
        .unwrap();
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let v: Value = serde_json::from_slice(&r.stdout).unwrap();
    let t = &v["tables"];
    for name in [
        "ranks",
        "classes",
        "kernels",
        "kernels_by_rank",
        "steps",
        "steps_by_rank",
        "collectives_ranks",
        "collectives",
        "collectives_worst",
        "collectives_worlds",
    ] {
        assert!(t[name].is_object(), "no {name}.csv: {}", v);
        assert_eq!(t[name]["bad_headers"], serde_json::json!([]), "{name}");
        // every time column carries its unit, and is read as integers by both libraries
        for c in t[name]["columns"].as_array().unwrap() {
            let c = c.as_str().unwrap();
            assert!(!c.contains(' ') && !c.contains('%') && !c.contains('/'));
            if c.ends_with("_ns") && !c.starts_with("mean") {
                assert_eq!(t[name]["pandas_types"][c], "int64", "{name}.{c}");
                assert_eq!(t[name]["polars_types"][c], "Int64", "{name}.{c}");
            }
        }
    }
    // long form: one row per (step, rank), per (kernel, rank), per (rank, class)
    assert_eq!(t["steps_by_rank"]["rows"], 8 * 4);
    assert_eq!(
        t["kernels_by_rank"]["rows"],
        4 * t["kernels"]["rows"].as_i64().unwrap()
    );
    // the planted figures: rank r's work summed over steps; the slow rank's GEMM time
    for r in 0..4 {
        let work: i64 = (0..8).map(|s| PLANTED.work(r, s)).sum();
        assert_eq!(v["work_ns_by_rank"][format!("TP{r:02}")], work, "TP{r:02}");
    }
    let gemm = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1";
    let slow_gemm: i64 = (0..8).map(|s| PLANTED.gemm(2, s)).sum();
    assert_eq!(v["kernel_rank_ns"][format!("{gemm}|TP02")], slow_gemm);
    assert_eq!(v["class_rank_ns"]["attention|TP01"], 8 * ATTN_NS);
    assert_eq!(v["class_rank_ns"]["norm|TP03"], 8 * NORM_NS);
    // the per-kernel totals equal the sum of the long table (polars) for every kernel
    assert_eq!(v["kernel_ns_table"], v["kernel_ns_polars"]);
}

/// Every list in the document is a list of scalars or of records whose values are scalars.
fn assert_flat(v: &Value, at: &str) {
    match v {
        Value::Array(items) => {
            for (n, x) in items.iter().enumerate() {
                match x {
                    Value::Object(m) => {
                        for (k, f) in m {
                            assert!(
                                !f.is_array() && !f.is_object(),
                                "{at}[{n}].{k} is not flat: {f}"
                            );
                        }
                    }
                    Value::Array(_) => panic!("{at}[{n}] is a list in a list"),
                    _ => {}
                }
            }
        }
        Value::Object(m) => {
            for (k, f) in m {
                assert_flat(f, &format!("{at}.{k}"));
            }
        }
        _ => {}
    }
}

#[test]
fn json_lists_are_flat_records_and_json_is_an_alias() {
    let (d, _) = planted_dir(true);
    let dir = d.path().to_str().unwrap();
    let a = run(&["analyze", "--profile-dir", dir, "--format", "json"]);
    let b = run(&["analyze", "--profile-dir", dir, "--json"]);
    assert_eq!(a.status.code(), Some(0));
    let v: Value = serde_json::from_slice(&a.stdout).unwrap();
    let w: Value = serde_json::from_slice(&b.stdout).unwrap();
    assert_eq!(v, w, "--json is --format json");
    assert_flat(&v, "$");
    let ranks = v["steps"]["by_rank"].as_array().unwrap();
    assert_eq!(ranks.len(), 8 * 4);
    let tp2_step5 = ranks
        .iter()
        .find(|r| r["rank"] == "TP02" && r["step"] == "5")
        .unwrap();
    assert_eq!(tp2_step5["work_ns"], PLANTED.work(2, 5));
    assert_eq!(v["classes"].as_array().unwrap().len() % 4, 0);
    // --json and --format together are refused
    let c = run(&["analyze", "--profile-dir", dir, "--json", "--format", "csv"]);
    assert_eq!(c.status.code(), Some(2));
}

#[test]
fn markdown_kernel_names_are_github_safe() {
    let (d, files) = planted_dir(false);
    let gemm = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1";
    let norm = "void vllm::rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, c10::BFloat16 const*, float, int, int)";
    for f in &files {
        let s = std::fs::read_to_string(f).unwrap();
        let s = s
            .replace(gemm, "act_and_mul_kernel<silu>")
            .replace(norm, "rms|norm<x>");
        std::fs::write(f, s).unwrap();
    }
    let o = run(&[
        "analyze",
        "--profile-dir",
        d.path().to_str().unwrap(),
        "--format",
        "markdown",
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let s = stdout(&o);
    assert!(s.contains("| `act_and_mul_kernel<silu>` |"), "{s}");
    assert!(s.contains("| `rms\\|norm<x>` |"), "{s}");
    // no raw `<tag>` outside code spans anywhere, and every table row has the header's cells
    for line in s.lines() {
        let outside: String = line.split('`').step_by(2).collect();
        assert!(!outside.contains('<'), "unescaped < in {line:?}");
        if line.starts_with('|') {
            let cells = line.replace("\\|", "").matches('|').count();
            assert!(cells >= 2, "{line}");
        }
    }
    // the same names escaped as text in the verdict and titles, when they appear there
    assert!(!s.contains("<silu>`>"), "{s}");
}

#[test]
fn ls_and_merge_print_json_csv_and_markdown() {
    let (d, _) = planted_dir(true);
    let dir = d.path().to_str().unwrap();
    let o = run(&["ls", dir, "--count", "--format", "json"]);
    assert_eq!(o.status.code(), Some(0));
    let v: Value = serde_json::from_slice(&o.stdout).expect("ls JSON");
    assert_flat(&v, "$");
    assert_eq!(v["profiles"][0]["profile_id"], "planted");
    assert_eq!(v["profiles"][0]["ranks"], 4);
    let files = v["files"].as_array().unwrap();
    assert_eq!(files.len(), 4);
    assert_eq!(files[3]["rank"], "[TP03]");
    // per rank: 8 steps × (4 kernels + 4 launches + 1 annotation)
    assert!(files.iter().all(|f| f["events"] == 72), "{files:?}");
    let o = run(&["ls", dir, "--format", "csv"]);
    let csv = stdout(&o);
    assert_eq!(csv.lines().count(), 1 + 4, "{csv}");
    assert!(
        csv.starts_with("dir,profile_id,stage,index,rank,bytes,events"),
        "{csv}"
    );

    let out = tempfile::tempdir().unwrap();
    let merged = out.path().join("m.trace.json.gz");
    let o = run(&[
        "merge",
        "--profile-dir",
        dir,
        "-o",
        merged.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v: Value = serde_json::from_slice(&o.stdout).expect("merge JSON");
    assert_flat(&v, "$");
    let p = &v["profiles"][0];
    assert_eq!(p["output"], merged.to_str().unwrap());
    assert_eq!(p["ranks"], 4);
    assert_eq!(p["exit_code"], 0);
    let ranks = v["ranks"].as_array().unwrap();
    assert_eq!(ranks.len(), 4);
    assert!(ranks.iter().all(|r| r["unreadable"].is_null()));
    let written: i64 = ranks
        .iter()
        .map(|r| r["events_written"].as_i64().unwrap())
        .sum();
    assert!(written >= 4 * 72, "{written}");
    assert!(p["events"].as_i64().unwrap() >= written);
    let o = run(&[
        "merge",
        "--profile-dir",
        dir,
        "-o",
        merged.to_str().unwrap(),
        "--format",
        "markdown",
    ]);
    assert!(stdout(&o).contains("| planted |"), "{}", stdout(&o));
}

#[test]
fn completions_load_in_bash_and_man_pages_render() {
    for shell in ["bash", "zsh", "fish"] {
        let o = run(&["completions", shell]);
        assert_eq!(o.status.code(), Some(0), "{shell}");
        let s = stdout(&o);
        // (fish spells long options `-l csv-dir`)
        assert!(s.contains("rankprof") && s.contains("csv-dir"), "{shell}");
    }
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("rankprof.bash");
    std::fs::write(&script, run(&["completions", "bash"]).stdout).unwrap();
    let syntax = Command::new("bash")
        .arg("-n")
        .arg(&script)
        .status()
        .unwrap();
    assert!(syntax.success(), "bash -n");
    // sourcing defines the completion function and registers it
    let s = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "source {} && complete -p rankprof",
            script.display()
        ))
        .output()
        .unwrap();
    assert!(s.status.success(), "{}", String::from_utf8_lossy(&s.stderr));
    assert!(stdout(&s).contains("rankprof"));

    let man = dir.path().join("man");
    let o = run(&["man", man.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0));
    for page in [
        "rankprof.1",
        "rankprof-analyze.1",
        "rankprof-ls.1",
        "rankprof-capture-run.1",
    ] {
        let p = man.join(page);
        let roff = std::fs::read_to_string(&p).unwrap_or_else(|_| panic!("no {page}"));
        assert!(roff.contains(".TH"), "{page}");
        assert!(roff.contains("Exit codes"), "{page}");
    }
    assert!(
        !man.join("rankprof-inflate.1").exists(),
        "hidden commands get no page"
    );
    render_with_man(&man.join("rankprof-analyze.1"));
}

/// `man -l PAGE` when man is installed (prints what it would show).
fn render_with_man(page: &Path) {
    let Ok(o) = Command::new("man")
        .arg("-l")
        .arg(page)
        .env("MANPAGER", "cat")
        .env("PAGER", "cat")
        .env("MANWIDTH", "100")
        .output()
    else {
        eprintln!("**** man is not installed: the pages were checked as roff only ****");
        return;
    };
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // Words compared with single spaces: man justifies lines, alternately from either side.
    let s = stdout(&o).split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(s.contains("--csv-dir"), "{s}");
    assert!(s.contains("Exit codes: 0 ok"), "{s}");
}

#[test]
fn exit_codes_are_in_every_help() {
    for args in [
        vec!["--help"],
        vec!["ls", "--help"],
        vec!["merge", "--help"],
        vec!["analyze", "--help"],
        vec!["compare", "--help"],
        vec!["capture", "run", "--help"],
        vec!["nsys", "list", "--help"],
        vec!["watch", "--help"],
        vec!["completions", "--help"],
    ] {
        let o = run(&args);
        // Words compared with single spaces: --help is wrapped to the terminal.
        let words = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            words(&stdout(&o)).contains(&words(rankprof::exit::HELP)),
            "{args:?}: {}",
            stdout(&o)
        );
    }
    for bin in [
        env!("CARGO_BIN_EXE_merge-traces"),
        env!("CARGO_BIN_EXE_analyze-profile"),
    ] {
        let o = Command::new(bin).arg("--help").output().unwrap();
        assert!(stdout(&o).contains("Exit codes: 0 ok"), "{bin}");
    }
}

/// Every table `--csv-dir` writes is tidy, whatever the traces hold: snake_case headers (a
/// unit in the name, no spaces, `%`, `/` or `µ`), and every cell that starts like a number is
/// a bare number (no "12.3 ms", no "1.5×"). Checked on the planted GPU set, a real NCCL step
/// (critical path, host gaps) and a real gloo run (attribution, critical path per step) — the
/// attribution, critical-path and work tables once regressed to display headers.
#[test]
fn every_csv_dir_table_is_tidy() {
    let (planted, _) = planted_dir(true);
    let dirs = [
        planted.path().to_path_buf(),
        common::shared("param-dlrm-v100x8"),
        common::manifest("fixtures/real-gloo/tp4-extra-ops"),
    ];
    for dir in dirs {
        let out = tempfile::tempdir().unwrap();
        let csv = out.path().join("tables");
        let o = run(&[
            "analyze",
            "--profile-dir",
            dir.to_str().unwrap(),
            "--csv-dir",
            csv.to_str().unwrap(),
        ]);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        let mut names = Vec::new();
        for e in std::fs::read_dir(&csv).unwrap() {
            let p = e.unwrap().path();
            let name = p.file_stem().unwrap().to_string_lossy().into_owned();
            let text = std::fs::read_to_string(&p).unwrap();
            let mut lines = text.lines().map(csv_fields);
            let headers = lines.next().unwrap_or_default();
            for h in &headers {
                let snake = h.starts_with(|c: char| c.is_ascii_lowercase())
                    && h.chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
                assert!(snake, "{}: {name}.csv has the column {h:?}", dir.display());
            }
            for rec in lines {
                for (h, cell) in headers.iter().zip(rec.iter()) {
                    let numeric = cell
                        .strip_prefix('-')
                        .unwrap_or(cell)
                        .starts_with(|c: char| c.is_ascii_digit());
                    assert!(
                        !numeric || cell.parse::<f64>().is_ok() || h == "step" || h == "key",
                        "{}: {name}.csv {h} = {cell:?} is not a bare number",
                        dir.display()
                    );
                }
            }
            names.push(name);
        }
        for want in [
            "attribution",
            "work",
            "critical_path",
            "critical_path_steps",
        ] {
            assert!(
                names.iter().any(|n| n == want),
                "{}: no {want}.csv in {names:?}",
                dir.display()
            );
        }
    }
}

/// The fields of one CSV line as `report::table` writes them (RFC 4180 quoting; the tables
/// hold no newline in a field).
fn csv_fields(line: &str) -> Vec<String> {
    let (mut out, mut cur, mut quoted) = (Vec::new(), String::new(), false);
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => out.push(std::mem::take(&mut cur)),
            (c, _) => cur.push(c),
        }
    }
    out.push(cur);
    out
}
