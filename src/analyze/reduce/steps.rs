//! Steps across ranks: the per-step × rank table and the **onset** of an imbalance, from each
//! rank's step figures ([`StepFig`], cut by its step windows in
//! [`crate::analyze::collect::steps`]).
//!
//! Imbalance is judged on *work* (the union of a step's non-communication ops), not busy time:
//! in a synchronous job the fast ranks spend the slow rank's extra time waiting inside
//! collectives, so their busy time (waiting included) evens out while work does not.
//!
//! Steps are matched across ranks by `ProfilerStep` number when every rank has numbers, else
//! by position. The onset is the first step from which a rank stays above the mean of the
//! others by more than the threshold in every later step (at least two steps, or the only one).

use serde::{Deserialize, Serialize};

use crate::analyze::collect::steps::StepFig;
use crate::analyze::stats::{argmax, min_mean_max, spread};
use crate::trace::{Ns, RankId};

/// One step across ranks.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct StepRow {
    /// `ProfilerStep` number, else position.
    pub step: String,
    /// Start of the step on the earliest rank, from the first step's start, ms.
    pub t_ms: f64,
    pub name: String,
    pub busy_ns: Vec<Ns>,
    pub work_ns: Vec<Ns>,
    pub dur_ns: Vec<Ns>,
    /// Work relative to the mean of the other ranks, percent.
    pub excess_pct: Vec<f64>,
    /// Index of this step in each rank's own step list.
    #[serde(skip)]
    pub idx: Vec<usize>,
}

impl StepRow {
    /// Smallest, mean and largest work of the step over the ranks.
    pub fn work_min_mean_max(&self) -> (i64, i64, i64) {
        min_mean_max(&self.work_ns)
    }

    /// The most work over the mean work of the step.
    pub fn max_over_mean(&self) -> f64 {
        spread(&self.work_ns).0
    }

    /// The rank with the most work (its index), or `None` when every rank did the same.
    pub fn slowest(&self) -> Option<usize> {
        let i = argmax(&self.work_ns)?;
        (self.max_over_mean() > 1.0).then_some(i)
    }

    /// The excess of the rank with the most work (percent; 0 when there is none).
    pub fn slowest_excess_pct(&self) -> f64 {
        let i = argmax(&self.work_ns).unwrap_or(0);
        self.excess_pct.get(i).copied().unwrap_or(0.0)
    }
}

/// When a rank became slower.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Onset {
    pub rank: String,
    /// Who that rank is (not serialized: `rank` is its label).
    #[serde(skip)]
    pub rank_id: RankId,
    pub rank_index: usize,
    pub step: String,
    pub step_index: usize,
    /// Start of that step on that rank, from the first step's start, ms.
    pub t_ms: f64,
    /// Work from the onset on, relative to the others' mean, percent.
    pub excess_pct: f64,
    pub steps_after: usize,
}

