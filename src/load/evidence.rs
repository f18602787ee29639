//! The load timeline as evidence in the other stages: a `watch-*.jsonl` beside a profile's rank
//! files is found by `merge` and `analyze` on their own, whoever wrote the traces.
//!
//! - [`for_merge`]: the polls that fall inside the merged trace's time span become Chrome-trace
//!   counter events, one track per DP rank (`"ph":"C"`, `"name":"load"`, `args` {running,
//!   waiting, token_usage}, `pid` `"[watch] DP01"`, or `"[watch] host:port DP01"` when the
//!   timeline has several workers), `ts` in µs on the merged trace's clock (relative to its
//!   `baseTimeNanoseconds`), plus a `process_name` for each track. `crate::merge` writes them
//!   after the ranks. Pids starting with [`PID_PREFIX`] are not ranks: `analyze` skips them.
//! - [`onset_note`]: the load of every DP rank at the poll nearest the analysis's onset, as one
//!   sentence for `Analysis.notes`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

use super::loads::{Metric, RankLoad};
use super::timeline::{self, PollRecord};
use crate::trace::RankId;

/// The pid prefix of the load tracks in a merged trace.
pub(crate) const PID_PREFIX: &str = "[watch]";

/// Polls farther than this from the onset say nothing about it.
const ONSET_MAX_GAP_NS: i64 = 10_000_000_000;

/// The counter args of the load tracks.
const COUNTER_ARGS: [Metric; 3] = [Metric::Running, Metric::Waiting, Metric::TokenUsage];

/// Counter events of one timeline for a trace whose clock starts at `base_ns` (Unix ns; 0 for
/// traces on absolute time): every poll with `lo_ns <= t_ns <= hi_ns` (Unix ns), one `C` event
/// per DP rank that answered, then one `process_name` per track.
pub(crate) fn counter_events(
    path: &Path,
    base_ns: i64,
    lo_ns: i64,
    hi_ns: i64,
) -> anyhow::Result<Vec<Value>> {
    let polls = timeline::read_polls(path, lo_ns, hi_ns)?;
    let urls: BTreeSet<&str> = polls
        .iter()
        .flat_map(|p| p.workers.iter().map(|w| w.url.as_str()))
        .collect();
    let several = urls.len() > 1;
    let mut out = Vec::new();
    let mut tracks: Vec<String> = Vec::new();
    for p in &polls {
        let ts = (p.t_ns - base_ns) as f64 / 1e3;
        for (label, r) in p.labelled(several) {
            let pid = format!("{PID_PREFIX} {label}");
            let mut args = Map::new();
            for m in COUNTER_ARGS {
                if let Some(v) = r.get(m) {
                    args.insert(m.name().into(), json!(v));
                }
            }
            if !tracks.contains(&pid) {
                tracks.push(pid.clone());
            }
            out.push(
                json!({"name": "load", "ph": "C", "ts": (ts * 1e3).round() / 1e3,
                            "pid": pid, "tid": 0, "args": args}),
            );
        }
    }
    for (i, pid) in tracks.iter().enumerate() {
        let file = path.file_name().map(|n| n.to_string_lossy().into_owned());
        out.push(json!({"name": "process_name", "ph": "M", "pid": pid, "tid": 0,
                        "args": {"name": format!("{pid} load (rankprof watch{})",
                                                 file.map(|f| format!(", {f}")).unwrap_or_default())}}));
        out.push(
            json!({"name": "process_sort_index", "ph": "M", "pid": pid, "tid": 0,
                        "args": {"sort_index": -1000 + i as i64}}),
        );
    }
    Ok(out)
}

/// What [`for_merge`] adds to a merged trace.
#[derive(Debug, Default)]
pub(crate) struct LoadCounters {
    /// The events, comma-separated JSON objects (no leading or trailing comma); empty when none.
    pub(crate) json: Vec<u8>,
    /// Events in `json` (counters and metadata).
    pub(crate) events: u64,
    /// Counter events alone.
    pub(crate) counters: u64,
    pub(crate) notes: Vec<String>,
}

/// The load counters of every timeline in `dir` for a merged trace with clock base `base_ns`
/// (`None`: absolute time) spanning `span` (output `ts`, ns). Nothing when there is no timeline
/// or no poll inside the span.
pub(crate) fn for_merge(
    dir: &Path,
    base_ns: Option<i64>,
    span: Option<(i64, i64)>,
) -> LoadCounters {
    let mut out = LoadCounters::default();
    let Some((lo, hi)) = span else {
        return out;
    };
    let base = base_ns.unwrap_or(0);
    for path in timeline::beside(dir) {
        let name = path.display();
        match counter_events(
            &path,
            base,
            base.saturating_add(lo),
            base.saturating_add(hi),
        ) {
            Ok(events) if events.is_empty() => {}
            Ok(events) => {
                let counters = events.iter().filter(|e| e["ph"] == "C").count() as u64;
                for e in &events {
                    if !out.json.is_empty() {
                        out.json.extend_from_slice(b",\n");
                    }
                    out.json.extend_from_slice(e.to_string().as_bytes());
                }
                out.events += events.len() as u64;
                out.counters += counters;
                let tracks = (events.len() as u64 - counters) / 2;
                out.notes.push(format!(
                    "load counters from {name}: {counters} samples on {tracks} tracks"
                ));
            }
            Err(e) => out
                .notes
                .push(format!("cannot read the load timeline {name}: {e:#}")),
        }
    }
    out
}

