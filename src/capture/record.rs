//! The capture session record: what `capture start` asked of which servers (the workers that
//! started, `num_steps`, the output dir, the host, when), so that a later `capture stop` knows the
//! profilers were asked to stop by themselves after `num_steps` and takes SGLang's bare 500
//! ("not in progress") for "already stopped after N steps", a success, without the user
//! repeating `--num-steps`.
//!
//! The record is written (atomically) in two places, so `stop` finds it whichever way it is
//! called:
//! - `OUTPUT_DIR/.rankprof-capture.json` when `start` got `--output-dir` (read by
//!   `capture stop --output-dir OUTPUT_DIR`), beside the traces it describes;
//! - the user's state dir, one file per set of targets (on the command line
//!   `$RANKPROF_STATE_DIR`, else `$XDG_STATE_HOME/rankprof`, else `~/.local/state/rankprof`;
//!   none for a library caller that gives none), read by a `capture stop` with the same
//!   `--router-url` / `--worker-url` / `--from-log`.
//!
//! A record older than [`MAX_AGE`] is ignored (a profile never runs that long), and a record
//! only vouches for the servers it lists. Failing to write one is a note, never an error: the
//! record is a convenience, the profilers already run.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::options::Targets;
use crate::trace::write::writer::write_atomic_bytes;

/// The record's file name in the output dir.
pub(crate) const FILE_NAME: &str = ".rankprof-capture.json";
/// Overrides the state dir (tests, read-only homes).
pub(crate) const STATE_DIR_ENV: &str = "RANKPROF_STATE_DIR";
/// A record older than this says nothing about a running profile.
pub(crate) const MAX_AGE: Duration = Duration::from_secs(24 * 3600);
/// The record format's version.
pub(crate) const VERSION: u32 = 1;

/// What `capture start` did.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct SessionRecord {
    pub(crate) version: u32,
    /// Seconds since the Unix epoch when the profilers were started.
    pub(crate) started_unix_s: u64,
    pub(crate) router: Option<String>,
    /// The servers whose profiler started.
    pub(crate) workers: Vec<String>,
    /// `--num-steps` as asked (then SGLang stops by itself).
    pub(crate) num_steps: Option<u64>,
    pub(crate) output_dir: Option<PathBuf>,
    pub(crate) step: Option<u64>,
    /// The host that ran `capture start` (absent in older records). With the workers' URLs
    /// and `output_dir` it tells a map/reduce driver (examples/ray) which nodes hold traces.
    #[serde(default)]
    pub(crate) hostname: Option<String>,
}

/// A record found for `capture stop`, and where.
#[derive(Clone, Debug)]
pub(crate) struct Found {
    pub(crate) record: SessionRecord,
    pub(crate) path: PathBuf,
    pub(crate) age: Duration,
}

impl Found {
    /// `num_steps` the record asked of this server, if it lists it.
    pub(crate) fn num_steps_for(&self, url: &str) -> Option<u64> {
        let url = url.trim_end_matches('/');
        self.record
            .workers
            .iter()
            .any(|w| w.trim_end_matches('/') == url)
            .then_some(self.record.num_steps)
            .flatten()
    }
}

fn now_s() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl SessionRecord {
    pub(crate) fn new(
        router: Option<String>,
        workers: Vec<String>,
        num_steps: Option<u64>,
        output_dir: Option<PathBuf>,
        step: Option<u64>,
    ) -> Self {
        SessionRecord {
            version: VERSION,
            started_unix_s: now_s(),
            router,
            workers,
            num_steps,
            output_dir,
            step,
            hostname: hostname(),
        }
    }
}

/// This machine's host name (Linux: the kernel's; else `$HOSTNAME`), if it can be read.
fn hostname() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
}

/// The user's state dir for records, if one can be named (the command line's default for
/// `state_dir` in [`super::options::StartOptions`] and [`super::options::StopOptions`]).
pub(crate) fn default_state_dir() -> Option<PathBuf> {
    let env = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    env(STATE_DIR_ENV)
        .or_else(|| env("XDG_STATE_HOME").map(|d| d.join("rankprof")))
        .or_else(|| env("HOME").map(|h| h.join(".local/state/rankprof")))
}

/// The targets as a key: the same servers give the same key, however the flags spell them
/// (`host:port` or `http://host:port/`, a DP rank's `@N`; worker order does not matter).
fn targets_key(t: &Targets) -> String {
    let norm = |u: &str| {
        super::workers::normalize_url(u)
            .map(|(u, _)| u)
            .unwrap_or_else(|_| u.trim_end_matches('/').to_string())
    };
    let mut urls: Vec<String> = t.worker_urls.iter().map(|u| norm(u)).collect();
    urls.sort_unstable();
    urls.dedup();
    let log = t
        .from_log
        .as_deref()
        .map(|p| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf()));
    format!(
        "router={}\nworkers={}\nlog={}",
        t.router_url.as_deref().map(norm).unwrap_or_default(),
        urls.join(","),
        log.map(|p| p.display().to_string()).unwrap_or_default()
    )
}

