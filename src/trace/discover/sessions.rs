//! Profiling sessions among files that carry a time stamp in their names: which files were
//! written by one stop of the profiler.
//!
//! - vLLM and `torch.profiler.tensorboard_trace_handler` name each file
//!   `{worker}.{time.time_ns()}.pt.trace.json[.gz]`, the stamp taken by each rank as it stops;
//! - SGLang before profile ids (0.4.x) named each rank's file `{time.time()}-TP-{tp}`, every
//!   rank with its own stamp (ROCm's RPD path still does: `rpd-{time.time()}-TP-{tp}`).
//!
//! A session holds each rank once, and its ranks stop together while sessions are apart in
//! time ([`split`]). Old SGLang's one-file keys are joined into sessions here
//! ([`join_sglang_stamps`]) before discovery groups files by key.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::group::shown_dir;
use super::names::Parsed;
use super::rankfile::Naming;
use crate::trace::rankid::RankId;

/// Splits files in stamp order into sessions that hold each rank once. When a rank comes
/// again, the new session starts at the widest gap between stamps since that rank's earlier
/// file, so a rank missing from one session does not pull the next session's first file into
/// it. Files without a stamp never start a session.
pub(crate) fn split<T>(
    files: Vec<T>,
    stamp: impl Fn(&T) -> Option<u128>,
    id: impl Fn(&T) -> &RankId,
) -> Vec<Vec<T>> {
    let mut sessions: Vec<Vec<T>> = Vec::new();
    let mut cur: Vec<T> = Vec::new();
    for f in files {
        let again = stamp(&f).and_then(|_| cur.iter().position(|g| id(g) == id(&f)));
        if let Some(j) = again {
            // The gap before `cur[k]` (k = cur.len(): before `f`); the widest, latest on ties.
            let at = |k: usize| {
                let next = if k == cur.len() { &f } else { &cur[k] };
                stamp(next)
                    .zip(stamp(&cur[k - 1]))
                    .map_or(0, |(b, a)| b.saturating_sub(a))
            };
            let k = (j + 1..=cur.len())
                .max_by_key(|&k| at(k))
                .unwrap_or(cur.len());
            let tail = cur.split_off(k);
            sessions.push(std::mem::replace(&mut cur, tail));
        }
        cur.push(f);
    }
    if !cur.is_empty() {
        sessions.push(cur);
    }
    sessions
}

/// The longest an old SGLang session's ranks are apart: each rank stamps its file when it
/// takes the stop request, within a step of the others.
const SGLANG_STAMP_SPREAD_NS: u128 = 60_000_000_000;

/// `[prefix-]{time.time()}` (10 whole digits: 2001 to 2286) as the prefix and the stamp in ns.
fn sglang_stamp(key: &str) -> Option<(&str, u128)> {
    let (prefix, t) = match key.rsplit_once('-') {
        Some((p, t)) => (p, t),
        None => ("", key),
    };
    let (whole, frac) = t.split_once('.')?;
    let digits = |s: &str, n: std::ops::RangeInclusive<usize>| {
        n.contains(&s.len()) && s.bytes().all(|b| b.is_ascii_digit())
    };
    if !digits(whole, 10..=10) || !digits(frac, 1..=9) {
        return None;
    }
    let ns = whole.parse::<u128>().ok()? * 1_000_000_000
        + frac.parse::<u128>().ok()? * 10u128.pow(9 - frac.len() as u32);
    Some((prefix, ns))
}

/// (directory, profile key, stage), as discovery groups files.
pub(crate) type GroupKey = (PathBuf, String, Option<String>);

