//! Memory snapshots across ranks (#53): each snapshot's devices given to a rank, and the
//! verdict's snapshot line.
//!
//! A snapshot belongs to the rank whose trace file has the rank its name gives (SGLang's
//! `…-TP-1[-DP-0…]-memory.pickle` → `TP-1…`), else to the rank whose trace file's stem begins
//! its stem (`rank3.pt.trace.json.gz` and `rank3-memory.pickle`); else it is its own rank,
//! named by its stem.

use serde::{Deserialize, Serialize};

use crate::analyze::collect::snapshot::SnapshotFile;
use crate::analyze::explain::memory::bytes;
use crate::analyze::stats::median;
use crate::trace::snapshot::SnapshotDevice;
use crate::trace::RankId;

/// One device of one rank's snapshot.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SnapshotRank {
    pub rank: String,
    /// The snapshot file's name.
    pub file: String,
    /// Why reading the file stopped early, with the byte offset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub damage: Option<String>,
    #[serde(flatten)]
    pub device: SnapshotDevice,
}

/// A rank trace file: its rank, path and the labels of the ranks read from it.
pub(crate) struct TraceFile<'a> {
    pub id: &'a RankId,
    pub path: &'a str,
    pub labels: &'a [String],
}

/// The stem of a trace file's name (before `.pt.trace.json`, `.trace.json`, `.json`).
fn trace_stem(path: &str) -> &str {
    let name = path.rsplit('/').next().unwrap_or(path);
    [
        ".pt.trace.json",
        ".trace.json",
        ".json",
        ".sqlite",
        ".nsys-rep",
    ]
    .iter()
    .find_map(|x| name.find(x).map(|i| &name[..i]))
    .unwrap_or(name)
}

/// The rank label of snapshot `s` among `files`.
fn rank_of(s: &SnapshotFile, files: &[TraceFile<'_>]) -> String {
    let by_id =
        s.id.as_ref()
            .filter(|id| **id != RankId::default())
            .and_then(|id| files.iter().find(|f| f.id == id && !f.labels.is_empty()));
    let by_stem = || {
        files
            .iter()
            .filter(|f| !f.labels.is_empty())
            .filter(|f| {
                let t = trace_stem(f.path);
                !t.is_empty()
                    && s.stem.starts_with(t)
                    && s.stem[t.len()..]
                        .chars()
                        .next()
                        .is_none_or(|c| matches!(c, '-' | '_' | '.'))
            })
            .max_by_key(|f| trace_stem(f.path).len())
    };
    by_id
        .or_else(by_stem)
        .and_then(|f| f.labels.first().cloned())
        .unwrap_or_else(|| s.stem.clone())
}

/// Every snapshot's devices, by rank, and the notes on the files (unreadable, damaged).
pub(crate) fn attach(
    snaps: &[SnapshotFile],
    files: &[TraceFile<'_>],
) -> (Vec<SnapshotRank>, Vec<String>) {
    let mut rows = Vec::new();
    let mut notes = Vec::new();
    for s in snaps {
        let file = s.path.rsplit('/').next().unwrap_or(&s.path).to_string();
        let Some(read) = &s.read else {
            let why = s.error.as_deref().unwrap_or("unreadable");
            notes.push(format!("memory snapshot {file} cannot be read: {why}"));
            continue;
        };
        if let Some(d) = &read.damage {
            notes.push(format!(
                "memory snapshot {file}: {d}; its figures cover what came before"
            ));
        }
        let rank = rank_of(s, files);
        rows.extend(read.devices.iter().map(|d| SnapshotRank {
            rank: rank.clone(),
            file: file.clone(),
            damage: read.damage.clone(),
            device: d.clone(),
        }));
    }
    (rows, notes)
}

/// The figure a rank is compared on: its trace's peak, else what was allocated at the
/// snapshot.
fn figure(r: &SnapshotRank) -> i64 {
    r.device
        .peak_allocated_bytes
        .unwrap_or(r.device.allocated_bytes)
}

/// The verdict's snapshot line: the rank with the largest peak when it stands above the
/// median rank's by more than `threshold` (a fraction), or the one rank's peak when there is
/// one; with the top user frame of what was live there.
pub(crate) fn lines(rows: &[SnapshotRank], threshold: f64) -> Vec<String> {
    let Some(top) = rows.iter().max_by_key(|r| figure(r)) else {
        return Vec::new();
    };
    let what = top.device.top_frames.first().map_or_else(String::new, |f| {
        format!(
            "; the largest group {} is {} ({} in {})",
            if top.device.top_frames_at == "peak" {
                "live at the peak"
            } else {
                "allocated at the snapshot"
            },
            f.frame,
            bytes(f.bytes as f64),
            crate::analyze::explain::measure::count(f.count, "allocation")
        )
    });
    let kind = if top.device.peak_allocated_bytes.is_some() {
        "peaks at"
    } else {
        "holds"
    };
    if rows.len() < 2 {
        return vec![format!(
            "Memory (snapshot): rank {} {kind} {} on {}{what}.",
            top.rank,
            bytes(figure(top) as f64),
            top.device.device
        )];
    }
    let mid = median(&rows.iter().map(|r| figure(r) as f64).collect::<Vec<_>>());
    let excess = figure(top) as f64 - mid;
    if excess <= 0.0 || excess <= threshold * mid {
        return Vec::new();
    }
    vec![format!(
        "Memory (snapshot): rank {} {kind} {} on {}, {} above the median rank ({}){what}.",
        top.rank,
        bytes(figure(top) as f64),
        top.device.device,
        bytes(excess),
        bytes(mid)
    )]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trace_stems() {
        assert_eq!(trace_stem("/d/17-TP-0.trace.json.gz"), "17-TP-0");
        assert_eq!(trace_stem("rank3.1795.pt.trace.json.gz"), "rank3.1795");
    }
}
