//! Clock offsets from the collectives. In a real NCCL job every member's kernel of one
//! collective *ends* within microseconds of the others' (the early members spin inside it until
//! the last arrives), so a rank whose ends sit a constant distance from its world's at every
//! collective is a rank whose clock differs — another host's, a few ms off through NTP — not a
//! rank that waits. Left in, the offset reads as skew at every collective and as waiting on the
//! early side.
//!
//! Per rank of a world: the deviation of its end from the collective's lower-median end, over
//! its matched collectives (the n-th of a key on every member, as the matching pairs them); its
//! offset is the median deviation and its spread the median absolute difference from that. An
//! offset counts as a clock offset when it is at least [`MIN_OFFSET_NS`] and at least
//! [`SPREAD_FACTOR`]× its spread: a constant, not jitter. GPU traces only: a gloo collective's
//! members leave it milliseconds apart on a busy CPU, so its ends say nothing of clocks.
//!
//! Bounded memory: at most [`KEEP`] deviations per rank (the first matched collectives).

use anyhow::Result;
use serde::{Deserialize, Serialize};

use crate::analyze::collect::collstore::RankColls;
use crate::analyze::stats::lower_median;
use crate::trace::Ns;

/// Offsets smaller than this are left alone (NCCL's own end spread is a few µs).
pub(crate) const MIN_OFFSET_NS: i64 = 20_000;
/// An offset must be this many times its spread to be a constant.
pub(crate) const SPREAD_FACTOR: i64 = 4;
/// Deviations kept per rank.
const KEEP: usize = 4096;
/// Collectives a rank needs for an estimate.
const MIN_COLLECTIVES: usize = 3;

/// A rank whose clock was aligned, as the report states it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClockOffset {
    pub rank: String,
    /// Its clock minus its world's: what was subtracted from its times.
    pub offset_ns: Ns,
    /// Median absolute deviation of the per-collective offsets.
    pub spread_ns: Ns,
    /// Matched collectives it was estimated over.
    pub collectives: usize,
}

/// One rank's clock against its world's.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Offset {
    pub(crate) rank: usize,
    /// Its clock minus the world's, ns: subtract it to align.
    pub(crate) offset_ns: i64,
    /// Median absolute deviation of the per-collective offsets, ns.
    pub(crate) spread_ns: i64,
    pub(crate) collectives: usize,
}

/// The ranks whose clock is off their world's by a constant (see the module doc).
pub(crate) fn estimate(worlds: &[Vec<usize>], per_rank: &[RankColls]) -> Result<Vec<Offset>> {
    let mut dev: Vec<Vec<i64>> = vec![Vec::new(); per_rank.len()];
    for all in worlds.iter().filter(|w| w.len() >= 2) {
        deviations(all, per_rank, &mut dev)?;
    }
    Ok(dev
        .into_iter()
        .enumerate()
        .filter(|(_, d)| d.len() >= MIN_COLLECTIVES)
        .map(|(rank, d)| {
            let offset = lower_median(d.clone());
            let spread = lower_median(d.iter().map(|x| (x - offset).abs()).collect());
            Offset {
                rank,
                offset_ns: offset,
                spread_ns: spread,
                collectives: d.len(),
            }
        })
        .filter(|o| {
            o.offset_ns.abs() >= MIN_OFFSET_NS && o.offset_ns.abs() >= SPREAD_FACTOR * o.spread_ns
        })
        .collect())
}

/// Each member's end against the collective's lower-median end, for every matched collective of
/// one world (read in lockstep, as the matching reads them).
fn deviations(all: &[usize], per_rank: &[RankColls], dev: &mut [Vec<i64>]) -> Result<()> {
    let mut keys = std::collections::BTreeSet::new();
    for &r in all {
        keys.extend(per_rank[r].keys());
    }
    let mut curs: Vec<_> = all.iter().map(|&r| per_rank[r].cursor()).collect();
    for key in keys {
        let lens: Vec<usize> = all.iter().map(|&r| per_rank[r].len_of(key)).collect();
        let having: Vec<usize> = (0..all.len()).filter(|&i| lens[i] > 0).collect();
        let n = if having.len() < 2 {
            0
        } else {
            having.iter().map(|&i| lens[i]).min().unwrap_or(0)
        };
        for _ in 0..n {
            let ends = having
                .iter()
                .map(|&i| curs[i].next_of(key).map(|c| c.end))
                .collect::<Result<Vec<i64>>>()?;
            let mid = lower_median(ends.clone());
            for (&i, e) in having.iter().zip(&ends) {
                let d = &mut dev[all[i]];
                if d.len() < KEEP {
                    d.push(e - mid);
                }
            }
        }
        // What was not matched of this key, so the cursors reach the next key together.
        for (c, &l) in curs.iter_mut().zip(&lens) {
            c.skip(l.saturating_sub(n))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::collect::collstore::Coll;
    use std::collections::BTreeMap;

    fn rank(ends: &[i64]) -> RankColls {
        let mut by_key = BTreeMap::new();
        by_key.insert(
            "pg0".to_string(),
            ends.iter()
                .map(|&e| Coll {
                    name: "allreduce".into(),
                    start: e - 100,
                    end: e,
                    prev_end: None,
                    busy: 0,
                    pre: 0,
                    bytes: None,
                    from_step: false,
                    waited: None,
                    overlapped: false,
                })
                .collect(),
        );
        RankColls::from_map(by_key).unwrap()
    }

    #[test]
    fn a_constant_offset_is_found_and_jitter_is_not() {
        let base = [1_000_000, 2_000_000, 3_000_000, 4_000_000, 5_000_000];
        let shifted: Vec<i64> = base.iter().map(|e| e + 1_500_000 + e % 7).collect();
        // Jitter of ±30 µs around the others' ends: its median is 5 µs, no offset.
        let jitter: Vec<i64> = base
            .iter()
            .zip([30_000, -25_000, 5_000, -30_000, 20_000])
            .map(|(e, j)| e + j)
            .collect();
        let ranks = vec![rank(&base), rank(&base), rank(&shifted), rank(&jitter)];
        let found = estimate(&[vec![0, 1, 2, 3]], &ranks).unwrap();
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].rank, 2);
        assert!((found[0].offset_ns - 1_500_000).abs() < 10, "{found:?}");
    }
}
