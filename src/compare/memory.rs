//! Memory in `compare` (#53): each rank's peak allocated bytes per device, as the saved
//! summaries carry them ([`crate::analyze::summary::MemoryPeak`]), matched by rank label and
//! device; a peak that grew by more than `--max-regression` fails the gate (`super::gate`).

use serde::Serialize;

use crate::analyze::summary::{MemoryPeak, Summary};

/// One rank's peak on one device, on both sides.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MemoryChange {
    pub rank: String,
    pub device: String,
    pub baseline_peak_allocated_bytes: i64,
    pub current_peak_allocated_bytes: i64,
    /// `None` when the baseline is 0.
    pub change_pct: Option<f64>,
    pub fails: bool,
}

/// The rows: every (rank, device) peak both sides have, in the baseline's order.
pub(crate) fn rows(base: &Summary, cur: &Summary) -> Vec<MemoryChange> {
    let (Some(b), Some(c)) = (&base.memory, &cur.memory) else {
        return Vec::new();
    };
    b.iter()
        .filter_map(|pb| {
            let pc = c
                .iter()
                .find(|pc| pc.rank == pb.rank && pc.device == pb.device)?;
            Some(change(pb, pc))
        })
        .collect()
}

fn change(b: &MemoryPeak, c: &MemoryPeak) -> MemoryChange {
    let (bb, cb) = (b.peak_allocated_bytes, c.peak_allocated_bytes);
    MemoryChange {
        rank: b.rank.clone(),
        device: b.device.clone(),
        baseline_peak_allocated_bytes: bb,
        current_peak_allocated_bytes: cb,
        change_pct: (bb > 0).then(|| 100.0 * (cb - bb) as f64 / bb as f64),
        fails: false,
    }
}