impl Onset {
    pub fn sentence(&self) -> String {
        format!(
            "rank {} slower by {:.0} % from step {} (t = {:.1} ms) on",
            self.rank, self.excess_pct, self.step, self.t_ms
        )
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct StepTable {
    /// Which markers: `ProfilerStep`, `sglang step[...]`, `vllm execute_...`, `step-marker`,
    /// `none`.
    pub source: String,
    /// `gpu` or `cpu`: what busy/work are measured from.
    pub basis: String,
    pub ranks: Vec<String>,
    pub rows: Vec<StepRow>,
    pub onset: Option<Onset>,
    pub notes: Vec<String>,
    /// For each rank, the ranks it is compared with (see [`peers`]).
    #[serde(skip)]
    pub peers: Vec<Vec<usize>>,
}

/// Builds the cross-rank step table. `per_rank[r]` are rank r's steps in start order.
/// `worlds` groups rank indices that run the same steps (one per DP replica, see
/// [`super::collectives`]): a rank is compared with the others of its world, because DP
/// replicas run different batches and their steps differ by design. Empty: one world.
pub(crate) fn table(
    ranks: &[String],
    per_rank: &[&[StepFig]],
    worlds: &[Vec<usize>],
    source: &str,
    basis: &str,
    threshold: f64,
) -> StepTable {
    let mut t = StepTable {
        source: source.to_string(),
        basis: basis.to_string(),
        ranks: ranks.to_vec(),
        ..Default::default()
    };
    if per_rank.is_empty() || per_rank.iter().all(|s| s.is_empty()) {
        return t;
    }
    // Rows: (key, index per rank).
    let numbered = per_rank
        .iter()
        .all(|s| !s.is_empty() && s.iter().all(|f| f.number.is_some()));
    let peers = peers(worlds, ranks.len(), numbered);
    let mut rows: Vec<(String, Vec<usize>)> = Vec::new();
    if numbered {
        let mut nums: Vec<i64> = per_rank[0].iter().filter_map(|f| f.number).collect();
        nums.sort_unstable();
        nums.dedup();
        // Each rank's first step of each number: one map per rank, not a scan per step (a
        // profile of 250 k steps per rank).
        let first: Vec<std::collections::HashMap<i64, usize>> = per_rank
            .iter()
            .map(|s| {
                let mut m = std::collections::HashMap::with_capacity(s.len());
                for (i, f) in s.iter().enumerate() {
                    if let Some(n) = f.number {
                        m.entry(n).or_insert(i);
                    }
                }
                m
            })
            .collect();
        for n in nums {
            let idx: Option<Vec<usize>> = first.iter().map(|m| m.get(&n).copied()).collect();
            if let Some(idx) = idx {
                rows.push((n.to_string(), idx));
            }
        }
    } else {
        let n = per_rank.iter().map(|s| s.len()).min().unwrap_or(0);
        for i in 0..n {
            rows.push((i.to_string(), vec![i; per_rank.len()]));
        }
    }
    for (r, s) in per_rank.iter().enumerate() {
        if s.len() > rows.len() {
            t.notes.push(format!(
                "rank {} has {} steps, {} on every rank; the rest are left out of the step table",
                ranks[r],
                s.len(),
                match rows.len() {
                    1 => "1 is".to_string(),
                    n => format!("{n} are"),
                }
            ));
        }
    }
    let origin = per_rank
        .iter()
        .filter_map(|s| s.first().map(|f| f.start_ns.get()))
        .min()
        .unwrap_or(0);
    for (key, idx) in &rows {
        let figs: Vec<&StepFig> = idx.iter().zip(per_rank).map(|(&i, s)| &s[i]).collect();
        let work: Vec<Ns> = figs.iter().map(|f| f.work_ns).collect();
        t.rows.push(StepRow {
            step: key.clone(),
            t_ms: (figs
                .iter()
                .map(|f| f.start_ns.get())
                .min()
                .unwrap_or(origin)
                - origin) as f64
                / 1e6,
            name: figs[0].name.clone(),
            busy_ns: figs.iter().map(|f| f.busy_ns).collect(),
            dur_ns: figs.iter().map(|f| f.dur_ns).collect(),
            excess_pct: (0..work.len())
                .map(|r| 100.0 * excess_among(&work, r, &peers[r]))
                .collect(),
            work_ns: work,
            idx: idx.clone(),
        });
    }
    t.onset = onset(&t, per_rank, &rows, &peers, origin, threshold);
    t.peers = peers;
    t
}

/// For each rank, the ranks it is compared with: the others of its world when that world has
/// two or more ranks; none for a replica of one rank whose steps are positions, not numbers;
/// else every other rank.
pub(crate) fn peers(worlds: &[Vec<usize>], n: usize, numbered: bool) -> Vec<Vec<usize>> {
    (0..n)
        .map(|r| match worlds.iter().find(|w| w.contains(&r)) {
            Some(w) if w.len() >= 2 => w.iter().copied().filter(|&i| i != r).collect(),
            // A replica of one rank among several replicas, its steps only positions (SGLang's
            // `step[…]`, vLLM's `execute_…`): no peer. The n-th step of one serving replica is
            // not the n-th of another (other batches, other times); replicas are compared as
            // replicas. Numbered steps (`ProfilerStep#N`) are one iteration on every rank.
            Some(_) if worlds.len() >= 2 && !numbered => Vec::new(),
            _ => (0..n).filter(|&i| i != r).collect(),
        })
        .collect()
}

impl StepTable {
    /// The ranks rank `r` (of `n`) is compared with: its [`peers`] when the table has them
    /// (none for a replica of one rank), else every other rank. The verdict, the outliers and
    /// the drill-down all use these.
    pub fn peers_of(&self, r: usize, n: usize) -> Vec<usize> {
        match self.peers.get(r) {
            Some(p) => p.clone(),
            None => (0..n).filter(|&i| i != r).collect(),
        }
    }

    /// Whether some rank's peers are fewer than all the other ranks (one world per replica).
    pub fn peers_by_replica(&self) -> bool {
        let n = self.peers.len();
        self.peers.iter().any(|p| !p.is_empty() && p.len() + 1 < n)
    }
}

/// `v[r]` relative to the mean of `v` over `peers`, minus one.
pub(crate) fn excess_among<T: Copy + Into<i64>>(v: &[T], r: usize, peers: &[usize]) -> f64 {
    if peers.is_empty() {
        return 0.0;
    }
    let mean = peers.iter().map(|&i| v[i].into()).sum::<i64>() as f64 / peers.len() as f64;
    let x: i64 = v[r].into();
    if mean > 0.0 {
        x as f64 / mean - 1.0
    } else if x > 0 {
        f64::INFINITY
    } else {
        0.0
    }
}

fn onset(
    t: &StepTable,
    per_rank: &[&[StepFig]],
    rows: &[(String, Vec<usize>)],
    peers: &[Vec<usize>],
    origin: i64,
    threshold: f64,
) -> Option<Onset> {
    let n = t.rows.len();
    // One step has no "from then on": an onset needs a run of at least two steps.
    if n < 2 || t.ranks.len() < 2 {
        return None;
    }
    let min_run = 2;
    let mut best: Option<Onset> = None;
    for r in 0..t.ranks.len() {
        // Walk back from the last step while the rank stays above.
        let mut s0 = n;
        while s0 > 0 && t.rows[s0 - 1].excess_pct[r] > 100.0 * threshold {
            s0 -= 1;
        }
        if n - s0 < min_run {
            continue;
        }
        let (mut mine, mut theirs) = (0f64, 0f64);
        for row in &t.rows[s0..] {
            mine += row.work_ns[r].get() as f64;
            if peers[r].is_empty() {
                continue;
            }
            let others: i64 = peers[r].iter().map(|&i| row.work_ns[i]).sum::<Ns>().get();
            theirs += others as f64 / peers[r].len() as f64;
        }
        let ex = if theirs > 0.0 {
            100.0 * (mine / theirs - 1.0)
        } else {
            0.0
        };
        let start = per_rank[r][rows[s0].1[r]].start_ns.get();
        let cand = Onset {
            rank: t.ranks[r].clone(),
            rank_id: RankId::default(),
            rank_index: r,
            step: t.rows[s0].step.clone(),
            step_index: s0,
            t_ms: (start - origin) as f64 / 1e6,
            excess_pct: ex,
            steps_after: n - s0,
        };
        if best.as_ref().is_none_or(|b| cand.excess_pct > b.excess_pct) {
            best = Some(cand);
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fig(start: i64, work: i64) -> StepFig {
        StepFig {
            name: "s".into(),
            number: None,
            start_ns: Ns::new(start),
            dur_ns: Ns::new(work),
            busy_ns: Ns::new(work),
            work_ns: Ns::new(work),
            class_ns: Vec::new(),
            work: Default::default(),
        }
    }

    #[test]
    fn onset_is_the_first_step_of_the_sustained_run() {
        let ranks: Vec<String> = (0..3).map(|i| format!("R{i}")).collect();
        // Rank 2 is 20 % slower from step 3 on; a one-step blip at step 1 does not count.
        let mk = |r: usize| -> Vec<StepFig> {
            (0..6)
                .map(|s| {
                    let w = if r == 2 && (s >= 3 || s == 1) {
                        120
                    } else {
                        100
                    };
                    fig(s as i64 * 1_000_000 + r as i64, w)
                })
                .collect()
        };
        let a: Vec<Vec<StepFig>> = (0..3).map(mk).collect();
        let refs: Vec<&[StepFig]> = a.iter().map(|v| v.as_slice()).collect();
        let t = table(&ranks, &refs, &[], "x", "gpu", 0.05);
        let o = t.onset.expect("an onset");
        assert_eq!(
            (o.rank.as_str(), o.step.as_str(), o.steps_after),
            ("R2", "3", 3)
        );
        assert!((o.excess_pct - 20.0).abs() < 1e-9, "{}", o.excess_pct);
        assert!((o.t_ms - 3.000002).abs() < 1e-9, "{}", o.t_ms);
        assert_eq!(
            o.sentence(),
            "rank R2 slower by 20 % from step 3 (t = 3.0 ms) on"
        );
        // Below the threshold: no onset.
        let t = table(&ranks, &refs, &[], "x", "gpu", 0.25);
        assert!(t.onset.is_none());
    }
}
