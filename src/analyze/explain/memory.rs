//! Memory across ranks (#53): each rank's memory rows ([`crate::analyze::collect::memory`])
//! in one list, and the verdict's memory line when one rank's peak stands above the median
//! rank's of its device by more than the threshold.
//!
//! The median, not the mean of the others: with few ranks one large peak would pull the mean
//! up and hide itself; the median rank is what a rank "should" hold.
//!
//! A leak: a rank whose allocated memory at the steps' ends grows by a least-squares slope
//! ([`MemoryRow::growth_bytes_per_step`]) of at least [`LEAK_MIN_BYTES`] per step and more than
//! [`LEAK_T`] standard errors of that slope (the step-to-step noise); with fewer than
//! [`GROWTH_MIN_STEPS`] steps no rank is judged, and the line says so.

use serde::{Deserialize, Serialize};

use crate::analyze::collect::memory::{MemoryRow, GROWTH_MIN_STEPS};
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

/// The verdict's memory lines: for each kind of device (`cpu`, `cuda`, …) seen on two ranks
/// or more, the rank with the largest peak when it exceeds the median rank's by more than
/// `threshold` (a fraction); then the leaks.
pub(crate) fn lines(rows: &[MemoryRank], threshold: f64) -> Vec<String> {
    let mut kinds: Vec<&str> = rows.iter().map(|r| kind(&r.row.device)).collect();
    kinds.sort_unstable();
    kinds.dedup();
    oom_line(rows)
        .into_iter()
        .chain(
            kinds
                .into_iter()
                .filter_map(|k| device_line(rows, k, threshold)),
        )
        .chain(leak_line(rows))
        .collect()
}

/// The kind of a device: `cuda` of `cuda:3` (each GPU rank has its own index).
fn kind(device: &str) -> &str {
    device.split(':').next().unwrap_or(device)
}

/// The smallest growth per step called a leak (1 MiB): below it, caches and fragments.
pub(crate) const LEAK_MIN_BYTES: i64 = 1 << 20;
/// How many standard errors above zero a growth must be to be called a leak.
pub(crate) const LEAK_T: f64 = 4.0;

/// Whether a row's growth is a leak: large enough, and clear of its own noise.
fn leaks(r: &MemoryRow) -> bool {
    match (r.growth_bytes_per_step, r.growth_stderr_bytes_per_step) {
        (Some(b), Some(se)) => b >= LEAK_MIN_BYTES && b as f64 > LEAK_T * se as f64,
        _ => false,
    }
}

/// The ranks whose memory grows step over step; or, where no rank has enough steps to fit a
/// growth, that no leak can be judged.
fn leak_line(rows: &[MemoryRank]) -> Option<String> {
    if rows.is_empty() {
        return None;
    }
    if rows.iter().all(|r| r.row.growth_bytes_per_step.is_none()) {
        let most = rows.iter().map(|r| r.row.growth_steps).max().unwrap_or(0);
        return Some(format!(
            "Memory: {most} step(s) with memory events per rank at most: too few to judge a leak \
             ({GROWTH_MIN_STEPS} or more needed)."
        ));
    }
    let hit: Vec<String> = rows
        .iter()
        .filter(|r| leaks(&r.row))
        .map(|r| {
            let b = r.row.growth_bytes_per_step.unwrap_or(0) as f64;
            let se = r.row.growth_stderr_bytes_per_step.unwrap_or(0) as f64;
            format!(
                "rank {} +{} per step on {} (± {}, over {} steps)",
                r.rank,
                bytes(b),
                r.row.device,
                bytes(se),
                r.row.growth_steps
            )
        })
        .collect();
    (!hit.is_empty()).then(|| {
        format!(
            "Memory: allocated memory at the steps' ends grows step over step (a leak) on {}.",
            hit.join("; ")
        )
    })
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

/// The line for one kind of device, when its largest peak is above the median by more than
/// the threshold.
fn device_line(rows: &[MemoryRank], device_kind: &str, threshold: f64) -> Option<String> {
    let on: Vec<&MemoryRank> = rows
        .iter()
        .filter(|r| kind(&r.row.device) == device_kind)
        .collect();
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
    let what = top
        .row
        .peak_op
        .as_deref()
        .map_or_else(String::new, |o| format!(" in {o}"));
    let pct = if mid > 0.0 {
        format!(", +{:.0} %", 100.0 * excess / mid)
    } else {
        String::new()
    };
    Some(format!(
        "Memory: rank {} peaks {} above the median rank on {} ({} vs {}{pct}){when}{what}.",
        top.rank,
        bytes(excess),
        top.row.device,
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
                peak_ts_ns: Ns::new(0),
                peak_step: Some(3),
                peak_op: Some("aten::mm".into()),
                baseline_bytes: 0,
                growth_bytes_per_step: Some(0),
                growth_stderr_bytes_per_step: Some(0),
                growth_steps: 4,
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
            ["Memory: rank 2 peaks 2.00 GiB above the median rank on cuda:0 (12.00 GiB vs 10.00 GiB, +20 %), reached in step 3 in aten::mm."]
        );
        assert!(lines(&rows, 0.25).is_empty());
        assert!(lines(&rows[..1], 0.0).is_empty());
    }

    #[test]
    fn a_growth_clear_of_its_noise_is_a_leak_and_few_steps_are_said() {
        const M: i64 = 1 << 20;
        let mut leaky = row("1", 100);
        leaky.row.growth_bytes_per_step = Some(64 * M);
        leaky.row.growth_stderr_bytes_per_step = Some(M);
        let mut noisy = row("2", 100);
        noisy.row.growth_bytes_per_step = Some(2 * M);
        noisy.row.growth_stderr_bytes_per_step = Some(M);
        let rows = [row("0", 100), leaky, noisy];
        assert_eq!(
            lines(&rows, 0.10),
            ["Memory: allocated memory at the steps' ends grows step over step (a leak) on rank 1 +64.0 MiB per step on cuda:0 (± 1.0 MiB, over 4 steps)."]
        );
        let mut few = [row("0", 100), row("1", 100)];
        for r in &mut few {
            (r.row.growth_bytes_per_step, r.row.growth_steps) = (None, 2);
        }
        assert_eq!(
            lines(&few, 0.10),
            ["Memory: 2 step(s) with memory events per rank at most: too few to judge a leak (3 or more needed)."]
        );
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
