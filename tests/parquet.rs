//! `analyze --parquet DIR` (#12 item 5), read back by pyarrow and pandas (tests/check_parquet.py)
//! on real fixtures: every table's file has the CSV export's columns, row count and cells (the
//! CSV is a different writer), integer / float / string columns typed as such, empty cells as
//! nulls; and the ranks table's figures equal those of the independent checker
//! (tests/check_analyze.py, computed from the trace files alone).
//!
//! Needs a Python with pandas and pyarrow (`.ci/run` installs them into .venv); skips loudly
//! without one.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::shared;
use serde_json::Value;

/// A Python with pandas and pyarrow: `RANKPROF_PARQUET_PYTHON`, `RANKPROF_TIDY_PYTHON`, or the
/// project's `.venv/bin/python`.
fn parquet_python() -> Option<PathBuf> {
    ["RANKPROF_PARQUET_PYTHON", "RANKPROF_TIDY_PYTHON"]
        .iter()
        .filter_map(|v| std::env::var_os(v).map(PathBuf::from))
        .chain(std::iter::once(common::manifest(".venv/bin/python")))
        .find(|py| {
            Command::new(py)
                .args(["-c", "import pandas, pyarrow"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        })
}

/// `analyze --csv-dir CSV --parquet PQ` of `files`: (the CSV directory, the Parquet directory),
/// which must hold the same tables (one file each, the same stems).
fn export(files: &[PathBuf], out: &Path) -> (PathBuf, PathBuf) {
    let dir = out.join("parquet");
    let csv = out.join("csv");
    let mut args: Vec<String> = vec!["analyze".into(), "--csv-dir".into()];
    args.push(csv.to_string_lossy().into_owned());
    args.push("--parquet".into());
    args.push(dir.to_string_lossy().into_owned());
    args.extend(files.iter().map(|f| f.to_string_lossy().into_owned()));
    let o = Command::new(env!("CARGO_BIN_EXE_rankprof"))
        .args(&args)
        .output()
        .expect("rankprof runs");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        matches!(o.status.code(), Some(0) | Some(1)),
        "exit {:?}: {err}",
        o.status
    );
    let n = std::fs::read_dir(&dir).expect("parquet dir").count();
    assert!(
        err.contains(&format!("wrote {n} Parquet files into")),
        "{err}"
    );
    let stems = |d: &Path, ext: &str| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .map(|n| {
                n.strip_suffix(ext)
                    .unwrap_or_else(|| panic!("{n}"))
                    .to_string()
            })
            .collect();
        v.sort();
        v
    };
    let tables = stems(&dir, ".parquet");
    assert_eq!(
        stems(&csv, ".csv"),
        tables,
        "--csv-dir and --parquet wrote other tables"
    );
    for t in ["verdict", "ranks", "classes", "attribution", "work"] {
        assert!(tables.iter().any(|n| n == t), "{t} missing: {tables:?}");
    }
    (csv, dir)
}

fn read_back(py: &Path, dir: &Path, csv: &Path) -> Value {
    let r = Command::new(py)
        .arg(common::manifest("tests/check_parquet.py"))
        .arg(dir)
        .arg(csv)
        .output()
        .unwrap();
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let v: Value = serde_json::from_slice(&r.stdout).unwrap();
    assert_eq!(v["mismatches"], serde_json::json!([]), "{v:#}");
    assert_eq!(v["extra_files"], serde_json::json!([]), "{v:#}");
    assert!(
        v["nulls"].as_u64().unwrap_or(0) > 0,
        "no empty cell checked: {v:#}"
    );
    v
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

#[test]
fn parquet_export_of_real_gpu_ranks_reads_back_in_pyarrow_and_pandas() {
    let Some(py) = parquet_python() else {
        eprintln!(
            "\n**** SKIPPED parquet_export_of_real_gpu_ranks_reads_back_in_pyarrow_and_pandas: \
             no Python with pandas and pyarrow. Install: python3 -m venv .venv && \
             .venv/bin/pip install pandas pyarrow (or run .ci/run) ****\n"
        );
        return;
    };
    let files = [
        shared("hta/sampled-rank-0.json.gz"),
        shared("hta/sampled-rank-1.json.gz"),
    ];
    let out = tempfile::tempdir().unwrap();
    let (csv, dir) = export(&files, out.path());
    let v = read_back(&py, &dir, &csv);
    let t = &v["tables"];
    for name in ["verdict", "ranks", "classes", "kernels", "kernels_by_rank"] {
        assert!(t[name]["rows"].as_u64().unwrap_or(0) > 0, "{name}: {v:#}");
    }
    // the three physical types, as pyarrow and pandas see them
    let ranks = &t["ranks"];
    assert_eq!(ranks["arrow_types"]["rank"], "string");
    assert_eq!(ranks["arrow_types"]["busy_ns"], "int64");
    assert_eq!(ranks["arrow_types"]["kernel_count"], "int64");
    assert_eq!(ranks["pandas_types"]["kernel_count"], "int64");
    assert_eq!(ranks["pandas_types"]["utilization_pct"], "float64");
    let kbr = &t["kernels_by_rank"]["arrow_types"];
    assert_eq!(kbr["kernel"], "string");
    assert_eq!(kbr["count"], "int64");
    assert_eq!(kbr["total_ns"], "int64");

    // the ranks table against the independent checker, rank by rank (files in rank order)
    let c = common::checker(&files, &[]);
    let rows = v["ranks"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    for (row, file) in rows.iter().zip(&files) {
        let want = &c["ranks"][file.to_string_lossy().as_ref()];
        assert_eq!(row["kernel_count"], want["kernel_count"], "{row}");
        for key in [
            "span_ns",
            "busy_ns",
            "compute_ns",
            "comm_ns",
            "exposed_comm_ns",
        ] {
            assert!(
                (f(&row[key]) - f(&want[key])).abs() < 0.5,
                "{key}: {} != {} ({row})",
                row[key],
                want[key]
            );
        }
    }
}

#[test]
fn parquet_export_of_cpu_only_ranks_reads_back_in_pyarrow_and_pandas() {
    let Some(py) = parquet_python() else {
        eprintln!(
            "\n**** SKIPPED parquet_export_of_cpu_only_ranks_reads_back_in_pyarrow_and_pandas: \
             no Python with pandas and pyarrow (see the test above) ****\n"
        );
        return;
    };
    let dir = shared("sglang-cpu/tp2");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().contains(".trace.json"))
        .collect();
    files.sort();
    assert!(files.len() >= 2, "{files:?}");
    let out = tempfile::tempdir().unwrap();
    let (csv, pq) = export(&files, out.path());
    let v = read_back(&py, &pq, &csv);
    let t = &v["tables"];
    assert!(
        t["ranks"]["rows"].as_u64() == Some(files.len() as u64),
        "{v:#}"
    );
    assert!(t.as_object().unwrap().len() >= 5, "{v:#}");
}
