//! Which per-step samples a row of the comparison is tested on: a [`Key`] names the metric, and
//! [`lookup`] finds its samples in any summary (the baseline, another baseline, the current
//! side). A summary without samples (an older file, or no steps) gives `None`, and the row falls
//! back to the fixed threshold.

use crate::analyze::summary::{StepSamples, Summary};

/// A gated metric that has per-step samples.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Key {
    /// The job's busy time per step (slowest rank).
    Busy,
    /// The job's work per step (slowest rank).
    Work,
    /// A rank's work per step, by its label on this side.
    RankWork(String),
    /// A class's time per step, summed over ranks.
    Class(String),
    /// A class's time per step on one rank (label on this side).
    RankClass(String, String),
}

/// The per-step samples one side holds for a row (rank labels for the side asked).
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Samples {
    /// One list per baseline capture (one, or several with `--baseline a b c`).
    pub(crate) base: Vec<Vec<i64>>,
    pub(crate) cur: Vec<i64>,
}

impl Samples {
    /// Every baseline step, pooled.
    pub(crate) fn pooled(&self) -> Vec<i64> {
        self.base.iter().flatten().copied().collect()
    }
}

fn class_of(s: &StepSamples, class: &str) -> Vec<i64> {
    // A class with no time in any step is left out of the file: all zeros.
    s.class_ns
        .get(class)
        .cloned()
        .unwrap_or_else(|| vec![0; s.work_ns.len()])
}

/// The samples of `key` in `s`: `None` when the summary keeps none for it.
pub(crate) fn lookup(s: &Summary, key: &Key) -> Option<Vec<i64>> {
    let rank = |label: &str| {
        s.ranks
            .iter()
            .find(|r| r.figures.rank == label)
            .and_then(|r| r.steps.samples.as_ref())
    };
    let overall = s.overall.steps.samples.as_ref();
    let v = match key {
        Key::Busy => overall?.busy_ns.clone(),
        Key::Work => overall?.work_ns.clone(),
        Key::RankWork(r) => rank(r)?.work_ns.clone(),
        Key::Class(c) => class_of(overall?, c),
        Key::RankClass(r, c) => class_of(rank(r)?, c),
    };
    (!v.is_empty()).then_some(v)
}