/// `DP01 had 3.0× the waiting requests of DP00 (24 vs 8)`, or `… 24 waiting requests, DP00 0`.
fn comparison(m: Metric, hi: &str, hv: f64, lo: &str, lv: f64) -> String {
    if lv > 0.0 {
        format!(
            "{hi} had {:.1}× the {} of {lo} ({} vs {})",
            hv / lv,
            noun(m),
            shown(m, hv),
            shown(m, lv)
        )
    } else {
        format!(
            "{hi} had {} {}, {lo} {}",
            shown(m, hv),
            noun(m),
            shown(m, lv)
        )
    }
}

fn noun(m: Metric) -> &'static str {
    match m {
        Metric::Running => "running requests",
        Metric::Waiting => "waiting requests",
        Metric::Tokens => "KV-cache tokens",
        Metric::TokenUsage => "token usage",
        Metric::Throughput => "throughput",
    }
}

fn shown(m: Metric, v: f64) -> String {
    match m {
        Metric::TokenUsage => format!("{:.0} %", 100.0 * v),
        _ if v.fract() == 0.0 => format!("{v:.0}"),
        _ => format!("{v:.1}"),
    }
}

/// The poll nearest `t_ns` (at most [`ONSET_MAX_GAP_NS`] away) in the timelines of `dirs`.
fn nearest(dirs: &[PathBuf], t_ns: i64) -> Option<(PathBuf, PollRecord)> {
    let mut seen = BTreeSet::new();
    let mut best: Option<(PathBuf, PollRecord)> = None;
    for dir in dirs {
        for path in timeline::beside(dir) {
            if !seen.insert(path.clone()) {
                continue;
            }
            let lo = t_ns.saturating_sub(ONSET_MAX_GAP_NS);
            let hi = t_ns.saturating_add(ONSET_MAX_GAP_NS);
            let Ok(polls) = timeline::read_polls(&path, lo, hi) else {
                continue;
            };
            for p in polls {
                let better = best
                    .as_ref()
                    .is_none_or(|(_, b)| (p.t_ns - t_ns).abs() < (b.t_ns - t_ns).abs());
                if better && p.labelled(false).count() >= 2 {
                    best = Some((path.clone(), p));
                }
            }
        }
    }
    best
}

