//! Nsight Systems reports (`*.nsys-rep`) read directly (#44), against the stand-in `nsys`
//! (tests/support/fake-nsys.sh) whose `export` copies the report to its `--output`: here each
//! report is an export built by `tests/make_nsys_sqlite.py` under a `.nsys-rep` name, so
//! analyzing the reports must give what analyzing the exports gives, export each report once,
//! and leave the input folder as it was. Also: `--keep-sqlite`, a report beside its export,
//! no nsys (the command to run is named), a hung `nsys export` (killed at
//! `RANKPROF_NSYS_EXPORT_TIMEOUT_S`), and `nsys stop --analyze`. Skipped, with the reason
//! printed, where `python3` is missing.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

/// `python3`, when it runs (the exports are built by tests/make_nsys_sqlite.py).
fn python() -> Option<&'static str> {
    common::have_python("the Nsight Systems exports (tests/make_nsys_sqlite.py)")
        .then_some("python3")
}

/// A run's folders: `sqlite` (the exports), `reps` (the same files as reports), the fake nsys
/// (`bin/nsys`) and a private temporary directory (`TMPDIR` of rankprof).
struct Run {
    tmp: tempfile::TempDir,
}

impl Run {
    fn new(py: &str) -> Run {
        let tmp = tempfile::tempdir().expect("tempdir");
        let run = Run { tmp };
        let out = Command::new(py)
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/make_nsys_sqlite.py"))
            .arg(run.sqlite())
            .output()
            .expect("run make_nsys_sqlite.py");
        assert!(
            out.status.success(),
            "make_nsys_sqlite.py: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::fs::create_dir(run.reps()).expect("mkdir");
        for r in 0..4 {
            std::fs::copy(
                run.sqlite().join(format!("rank{r}.sqlite")),
                run.reps().join(format!("rank{r}.nsys-rep")),
            )
            .expect("copy");
        }
        std::fs::create_dir(run.bin()).expect("mkdir");
        std::fs::create_dir(run.tmpdir()).expect("mkdir");
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/fake-nsys.sh");
        // A link, not a copy (ETXTBSY while other test threads fork); the script keeps its
        // state beside the link.
        std::os::unix::fs::symlink(&script, run.bin().join("nsys")).expect("symlink");
        run
    }
    fn sqlite(&self) -> PathBuf {
        self.tmp.path().join("sqlite")
    }
    fn reps(&self) -> PathBuf {
        self.tmp.path().join("reps")
    }
    fn bin(&self) -> PathBuf {
        self.tmp.path().join("bin")
    }
    fn tmpdir(&self) -> PathBuf {
        self.tmp.path().join("tmp")
    }
    /// The fake's `export` calls so far.
    fn exports(&self) -> Vec<String> {
        std::fs::read_to_string(self.bin().join("calls.log"))
            .unwrap_or_default()
            .lines()
            .filter(|l| l.starts_with("[export]"))
            .map(str::to_string)
            .collect()
    }
    /// rankprof with the fake nsys on PATH (or none: `with_nsys` false), `env` added.
    fn rankprof(&self, with_nsys: bool, env: &[(&str, &str)], args: &[&str]) -> Output {
        let path = if with_nsys {
            format!("{}:/usr/bin:/bin", self.bin().display())
        } else {
            self.tmp.path().join("empty").display().to_string()
        };
        Command::new(env!("CARGO_BIN_EXE_rankprof"))
            .args(args)
            .env("PATH", path)
            .env("TMPDIR", self.tmpdir())
            .env_remove("RANKPROF_NSYS")
            .env_remove("RANKPROF_NSYS_EXPORT_TIMEOUT_S")
            .envs(env.iter().copied())
            .output()
            .expect("run rankprof")
    }
}

fn listing(dir: &Path) -> Vec<(String, u64)> {
    let mut v: Vec<(String, u64)> = std::fs::read_dir(dir)
        .expect("read_dir")
        .map(|e| {
            let e = e.expect("entry");
            let len = e.metadata().expect("metadata").len();
            (e.file_name().to_string_lossy().into_owned(), len)
        })
        .collect();
    v.sort();
    v
}

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "no JSON ({e}); stderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// An analysis without what names the input files (their paths, the notes about them).
fn figures(a: &Value) -> Value {
    let mut a = a.clone();
    let o = a.as_object_mut().expect("an object");
    for k in ["files", "notes", "profile_dir"] {
        o.remove(k);
    }
    let text = a
        .to_string()
        .replace(".nsys-rep", ".sqlite")
        .replace("/reps", "/sqlite");
    serde_json::from_str(&text).expect("JSON")
}

#[test]
fn reports_read_as_their_exports_once_each_leaving_the_folder_alone() {
    let Some(py) = python() else { return };
    let run = Run::new(py);
    let sqlite = run.sqlite();
    let want = run.rankprof(
        true,
        &[],
        &[
            "analyze",
            "--format",
            "json",
            "--profile-dir",
            sqlite.to_str().expect("utf-8"),
        ],
    );
    assert_eq!(want.status.code(), Some(0), "{}", stderr(&want));
    let before = listing(&run.reps());
    let reps = run.reps();
    let out = run.rankprof(
        true,
        &[],
        &["analyze", "--format", "json", reps.to_str().expect("utf-8")],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let (a, w) = (json(&out), json(&want));
    assert_eq!(a["ranks"].as_array().map(Vec::len), Some(4));
    assert_eq!(figures(&a), figures(&w));
    // The files are named as given, the reports.
    let files = a["files"].to_string();
    assert!(files.contains("rank3.nsys-rep"), "{files}");
    assert!(!files.contains(".sqlite"), "{files}");
    let notes = a["notes"].to_string();
    assert!(
        notes.contains("exported by `nsys export --type sqlite`"),
        "{notes}"
    );
    assert!(notes.contains("an Nsight Systems SQLite export"), "{notes}");
    assert!(!notes.contains("rankprof-nsys-"), "{notes}");
    // One export per report, with the flags of `nsys export`, into the temporary folder.
    let calls = run.exports();
    assert_eq!(calls.len(), 4, "{calls:?}");
    for r in 0..4 {
        let rep = reps.join(format!("rank{r}.nsys-rep"));
        let c = calls
            .iter()
            .find(|c| c.ends_with(&format!("[{}]", rep.display())))
            .unwrap_or_else(|| panic!("no export of rank {r}: {calls:?}"));
        assert!(
            c.starts_with("[export][--type][sqlite][--output][")
                && c.contains("][--force-overwrite][true]["),
            "{c}"
        );
        assert!(c.contains(&run.tmpdir().display().to_string()), "{c}");
    }
    // The input folder is as it was, and the temporary exports are gone.
    assert_eq!(listing(&run.reps()), before);
    assert_eq!(listing(&run.tmpdir()), []);
}

#[test]
fn keep_sqlite_keeps_the_exports_and_reuses_them() {
    let Some(py) = python() else { return };
    let run = Run::new(py);
    let reps = run.reps();
    let out = run.rankprof(
        true,
        &[],
        &[
            "analyze",
            "--format",
            "json",
            "--keep-sqlite",
            reps.to_str().expect("utf-8"),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let first = json(&out);
    assert_eq!(run.exports().len(), 4);
    for r in 0..4 {
        let kept = reps.join(format!("rank{r}.sqlite"));
        assert_eq!(
            std::fs::read(&kept).expect("the kept export"),
            std::fs::read(run.sqlite().join(format!("rank{r}.sqlite"))).expect("the export")
        );
    }
    // No temporary name left beside them.
    assert_eq!(listing(&reps).len(), 8, "{:?}", listing(&reps));
    assert!(first["notes"].to_string().contains("kept as"));

    // Again: the folder holds both, and each rank is read once, from its export.
    let out = run.rankprof(
        true,
        &[],
        &["analyze", "--format", "json", reps.to_str().expect("utf-8")],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let again = json(&out);
    assert_eq!(again["ranks"].as_array().map(Vec::len), Some(4));
    assert!(
        stderr(&out).contains("rank0.nsys-rep: its export")
            || again["notes"]
                .to_string()
                .contains("rank0.nsys-rep: its export"),
        "{}",
        stderr(&out)
    );
    assert_eq!(run.exports().len(), 4, "exported again");
    assert_eq!(figures(&again), figures(&first));

    // A report named alone, its newer export beside it: read, not exported again.
    let rep0 = reps.join("rank0.nsys-rep");
    let out = run.rankprof(
        true,
        &[],
        &[
            "analyze",
            "--format",
            "json",
            "--keep-sqlite",
            rep0.to_str().expect("utf-8"),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(run.exports().len(), 4, "exported again");
    let notes = json(&out)["notes"].to_string();
    assert!(notes.contains("not exported again"), "{notes}");
}

#[test]
fn without_nsys_the_command_to_run_is_named() {
    let Some(py) = python() else { return };
    let run = Run::new(py);
    let reps = run.reps();
    let before = listing(&reps);
    let out = run.rankprof(false, &[], &["analyze", reps.to_str().expect("utf-8")]);
    // Every rank unreadable: the exit code of unreadable inputs.
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    let d = reps.display();
    assert!(
        err.contains(&format!(
            "nsys export --type sqlite -o {d}/rank0 {d}/rank0.nsys-rep"
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!("for r in {d}/*.nsys-rep; do")),
        "{err}"
    );
    assert!(err.contains("not found"), "{err}");
    assert_eq!(listing(&reps), before);
}

#[test]
fn a_hung_export_is_killed_at_its_timeout() {
    let Some(py) = python() else { return };
    let run = Run::new(py);
    std::fs::write(run.bin().join("hang.txt"), "export\n").expect("write");
    let rep = run.reps().join("rank1.nsys-rep");
    let start = std::time::Instant::now();
    let out = run.rankprof(
        true,
        &[("RANKPROF_NSYS_EXPORT_TIMEOUT_S", "0.5")],
        &["analyze", rep.to_str().expect("utf-8")],
    );
    assert!(start.elapsed().as_secs_f64() < 20.0, "not killed");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(&format!(
            "{}: `nsys export` did not finish within 0.5 s and was killed",
            rep.display()
        )),
        "{err}"
    );
    assert!(err.contains("RANKPROF_NSYS_EXPORT_TIMEOUT_S"), "{err}");
    // The hung nsys is gone (reaped: no /proc entry, or not a zombie), and so are the
    // temporary files.
    let pid = std::fs::read_to_string(run.bin().join("hung.pid")).expect("hung.pid");
    let status =
        std::fs::read_to_string(format!("/proc/{}/status", pid.trim())).unwrap_or_default();
    assert!(
        !status
            .lines()
            .any(|l| l.starts_with("State:") && !l.contains('Z')),
        "nsys still running: {status}"
    );
    assert_eq!(listing(&run.tmpdir()), []);
    // A timeout that is no number is refused with the variable named.
    let out = run.rankprof(
        true,
        &[("RANKPROF_NSYS_EXPORT_TIMEOUT_S", "soon")],
        &["analyze", rep.to_str().expect("utf-8")],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("RANKPROF_NSYS_EXPORT_TIMEOUT_S=\"soon\""),
        "{}",
        stderr(&out)
    );
}

/// `nsys stop --all --analyze`: the fake's `stop` writes each session's report and names it
/// (`Generated:`), and the analysis of those reports is the output, as `analyze` gives it.
#[test]
fn nsys_stop_analyze_reads_the_reports_written() {
    let Some(py) = python() else { return };
    let run = Run::new(py);
    let mut sessions = String::from(" ID      TIME       STATE               LAUNCH  NAME\n");
    let mut writes = String::new();
    let out = run.tmp.path().join("stopped");
    std::fs::create_dir(&out).expect("mkdir");
    for r in 0..4 {
        sessions.push_str(&format!(
            " {}    00:01:12   Collection          1       run-{r}\n",
            4020 + r
        ));
        writes.push_str(&format!(
            "run-{r}\t{}\t{}\n",
            run.sqlite().join(format!("rank{r}.sqlite")).display(),
            out.join(format!("rank{r}.nsys-rep")).display()
        ));
    }
    std::fs::write(run.bin().join("sessions.txt"), &sessions).expect("write");
    let sqlite = run.sqlite();
    let want = run.rankprof(
        true,
        &[],
        &["analyze", "--json", sqlite.to_str().expect("utf-8")],
    );
    assert_eq!(want.status.code(), Some(0), "{}", stderr(&want));

    // No report written: refused, the way out named.
    let o = run.rankprof(true, &[], &["nsys", "stop", "--all", "--analyze"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("give --profile-dir DIR"),
        "{}",
        stderr(&o)
    );

    std::fs::write(run.bin().join("stop-writes.txt"), &writes).expect("write");
    let o = run.rankprof(true, &[], &["nsys", "stop", "--all", "--analyze", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let a = json(&o);
    assert_eq!(a["ranks"].as_array().map(Vec::len), Some(4));
    let replaced = figures(&a).to_string().replace("/stopped", "/sqlite");
    assert_eq!(replaced, figures(&json(&want)).to_string());
    // The stop table went to stderr; each report was exported once.
    assert!(
        stderr(&o).contains("\"action\": \"stop\""),
        "{}",
        stderr(&o)
    );
    assert_eq!(run.exports().len(), 4);

    // The folder given instead, with --keep-sqlite.
    let o = run.rankprof(
        true,
        &[],
        &[
            "nsys",
            "stop",
            "--all",
            "--analyze",
            "--keep-sqlite",
            "--profile-dir",
            out.to_str().expect("utf-8"),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("Profile trace: 4 ranks"), "{text}");
    assert!(out.join("rank3.sqlite").is_file());
    assert_eq!(run.exports().len(), 8);
}

/// Writes `dir/node.sqlite`, one report of every GPU (`make_nsys_sqlite.py --multi-gpu node`,
/// `extra` added), and returns its analysis (JSON).
fn one_report(py: &str, run: &Run, dir: &Path, extra: &[&str]) -> Value {
    let out = Command::new(py)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/make_nsys_sqlite.py"))
        .arg(dir)
        .args(["--multi-gpu", "node"])
        .args(extra)
        .output()
        .expect("run make_nsys_sqlite.py");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let node = dir.join("node.sqlite");
    let a = run.rankprof(
        true,
        &[],
        &["analyze", "--json", node.to_str().expect("utf-8")],
    );
    assert_eq!(a.status.code(), Some(0), "{}", stderr(&a));
    json(&a)
}

/// A report of a single-node run under one nsys (every rank's process, each on its own GPU):
/// read (and listed) as one rank per GPU, as its export is, the report exported once per
/// command for discovery and every rank, the folder left as it was.
#[test]
fn a_report_of_several_gpus_is_one_rank_per_gpu_through_its_export() {
    let Some(py) = python() else { return };
    let run = Run::new(py);
    let node = run.tmp.path().join("node");
    let want = one_report(py, &run, &node, &[]);
    assert_eq!(want["ranks"].as_array().map(Vec::len), Some(4));

    let reps = run.tmp.path().join("noderep");
    std::fs::create_dir(&reps).expect("mkdir");
    let rep = reps.join("node.nsys-rep");
    std::fs::copy(node.join("node.sqlite"), &rep).expect("copy");

    let ls = run.rankprof(true, &[], &["ls", "--json", reps.to_str().expect("utf-8")]);
    assert_eq!(ls.status.code(), Some(0), "{}", stderr(&ls));
    let l = json(&ls).to_string();
    assert!(
        l.contains("node.nsys-rep#gpu3") && !l.contains("#gpu4"),
        "{l}"
    );
    assert_eq!(run.exports().len(), 1, "{:?}", run.exports());

    let o = run.rankprof(
        true,
        &[],
        &["analyze", "--json", rep.to_str().expect("utf-8")],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let a = json(&o);
    assert_eq!(
        a["ranks"].as_array().map(Vec::len),
        Some(4),
        "{}",
        stderr(&o)
    );
    let files = a["files"].to_string();
    assert!(files.contains("node.nsys-rep#gpu3"), "{files}");
    assert_eq!(
        figures(&a)
            .to_string()
            .replace("/noderep/node.nsys-rep", "/node/node.sqlite"),
        figures(&want).to_string()
    );
    assert_eq!(run.exports().len(), 2, "{:?}", run.exports());
    assert_eq!(
        listing(&reps),
        [(
            "node.nsys-rep".to_string(),
            std::fs::metadata(&rep).expect("rep").len()
        )]
    );
}

/// Keeps in the export at `path` only GPUs `keep` (their kernels, copies and sets, and their
/// processes' host rows: process 1234 + GPU in tests/make_nsys_sqlite.py's `--multi-gpu`),
/// numbered from 0 as on a node of their own.
fn keep_gpus(path: &Path, keep: std::ops::Range<i64>) {
    let c = rusqlite::Connection::open(path).expect("open");
    let pids = |r: &std::ops::Range<i64>| {
        r.clone()
            .map(|d| (1234 + d).to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let (lo, hi) = (keep.start, keep.end);
    for t in [
        "CUPTI_ACTIVITY_KIND_KERNEL",
        "CUPTI_ACTIVITY_KIND_MEMCPY",
        "CUPTI_ACTIVITY_KIND_MEMSET",
    ] {
        c.execute_batch(&format!(
            "DELETE FROM {t} WHERE deviceId < {lo} OR deviceId >= {hi}; \
             UPDATE {t} SET deviceId = deviceId - {lo};"
        ))
        .expect("gpu rows");
    }
    for t in ["CUPTI_ACTIVITY_KIND_RUNTIME", "NVTX_EVENTS", "ThreadNames"] {
        c.execute_batch(&format!(
            "DELETE FROM {t} WHERE ((globalTid >> 24) & 16777215) NOT IN ({});",
            pids(&keep)
        ))
        .expect("host rows");
    }
    c.execute_batch(&format!(
        "DELETE FROM PROCESSES WHERE pid NOT IN ({}); \
         DELETE FROM TARGET_INFO_GPU WHERE cuDevice < {lo} OR cuDevice >= {hi}; \
         UPDATE TARGET_INFO_GPU SET cuDevice = cuDevice - {lo};",
        pids(&keep)
    ))
    .expect("processes and GPUs");
}

/// A two-node run, one nsys per node (`-o run/node_%h`): two reports of four GPUs each, whose
/// kernels ran at the same time, are one profile of eight ranks (node_a's GPUs, then
/// node_b's), with the figures of the same run recorded as one 8-GPU report; a report recorded
/// at another time stays a profile of its own.
#[test]
fn reports_of_several_nodes_recorded_together_are_one_profile() {
    let Some(py) = python() else { return };
    let run = Run::new(py);
    let whole = run.tmp.path().join("whole");
    let want = one_report(py, &run, &whole, &["--ranks", "8"]);

    let nodes = run.tmp.path().join("nodes");
    std::fs::create_dir(&nodes).expect("mkdir");
    for (name, gpus) in [("node_a", 0..4), ("node_b", 4..8)] {
        let rep = nodes.join(format!("{name}.nsys-rep"));
        std::fs::copy(whole.join("node.sqlite"), &rep).expect("copy");
        keep_gpus(&rep, gpus);
    }
    let o = run.rankprof(
        true,
        &[],
        &["analyze", "--json", nodes.to_str().expect("utf-8")],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let a = json(&o);
    let ranks = a["ranks"].as_array().expect("ranks");
    assert_eq!(ranks.len(), 8, "{}", stderr(&o));
    let figs = |v: &Value| -> Vec<Value> {
        v["ranks"]
            .as_array()
            .expect("ranks")
            .iter()
            .map(|r| {
                json_pick(
                    r,
                    &[
                        "kernels",
                        "busy_ns",
                        "comm_ns",
                        "compute_ns",
                        "exposed_comm_ns",
                    ],
                )
            })
            .collect()
    };
    assert_eq!(figs(&a), figs(&want));
    let notes = a["notes"].to_string();
    assert!(notes.contains("one profile \\\"node\\\""), "{notes}");
    assert!(
        notes.contains("DP01 is node_b's GPUs 0–3 (ranks 4–7)"),
        "{notes}"
    );
    // Each report a replica: its collectives matched within it, not against the other's.
    assert!(
        notes.contains("collectives are matched within each of the 2 DP replicas"),
        "{notes}"
    );
    // How each report was exported, said once (by its first GPU's rank).
    assert_eq!(
        notes.matches("exported by `nsys export").count(),
        2,
        "{notes}"
    );
    let worlds: std::collections::BTreeSet<String> = a["collectives"]["worlds"]
        .as_array()
        .expect("worlds")
        .iter()
        .map(|w| w["world"].to_string())
        .collect();
    assert_eq!(worlds.len(), 2, "{}", a["collectives"]["worlds"]);
    let files = a["files"].to_string();
    assert!(files.contains("node_b.nsys-rep#gpu3"), "{files}");

    // A report of the same layout recorded an hour later: a profile of its own.
    let later = nodes.join("node_c.nsys-rep");
    std::fs::copy(nodes.join("node_a.nsys-rep"), &later).expect("copy");
    rusqlite::Connection::open(&later)
        .expect("open")
        .execute_batch(
            "UPDATE TARGET_INFO_SESSION_START_TIME SET utcEpochNs = utcEpochNs + 3600000000000;",
        )
        .expect("later");
    let o = run.rankprof(true, &[], &["ls", "--json", nodes.to_str().expect("utf-8")]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let l = json(&o);
    let profiles: Vec<(String, usize)> = l["profiles"]
        .as_array()
        .map(|p| {
            p.iter()
                .map(|g| {
                    (
                        g["profile_id"].as_str().unwrap_or_default().to_string(),
                        g["ranks"].as_u64().unwrap_or(0) as usize,
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(
        profiles,
        [("node".to_string(), 8), ("node_c".to_string(), 4)],
        "{l}"
    );
}

fn json_pick(v: &Value, keys: &[&str]) -> Value {
    Value::Array(keys.iter().map(|k| v[*k].clone()).collect())
}