/// FNV-1a, 64 bits: a stable file name for a key (not a security boundary).
fn fnv1a(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn state_path(state_dir: Option<&Path>, t: &Targets) -> Option<PathBuf> {
    state_dir.map(|d| d.join(format!("capture-{:016x}.json", fnv1a(&targets_key(t)))))
}

/// Writes the record in the output dir (if any) and the state dir; returns notes for what
/// could not be written.
pub(crate) fn save(rec: &SessionRecord, t: &Targets, state_dir: Option<&Path>) -> Vec<String> {
    let mut notes = Vec::new();
    let bytes = match serde_json::to_vec_pretty(rec) {
        Ok(b) => b,
        Err(e) => return vec![format!("session record not written: {e}")],
    };
    let mut places: Vec<PathBuf> = Vec::new();
    if let Some(d) = &rec.output_dir {
        places.push(d.join(FILE_NAME));
    }
    places.extend(state_path(state_dir, t));
    for p in places {
        let res = p
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| write_atomic_bytes(&p, &bytes));
        if let Err(e) = res {
            notes.push(format!(
                "session record not written to {}: {e}",
                p.display()
            ));
        }
    }
    notes
}

fn read(path: &Path) -> Option<Found> {
    let bytes = std::fs::read(path).ok()?;
    let record: SessionRecord = serde_json::from_slice(&bytes).ok()?;
    let age = Duration::from_secs(now_s().saturating_sub(record.started_unix_s));
    (record.version == VERSION && age <= MAX_AGE).then(|| Found {
        record,
        path: path.to_path_buf(),
        age,
    })
}

/// The record for `capture stop`: the output dir's when `output_dir` is given, else the one
/// kept for these targets. Missing, unreadable, foreign-version or stale records are none.
pub(crate) fn find(
    output_dir: Option<&Path>,
    t: &Targets,
    state_dir: Option<&Path>,
) -> Option<Found> {
    match output_dir {
        Some(d) => read(&d.join(FILE_NAME)),
        None => state_path(state_dir, t).and_then(|p| read(&p)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn targets(urls: &[&str]) -> Targets {
        Targets {
            worker_urls: urls.iter().map(|s| s.to_string()).collect(),
            ..Targets::default()
        }
    }

    #[test]
    fn same_targets_same_key_whatever_the_order_and_slashes() {
        let a = targets(&["http://a:1", "http://b:2/"]);
        let b = targets(&["http://b:2", "http://a:1"]);
        assert_eq!(targets_key(&a), targets_key(&b));
        // Spelled without the scheme, or as a DP rank of the server.
        let c = targets(&["b:2", "a:1/", "http://a:1@1"]);
        assert_eq!(targets_key(&a), targets_key(&c));
        let r = |u: &str| Targets {
            router_url: Some(u.into()),
            ..Targets::default()
        };
        assert_eq!(
            targets_key(&r("127.0.0.1:31000")),
            targets_key(&r("http://127.0.0.1:31000/"))
        );
        assert_ne!(
            fnv1a(&targets_key(&a)),
            fnv1a(&targets_key(&targets(&["http://a:1"])))
        );
    }

    #[test]
    fn a_record_round_trips_and_vouches_only_for_its_servers() {
        let dir = std::env::temp_dir().join(format!("rankprof-record-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let rec = SessionRecord::new(
            None,
            vec!["http://a:1".into()],
            Some(3),
            Some(dir.clone()),
            None,
        );
        let state = dir.join("state");
        assert!(save(&rec, &targets(&["http://a:1"]), Some(&state)).is_empty());
        // found in the state dir by the same targets, not by others
        let f = find(None, &targets(&["http://a:1/"]), Some(&state)).unwrap();
        assert_eq!(f.record, rec);
        assert!(find(None, &targets(&["http://b:1"]), Some(&state)).is_none());
        let p = dir.join(FILE_NAME);
        let f = find(Some(&dir), &Targets::default(), None).unwrap();
        assert_eq!(f.record, rec);
        assert_eq!(f.num_steps_for("http://a:1/"), Some(3));
        assert_eq!(f.num_steps_for("http://b:1"), None);
        // stale: ignored
        let old = SessionRecord {
            started_unix_s: now_s() - MAX_AGE.as_secs() - 10,
            ..rec
        };
        write_atomic_bytes(&p, &serde_json::to_vec(&old).unwrap()).unwrap();
        assert!(find(Some(&dir), &Targets::default(), None).is_none());
        // not JSON: ignored
        std::fs::write(&p, b"{\"version\": 1, ").unwrap();
        assert!(find(Some(&dir), &Targets::default(), None).is_none());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