/// One sentence on the load at the onset: the analysis found rank `rank` slower from step
/// `step` (which began at Unix time `onset_ns`, `t_ms` after the first step). `None` when no
/// timeline beside the traces has a poll within 10 s of it.
pub(crate) fn onset_note(
    dirs: &[PathBuf],
    onset_ns: i64,
    step: &str,
    t_ms: f64,
    rank: &RankId,
) -> Option<String> {
    let (path, poll) = nearest(dirs, onset_ns)?;
    let urls: BTreeSet<&str> = poll.workers.iter().map(|w| w.url.as_str()).collect();
    let several = urls.len() > 1;
    let ranks: Vec<(String, &RankLoad)> = poll.labelled(several).collect();
    // The metric that differs most between ranks, waiting first.
    let metric = [
        Metric::Waiting,
        Metric::Running,
        Metric::TokenUsage,
        Metric::Tokens,
    ]
    .into_iter()
    .find(|&m| {
        let v: Vec<f64> = ranks.iter().filter_map(|(_, r)| r.get(m)).collect();
        v.len() >= 2 && v.iter().any(|&x| x != v[0])
    })?;
    let value = |r: &RankLoad| r.get(metric);
    // The onset rank's own DP replica when the timeline has it, else the busiest rank.
    let dp = rank.dp;
    let own = (!several)
        .then_some(dp)
        .flatten()
        .and_then(|d| ranks.iter().find(|(_, r)| r.dp == d && value(r).is_some()));
    let hi = own.or_else(|| {
        ranks
            .iter()
            .filter(|(_, r)| value(r).is_some())
            .max_by(|a, b| {
                value(a.1)
                    .unwrap_or(0.0)
                    .total_cmp(&value(b.1).unwrap_or(0.0))
            })
    })?;
    let lo = ranks
        .iter()
        .filter(|(l, r)| *l != hi.0 && value(r).is_some())
        .min_by(|a, b| {
            value(a.1)
                .unwrap_or(0.0)
                .total_cmp(&value(b.1).unwrap_or(0.0))
        })?;
    let (hv, lv) = (value(hi.1)?, value(lo.1)?);
    let mut others = Vec::new();
    for m in [Metric::Waiting, Metric::Running, Metric::TokenUsage] {
        if m == metric {
            continue;
        }
        if let (Some(a), Some(b)) = (hi.1.get(m), lo.1.get(m)) {
            others.push(format!("{} {} vs {}", noun(m), shown(m, a), shown(m, b)));
        }
    }
    let gap_s = (poll.t_ns - onset_ns) as f64 / 1e9;
    let when = if gap_s <= 0.0 {
        format!("{:.1} s before", -gap_s)
    } else {
        format!("{gap_s:.1} s after")
    };
    let file = path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    Some(format!(
        "load at the onset (step {step}, t = {t_ms:.1} ms, {}; poll {} of {file}, {when}): {}{}",
        timeline::utc(onset_ns),
        poll.seq,
        comparison(metric, &hi.0, hv, &lo.0, lv),
        if others.is_empty() {
            String::new()
        } else {
            format!("; {}", others.join(", "))
        }
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::timeline::Writer;

    fn tp_dp(tp: u32, dp: Option<u32>) -> RankId {
        RankId {
            tp: Some(tp),
            dp,
            ..Default::default()
        }
    }

    fn poll_line(seq: u64, t_ns: i64, waiting: [u32; 2]) -> String {
        format!(
            r#"{{"kind":"poll","seq":{seq},"t_ns":{t_ns},"workers":[{{"url":"http://h:1","status":"ok","source":"/v1/loads","ms":1,"ranks":[{{"dp":0,"running":4,"waiting":{},"token_usage":0.5}},{{"dp":1,"running":4,"waiting":{},"token_usage":0.25}}]}},{{"url":"http://h:2","status":"dead","ms":0,"error":"refused"}}]}}"#,
            waiting[0], waiting[1]
        )
    }

    fn timeline(dir: &Path, t0: i64) -> PathBuf {
        let p = timeline::default_path(dir, t0);
        let mut w = Writer::create(&p).unwrap();
        w.line(r#"{"kind":"watch","version":1}"#).unwrap();
        for i in 0..10 {
            let waiting = if i < 5 { [2, 2] } else { [2, 24] };
            w.line(&poll_line(i, t0 + i as i64 * 1_000_000_000, waiting))
                .unwrap();
        }
        p
    }

    #[test]
    fn counters_inside_the_span_on_the_trace_clock() {
        let dir = tempfile::tempdir().unwrap();
        let t0 = 1_795_213_185_000_000_000i64;
        let p = timeline(dir.path(), t0);
        let base = t0 - 500_000_000;
        // polls 2..=6 fall in [base + 2.5 s, base + 6.5 s]
        let ev = counter_events(&p, base, base + 2_500_000_000, base + 6_500_000_000).unwrap();
        let c: Vec<&Value> = ev.iter().filter(|e| e["ph"] == "C").collect();
        // the dead worker has no track; two DP ranks of the one that answered
        assert_eq!(c.len(), 5 * 2);
        assert_eq!(c[0]["pid"], "[watch] h:1 DP00");
        assert_eq!(c[0]["ts"], 2_500_000.0);
        assert_eq!(
            c[0]["args"],
            json!({"running": 4.0, "waiting": 2.0, "token_usage": 0.5})
        );
        let meta: Vec<&Value> = ev.iter().filter(|e| e["ph"] == "M").collect();
        assert_eq!(meta.len(), 4);
        let lc = for_merge(dir.path(), Some(base), Some((2_500_000_000, 6_500_000_000)));
        assert_eq!((lc.counters, lc.events), (10, 14));
        let text = format!("[{}]", String::from_utf8(lc.json).unwrap());
        assert_eq!(serde_json::from_str::<Vec<Value>>(&text).unwrap().len(), 14);
        assert!(for_merge(dir.path(), Some(base), None).json.is_empty());
        assert!(for_merge(dir.path(), Some(0), Some((0, 1000)))
            .json
            .is_empty());
    }

    #[test]
    fn onset_note_names_the_replica_and_the_ratio() {
        let dir = tempfile::tempdir().unwrap();
        let t0 = 1_795_213_185_000_000_000i64;
        timeline(dir.path(), t0);
        let dirs = vec![dir.path().to_path_buf()];
        let n = onset_note(&dirs, t0 + 6_200_000_000, "6", 6200.0, &tp_dp(0, Some(1))).unwrap();
        assert!(
            n.contains("h:1 DP01 had 12.0× the waiting requests of h:1 DP00 (24 vs 2)"),
            "{n}"
        );
        assert!(
            n.contains("poll 6 of watch-") && n.contains("0.2 s before"),
            "{n}"
        );
        assert!(n.contains("token usage 25 % vs 50 %"), "{n}");
        // balanced at that time: the figures that differ are named
        let n = onset_note(&dirs, t0 + 1_000_000_000, "1", 1000.0, &tp_dp(0, None)).unwrap();
        assert!(n.contains("token usage"), "{n}");
        // far from every poll
        assert!(onset_note(&dirs, t0 + 60_000_000_000, "9", 0.0, &tp_dp(0, None)).is_none());
    }
}
