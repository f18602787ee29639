//! Memory across ranks (#53): each rank's memory rows ([`crate::analyze::collect::memory`])
//! in one list, and the verdict's memory line when one rank's peak stands above the median
//! rank's of its device by more than the threshold.
//!
//! The median, not the mean of the others: with few ranks one large peak would pull the mean
//! up and hide itself; the median rank is what a rank "should" hold.

use serde::{Deserialize, Serialize};

use crate::analyze::collect::memory::MemoryRow;
use crate::analyze::collect::rank::RankResult;
use crate::analyze::stats::median;

/// One rank's memory on one device.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct MemoryRank {
    pub rank: String,
    #[serde(flatten)]
    pub row: MemoryRow,
}

/// Every rank's memory rows, in rank order (empty when no trace has a memory event).
pub(crate) fn ranks(results: &[RankResult]) -> Vec<MemoryRank> {
    results
        .iter()
        .flat_map(|r| {
            r.memory.iter().map(|row| MemoryRank {
                rank: r.label.clone(),
                row: row.clone(),
            })
        })
        .collect()
}

/// The verdict's memory lines: for each device seen on two ranks or more, the rank with the
/// largest peak when it exceeds the median rank's by more than `threshold` (a fraction).
pub(crate) fn lines(rows: &[MemoryRank], threshold: f64) -> Vec<String> {
    let mut devices: Vec<&str> = rows.iter().map(|r| r.row.device.as_str()).collect();
    devices.sort_unstable();
    devices.dedup();
    oom_line(rows)
        .into_iter()
        .chain(
            devices
                .into_iter()
                .filter_map(|d| device_line(rows, d, threshold)),
        )
        .collect()
}

/// The ranks that failed an allocation (`[OutOfMemory]` events), first: whatever else the
/// profile says, the job ran out of memory there.
fn oom_line(rows: &[MemoryRank]) -> Option<String> {
    let hit: Vec<String> = rows
        .iter()
        .filter(|r| r.row.oom_events > 0)
        .map(|r| format!("{} ({} on {})", r.rank, r.row.oom_events, r.row.device))
        .collect();
    (!hit.is_empty()).then(|| {
        format!(
            "Memory: out of memory (failed allocations, [OutOfMemory] events) on {}.",
            hit.join(", ")
        )
    })
}

/// The line for one device, when its largest peak is above the median by more than the
/// threshold.
fn device_line(rows: &[MemoryRank], device: &str, threshold: f64) -> Option<String> {
    let on: Vec<&MemoryRank> = rows.iter().filter(|r| r.row.device == device).collect();
    if on.len() < 2 {
        return None;
    }
    let peaks: Vec<f64> = on
        .iter()
        .map(|r| r.row.peak_allocated_bytes as f64)
        .collect();
    let mid = median(&peaks);
    let top = on
        .iter()
        .max_by_key(|r| r.row.peak_allocated_bytes)
        .copied()?;
    let excess = top.row.peak_allocated_bytes as f64 - mid;
    if excess <= 0.0 || excess <= threshold * mid {
        return None;
    }
    let when = top
        .row
        .peak_step
        .map_or_else(String::new, |s| format!(", reached in step {s}"));
    let pct = if mid > 0.0 {
        format!(", +{:.0} %", 100.0 * excess / mid)
    } else {
        String::new()
    };
    Some(format!(
        "Memory: rank {} peaks {} above the median rank on {device} ({} vs {}{pct}){when}.",
        top.rank,
        bytes(excess),
        bytes(top.row.peak_allocated_bytes as f64),
        bytes(mid),
    ))
}

/// A size in binary units: `64.0 MiB`, `1.50 GiB`.
pub(crate) fn bytes(b: f64) -> String {
    const MIB: f64 = 1024.0 * 1024.0;
    const GIB: f64 = 1024.0 * MIB;
    if b.abs() >= GIB {
        format!("{:.2} GiB", b / GIB)
    } else {
        format!("{:.1} MiB", b / MIB)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::Ns;

    fn row(rank: &str, peak: i64) -> MemoryRank {
        MemoryRank {
            rank: rank.into(),
            row: MemoryRow {
                device: "cuda:0".into(),
                peak_allocated_bytes: peak,
                peak_reserved_bytes: 0,
                peak_ts_ns: Ns(0),
                peak_step: Some(3),
                baseline_bytes: 0,
                oom_events: 0,
                memory_events: 1,
            },
        }
    }

    #[test]
    fn a_peak_over_the_median_by_more_than_the_threshold_is_named() {
        const G: i64 = 1 << 30;
        let rows = [row("0", 10 * G), row("1", 10 * G), row("2", 12 * G)];
        let l = lines(&rows, 0.10);
        assert_eq!(
            l,
            ["Memory: rank 2 peaks 2.00 GiB above the median rank on cuda:0 (12.00 GiB vs 10.00 GiB, +20 %), reached in step 3."]
        );
        assert!(lines(&rows, 0.25).is_empty());
        assert!(lines(&rows[..1], 0.0).is_empty());
    }

    #[test]
    fn failed_allocations_lead_the_memory_lines() {
        let mut r = row("RANK01", 100);
        r.row.oom_events = 2;
        let rows = [row("RANK00", 100), r];
        assert_eq!(
            lines(&rows, 0.10),
            ["Memory: out of memory (failed allocations, [OutOfMemory] events) on RANK01 (2 on cuda:0)."]
        );
    }
}
