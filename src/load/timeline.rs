//! The load timeline: every poll as one JSON line, streamed to `watch-<UTC>.jsonl` (flushed
//! after each line, so a merge running meanwhile reads every poll so far, and memory stays flat
//! however long the watch runs); reading it back; and the small bounded history the live view
//! draws its sparklines from ([`History`]: the last `window` seconds per DP rank).
//!
//! Lines, each a JSON object with a `kind`:
//!
//! | kind | fields |
//! |---|---|
//! | `watch` | `version` (1), `t_ns`, `time`, `interval_s`, `poll_timeout_s`, `router`, `workers` [{url, dp_ranks}], `triggers` |
//! | `poll` | `seq`, `t_ns` (Unix ns when the poll started), `time`, `ms`, `workers` [{url, status (`ok`/`dead`/`timeout`/`error`), source, ms, error, ranks [{dp, running, waiting, tokens, token_usage, throughput}]}], `imbalance` {metric: {n, min, max, mean, max_over_mean, spread, cv}} |
//! | `trigger` | `t_ns`, `seq`, `trigger`, `value`, `held_ns` |
//! | `capture` | `n`, `phase` (`start`/`done`), `t_ns`, and when done `exit_code`, `trace_dir`, `merged` |
//! | `end` | `t_ns`, `polls`, `reason` |
//!
//! Readers skip kinds they do not know and lines that do not parse (the last line of a timeline
//! still being written may be cut).

use std::collections::{BTreeMap, VecDeque};
use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::Deserialize;

use super::loads::RankLoad;

/// The prefix of a timeline's file name (`watch-20260120T101530Z.jsonl`).
pub(crate) const PREFIX: &str = "watch-";
pub(crate) const SUFFIX: &str = ".jsonl";

/// Unix time now, ns.
pub(crate) fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64)
}

/// (year, month, day) of a day count since 1970-01-01 (Howard Hinnant's civil_from_days).
fn civil(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

fn parts(ns: i64) -> (i64, u32, u32, i64, i64, i64, i64) {
    let secs = ns.div_euclid(1_000_000_000);
    let ms = ns.rem_euclid(1_000_000_000) / 1_000_000;
    let (y, mo, d) = civil(secs.div_euclid(86_400));
    let sod = secs.rem_euclid(86_400);
    (y, mo, d, sod / 3600, sod % 3600 / 60, sod % 60, ms)
}

/// `2026-01-20T10:15:30.123Z`.
pub(crate) fn utc(ns: i64) -> String {
    let (y, mo, d, h, mi, s, ms) = parts(ns);
    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{ms:03}Z")
}

/// `20260120T101530Z` (for file names).
pub(crate) fn stamp(ns: i64) -> String {
    let (y, mo, d, h, mi, s, _) = parts(ns);
    format!("{y:04}{mo:02}{d:02}T{h:02}{mi:02}{s:02}Z")
}

/// `DIR/watch-<UTC>.jsonl`.
pub fn default_path(dir: &Path, t_ns: i64) -> PathBuf {
    dir.join(format!("{PREFIX}{}{SUFFIX}", stamp(t_ns)))
}

/// Is this a timeline's file name?
pub(crate) fn is_timeline_name(name: &str) -> bool {
    name.starts_with(PREFIX) && name.ends_with(SUFFIX)
}

/// The timelines directly in `dir`, sorted by name (= by start time).
pub(crate) fn beside(dir: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut v: Vec<PathBuf> = rd
        .flatten()
        .filter(|e| e.file_name().to_str().is_some_and(is_timeline_name))
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect();
    v.sort();
    v
}

/// Appends JSON lines to a timeline, flushing after each.
pub struct Writer {
    out: BufWriter<File>,
    pub path: PathBuf,
    pub lines: u64,
}

impl Writer {
    /// Creates (or truncates) `path`, and its directory.
    pub fn create(path: &Path) -> Result<Writer> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
        }
        let f = File::create(path).with_context(|| format!("cannot write {}", path.display()))?;
        Ok(Writer {
            out: BufWriter::new(f),
            path: path.to_path_buf(),
            lines: 0,
        })
    }

    /// Writes one line (a JSON object) and flushes it to the file.
    pub fn line(&mut self, json: &str) -> io::Result<()> {
        self.out.write_all(json.as_bytes())?;
        self.out.write_all(b"\n")?;
        self.out.flush()?;
        self.lines += 1;
        Ok(())
    }
}

/// One worker of a poll line, as read back.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(default)]
pub(crate) struct WorkerRecord {
    pub(crate) url: String,
    pub(crate) status: String,
    pub(crate) ranks: Vec<RankLoad>,
}

/// A poll line, as read back.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(default)]
pub(crate) struct PollRecord {
    pub(crate) seq: u64,
    pub(crate) t_ns: i64,
    pub(crate) workers: Vec<WorkerRecord>,
}

impl PollRecord {
    /// `(label, rank)` for every DP rank that answered: `DP01`, or `host:port DP01` when the
    /// timeline has several workers.
    pub(crate) fn labelled(&self, several: bool) -> impl Iterator<Item = (String, &RankLoad)> {
        self.workers
            .iter()
            .filter(|w| w.status == "ok")
            .flat_map(move |w| {
                w.ranks
                    .iter()
                    .map(move |r| (rank_label(&w.url, r.dp, several), r))
            })
    }
}

/// `DP01`, or `host:port DP01`.
pub(crate) fn rank_label(url: &str, dp: u32, several: bool) -> String {
    if several {
        let host = url.split("://").nth(1).unwrap_or(url);
        format!("{host} DP{dp:02}")
    } else {
        format!("DP{dp:02}")
    }
}

