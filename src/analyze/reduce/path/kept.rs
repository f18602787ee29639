//! The costliest late arrivals, kept while the matching streams the collectives by
//! ([`super::acc::Acc`]): for the report's list and the merged trace's marks.
//!
//! A profile charges tens of thousands of late arrivals, and up to [`super::MARKS`] are kept
//! (the synth bench set: all of its 15,578). Kept as [`Late`]s, each with three strings and its
//! waiters with their labels, they were the largest part of what analyze's memory grew by:
//! leaving them out took its page faults from ~8,700 to ~5,300 (`perf stat -e page-faults`).
//! So they are kept compact: the collective's key and name as ids into one table of names
//! ([`Names`]), the rank and the waiters' ranks as indices, the waiters of all of them in one
//! pool, and the waiters only when a merged trace asks for them
//! ([`crate::analyze::AnalyzeOptions::waiters`]). They become [`Late`]s once, at the end
//! ([`Kept::finish`], [`LateRec::to_late`]): on the synth set ~6,900 page faults and 38.6
//! MiB peak RSS against 45.4.

use super::{label, Late, Waiter, WAITERS};
use crate::analyze::collect::collector::{id_of, CollEv, FxMap};
use crate::trace::Ns;

/// Names (collective keys and names) by id, each stored once.
#[derive(Default)]
pub(super) struct Names {
    list: Vec<String>,
    ids: FxMap<String, u32>,
}

impl Names {
    /// The id of `s`, added when new.
    pub(super) fn id(&mut self, s: &str) -> u32 {
        id_of(&mut self.ids, &mut self.list, s)
    }

    /// The name of id `i`.
    pub(super) fn get(&self, i: u32) -> &str {
        self.list.get(i as usize).map_or("", |s| s.as_str())
    }
}

/// One late arrival as kept: what [`Late`] holds, with ids and indices for its strings, and
/// its waiters as a range of [`Kept`]'s pool.
#[derive(Clone, Copy, Debug)]
pub(super) struct LateRec {
    pub(super) world: usize,
    /// The collective's key and name ([`Names`]).
    pub(super) key: u32,
    pub(super) index: usize,
    pub(super) name: u32,
    /// The rank (an index of the analysis' labels).
    pub(super) rank: usize,
    /// Its segment's start and its arrival, on the common clock (ns).
    pub(super) from: i64,
    pub(super) start: i64,
    pub(super) cost: i64,
    /// The cost's parts: work, host gap, late start.
    pub(super) parts: [i64; 3],
    pub(super) transfer: i64,
    /// Its waiters: `Kept::pool[waiters.0..waiters.1]`.
    waiters: (u32, u32),
}

impl LateRec {
    /// A late arrival without waiters yet.
    pub(super) fn new(
        (world, key, index, name): (usize, u32, usize, u32),
        rank: usize,
        (from, start): (i64, i64),
        cost: i64,
        parts: [i64; 3],
        transfer: i64,
    ) -> LateRec {
        LateRec {
            world,
            key,
            index,
            name,
            rank,
            from,
            start,
            cost,
            parts,
            transfer,
            waiters: (0, 0),
        }
    }

    /// As a [`Late`]: `labels` name the ranks, `names` the collectives, `pool` holds its
    /// waiters; `t_ms` as given.
    pub(super) fn to_late(
        self,
        labels: &[String],
        names: &Names,
        pool: &[(usize, i64)],
        t_ms: f64,
    ) -> Late {
        let [work, host, late] = self.parts;
        let waiters = pool
            .get(self.waiters.0 as usize..self.waiters.1 as usize)
            .unwrap_or_default()
            .iter()
            .map(|&(r, since)| Waiter {
                rank: label(labels, r),
                since_ns: Ns::new(since),
            })
            .collect();
        Late {
            world: self.world,
            key: names.get(self.key).to_string(),
            index: self.index,
            name: names.get(self.name).to_string(),
            rank: label(labels, self.rank),
            t_ms,
            seg_start_ns: Ns::new(self.from),
            start_ns: Ns::new(self.start),
            cost_ns: Ns::new(self.cost),
            work_ns: Ns::new(work),
            host_ns: Ns::new(host),
            late_ns: Ns::new(late),
            transfer_ns: Ns::new(self.transfer),
            waiters,
        }
    }
}

/// The `n` costliest late arrivals seen so far: a buffer of up to `2n`, cut back to the `n`
/// costliest when full; what costs less than the `n`-th kept is not even built.
pub(super) struct Kept {
    v: Vec<LateRec>,
    /// The kept arrivals' waiters, (rank, arrival) each.
    pool: Vec<(usize, i64)>,
    n: usize,
    floor: i64,
}