/// Joins SGLang files of one directory and stage whose keys are time stamps, one file each,
/// into the sessions they were written by (ranks distinct, each stamp within a minute of the
/// one before); each
/// session is keyed by its earliest file's key, with a note. Keys shared by several files
/// (SGLang's profile id, one stamp for every rank) are left as they are.
pub(crate) fn join_sglang_stamps(
    by_key: &mut BTreeMap<GroupKey, Vec<(Parsed, PathBuf)>>,
    notes: &mut Vec<String>,
) {
    type Bucket = Vec<(u128, String, (Parsed, PathBuf))>;
    let mut buckets: BTreeMap<(PathBuf, String, Option<String>), Bucket> = BTreeMap::new();
    let singles: Vec<GroupKey> = by_key
        .iter()
        .filter(|(k, v)| {
            v.len() == 1 && v[0].0.naming == Naming::Sglang && sglang_stamp(&k.1).is_some()
        })
        .map(|(k, _)| k.clone())
        .collect();
    for k in singles {
        let Some(mut files) = by_key.remove(&k) else {
            continue;
        };
        let Some(((prefix, ns), f)) = sglang_stamp(&k.1).zip(files.pop()) else {
            continue;
        };
        let bucket = (k.0.clone(), prefix.to_string(), k.2.clone());
        buckets
            .entry(bucket)
            .or_default()
            .push((ns, k.1.clone(), f));
    }
    for ((dir, _, stage), mut files) in buckets {
        files.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.2 .1.cmp(&b.2 .1)));
        let mut runs: Vec<Bucket> = Vec::new();
        for f in files {
            match runs.last_mut() {
                Some(r)
                    if r.last()
                        .is_some_and(|l| f.0 - l.0 <= SGLANG_STAMP_SPREAD_NS) =>
                {
                    r.push(f)
                }
                _ => runs.push(vec![f]),
            }
        }
        for run in runs {
            for s in split(run, |f| Some(f.0), |f| &f.2 .0.id) {
                let key = s[0].1.clone();
                if s.len() > 1 {
                    notes.push(format!(
                        "{}: {} SGLang trace files named with a time stamp each (SGLang \
                         before profile ids) taken as one profile, {key}",
                        shown_dir(&dir),
                        s.len()
                    ));
                }
                let files = s.into_iter().map(|f| f.2).collect();
                by_key.insert((dir.clone(), key, stage.clone()), files);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(n: u32) -> RankId {
        RankId {
            rank: Some(n),
            ..Default::default()
        }
    }

    /// (rank, stamp) files in stamp order → each session's ranks.
    fn sessions(files: &[(u32, u128)]) -> Vec<Vec<u32>> {
        let files: Vec<(RankId, u128)> = files.iter().map(|&(n, t)| (r(n), t)).collect();
        split(files, |f| Some(f.1), |f| &f.0)
            .into_iter()
            .map(|s| s.into_iter().map(|f| f.0.rank.unwrap()).collect())
            .collect()
    }

    #[test]
    fn a_rank_missing_from_a_session_does_not_pull_in_the_next() {
        // Two full sessions.
        assert_eq!(
            sessions(&[(0, 100), (2, 101), (1, 103), (0, 900), (1, 901), (2, 905)]),
            [vec![0, 2, 1], vec![0, 1, 2]]
        );
        // Rank 0 missing from the first session: its rank 1 stands alone.
        assert_eq!(
            sessions(&[(1, 10), (0, 110), (1, 111)]),
            [vec![1], vec![0, 1]]
        );
        // Rank 1 missing from the second session.
        assert_eq!(
            sessions(&[(0, 10), (1, 11), (0, 110), (0, 500), (1, 501)]),
            [vec![0, 1], vec![0], vec![0, 1]]
        );
        // Without stamps, nothing splits.
        let files = vec![r(0), r(0)];
        assert_eq!(split(files, |_| None, |f| f).len(), 1);
    }

    #[test]
    fn sglang_stamps() {
        assert_eq!(
            sglang_stamp("1745000000.1234567"),
            Some(("", 1_745_000_000_123_456_700))
        );
        assert_eq!(
            sglang_stamp("rpd-1745000000.5"),
            Some(("rpd", 1_745_000_000_500_000_000))
        );
        assert_eq!(sglang_stamp("17550.5"), None);
        assert_eq!(sglang_stamp("bystage-1"), None);
        assert_eq!(sglang_stamp("1745000000"), None);
    }
}