/// The poll lines of a timeline with `lo_ns <= t_ns <= hi_ns`, in file order. Lines that do not
/// parse are skipped.
pub(crate) fn read_polls(path: &Path, lo_ns: i64, hi_ns: i64) -> Result<Vec<PollRecord>> {
    let f = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let mut out = Vec::new();
    for line in BufReader::new(f).lines() {
        let line = line.with_context(|| format!("cannot read {}", path.display()))?;
        if !line.contains("\"kind\":\"poll\"") {
            continue;
        }
        if let Ok(p) = serde_json::from_str::<PollRecord>(&line) {
            if (lo_ns..=hi_ns).contains(&p.t_ns) {
                out.push(p);
            }
        }
    }
    Ok(out)
}

/// A bounded series: samples of the last `window_ns`, at most `cap` of them.
#[derive(Clone, Debug)]
pub struct Ring {
    samples: VecDeque<(i64, Option<f64>)>,
    window_ns: i64,
    cap: usize,
}

impl Ring {
    pub fn new(window_ns: i64, cap: usize) -> Ring {
        Ring {
            samples: VecDeque::with_capacity(cap.min(1024)),
            window_ns,
            cap: cap.max(1),
        }
    }

    pub fn push(&mut self, t_ns: i64, v: Option<f64>) {
        while self.samples.len() >= self.cap
            || self
                .samples
                .front()
                .is_some_and(|(t, _)| t_ns - t > self.window_ns)
        {
            self.samples.pop_front();
        }
        self.samples.push_back((t_ns, v));
    }

    pub fn len(&self) -> usize {
        self.samples.len()
    }

    pub fn is_empty(&self) -> bool {
        self.samples.is_empty()
    }

    pub fn values(&self) -> impl Iterator<Item = Option<f64>> + '_ {
        self.samples.iter().map(|(_, v)| *v)
    }
}

/// The recent values of one metric per (worker index, DP rank): what the sparklines show.
#[derive(Clone, Debug)]
pub struct History {
    pub rings: BTreeMap<(usize, u32), Ring>,
    window_ns: i64,
    cap: usize,
}

impl History {
    /// Keeps `window_ns` of samples taken every `interval_ns` (at most 4096 per rank).
    pub fn new(window_ns: i64, interval_ns: i64) -> History {
        let cap = (window_ns / interval_ns.max(1) + 2).clamp(2, 4096) as usize;
        History {
            rings: BTreeMap::new(),
            window_ns,
            cap,
        }
    }

    pub fn push(&mut self, worker: usize, dp: u32, t_ns: i64, v: Option<f64>) {
        let (w, c) = (self.window_ns, self.cap);
        self.rings
            .entry((worker, dp))
            .or_insert_with(|| Ring::new(w, c))
            .push(t_ns, v);
    }

    /// Samples held in all rings (memory is proportional to this).
    pub fn samples(&self) -> usize {
        self.rings.values().map(Ring::len).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_formatting() {
        assert_eq!(utc(0), "1970-01-01T00:00:00.000Z");
        // 2026-11-20T22:19:45.520965Z, the fixture's time
        assert_eq!(utc(1_795_213_185_520_090_600), "2026-11-20T22:19:45.520Z");
        assert_eq!(stamp(1_795_213_185_520_090_600), "20261120T221945Z");
        assert_eq!(utc(951_782_400_000_000_000), "2000-02-29T00:00:00.000Z");
        assert!(is_timeline_name("watch-20261120T221945Z.jsonl"));
        assert!(!is_timeline_name("watch-x.json"));
    }

    #[test]
    fn ring_keeps_the_window_and_the_cap() {
        let s = 1_000_000_000;
        let mut r = Ring::new(60 * s, 1000);
        for i in 0..600 {
            r.push(i * s / 2, Some(i as f64));
        }
        // 60 s at 2 per second, plus the sample exactly 60 s old
        assert_eq!(r.len(), 121);
        let mut h = History::new(60 * s, s);
        for i in 0..10_000 {
            h.push(0, 0, i * s, None);
            h.push(0, 1, i * s, Some(1.0));
        }
        assert_eq!(h.samples(), 2 * 61);
    }

    #[test]
    fn streamed_lines_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let p = default_path(dir.path(), 1_795_213_185_520_090_600);
        let mut w = Writer::create(&p).unwrap();
        w.line(r#"{"kind":"watch","version":1}"#).unwrap();
        for i in 0..5 {
            w.line(&format!(
                r#"{{"kind":"poll","seq":{i},"t_ns":{},"workers":[{{"url":"http://h:1","status":"ok","ranks":[{{"dp":0,"waiting":{i}}}]}}]}}"#,
                i * 10
            ))
            .unwrap();
        }
        // a cut last line, as while the watch is still writing
        std::fs::OpenOptions::new()
            .append(true)
            .open(&p)
            .unwrap()
            .write_all(br#"{"kind":"poll","seq":5,"t_n"#)
            .unwrap();
        let polls = read_polls(&p, 10, 30).unwrap();
        assert_eq!(polls.iter().map(|p| p.seq).collect::<Vec<_>>(), [1, 2, 3]);
        assert_eq!(polls[1].workers[0].ranks[0].waiting, Some(2.0));
        let labels: Vec<String> = polls[0].labelled(true).map(|(l, _)| l).collect();
        assert_eq!(labels, ["h:1 DP00"]);
        assert_eq!(beside(dir.path()), vec![p]);
    }
}
