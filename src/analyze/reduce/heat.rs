//! Heatmaps as figures: a grid of values per rank with each cell's relative deviation from
//! its peers, computed here so that renderers (the HTML report) only draw them.
//!
//! - [`classes`]: rank × kernel class, summed time; deviation from the class' mean over ranks.
//! - [`steps()`]: rank × step, work per step (consecutive steps averaged into at most
//!   [`MAX_STEP_COLUMNS`] buckets); deviation as the step table measures it, against the
//!   rank's own peers (its DP replica).

use super::kernels::ClassTable;
use super::steps::{self, StepRow, StepTable};
use crate::trace::Ns;

/// Step buckets a step heatmap has at most.
pub(crate) const MAX_STEP_COLUMNS: usize = 240;

/// A rank × column grid.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Heatmap {
    pub(crate) rows: Vec<String>,
    pub(crate) cols: Vec<String>,
    /// Milliseconds, `[row][col]`.
    pub(crate) ms: Vec<Vec<f64>>,
    /// Relative deviation from the peers (0 = at the mean, +0.1 = 10 % above), `[row][col]`.
    pub(crate) dev: Vec<Vec<f64>>,
}

/// Rank × class (classes with time on some rank only).
pub(crate) fn classes(c: &ClassTable) -> Heatmap {
    let keep: Vec<usize> = (0..c.classes.len())
        .filter(|&k| c.ns.iter().any(|r| r.get(k).copied().unwrap_or(0) > 0))
        .collect();
    let cols: Vec<String> = keep.iter().map(|&k| c.classes[k].clone()).collect();
    let mean: Vec<f64> = keep
        .iter()
        .map(|&k| c.ns.iter().map(|r| r[k] as f64).sum::<f64>() / c.ns.len().max(1) as f64)
        .collect();
    let ms =
        c.ns.iter()
            .map(|r| keep.iter().map(|&k| r[k] as f64 / 1e6).collect())
            .collect();
    let dev =
        c.ns.iter()
            .map(|r| {
                keep.iter()
                    .zip(&mean)
                    .map(|(&k, &m)| if m > 0.0 { r[k] as f64 / m - 1.0 } else { 0.0 })
                    .collect()
            })
            .collect();
    Heatmap {
        rows: c.ranks.clone(),
        cols,
        ms,
        dev,
    }
}

/// Rank × step (work per step, mean over each bucket of consecutive steps).
pub(crate) fn steps(st: &StepTable) -> Heatmap {
    let n = st.rows.len();
    let per = n.div_ceil(MAX_STEP_COLUMNS).max(1);
    let buckets: Vec<&[StepRow]> = st.rows.chunks(per).collect();
    let cols = buckets
        .iter()
        .map(|b| {
            if b.len() == 1 {
                b[0].step.clone()
            } else {
                format!("{}-{}", b[0].step, b[b.len() - 1].step)
            }
        })
        .collect();
    let ranks = st.ranks.len();
    let peers = if st.peers.len() == ranks {
        st.peers.clone()
    } else {
        steps::peers(&[], ranks, true)
    };
    let mut ms = vec![Vec::new(); ranks];
    let mut dev = vec![Vec::new(); ranks];
    for b in &buckets {
        let sums: Vec<Ns> = (0..ranks)
            .map(|r| b.iter().map(|s| s.work_ns[r]).sum())
            .collect();
        for r in 0..ranks {
            ms[r].push(sums[r].as_ms() / b.len() as f64);
            dev[r].push(steps::excess_among(&sums, r, &peers[r]));
        }
    }
    Heatmap {
        rows: st.ranks.clone(),
        cols,
        ms,
        dev,
    }
}
