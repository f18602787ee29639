//! Nsight Systems SQLite exports as rank inputs (#44): `analyze --format json` on a folder of
//! per-rank exports built by `tests/make_nsys_sqlite.py` (NVIDIA's documented export schema, two
//! layouts) must give every figure the independent `tests/check_nsys.py` computes from the
//! tables, name the planted slow rank, and give the same tables and verdict as the Kineto
//! traces of the same run (written by the same generator); merged, the exports must show each
//! rank's rows, launch arrows and names as the checker counts them; one report holding every
//! rank's GPU must read as those ranks. Skipped, with the reason printed, where `python3` is
//! missing.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// `python3`, when it runs (the exports are built by tests/make_nsys_sqlite.py).
fn python() -> Option<&'static str> {
    common::have_python("the Nsight Systems exports (tests/make_nsys_sqlite.py)")
        .then_some("python3")
}

fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join(name)
}

/// Runs the generator into `dir` (exports) and `kineto` (the same run as Kineto traces).
fn generate(py: &str, dir: &Path, kineto: &Path, extra: &[&str]) {
    let out = Command::new(py)
        .arg(script("make_nsys_sqlite.py"))
        .arg(dir)
        .arg("--kineto")
        .arg(kineto)
        .args(extra)
        .output()
        .expect("run make_nsys_sqlite.py");
    assert!(
        out.status.success(),
        "make_nsys_sqlite.py: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `rankprof analyze --profile-dir DIR --format json`: (exit code, JSON or null, stderr).
fn analyze(dir: &Path) -> (i32, Value, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_rankprof"))
        .args(["analyze", "--format", "json", "--profile-dir"])
        .arg(dir)
        .output()
        .expect("run rankprof");
    let json = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (
        out.status.code().unwrap_or(-1),
        json,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn checker(py: &str, files: &[PathBuf]) -> Vec<Value> {
    let out = Command::new(py)
        .arg(script("check_nsys.py"))
        .args(files)
        .output()
        .expect("run check_nsys.py");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice::<Value>(&out.stdout)
        .expect("checker JSON")
        .as_array()
        .expect("a list")
        .clone()
}

fn class_total(a: &Value, rank: &str, class: &str) -> i64 {
    a["classes"]
        .as_array()
        .expect("classes")
        .iter()
        .find(|c| c["rank"] == rank && c["class"] == class)
        .and_then(|c| c["total_ns"].as_i64())
        .unwrap_or_else(|| panic!("no {class} total for {rank}"))
}

/// The parts of an analysis that must not depend on the input format (the rank rows without
/// their event counts: a row of an export is not an event of a trace).
fn comparable(a: &Value) -> Value {
    let mut v = serde_json::Map::new();
    for k in [
        "ranks",
        "classes",
        "kernels",
        "kernels_by_rank",
        "steps",
        "collectives",
        "verdict",
        "attribution",
        "unclassified",
        "source",
    ] {
        v.insert(k.to_string(), a[k].clone());
    }
    for r in v["ranks"].as_array_mut().expect("ranks") {
        r.as_object_mut().expect("rank row").remove("events");
    }
    Value::Object(v)
}

fn check_layout(variant: &str, names: &str, file: impl Fn(usize) -> String) {
    let Some(py) = python() else { return };
    let tmp = tempfile::tempdir().expect("tempdir");
    let (dir, kineto) = (tmp.path().join("nsys"), tmp.path().join("kineto"));
    generate(py, &dir, &kineto, &["--variant", variant, "--names", names]);
    let files: Vec<PathBuf> = (0..4).map(|r| dir.join(file(r))).collect();
    let want = checker(py, &files);

    let (code, a, err) = analyze(&dir);
    assert_eq!(code, 0, "analyze failed: {err}");
    let ranks = a["ranks"].as_array().expect("ranks");
    assert_eq!(ranks.len(), 4, "{err}");
    for (r, (row, w)) in ranks.iter().zip(&want).enumerate() {
        let label = format!("RANK{r:02}");
        assert_eq!(row["rank"], label.as_str());
        for k in [
            "kernels",
            "kernel_sum_ns",
            "busy_ns",
            "comm_ns",
            "memcpy_memset_ns",
            "span_ns",
        ] {
            assert_eq!(row[k], w[k], "{variant} rank {r} {k}");
        }
        assert_eq!(
            class_total(&a, &label, "gemm"),
            w["gemm_ns"],
            "rank {r} gemm"
        );
        assert_eq!(
            class_total(&a, &label, "comm"),
            w["nccl_ns"],
            "rank {r} comm"
        );
        assert_eq!(row["device"], "NVIDIA H100 80GB HBM3");
    }
    // The planted rank is named, with gemm as its gap and step 3 as its onset.
    assert_eq!(a["verdict"]["lead"], "RANK02", "{}", a["verdict"]);
    let lines = a["verdict"]["lines"].to_string();
    assert!(lines.contains("gemm"), "{lines}");
    assert!(lines.contains("from step 3"), "{lines}");
    // Steps from the NVTX `ProfilerStep#N` ranges (the NVTX mark named like one is no step).
    assert_eq!(a["steps"]["rows"].as_array().map(Vec::len), Some(8));
    // The export's version and clock are named.
    let notes = a["notes"].to_string();
    assert!(notes.contains("an Nsight Systems SQLite export"), "{notes}");

    // The same run as Kineto traces: the same tables and verdict.
    let (code, k, err) = analyze(&kineto);
    assert_eq!(code, 0, "analyze of the Kineto twin failed: {err}");
    assert_eq!(comparable(&a), comparable(&k));

    // Merged into one trace, the exports still give the same analysis.
    let merged = tmp.path().join("merged.trace.json.gz");
    merge(&dir, &merged);
    let out = Command::new(env!("CARGO_BIN_EXE_rankprof"))
        .args(["analyze", "--format", "json"])
        .arg(&merged)
        .output()
        .expect("run rankprof");
    let m: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    assert_eq!(comparable(&m)["ranks"], comparable(&a)["ranks"]);
    assert_eq!(m["verdict"], a["verdict"]);
    viewer_rows(&merged, &want, variant, |_| 0);
}

/// Merges the folder `dir` into `out` with `merge-traces`.
fn merge(dir: &Path, out: &Path) {
    let o = Command::new(env!("CARGO_BIN_EXE_merge-traces"))
        .arg("--profile-dir")
        .arg(dir)
        .arg("-o")
        .arg(out)
        .output()
        .expect("run merge-traces");
    assert!(
        o.status.success(),
        "merge-traces: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// The analysis of `dir/node.sqlite`, a report of four GPUs, against `check_nsys.py
/// --by-device` (returned too): every GPU's figures and GEMM time equal the checker's, and the
/// planted GPU 2 leads the verdict.
fn by_device(py: &str, node: &Path) -> (Value, Vec<Value>) {
    let out = Command::new(py)
        .arg(script("check_nsys.py"))
        .arg("--by-device")
        .arg(node.join("node.sqlite"))
        .output()
        .expect("run check_nsys.py");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let want: Vec<Value> = serde_json::from_slice::<Value>(&out.stdout)
        .expect("checker JSON")
        .as_array()
        .expect("a list")
        .clone();
    assert_eq!(want.len(), 4);

    let (code, a, err) = analyze(node);
    assert_eq!(code, 0, "analyze failed: {err}");
    let ranks = a["ranks"].as_array().expect("ranks");
    assert_eq!(ranks.len(), 4, "{err}");
    for (r, (row, w)) in ranks.iter().zip(&want).enumerate() {
        for k in [
            "kernels",
            "kernel_sum_ns",
            "busy_ns",
            "comm_ns",
            "memcpy_memset_ns",
            "span_ns",
        ] {
            assert_eq!(row[k], w[k], "GPU {r} {k}");
        }
        let label = format!("RANK{r:02}");
        assert_eq!(
            class_total(&a, &label, "gemm"),
            w["gemm_ns"],
            "GPU {r} gemm"
        );
    }
    assert_eq!(a["verdict"]["lead"], "RANK02", "{}", a["verdict"]);
    (a, want)
}

/// What a viewer shows of each rank in the merged trace, against the checker's count over each
/// export: the slices, the flow arrows' starts and finishes (`ac2g`, every id paired within
/// the rank), the GPU process with its streams and the host threads with their names.
fn viewer_rows(merged: &Path, want: &[Value], variant: &str, gpu: impl Fn(usize) -> usize) {
    let mut text = String::new();
    std::io::Read::read_to_string(
        &mut flate2::read::GzDecoder::new(std::fs::File::open(merged).expect("merged")),
        &mut text,
    )
    .expect("gunzip");
    let doc: Value = serde_json::from_str(&text).expect("merged JSON");
    let events = doc["traceEvents"].as_array().expect("traceEvents");
    for (r, w) in want.iter().enumerate() {
        let w = &w["viewer"];
        let label = format!("[RANK{r:02}] ");
        let mine: Vec<&Value> = events
            .iter()
            .filter(|e| e["pid"].as_str().is_some_and(|p| p.starts_with(&label)))
            .collect();
        let count = |ph: &str| mine.iter().filter(|e| e["ph"] == ph).count() as u64;
        assert_eq!(
            count("X"),
            w["slices"].as_u64().unwrap(),
            "{variant} {label}slices"
        );
        assert_eq!(
            count("s"),
            w["flow_starts"].as_u64().unwrap(),
            "{variant} {label}s"
        );
        assert_eq!(
            count("f"),
            w["flow_ends"].as_u64().unwrap(),
            "{variant} {label}f"
        );
        assert!(count("s") > 0, "{variant} {label}: no flow");
        let ids = |ph: &str| -> std::collections::BTreeSet<String> {
            mine.iter()
                .filter(|e| e["ph"] == ph)
                .map(|e| {
                    assert_eq!(e["cat"], "ac2g");
                    e["id"].to_string()
                })
                .collect()
        };
        assert_eq!(ids("s"), ids("f"), "{variant} {label}: unpaired arrows");
        assert!(mine
            .iter()
            .filter(|e| e["ph"] == "f")
            .all(|e| e["bp"] == "e"));
        // Names: per process its name metadata, per thread its own.
        let gpu_pid = format!("{label}{}", gpu(r));
        let names = |meta: &str, pid_is_gpu: bool| -> Vec<String> {
            let mut v: Vec<String> = mine
                .iter()
                .filter(|e| e["ph"] == "M" && e["name"] == meta)
                .filter(|e| (e["pid"] == gpu_pid.as_str()) == pid_is_gpu)
                .map(|e| e["args"]["name"].as_str().unwrap().to_string())
                .collect();
            v.sort();
            v
        };
        let streams: Vec<String> = w["streams"][gpu(r).to_string()]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap().to_string())
            .collect();
        assert_eq!(
            names("thread_name", true),
            streams,
            "{variant} {label}streams"
        );
        let threads: Vec<String> = w["threads"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap().to_string())
            .collect();
        assert_eq!(
            names("thread_name", false),
            threads,
            "{variant} {label}threads"
        );
        assert_eq!(
            names("process_name", true),
            [format!("{label}GPU {}", gpu(r))],
            "{variant}"
        );
        let host = names("process_name", false);
        // v2's layout has no PROCESSES table: the process is named by its pid.
        let want_host = match variant {
            "v2" => format!("{label}process {}", 1234 + r),
            // fixtures/nsys-real: nvFuser's C++ test binary, as PROCESSES names it.
            "real" => format!("{label}./bin/test_matmul"),
            _ => format!("{label}python3"),
        };
        assert_eq!(host, [want_host], "{variant}");
        let sorts = mine
            .iter()
            .filter(|e| e["ph"] == "M" && e["name"] == "process_sort_index")
            .count();
        assert_eq!(sorts, 2, "{variant} {label}: a sort index per process");
    }
}

/// Nsight Systems 2024.x's layout (names and NVTX text through `StringIds`, the session
/// start, memcpy and memset), files `rank{r}.sqlite`.
#[test]
fn v3_exports_match_the_checker_and_their_kineto_twin() {
    check_layout("v3", "rank", |r| format!("rank{r}.sqlite"));
}

/// 2021.5's layout (NVTX text inline, no session start, no memset table, no version table),
/// files named by `nsys profile -o profile_%q{RANK}`.
#[test]
fn v2_exports_match_the_checker_and_their_kineto_twin() {
    check_layout("v2", "profile", |r| format!("profile_{r}.sqlite"));
}

#[test]
fn unreadable_exports_and_mixed_folders_are_refused_with_the_reason() {
    let Some(py) = python() else { return };
    let tmp = tempfile::tempdir().expect("tempdir");
    let bad = tmp.path().join("bad");
    std::fs::create_dir(&bad).expect("mkdir");
    // A kernel table without `end`, and a file that is no database.
    let out = Command::new(py)
        .args([
            "-c",
            "import sqlite3,sys; d=sqlite3.connect(sys.argv[1]); \
             d.execute('CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, deviceId INTEGER)'); \
             d.commit()",
        ])
        .arg(bad.join("rank0.sqlite"))
        .output()
        .expect("python");
    assert!(out.status.success());
    std::fs::write(bad.join("rank1.sqlite"), "not a database").expect("write");
    let (code, _, err) = analyze(&bad);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("CUPTI_ACTIVITY_KIND_KERNEL has no column \"end\""),
        "{err}"
    );
    assert!(err.contains("2021.5 to 2024.x"), "{err}");
    assert!(err.contains("not an SQLite database"), "{err}");

    // Exports and Kineto traces of one profile.
    let (dir, kineto) = (tmp.path().join("nsys"), tmp.path().join("kineto"));
    generate(py, &dir, &kineto, &[]);
    std::fs::rename(
        kineto.join("rank3.trace.json"),
        dir.join("rank3.trace.json"),
    )
    .expect("move");
    std::fs::remove_file(dir.join("rank3.sqlite")).expect("rm");
    let (code, _, err) = analyze(&dir);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("mixes Nsight Systems exports"), "{err}");
}

/// One report of a single-node run under one nsys (every rank a process on its own GPU, one
/// planted slow): one rank per GPU, each with the figures the checker computes from that GPU's
/// rows and its process's, the same analysis as the same run's per-rank exports, and merged,
/// each rank's rows, arrows (correlation ids repeat across the processes) and names.
#[test]
fn a_report_of_several_gpus_is_one_rank_per_gpu() {
    let Some(py) = python() else { return };
    let tmp = tempfile::tempdir().expect("tempdir");
    let (per, node, kineto) = (
        tmp.path().join("per"),
        tmp.path().join("node"),
        tmp.path().join("kineto"),
    );
    generate(py, &per, &kineto, &[]);
    generate(py, &node, &kineto, &["--multi-gpu", "node"]);
    assert!(!node.join("rank0.sqlite").exists());
    let (a, want) = by_device(py, &node);
    let notes = a["notes"].to_string();
    assert!(notes.contains("holding 4 GPUs"), "{notes}");
    let (code, p, err) = analyze(&per);
    assert_eq!(code, 0, "analyze of the per-rank exports failed: {err}");
    assert_eq!(comparable(&a), comparable(&p));

    let merged = tmp.path().join("node.trace.json.gz");
    merge(&node, &merged);
    viewer_rows(&merged, &want, "multi-gpu", |r| r);
}

/// One process driving every GPU (a single controller, DataParallel; one GPU planted slow):
/// still one rank per GPU, each with the figures the checker computes from that GPU's rows, the
/// runtime calls that launched them and the threads given to it (by where they launched; the
/// main thread's step ranges, which launched nothing, shared by every GPU); the slow GPU named,
/// the steps found, the rule said; merged, each rank's rows, arrows and names.
#[test]
fn a_process_driving_several_gpus_is_one_rank_per_gpu() {
    let Some(py) = python() else { return };
    let tmp = tempfile::tempdir().expect("tempdir");
    let (node, kineto) = (tmp.path().join("node"), tmp.path().join("kineto"));
    generate(py, &node, &kineto, &["--one-process", "node"]);
    let (a, want) = by_device(py, &node);
    assert!(a["verdict"]["lines"].to_string().contains("from step 3"));
    // The main thread's `ProfilerStep#N` ranges reach every GPU.
    assert_eq!(a["steps"]["rows"].as_array().map(Vec::len), Some(8));
    let notes = a["notes"].to_string();
    assert!(notes.contains("process 4321 drives GPUs 0–3"), "{notes}");
    assert!(notes.contains("shared by every GPU"), "{notes}");
    assert!(notes.contains("1 also given to another GPU"), "{notes}");

    let merged = tmp.path().join("node.trace.json.gz");
    merge(&node, &merged);
    viewer_rows(&merged, &want, "one-process", |r| r);
}

/// The kernels of rank `r` in a merged trace whose name starts with `nccl`, in start order:
/// (`In msg nelems`, `Out msg nelems`, `dtype`, `Process Group Name`), each `Null` when absent
/// (the merge renumbers correlations).
fn nccl_args(merged: &Path, r: usize) -> Vec<[Value; 4]> {
    let mut text = String::new();
    std::io::Read::read_to_string(
        &mut flate2::read::GzDecoder::new(std::fs::File::open(merged).expect("merged")),
        &mut text,
    )
    .expect("gunzip");
    let doc: Value = serde_json::from_str(&text).expect("merged JSON");
    let label = format!("[RANK{r:02}] ");
    let mut v: Vec<(f64, [Value; 4])> = doc["traceEvents"]
        .as_array()
        .expect("traceEvents")
        .iter()
        .filter(|e| e["pid"].as_str().is_some_and(|p| p.starts_with(&label)))
        .filter(|e| {
            e["cat"] == "kernel" && e["name"].as_str().is_some_and(|n| n.starts_with("nccl"))
        })
        .map(|e| {
            let a = &e["args"];
            (
                e["ts"].as_f64().expect("ts"),
                [
                    a["In msg nelems"].clone(),
                    a["Out msg nelems"].clone(),
                    a["dtype"].clone(),
                    a["Process Group Name"].clone(),
                ],
            )
        })
        .collect();
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    v.into_iter().map(|x| x.1).collect()
}

/// The all-reduce's row of the critical path's transfers.
fn allreduce_transfer(a: &Value) -> Value {
    a["path"]["transfers"]
        .as_array()
        .expect("transfers")
        .iter()
        .find(|t| t["name"].as_str().is_some_and(|n| n.contains("AllReduce")))
        .cloned()
        .unwrap_or_else(|| panic!("no all-reduce transfer: {}", a["path"]))
}

/// NCCL's own NVTX ranges (`--nccl-ranges`): each NCCL kernel launched inside its call's range
/// gets the size and communicator the independent checker decodes from the payload (an
/// all-gather its communicator only, a grouped all-reduce nothing), the communicator keys the
/// collectives on every rank alike, and the sizes reach the critical path's bus bandwidth
/// (NCCL's all-reduce factor 2(n-1)/n over the transfer time); without the ranges, or with
/// payloads that do not validate, no size, and a note says which. (A slow link is judged only
/// between worlds, and an export carries no world size, so its ranks are one world: a slow
/// link between worlds cannot be planted in exports yet.)
#[test]
fn nccl_ranges_give_nccl_kernels_their_size_and_communicator() {
    let Some(py) = python() else { return };
    let tmp = tempfile::tempdir().expect("tempdir");
    let run = |name: &str, extra: &[&str]| -> (PathBuf, Value, String) {
        let dir = tmp.path().join(name);
        generate(py, &dir, &tmp.path().join(format!("{name}-kineto")), extra);
        let (code, a, err) = analyze(&dir);
        assert_eq!(code, 0, "{name}: {err}");
        (dir, a, err)
    };
    let (ok, a, _) = run("ok", &["--nccl-ranges", "ok"]);
    let files: Vec<PathBuf> = (0..4).map(|r| ok.join(format!("rank{r}.sqlite"))).collect();
    let want = checker(py, &files);
    let merged = tmp.path().join("ok.trace.json.gz");
    merge(&ok, &merged);
    let notes = a["notes"].to_string();
    let mut sizes = Vec::new();
    for (r, w) in want.iter().enumerate() {
        let n = &w["nccl"];
        let order = n["in_order"].as_array().expect("in_order");
        assert!(n["sized"].as_u64() > Some(0) && n["share"].as_u64() > Some(0));
        assert_eq!(n["outside"], 1, "the grouped all-reduce");
        assert_eq!(n["invalid"], 0);
        assert!(
            notes.contains(&format!(
                "rank{r}.sqlite: NCCL's NVTX ranges (domain NCCL): {} of {} NCCL kernels got",
                n["sized"], n["kernels"]
            )),
            "{notes}"
        );
        assert!(notes.contains(&format!("; {} all-gather/reduce-scatter", n["share"])));
        let got = nccl_args(&merged, r);
        assert_eq!(got.len() as u64, n["kernels"].as_u64().unwrap(), "rank {r}");
        for (k, ([i, o, dtype, pg], x)) in got.iter().zip(order).enumerate() {
            let corr = format!("#{k}");
            match Some(x).filter(|x| !x.is_null()) {
                Some(x) => {
                    assert_eq!(pg, &x["comm"], "rank {r} kernel {corr}");
                    assert_eq!(i, &x["bytes"], "rank {r} kernel {corr}");
                    assert_eq!(o, &x["bytes"], "rank {r} kernel {corr}");
                    let bytes_dtype = if x["bytes"].is_null() {
                        Value::Null
                    } else {
                        "Byte".into()
                    };
                    assert_eq!(dtype, &bytes_dtype);
                    if r == 0 && !x["bytes"].is_null() {
                        sizes.push(x["bytes"].as_f64().unwrap());
                    }
                }
                None => assert!(
                    [i, o, dtype, pg].iter().all(|v| v.is_null()),
                    "rank {r} kernel {corr}: {i} {o} {dtype} {pg}"
                ),
            }
        }
    }
    // The all-reduce's communicator keys its collectives on every rank alike: each sized one
    // matched across the four ranks.
    let comm = want[0]["nccl"]["by_corr"]
        .as_object()
        .unwrap()
        .values()
        .find(|x| !x["bytes"].is_null())
        .map(|x| x["comm"].as_str().unwrap().to_string())
        .unwrap();
    let group = a["collectives"]["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["key"] == format!("pg {comm} stream #0").as_str())
        .unwrap_or_else(|| panic!("no group of {comm}: {}", a["collectives"]["groups"]));
    assert_eq!(group["matched"].as_u64(), Some(sizes.len() as u64));
    // Bus bandwidth: the lower median of bytes × 2(n-1)/n over the 200 µs transfer (the
    // generator's TAIL_NS), GB/s rounded as the tool does (bytes per ns, three decimals).
    let t = allreduce_transfer(&a);
    assert_eq!(t["median_ns"].as_f64(), Some(200_000.0), "{t}");
    let mut bw: Vec<f64> = sizes
        .iter()
        .map(|b| (b * 1.5 / 200_000.0 * 1e3).round() / 1e3)
        .collect();
    bw.sort_by(f64::total_cmp);
    let median = bw[(bw.len() - 1) / 2];
    assert!(
        (t["busbw_gbps"].as_f64().expect("busbw") - median).abs() < 1e-9,
        "{t} vs {median}"
    );

    // Without the ranges: no size, no bus bandwidth, no note.
    let (_, plain, _) = run("plain", &[]);
    let t = allreduce_transfer(&plain);
    assert!(t["busbw_gbps"].is_null() && t["bytes"].is_null(), "{t}");
    assert!(!plain["notes"].to_string().contains("NCCL's NVTX ranges"));

    // Payloads whose header disagrees with their schema: not used, and said.
    let (bad, b, _) = run("bad", &["--nccl-ranges", "bad"]);
    let files: Vec<PathBuf> = (0..4)
        .map(|r| bad.join(format!("rank{r}.sqlite")))
        .collect();
    let want = checker(py, &files);
    let notes = b["notes"].to_string();
    for (r, w) in want.iter().enumerate() {
        let n = &w["nccl"];
        assert_eq!(n["sized"], 0);
        assert!(n["invalid"].as_u64() > Some(0));
        assert!(
            notes.contains(&format!(
                "rank{r}.sqlite: {} NCCL kernels' range payloads did not validate",
                n["invalid"]
            )),
            "{notes}"
        );
    }
    let t = allreduce_transfer(&b);
    assert!(t["busbw_gbps"].is_null() && t["bytes"].is_null(), "{t}");
    let merged = tmp.path().join("bad.trace.json.gz");
    merge(&bad, &merged);
    for r in 0..4 {
        assert!(nccl_args(&merged, r)
            .iter()
            .all(|v| v.iter().all(|x| x.is_null())));
    }
}

/// A real export (fixtures/nsys-real: Nsight Systems 2024.6.2, schema 3.16.1, one H200, from
/// NVIDIA/Fuser): read with the columns a real release writes, every figure as the checker
/// computes it with Python's sqlite3, the version named without its parts, and its merged
/// trace holding what a viewer shows (slices, launch arrows, the stream and the named thread).
#[test]
fn a_real_export_matches_the_checker() {
    let Some(py) = python() else { return };
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/nsys-real");
    let file = dir.join("report1.sqlite");
    let want = checker(py, std::slice::from_ref(&file));
    assert_eq!(want.len(), 1);
    let w = &want[0];
    assert_eq!(w["kernels"], 19, "the fixture changed: {w}");
    let (code, a, err) = analyze(&dir);
    assert_eq!(code, 0, "analyze failed: {err}");
    let r = &a["ranks"][0];
    for k in [
        "kernels",
        "kernel_sum_ns",
        "busy_ns",
        "comm_ns",
        "memcpy_memset_ns",
        "span_ns",
    ] {
        assert_eq!(r[k], w[k], "{k}");
    }
    assert_eq!(r["device"], "NVIDIA H200");
    let notes = a["notes"].to_string();
    assert!(
        notes.contains("(EXPORT_PRODUCT_VERSION 2024.6.2.25, EXPORT_SCHEMA_VERSION 3.16.1)"),
        "{notes}"
    );
    let tmp = tempfile::tempdir().expect("tempdir");
    merge(&dir, tmp.path());
    let merged = tmp.path().join("merged-report1.trace.json.gz");
    viewer_rows(&merged, &want, "real", |_| 0);
}
