//! Collectives across ranks: the n-th collective of each (process group, stream) on one rank is
//! matched with the n-th of the same key on every other rank of its world.
//!
//! On the GPU a collective is a communication kernel; its key is the `Process Group Name` arg
//! (empty when absent) and the stream's position among that group's streams on the rank (so
//! stream numbers may differ between ranks); its name is the `Collective name` arg, else the
//! kernel's short name. In CPU-only traces a collective is a `c10d::` op, keyed by its name.
//!
//! A collective kernel starts when its rank arrives and ends when all have, so per matched
//! collective the **arrival skew** is the latest start minus the earliest; each rank *waits*
//! the latest start minus its own; the rank that started last is the one the others waited
//! for. The straggler is the rank that arrived last most often.
//!
//! **Ties.** Arrivals less than [`TIE_TOLERANCE_NS`] (1 µs) before the latest are ties, not
//! last arrivals: a matched collective whose two latest starts are that close has no last
//! arrival and is counted in `ties` (per key and overall); 1 µs or more apart, the latest
//! arrived last. Why 1 µs: Kineto writes `ts` in µs with
//! three decimals, so the file resolves nanoseconds, but GPU kernel timestamps of different
//! devices are each device's clock mapped onto the host clock by CUPTI / roctracer, and that
//! mapping is good to about a microsecond, not better; a lead below 1 µs is also shorter than
//! one kernel launch (a few µs), so no rank waits for it in a way that matters. Ranks on
//! different hosts are only as aligned as the hosts' clocks (NTP: often tens of µs): there a
//! 1 µs tolerance still lets clock offset make a rank "last", and the table's skews say how
//! large the differences are. On identical ranks every collective is a tie and no straggler
//! is named; nor is one named when no rank arrived last more often than an even split among
//! its world's ranks would give (1/N of the matched collectives): with jitter and ties, a
//! rank last at 2 of 24 collectives of 8 ranks is noise, not a straggler.
//!
//! Ranks are split into worlds when their traces say the world is smaller than the set of ranks
//! (SGLang with DP > 1 runs one world per DP replica): collectives match only within a world.

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap};

use anyhow::Result;
use serde::{Deserialize, Serialize};

use super::path::acc::Acc;
use crate::analyze::collect::collector::CollEv;
use crate::analyze::collect::collstore::{Cursor, RankColls};
use crate::analyze::collect::p2p;
use crate::analyze::collect::rank::RankResult;
use crate::analyze::rankset;
use crate::analyze::stats::argmax;
use crate::trace::Ns;

/// Arrivals less than this before the latest are ties (see the module documentation).
pub(crate) const TIE_TOLERANCE_NS: i64 = 1_000;

/// One key (process group + stream, or op name) within one world.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct GroupRow {
    pub world: usize,
    pub key: String,
    pub name: String,
    pub matched: usize,
    pub mean_skew_ns: f64,
    pub max_skew_ns: Ns,
    /// The rank that arrived last most often on this key (empty when every one was a tie).
    pub last_most: String,
    pub last_most_count: usize,
    /// Matched collectives with no last arrival: the two latest starts less than the tolerance
    /// apart.
    #[serde(default)]
    pub ties: usize,
    /// Matched collectives whose names differ between ranks.
    pub name_mismatches: usize,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct RankRow {
    pub rank: String,
    pub world: usize,
    pub collectives: usize,
    pub matched: usize,
    /// Sum over matched collectives of (latest arrival - own arrival).
    pub wait_ns: Ns,
    pub arrived_last: usize,
}

