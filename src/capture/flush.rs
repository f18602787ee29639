//! Knowing when the traces are written: the profiler answers `stop` before (vLLM, shared file
//! systems) or while its files grow, so `capture run` snapshots the output directory before it
//! starts and afterwards waits until enough new trace files are there and none has changed size
//! for a quiet period.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;

/// Size and modification time of every trace file in a directory.
pub(crate) type Snapshot = BTreeMap<PathBuf, (u64, Option<SystemTime>)>;

/// `*.json` or `*.json.gz` (Kineto, SGLang, vLLM and merged traces).
pub(crate) fn is_trace_name(name: &str) -> bool {
    name.ends_with(".json") || name.ends_with(".json.gz")
}

/// The files a capture waits for.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(crate) enum Files {
    /// Kineto traces ([`is_trace_name`]).
    #[default]
    Traces,
    /// Nsight Systems reports (`*.nsys-rep`); a `*.qdstrm` beside them is a report nsys is
    /// still writing (it turns into the `.nsys-rep`), so the wait goes on while one is there.
    NsysReports,
}

impl Files {
    /// Whether the wait looks at a file of this name.
    fn watched(self, name: &str) -> bool {
        match self {
            Files::Traces => is_trace_name(name),
            Files::NsysReports => name.ends_with(".nsys-rep") || self.pending(name),
        }
    }
    /// A file still being written under another name (not a result).
    fn pending(self, name: &str) -> bool {
        self == Files::NsysReports && name.ends_with(".qdstrm")
    }
}

/// The trace files directly in `dir` (an absent directory is empty).
pub(crate) fn snapshot(dir: &Path) -> Snapshot {
    snapshot_of(dir, Files::Traces)
}

/// The files of kind `files` directly in `dir` (an absent directory is empty).
pub(crate) fn snapshot_of(dir: &Path, files: Files) -> Snapshot {
    let mut out = Snapshot::new();
    let Ok(rd) = fs::read_dir(dir) else {
        return out;
    };
    for e in rd.flatten() {
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        if !files.watched(name) {
            continue;
        }
        if let Ok(md) = e.metadata() {
            if md.is_file() {
                out.insert(e.path(), (md.len(), md.modified().ok()));
            }
        }
    }
    out
}

/// Files that are new or changed since `before`, with their sizes.
pub(crate) fn new_files(before: &Snapshot, now: &Snapshot) -> Vec<(PathBuf, u64)> {
    now.iter()
        .filter(|(p, v)| before.get(*p) != Some(v))
        .map(|(p, (size, _))| (p.clone(), *size))
        .collect()
}

/// What the wait saw.
#[derive(Clone, Debug, Serialize)]
pub struct Flushed {
    pub dir: PathBuf,
    /// New or changed trace files and their final sizes.
    pub files: Vec<(PathBuf, u64)>,
    /// At least the expected number of rank files appeared and stopped growing.
    pub complete: bool,
    pub waited_ms: u64,
}

impl Flushed {
    /// Rank files (not `merged-*`).
    pub fn rank_files(&self) -> usize {
        self.files
            .iter()
            .filter(|(p, _)| !crate::trace::is_merged_trace(p))
            .count()
    }
    pub fn bytes(&self) -> u64 {
        self.files.iter().map(|(_, s)| s).sum()
    }
}

/// Waits until at least `expect` new rank files are in `dir` and none has changed for `settle`,
/// or `timeout` passes.
#[cfg(test)]
fn wait(
    dir: &Path,
    before: &Snapshot,
    expect: usize,
    settle: Duration,
    timeout: Duration,
) -> Flushed {
    let awaited = Awaited {
        files: Files::Traces,
        counts: |_: &Path| true,
    };
    wait_until(dir, before, expect, settle, timeout, &awaited, &|| false)
}

/// What [`wait_until`] waits for: which files, and which of them count toward `expect`.
pub(crate) struct Awaited<F: Fn(&Path) -> bool> {
    pub(crate) files: Files,
    pub(crate) counts: F,
}