impl Kept {
    pub(super) fn new(n: usize) -> Kept {
        Kept {
            v: Vec::new(),
            pool: Vec::new(),
            n,
            floor: i64::MIN,
        }
    }

    pub(super) fn wants(&self, cost: i64) -> bool {
        self.n > 0 && cost >= self.floor
    }

    /// Keeps `rec`, with `waiters` as its waiters (already in order).
    pub(super) fn push(&mut self, mut rec: LateRec, waiters: &[(usize, i64)], names: &Names) {
        let at = self.pool.len() as u32;
        self.pool.extend_from_slice(waiters);
        rec.waiters = (at, self.pool.len() as u32);
        self.v.push(rec);
        if self.v.len() > 2 * self.n {
            self.trim(names);
            self.floor = self.v.last().map_or(i64::MIN, |x| x.cost);
        }
    }

    /// Keeps the `n` costliest (ties in a fixed order: world, key, index), costliest first,
    /// and their waiters only. The order is total (a collective has one late arrival), so an
    /// unstable sort gives the same order, without a buffer of half the records.
    fn trim(&mut self, names: &Names) {
        self.v.sort_unstable_by(|a, b| {
            b.cost
                .cmp(&a.cost)
                .then(a.world.cmp(&b.world))
                .then_with(|| names.get(a.key).cmp(names.get(b.key)))
                .then(a.index.cmp(&b.index))
        });
        self.v.truncate(self.n);
        if self.pool.is_empty() {
            return;
        }
        let mut pool = Vec::new();
        for r in &mut self.v {
            let at = pool.len() as u32;
            if let Some(w) = self.pool.get(r.waiters.0 as usize..r.waiters.1 as usize) {
                pool.extend_from_slice(w);
            }
            r.waiters = (at, pool.len() as u32);
        }
        self.pool = pool;
    }

    /// The `n` costliest, costliest first, and the pool their waiters are in.
    pub(super) fn finish(mut self, names: &Names) -> (Vec<LateRec>, Vec<(usize, i64)>) {
        self.trim(names);
        (self.v, self.pool)
    }
}

/// The members of a collective that arrived before its last arriver (`recs[l]`) and waited
/// for it, as (rank, arrival), the earliest first, up to [`WAITERS`]; into `out`.
pub(super) fn waiters(members: &[usize], recs: &[CollEv], l: usize, out: &mut Vec<(usize, i64)>) {
    out.clear();
    let Some(last) = recs.get(l).map(|r| r.start) else {
        return;
    };
    out.extend(
        members
            .iter()
            .zip(recs)
            .enumerate()
            .filter(|&(i, (_, r))| i != l && r.start < last)
            .map(|(_, (&m, r))| (m, r.start)),
    );
    out.sort_by_key(|x| x.1);
    out.truncate(WAITERS);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(names: &mut Names, cost: i64, key: &str, index: usize) -> LateRec {
        let (k, n) = (names.id(key), names.id("allreduce"));
        LateRec::new((0, k, index, n), 1, (0, 10), cost, [cost, 0, 0], 5)
    }

    #[test]
    fn keeps_the_costliest_with_their_own_waiters() {
        let mut names = Names::default();
        let mut kept = Kept::new(2);
        // Five arrivals, each with its cost as its one waiter's arrival: trimmed twice.
        for (cost, key) in [(5, "b"), (9, "a"), (1, "c"), (9, "0"), (7, "d")] {
            let r = rec(&mut names, cost, key, 0);
            if kept.wants(cost) {
                kept.push(r, &[(cost as usize, cost)], &names);
            }
        }
        let (v, pool) = kept.finish(&names);
        let labels: Vec<String> = (0..10).map(|i| format!("R{i}")).collect();
        type Row = (i64, String, Vec<(String, Ns)>);
        let got: Vec<Row> = v
            .iter()
            .map(|r| {
                let l = r.to_late(&labels, &names, &pool, 0.0);
                let w = l.waiters.iter().map(|w| (w.rank.clone(), w.since_ns));
                (l.cost_ns.get(), l.key, w.collect())
            })
            .collect();
        // Ties by key: "0" before "a".
        assert_eq!(
            got,
            vec![
                (9, "0".to_string(), vec![("R9".to_string(), Ns::new(9))]),
                (9, "a".to_string(), vec![("R9".to_string(), Ns::new(9))]),
            ]
        );
    }
}