impl RankRow {
    /// Share of its matched collectives this rank arrived last at, percent.
    pub fn last_pct(&self) -> f64 {
        if self.matched > 0 {
            100.0 * self.arrived_last as f64 / self.matched as f64
        } else {
            0.0
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Instance {
    pub world: usize,
    pub key: String,
    pub index: usize,
    pub name: String,
    pub skew_ns: Ns,
    /// The rank that arrived last; at a tie, every rank within the tolerance of the latest,
    /// joined by ` = `.
    pub last: String,
    /// No single rank arrived last.
    #[serde(default)]
    pub tie: bool,
    /// Earliest arrival, ms from the first matched collective.
    pub t_ms: f64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct CollectiveReport {
    /// `gpu` (communication kernels), `cpu` (`c10d::` ops) or `none`.
    pub source: String,
    /// Rank labels of each world.
    pub worlds: Vec<Vec<String>>,
    pub groups: Vec<GroupRow>,
    pub ranks: Vec<RankRow>,
    /// The matched collectives with the largest skew.
    pub worst: Vec<Instance>,
    pub matched: usize,
    /// Matched collectives with no last arrival (ties), over all keys.
    #[serde(default)]
    pub ties: usize,
    /// The tie tolerance used.
    #[serde(default)]
    pub tie_tolerance_ns: Ns,
    /// The rank with the most last arrivals; `None` when no collective had one (all ties).
    pub straggler: Option<String>,
    /// Share of matched collectives at which the straggler arrived last, percent.
    pub straggler_pct: f64,
    pub notes: Vec<String>,
}

/// (skew, world, key, index, name, ranks within the tolerance of the latest (one: it arrived
/// last; more: a tie), earliest start) of one matched collective.
type Worst = (i64, usize, String, usize, String, Vec<usize>, i64);

/// A CPU-only trace's point-to-point op (`c10d::send`, `c10d::recv_`,
/// `c10d::recv_any_source_`) whose trace names no peer (taken without `record_shapes`): its
/// key is the op's name, which every stage of a pipeline shares. Matching it by position
/// across the world's ranks would pair transfers with the wrong peers. (With a peer its key is
/// the pair's, `p2p 1>2`, matched between those two ranks: [`p2p`].)
fn point_to_point(key: &str) -> bool {
    p2p::direction(key).is_some()
}

/// The member positions whose start is less than the tolerance before the latest, latest first (equal
/// starts by position). One entry: that member arrived last; more: a tie.
fn latest(starts: &[i64]) -> Vec<usize> {
    let hi = starts.iter().copied().max().unwrap_or(0);
    let mut late: Vec<usize> = (0..starts.len())
        .filter(|&m| hi - starts[m] < TIE_TOLERANCE_NS)
        .collect();
    late.sort_by_key(|&m| (Reverse(starts[m]), m));
    late
}

/// `R0 120, R3 118` for a few ranks; for many, the ranks grouped by count, compactly
/// (`120 on the other 15 (TP00–TP02, TP04–TP15), 118 on TP03`).
fn counts_note(members: &[usize], counts: &[usize], ranks: &[String]) -> String {
    if members.len() <= 8 {
        return members
            .iter()
            .zip(counts)
            .map(|(&r, l)| format!("{} {l}", ranks[r]))
            .collect::<Vec<_>>()
            .join(", ");
    }
    let mut by: std::collections::BTreeMap<usize, Vec<&str>> = Default::default();
    for (&r, &l) in members.iter().zip(counts) {
        by.entry(l).or_default().push(ranks[r].as_str());
    }
    let mut groups: Vec<(usize, Vec<&str>)> = by.into_iter().collect();
    groups.sort_by_key(|(l, g)| (g.len(), *l));
    let shown: Vec<String> = groups
        .iter()
        .take(4)
        .map(|(l, g)| format!("{l} on {}", rankset::compact(g)))
        .collect();
    let more = groups.len().saturating_sub(4);
    if more > 0 {
        format!("{}; {more} other counts", shown.join("; "))
    } else {
        shown.join("; ")
    }
}

/// Groups ranks into worlds for collective matching (and the step table's peers): one per DP
/// replica when the traces report a world smaller than the set of ranks, with a note saying so.
pub(crate) fn worlds(results: &[RankResult]) -> (Vec<Vec<usize>>, Option<String>) {
    let n = results.len();
    let all = vec![(0..n).collect::<Vec<_>>()];
    let Some(ws) = results.iter().filter_map(|r| r.world_size).min() else {
        return (all, None);
    };
    if ws as usize >= n || ws < 1 || !results.iter().all(|r| r.id.dp.is_some()) {
        return (all, None);
    }
    let mut by_dp: std::collections::BTreeMap<u32, Vec<usize>> = std::collections::BTreeMap::new();
    for (i, r) in results.iter().enumerate() {
        by_dp.entry(r.id.dp.unwrap_or(0)).or_default().push(i);
    }
    if by_dp.values().all(|v| v.len() == ws as usize) {
        let w: Vec<Vec<usize>> = by_dp.into_values().collect();
        let note = format!(
            "the traces report a world of {ws} rank{}: collectives are matched within each of the {} DP replicas",
            if ws == 1 { "" } else { "s" },
            w.len()
        );
        (w, Some(note))
    } else {
        (
            all,
            Some(format!(
                "the traces report a world of {ws} rank{} but {} given; collectives are matched across all",
                if ws == 1 { "" } else { "s" },
                match n {
                    1 => "1 rank was".to_string(),
                    n => format!("{n} ranks were"),
                }
            )),
        )
    }
}

#[cfg(test)]
/// Matches collectives across ranks. `worlds` holds rank indices. Each rank's collectives are
/// read once, front to back, the ranks of a world in lockstep (see [`crate::analyze::collect::collstore`]); an
/// error is a temporary file that cannot be read back.
pub(crate) fn analyze(
    ranks: &[String],
    worlds: &[Vec<usize>],
    per_rank: &[RankColls],
    source: &str,
    top_n: usize,
) -> Result<CollectiveReport> {
    analyze_into(ranks, worlds, per_rank, &[], source, top_n, None)
}

/// `analyze` (tests), also feeding every matched collective to the critical path's accumulator;
/// `stage_of`: each rank's pipeline stage, when its label says (empty: none known).
// Long on purpose: one pass matches every world's collectives and fills four tables (ranks,
// groups, worst, notes) from the same match state.
pub(crate) fn analyze_into(
    ranks: &[String],
    worlds: &[Vec<usize>],
    per_rank: &[RankColls],
    stage_of: &[Option<u32>],
    source: &str,
    top_n: usize,
    path: Option<&mut Acc>,
) -> Result<CollectiveReport> {
    let mut m = Matcher {
        ranks,
        per_rank,
        stage_of,
        top_n,
        path,
        rep: empty_report(ranks, worlds, per_rank, source),
        worst: BinaryHeap::new(),
        origin: i64::MAX,
    };
    for (w, all) in worlds.iter().enumerate() {
        if all.len() >= 2 {
            m.world(w, all)?;
        }
    }
    let Matcher {
        mut rep,
        worst,
        origin,
        ..
    } = m;
    rep.worst = worst_instances(worst, ranks, origin);
    if let Some((share, r)) = straggler(&rep) {
        rep.straggler = Some(ranks[r].clone());
        rep.straggler_pct = 100.0 * share;
    }
    if rep.matched == 0 && ranks.len() > 1 {
        rep.notes
            .push("no collective could be matched across ranks".to_string());
    }
    Ok(rep)
}

/// The report before any matching: one row per rank, its world and its count of collectives.
fn empty_report(
    ranks: &[String],
    worlds: &[Vec<usize>],
    per_rank: &[RankColls],
    source: &str,
) -> CollectiveReport {
    CollectiveReport {
        source: source.to_string(),
        worlds: worlds
            .iter()
            .map(|w| w.iter().map(|&r| ranks[r].clone()).collect())
            .collect(),
        ranks: ranks
            .iter()
            .enumerate()
            .map(|(r, l)| RankRow {
                rank: l.clone(),
                world: worlds.iter().position(|w| w.contains(&r)).unwrap_or(0),
                collectives: per_rank[r].count(),
                ..Default::default()
            })
            .collect(),
        tie_tolerance_ns: Ns::new(TIE_TOLERANCE_NS),
        ..Default::default()
    }
}

/// The matching in progress: the report filled in, the largest skews kept (smallest at the
/// top, to keep the largest `top_n`), and the earliest matched start (the origin of `t_ms`).
struct Matcher<'a, 'p> {
    ranks: &'a [String],
    per_rank: &'a [RankColls],
    stage_of: &'a [Option<u32>],
    top_n: usize,
    path: Option<&'p mut Acc>,
    rep: CollectiveReport,
    worst: BinaryHeap<Reverse<Worst>>,
    origin: i64,
}

/// One key's collectives as they are matched: per member, how often it arrived last; the
/// skews; the name mismatches and ties; the first collective's name.
#[derive(Default)]
struct KeyTally {
    last_count: Vec<usize>,
    skew_sum: i128,
    skew_max: i64,
    mismatches: usize,
    ties: usize,
    first_name: String,
}

impl Matcher<'_, '_> {
    /// Every key (process group and stream) of world `w` (its ranks `all`), in order; each
    /// rank's cursor moves past every record of the key, matched or not.
    fn world(&mut self, w: usize, all: &[usize]) -> Result<()> {
        let per_rank = self.per_rank;
        let mut keys: BTreeSet<&String> = BTreeSet::new();
        for &r in all {
            keys.extend(per_rank[r].keys());
        }
        let mut curs: Vec<_> = all.iter().map(|&r| per_rank[r].cursor()).collect();
        // Keys (process group and stream) that only some ranks of the world have: a group of
        // a subset, as DP attention's attention-TP groups are. Matched among those ranks.
        // CPU-only (gloo) worlds are replayed on the graph: their members leave a collective
        // milliseconds apart, and a pipeline's transfers are not a chain.
        let pipeline = keys.iter().any(|k| p2p::is_pair(k));
        if let Some(acc) = self.path.as_deref_mut() {
            if self.rep.source == "cpu" || pipeline {
                acc.graph_world(w, pipeline);
            } else {
                acc.maybe_graph_world(w);
            }
        }
        let mut subset_keys = 0usize;
        let mut pairs = 0usize;
        for key in keys {
            let lens: Vec<usize> = all.iter().map(|&r| per_rank[r].len_of(key)).collect();
            let parts = self.stage_parts(all, key, &lens);
            for (label, lens) in &parts {
                let matched = if point_to_point(key) {
                    self.p2p_note(key);
                    0
                } else {
                    if p2p::is_pair(key) {
                        pairs += 1;
                    } else if parts.len() == 1 {
                        subset_keys += usize::from(lens.contains(&0));
                    }
                    self.key(w, all, label, lens, &mut curs)?
                };
                for (c, &l) in curs.iter_mut().zip(lens) {
                    c.skip(l.saturating_sub(matched))?;
                }
            }
        }
        if pairs > 0 {
            self.rep.notes.push(format!(
                "point-to-point transfers are paired by peer (the sender's and the receiver's \
                 ranks, in order per pair, as the trace names them: a gloo op's `Concrete \
                 Inputs`, an NCCL kernel's `Dst Rank` / `Src Rank`): {pairs} pair(s) of ranks"
            ));
        }
        if subset_keys > 0 {
            self.rep.notes.push(format!(
                "{subset_keys} process group(s) are on only some of the {} ranks of their world \
                 (as DP attention's attention-TP groups are): their collectives are matched among \
                 the ranks that have them",
                all.len()
            ));
        }
        Ok(())
    }

    /// How key `key` of the world's ranks `all` (`lens`: each one's count) is matched: as one
    /// group, or — a GPU key without a process group (`stream #N`: DeepEP's dispatch and
    /// combine kernels, an old Kineto's NCCL kernels) among ranks of two or more pipeline
    /// stages — within each stage, as `stream #N PPss`: no group a trace leaves unnamed spans
    /// stages (TP, EP and DP groups lie within one; a pipeline's transfers name their peers and
    /// are paired apart), and matching stage 0's n-th kernel with stage 1's joins kernels that
    /// run at different times. Each part: its label and the counts, 0 for the ranks outside.
    fn stage_parts(&self, all: &[usize], key: &str, lens: &[usize]) -> Vec<(String, Vec<usize>)> {
        let whole = || vec![(key.to_string(), lens.to_vec())];
        if !key.starts_with("stream #") {
            return whole();
        }
        let stage = |r: usize| self.stage_of.get(r).copied().flatten();
        let having = || {
            all.iter()
                .zip(lens)
                .filter(|(_, &l)| l > 0)
                .map(|(&r, _)| r)
        };
        let stages: BTreeSet<u32> = having().filter_map(stage).collect();
        if stages.len() < 2 || having().any(|r| stage(r).is_none()) {
            return whole();
        }
        stages
            .into_iter()
            .map(|s| {
                let part = all
                    .iter()
                    .zip(lens)
                    .map(|(&r, &l)| if stage(r) == Some(s) { l } else { 0 })
                    .collect();
                (format!("{key} PP{s:02}"), part)
            })
            .collect()
    }

    /// Point-to-point transfers are not matched: said once per key.
    fn p2p_note(&mut self, key: &str) {
        let note = format!(
            "{key}: point-to-point transfers are not matched across ranks (the trace names no peer, and the n-th send of one rank is no other rank's n-th)"
        );
        if !self.rep.notes.contains(&note) {
            self.rep.notes.push(note);
        }
    }

    /// Matches the first `n` collectives of `key` among the ranks of `all` that have it (`n`:
    /// the fewest any of them has), by position; returns `n`. `lens`: each rank's count.
    fn key(
        &mut self,
        w: usize,
        all: &[usize],
        key: &String,
        lens: &[usize],
        curs: &mut [Cursor<'_>],
    ) -> Result<usize> {
        // The ranks that have the key, and their counts.
        let (members, plens): (Vec<usize>, Vec<usize>) = all
            .iter()
            .zip(lens)
            .filter(|(_, &l)| l > 0)
            .map(|(&r, &l)| (r, l))
            .unzip();
        let n = if members.len() < 2 {
            0
        } else {
            plens.iter().copied().min().unwrap_or(0)
        };
        let most = plens.iter().copied().max().unwrap_or(0);
        if members.len() >= 2 && most > n {
            self.rep.notes.push(format!(
                "{key}: ranks have different numbers of collectives ({}); the first {n} are matched",
                counts_note(&members, &plens, self.ranks)
            ));
        }
        if n == 0 {
            return Ok(0);
        }
        let mut t = KeyTally {
            last_count: vec![0usize; members.len()],
            ..Default::default()
        };
        let mut recs = Vec::with_capacity(members.len());
        for i in 0..n {
            recs.clear();
            for (c, _) in curs.iter_mut().zip(lens).filter(|(_, &l)| l > 0) {
                recs.push(c.next_of(key)?);
            }
            self.one(w, key, i, &members, &recs, &mut t);
        }
        self.rep.matched += n;
        self.rep.ties += t.ties;
        let lm = argmax(&t.last_count.iter().map(|&c| c as i64).collect::<Vec<_>>())
            .filter(|&m| t.last_count[m] > 0);
        if t.mismatches > 0 {
            self.rep.notes.push(format!(
                "{key}: {} of {n} matched collectives have different names on different ranks",
                t.mismatches
            ));
        }
        self.rep.groups.push(GroupRow {
            world: w,
            key: key.clone(),
            name: t.first_name,
            matched: n,
            mean_skew_ns: (t.skew_sum as f64) / n as f64,
            max_skew_ns: Ns::new(t.skew_max),
            last_most: lm.map_or_else(String::new, |m| self.ranks[members[m]].clone()),
            last_most_count: lm.map_or(0, |m| t.last_count[m]),
            ties: t.ties,
            name_mismatches: t.mismatches,
        });
        Ok(n)
    }

    /// The `i`-th collective of `key`, one record per member: its skew, its last arriver (or a
    /// tie), each member's wait, the critical path's segment, and the largest skews kept.
    fn one(
        &mut self,
        w: usize,
        key: &str,
        i: usize,
        members: &[usize],
        recs: &[CollEv],
        t: &mut KeyTally,
    ) {
        let per_rank = self.per_rank;
        let name_of = |m: usize| per_rank[members[m]].name(recs[m].name);
        let starts: Vec<i64> = recs.iter().map(|r| r.start).collect();
        let lo = *starts.iter().min().unwrap_or(&0);
        let hi = *starts.iter().max().unwrap_or(&0);
        let late = latest(&starts);
        self.origin = self.origin.min(lo);
        let skew = hi - lo;
        t.skew_sum += i128::from(skew);
        t.skew_max = t.skew_max.max(skew);
        if let [last] = late[..] {
            t.last_count[last] += 1;
            self.rep.ranks[members[last]].arrived_last += 1;
        } else {
            t.ties += 1;
        }
        if let Some(acc) = self.path.as_deref_mut() {
            acc.add(
                w,
                key,
                i,
                name_of(0),
                members,
                recs,
                late.first().copied().unwrap_or(0),
                late.len() != 1,
            );
        }
        // A pair's two ends are a send and a receive: their names differ by design.
        if !p2p::is_pair(key) && (1..members.len()).any(|m| name_of(m) != name_of(0)) {
            t.mismatches += 1;
        }
        if i == 0 {
            t.first_name = name_of(0).to_string();
        }
        for (m, &r) in members.iter().enumerate() {
            self.rep.ranks[r].wait_ns += Ns::new(hi - starts[m]);
            self.rep.ranks[r].matched += 1;
        }
        // Most collectives are not among the largest skews: their row is not built.
        let full = self.worst.len() >= self.top_n;
        if full && self.worst.peek().is_none_or(|Reverse(min)| skew <= min.0) {
            return;
        }
        let item = (
            skew,
            w,
            key.to_string(),
            i,
            name_of(0).to_string(),
            late.iter().map(|&m| members[m]).collect(),
            lo,
        );
        if full {
            self.worst.pop();
        }
        self.worst.push(Reverse(item));
    }
}

/// The largest skews kept, largest first, as instances (`t_ms` from `origin`).
fn worst_instances(
    worst: BinaryHeap<Reverse<Worst>>,
    ranks: &[String],
    origin: i64,
) -> Vec<Instance> {
    let mut worst: Vec<_> = worst.into_iter().map(|Reverse(x)| x).collect();
    worst.sort_by(|a, b| {
        b.0.cmp(&a.0)
            .then(a.1.cmp(&b.1))
            .then(a.2.cmp(&b.2))
            .then(a.3.cmp(&b.3))
    });
    worst
        .into_iter()
        .map(|(skew, world, key, index, name, last, lo)| Instance {
            world,
            key,
            index,
            name,
            skew_ns: Ns::new(skew),
            tie: last.len() > 1,
            last: last
                .iter()
                .map(|&r| ranks[r].as_str())
                .collect::<Vec<_>>()
                .join(" = "),
            t_ms: (lo - origin) as f64 / 1e6,
        })
        .collect()
}

/// The straggler (its share of last arrivals, its rank): most last arrivals, relative to the
/// collectives its world matched, and more than an even split among the world's ranks would
/// give (jitter alone spreads them).
fn straggler(rep: &CollectiveReport) -> Option<(f64, usize)> {
    let mut best: Option<(f64, usize)> = None;
    for (r, row) in rep.ranks.iter().enumerate() {
        let world_matched = rep
            .groups
            .iter()
            .filter(|g| g.world == row.world)
            .map(|g| g.matched)
            .sum::<usize>();
        if row.arrived_last == 0 || world_matched == 0 {
            continue;
        }
        let share = row.arrived_last as f64 / world_matched as f64;
        let size = rep.worlds.get(row.world).map_or(1, Vec::len).max(1);
        if share <= 1.0 / size as f64 {
            continue;
        }
        if best.is_none_or(|(s, _)| share > s) {
            best = Some((share, r));
        }
    }
    best
}

#[cfg(test)]
mod tests;
