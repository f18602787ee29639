//! Kernels across ranks: the per-class × rank totals and the top-K kernels × rank table with
//! each kernel's imbalance (max/mean of the per-rank totals, coefficient of variation, slowest
//! rank); short display names from [`crate::analyze::collect::ops::short_name`].

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::analyze::collect::ops::{short_name, Agg, NameAgg, OpKind};
use crate::analyze::stats::{argmax, min_mean_max, spread};
use crate::trace::Ns;

/// Per-rank figures of one kernel.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct KStat {
    pub total_ns: Ns,
    pub count: u64,
    pub mean_ns: f64,
    pub max_ns: Ns,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct KernelRow {
    pub name: String,
    pub short: String,
    pub class: String,
    /// `kernel`, `memcpy`, `memset` or `cpu_op`.
    pub kind: String,
    /// Over all ranks.
    pub total_ns: Ns,
    pub per_rank: Vec<KStat>,
    /// Largest per-rank total over the mean per-rank total.
    pub max_over_mean: f64,
    /// Coefficient of variation of the per-rank totals (population standard deviation / mean).
    pub cv: f64,
    pub slowest: String,
}

impl KernelRow {
    /// The smallest, mean and largest per-rank total (the summarized form of `per_rank`).
    pub fn rank_min_mean_max(&self) -> (i64, i64, i64) {
        let t: Vec<i64> = self.per_rank.iter().map(|s| s.total_ns.get()).collect();
        min_mean_max(&t)
    }
}

/// Class totals (sum of op durations) per rank.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct ClassTable {
    pub classes: Vec<String>,
    pub ranks: Vec<String>,
    /// `ns[rank][class]`
    pub ns: Vec<Vec<i64>>,
    /// Share of the summed op time no rule classified (class `other`), percent, all ranks
    /// together ([`crate::analyze::classes::other_share`]).
    #[serde(default)]
    pub unclassified_pct: f64,
    /// The same per rank, in rank order.
    #[serde(default)]
    pub unclassified_rank_pct: Vec<f64>,
}

/// The top `k` names by total time over all ranks.
pub(crate) fn top(
    ranks: &[String],
    per_rank: &[&[NameAgg]],
    class_names: &[String],
    k: usize,
) -> Vec<KernelRow> {
    let n = per_rank.len();
    let mut by_name: HashMap<&str, Vec<Option<&Agg>>> = HashMap::new();
    for (r, ops) in per_rank.iter().enumerate() {
        for op in ops.iter() {
            by_name
                .entry(op.name.as_str())
                .or_insert_with(|| vec![None; n])[r] = Some(&op.agg);
        }
    }
    let mut rows: Vec<(i64, &str, Vec<Option<&Agg>>)> = by_name
        .into_iter()
        .map(|(name, v)| (v.iter().flatten().map(|a| a.total).sum(), name, v))
        .collect();
    // Largest first; names break ties so the order never depends on hashing.
    rows.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
    rows.truncate(k);
    rows.into_iter()
        .map(|(total, name, v)| {
            let first = v.iter().flatten().next().copied();
            let per_rank: Vec<KStat> = v
                .iter()
                .map(|a| match a {
                    Some(a) => KStat {
                        total_ns: Ns::new(a.total),
                        count: a.count,
                        mean_ns: if a.count > 0 {
                            a.total as f64 / a.count as f64
                        } else {
                            0.0
                        },
                        max_ns: Ns::new(a.max),
                    },
                    None => KStat::default(),
                })
                .collect();
            let totals: Vec<i64> = per_rank.iter().map(|s| s.total_ns.get()).collect();
            let (max_over_mean, cv) = spread(&totals);
            // No slowest rank when all are equal.
            let slowest = match argmax(&totals) {
                Some(i) if max_over_mean > 1.0 => ranks[i].clone(),
                _ => "-".to_string(),
            };
            KernelRow {
                name: name.to_string(),
                short: short_name(name),
                class: first
                    .map(|a| {
                        class_names
                            .get(a.class as usize)
                            .cloned()
                            .unwrap_or_default()
                    })
                    .unwrap_or_default(),
                kind: first
                    .map_or(OpKind::Kernel, |a| a.kind)
                    .as_str()
                    .to_string(),
                total_ns: Ns::new(total),
                per_rank,
                max_over_mean,
                cv,
                slowest,
            }
        })
        .collect()
}
