//! Which per-step samples a row of the comparison is tested on: a [`Key`] names the metric, and
//! [`lookup`] finds its samples in any summary (the baseline, another baseline, the current
//! side). A summary without samples (an older file, or no steps) gives `None`, and the row falls
//! back to the fixed threshold.
//!
//! **A rank's rows are measured against its peers.** A capture's conditions (the machine's
//! speed, thread placement) move every rank together: on four real A/A captures of one TP4
//! workload each rank's `norm` per step moved ±15 % from capture to capture, while each rank's
//! `norm` over its peers' in the same step stayed within 0.975–1.036. So a rank's work and a
//! rank's class are tested on that per-step ratio ([`lookup_vs_peers`], in parts per million):
//! what is the rank's own, not the machine's. A change every rank shares is the job's, and is
//! tested once on the job's rows ([`Key::Work`], [`Key::Class`]). A rank's
//! communication stays in times: it is mostly waiting for the others, and over its peers' it
//! swings with theirs. Without peers (one rank, steps
//! that do not line up, a peer median of 0 in some step) both sides fall back to the times.

use crate::analyze::classes::COMM;
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
    /// The samples are a rank's per-step ratio over its peers ([`lookup_vs_peers`]), not times.
    pub(crate) vs_peers: bool,
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

/// The most peers a rank's ratio takes its step medians over (the first ones, in the
/// summary's order): at 1,024 ranks, every rank's rows over all the others would be ~10⁹
/// samples' work; 64 peers give a step's level as well.
const MAX_PEERS: usize = 64;

/// One part in a million: the unit of [`lookup_vs_peers`]' ratios.
const PPM: i128 = 1_000_000;

/// A rank key's samples as the rank's per-step ratio over the median of the other ranks'
/// samples of the same metric in the same step, in parts per million. `None` for a job key,
/// with fewer than two ranks, when a rank's steps do not line up with the others' (different
/// counts), or when the peers' median is 0 in some step.
pub(crate) fn lookup_vs_peers(s: &Summary, key: &Key) -> Option<Vec<i64>> {
    let label = rank_of(key)?;
    if matches!(key, Key::RankClass(_, c) if c == COMM) {
        // A rank's collective time is mostly waiting for the others: over its peers' it swings
        // with theirs (on the A/A captures, +156 % one way, −49 % the other); it stays in times,
        // where the gate groups who waits for whom.
        return None;
    }
    let own = lookup(s, key)?;
    let peers: Vec<Vec<i64>> = s
        .ranks
        .iter()
        .filter(|r| r.figures.rank != label)
        .take(MAX_PEERS)
        .map(|r| {
            let st = r.steps.samples.as_ref()?;
            Some(match key {
                Key::RankClass(_, c) => class_of(st, c),
                _ => st.work_ns.clone(),
            })
        })
        .collect::<Option<_>>()?;
    if peers.is_empty() || peers.iter().any(|p| p.len() != own.len()) {
        return None;
    }
    ratios(&own, &peers)
}

/// The rank a key is about (`None`: the job's).
fn rank_of(key: &Key) -> Option<&str> {
    match key {
        Key::RankWork(r) | Key::RankClass(r, _) => Some(r),
        Key::Busy | Key::Work | Key::Class(_) => None,
    }
}

/// `own[k]` over the median of `peers[·][k]`, in ppm, step by step; `None` when a median is 0.
fn ratios(own: &[i64], peers: &[Vec<i64>]) -> Option<Vec<i64>> {
    let mut step: Vec<i64> = Vec::with_capacity(peers.len());
    own.iter()
        .enumerate()
        .map(|(k, &v)| {
            step.clear();
            step.extend(peers.iter().map(|p| p[k]));
            let m = super::stats::median(&mut step);
            (m > 0).then(|| (i128::from(v) * PPM / i128::from(m)) as i64)
        })
        .collect()
}

/// The samples of a row on two sides (`b` for the baseline, `c` for the current): each rank's
/// ratio over its peers when both sides have them, else both sides' times.
pub(crate) fn pair(b: &Summary, kb: &Key, c: &Summary, kc: &Key) -> Option<Samples> {
    if let (Some(x), Some(y)) = (lookup_vs_peers(b, kb), lookup_vs_peers(c, kc)) {
        return Some(Samples {
            base: vec![x],
            cur: y,
            vs_peers: true,
        });
    }
    Some(Samples {
        base: vec![lookup(b, kb)?],
        cur: lookup(c, kc)?,
        vs_peers: false,
    })
}

/// A further baseline's samples of a row, on the row's basis.
pub(crate) fn lookup_as(s: &Summary, key: &Key, vs_peers: bool) -> Option<Vec<i64>> {
    if vs_peers {
        lookup_vs_peers(s, key)
    } else {
        lookup(s, key)
    }
}