/// Waits for the files `awaited` names: complete once at least `expect` of those it
/// counts are new, none has changed for `settle`, and none is still being written under
/// another name ([`Files::NsysReports`]' `.qdstrm`), which the result does not list; or
/// until `timeout` passes or `interrupted` answers true (not complete then). Shows a spinner
/// on stderr when it is a terminal.
pub(crate) fn wait_until<F: Fn(&Path) -> bool>(
    dir: &Path,
    before: &Snapshot,
    expect: usize,
    settle: Duration,
    timeout: Duration,
    awaited: &Awaited<F>,
    interrupted: &dyn Fn() -> bool,
) -> Flushed {
    let counts = &awaited.counts;
    let pending = |p: &Path| {
        p.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| awaited.files.pending(n))
    };
    let t0 = Instant::now();
    let poll = Duration::from_millis(100).min(settle.max(Duration::from_millis(10)));
    let bar = ProgressBar::new_spinner();
    bar.set_style(
        ProgressStyle::with_template("{spinner} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    let mut last: Vec<(PathBuf, u64)> = Vec::new();
    let mut last_change = Instant::now();
    let what = match awaited.files {
        Files::Traces => "traces",
        Files::NsysReports => "Nsight Systems reports",
    };
    loop {
        let now = new_files(before, &snapshot_of(dir, awaited.files));
        if now != last {
            last = now;
            last_change = Instant::now();
        }
        let ranks = last
            .iter()
            .filter(|(p, _)| !crate::trace::is_merged_trace(p) && !pending(p) && counts(p))
            .count();
        let writing = last.iter().any(|(p, _)| pending(p));
        let bytes: u64 = last.iter().map(|(_, s)| s).sum();
        bar.set_message(format!(
            "waiting for {what} in {}: {ranks}/{expect} files, {:.1} MB",
            dir.display(),
            bytes as f64 / 1e6
        ));
        bar.tick();
        let complete = ranks >= expect.max(1) && !writing && last_change.elapsed() >= settle;
        if complete || t0.elapsed() >= timeout || interrupted() {
            bar.finish_and_clear();
            return Flushed {
                dir: dir.to_path_buf(),
                files: last.into_iter().filter(|(p, _)| !pending(p)).collect(),
                complete,
                waited_ms: t0.elapsed().as_millis() as u64,
            };
        }
        std::thread::sleep(poll);
    }
}

/// Whether a trace file counts toward the files a server writes when its profile ends: in a
/// by-stage SGLang profile only the last stage's (`-DECODE`); the `-EXTEND` ones are written
/// when decoding starts, while the profile goes on.
pub(crate) fn ends_profile(by_stage: bool) -> impl Fn(&Path) -> bool {
    move |p: &Path| {
        !by_stage
            || p.file_name()
                .and_then(|n| n.to_str())
                .and_then(crate::trace::discover::names::parse_name)
                .is_some_and(|n| n.stage.is_some_and(|s| s.eq_ignore_ascii_case("decode")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn waits_for_a_growing_file_to_settle() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("old-TP-0.trace.json.gz"), b"old").unwrap();
        fs::write(dir.path().join("notes.txt"), b"not a trace").unwrap();
        let before = snapshot(dir.path());
        assert_eq!(before.len(), 1);
        let path = dir.path().join("new-TP-0.trace.json.gz");
        let writer = {
            let path = path.clone();
            std::thread::spawn(move || {
                let mut f = fs::File::create(&path).unwrap();
                for _ in 0..4 {
                    f.write_all(&[b'x'; 1000]).unwrap();
                    f.flush().unwrap();
                    std::thread::sleep(Duration::from_millis(150));
                }
            })
        };
        let got = wait(
            dir.path(),
            &before,
            1,
            Duration::from_millis(400),
            Duration::from_secs(20),
        );
        writer.join().unwrap();
        assert!(got.complete);
        // it did not stop before the writer finished: the final size is there
        assert_eq!(got.files, vec![(path, 4000)]);
        assert_eq!(got.rank_files(), 1);
    }

    #[test]
    fn gives_up_after_the_timeout() {
        let dir = tempfile::tempdir().unwrap();
        let before = snapshot(dir.path());
        let got = wait(
            dir.path(),
            &before,
            2,
            Duration::from_millis(50),
            Duration::from_millis(300),
        );
        assert!(!got.complete);
        assert!(got.files.is_empty());
        // an absent directory is just empty
        let got = wait(
            &dir.path().join("nope"),
            &before,
            1,
            Duration::from_millis(10),
            Duration::from_millis(50),
        );
        assert!(!got.complete);
    }

    #[test]
    fn nsys_reports_wait_for_the_qdstrm_to_go() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("old.nsys-rep"), b"old").unwrap();
        fs::write(dir.path().join("trace.json.gz"), b"not a report").unwrap();
        let before = snapshot_of(dir.path(), Files::NsysReports);
        assert_eq!(before.len(), 1);
        // nsys has written one report and is still writing the other.
        fs::write(dir.path().join("a.nsys-rep"), b"report a").unwrap();
        let stream = dir.path().join("b.qdstrm");
        fs::write(&stream, b"stream").unwrap();
        let awaited = Awaited {
            files: Files::NsysReports,
            counts: |_: &Path| true,
        };
        let wait = |expect| {
            wait_until(
                dir.path(),
                &before,
                expect,
                Duration::from_millis(50),
                Duration::from_millis(400),
                &awaited,
                &|| false,
            )
        };
        // One report is there, but a stream is still being turned into a report: not done.
        let got = wait(1);
        assert!(!got.complete);
        assert_eq!(got.files, vec![(dir.path().join("a.nsys-rep"), 8)]);
        fs::remove_file(&stream).unwrap();
        fs::write(dir.path().join("b.nsys-rep"), b"report b!").unwrap();
        let got = wait(2);
        assert!(got.complete);
        assert_eq!(got.rank_files(), 2);
        assert_eq!(got.bytes(), 17);
    }

    #[test]
    fn merged_files_do_not_count_as_ranks() {
        let dir = tempfile::tempdir().unwrap();
        let before = snapshot(dir.path());
        fs::write(dir.path().join("merged-1.trace.json.gz"), b"m").unwrap();
        let got = wait(
            dir.path(),
            &before,
            1,
            Duration::from_millis(10),
            Duration::from_millis(200),
        );
        assert!(!got.complete);
        assert_eq!(got.files.len(), 1);
        assert_eq!(got.rank_files(), 0);
    }

    #[test]
    fn by_stage_only_the_decode_files_end_a_profile() {
        let by_stage = ends_profile(true);
        let all = ends_profile(false);
        for (name, last) in [
            ("1795.5-TP-0-EXTEND.trace.json.gz", false),
            ("1795.5-TP-0-DECODE.trace.json.gz", true),
            ("1795.5-TP-1-DP-1-decode.trace.json.gz", true),
            ("1795.5-TP-0-prefill.trace.json.gz", false),
            ("1795.5-TP-0-2.trace.json.gz", true),
            ("1795.5-TP-0.trace.json.gz", false),
        ] {
            let p = Path::new("/x").join(name);
            assert_eq!(by_stage(&p), last, "{name}");
            assert!(all(&p), "{name}");
        }
    }
}
