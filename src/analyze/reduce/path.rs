//! The critical path across ranks: at each matched collective every rank waits for the last
//! to arrive, so what sets the step time is *what the last arriver was doing before it
//! arrived*. For each matched collective this compares the last arriver's segment (from the
//! end of its previous collective to its arrival, [`crate::analyze::collect::segments`]) with
//! the median member's, and charges the difference — the wait it imposed on everyone — to
//! that rank and to why its segment was longer:
//!
//! - **work**: more compute in the segment (GPU kernels; CPU ops in CPU-only traces): the
//!   attribution says whether it is more work, more kernels or the same work slower;
//! - **host**: GPU idle after the step began (the host launched late: a sync, Python, data);
//! - **late start**: the rank began the step late (the cause is before the step).
//!
//! Cost of one collective = `seg(last) − median(seg)` (lower median, so with two ranks it is
//! the difference); split over the kinds in proportion to the last arriver's excess over the
//! median member in each (busy, host, late), all integer ns, so the parts add up to the cost.
//! Ties (two arrivals less than the tie tolerance apart) cost nothing: no one arrived last.
//! Collectives whose members include one with no earlier collective (the first of a rank) are
//! not charged. Also per collective: the **transfer**, its duration on the last arriver (it
//! waited for no one), per world and collective name; a world whose median transfer is out of
//! line with the same collective's in the other worlds (a slow link) is charged the difference.
//!
//! Figures are totals over the profile and per step (the step table's rows), with the mean step
//! time; the model is checked against an independent script, `tests/check_critical_path.py`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::steps::StepTable;
use crate::analyze::collect::collector::CollEv;
use crate::analyze::collect::segments::NO_PREV;
use crate::trace::write::overlay::{Overlay, Slice};

/// Why the last arriver's segment was longer than the median member's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// More compute before the collective.
    Work,
    /// GPU idle after the step began: the host launched late.
    Host,
    /// The rank began the step late.
    LateStart,
    /// The collective's own transfer, out of line with the same collective elsewhere.
    Transfer,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Work => "work",
            Kind::Host => "host",
            Kind::LateStart => "late start",
            Kind::Transfer => "transfer",
        }
    }
}

/// The cost of one (rank, kind) over the profile.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Cause {
    /// A rank label; for [`Kind::Transfer`], the world's ranks (compact).
    pub who: String,
    /// The world (the ranks whose collectives are matched together) it is in.
    pub world: usize,
    pub kind: Kind,
    /// Step time it cost over the profile, ns.
    pub cost_ns: i64,
    /// Collectives it was charged at.
    pub collectives: usize,
    /// Per step: what it cost inside the step table's steps over their number (the whole
    /// profile when there are no steps), ns.
    pub per_step_ns: f64,
    /// Per step over the mean step time, percent (0 when there are no steps).
    pub step_pct: f64,
    /// `per_step_ns` less what the typical rank of its world costs in the same kind (the
    /// lower median over the world's ranks): jitter makes every rank last now and then, and
    /// only the excess over that is this rank's own.
    pub net_per_step_ns: f64,
    pub net_step_pct: f64,
}

/// One expensive late arrival.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Late {
    pub world: usize,
    pub key: String,
    pub index: usize,
    pub name: String,
    pub rank: String,
    /// Its arrival, ms from the first matched collective's.
    pub t_ms: f64,
    /// Its segment on the common clock (ns): from the end of its previous collective to its
    /// arrival.
    #[serde(default)]
    pub seg_start_ns: i64,
    #[serde(default)]
    pub start_ns: i64,
    pub cost_ns: i64,
    pub work_ns: i64,
    pub host_ns: i64,
    pub late_ns: i64,
    pub transfer_ns: i64,
}

/// Transfers of one collective name in one world.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Transfer {
    pub world: usize,
    pub name: String,
    pub collectives: usize,
    /// The median transfer (the collective's duration on its last arriver), ns.
    pub median_ns: f64,
    /// The other worlds' median (of their medians) for the same name, when there are others.
    pub others_ns: Option<f64>,
}

/// One step of the step table: what the late arrivals cost it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PathStep {
    pub step: String,
    /// The longest rank's step duration, ns.
    pub step_ns: i64,
    pub cost_ns: i64,
    /// The (rank, kind) that cost it the most, and how much.
    pub top_who: Option<String>,
    pub top_kind: Option<Kind>,
    pub top_ns: i64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct CriticalPath {
    /// Matched collectives with a segment on every member.
    pub collectives: usize,
    /// Of those, the ones with a last arriver whose segment was longer than the median's.
    pub late: usize,
    /// Steps the per-step figures are over: the step table's rows in which every matched
    /// collective could be charged (0: the whole profile).
    pub steps: usize,
    /// Mean step time (the longest rank's duration per step), ns.
    pub step_ns: f64,
    /// Costs by (rank, kind), the largest net cost first.
    pub causes: Vec<Cause>,
    /// The most expensive late arrivals.
    pub worst: Vec<Late>,
    pub transfers: Vec<Transfer>,
    pub per_step: Vec<PathStep>,
    pub notes: Vec<String>,
    /// The costliest late arrivals, up to [`MARKS`], in time order: what `merge
    /// --critical-path` draws in the merged trace ([`CriticalPath::overlay`]).
    #[serde(skip)]
    pub marks: Vec<Late>,
}

/// Late arrivals kept for the merged trace's critical-path tracks.
pub const MARKS: usize = 20_000;

impl CriticalPath {
    /// The late arrivals as slices for a merged trace: on each late rank's "critical path"
    /// track, its segment before the collective it arrived last at (what it was doing while the
    /// others were already waiting), named by cost and cause.
    pub fn overlay(&self) -> Overlay {
        let slices = self
            .marks
            .iter()
            .map(|l| {
                let parts = [
                    (l.work_ns, "more work"),
                    (l.host_ns, "host gap"),
                    (l.late_ns, "late step start"),
                ];
                let why = parts.iter().max_by_key(|p| p.0).map_or("", |p| p.1);
                let mut args = Map::new();
                let us = |ns: i64| Value::from((ns as f64 / 1e3 * 1e3).round() / 1e3);
                args.insert("cost_us".into(), us(l.cost_ns));
                args.insert("work_us".into(), us(l.work_ns));
                args.insert("host_us".into(), us(l.host_ns));
                args.insert("late_start_us".into(), us(l.late_ns));
                args.insert("transfer_us".into(), us(l.transfer_ns));
                args.insert("collective".into(), Value::from(l.name.clone()));
                args.insert("key".into(), Value::from(l.key.clone()));
                args.insert("index".into(), Value::from(l.index));
                Slice {
                    rank: l.rank.clone(),
                    name: format!(
                        "last at {} #{}: +{:.1} µs ({why})",
                        l.name,
                        l.index,
                        l.cost_ns as f64 / 1e3
                    ),
                    start_ns: l.seg_start_ns,
                    dur_ns: l.start_ns - l.seg_start_ns,
                    args,
                }
            })
            .collect();
        Overlay {
            track: "critical path".into(),
            slices,
        }
    }

    /// The largest cause by its net cost, if it is its own: at least half of what it costs is
    /// over the typical rank's (two ranks that take turns arriving last lead nothing).
    pub fn lead(&self) -> Option<&Cause> {
        self.causes
            .first()
            .filter(|c| c.net_per_step_ns > 0.0 && c.net_per_step_ns >= 0.5 * c.per_step_ns)
    }

    /// What a rank costs in all, per step, ns.
    pub fn rank_per_step(&self, who: &str) -> f64 {
        self.causes
            .iter()
            .filter(|c| c.who == who)
            .map(|c| c.per_step_ns)
            .sum()
    }
}

/// The lower median (index `(n − 1) / 2` of the sorted values).
fn lower_median(mut v: Vec<i64>) -> i64 {
    v.sort_unstable();
    v.get(v.len().saturating_sub(1) / 2).copied().unwrap_or(0)
}

/// A member's segment split: (seg, busy, host, late).
fn split(r: &CollEv) -> (i64, i64, i64, i64) {
    let seg = (r.start - r.prev_end).max(0);
    let busy = r.busy.clamp(0, seg);
    let late = r.pre.clamp(0, seg - busy);
    (seg, busy, seg - busy - late, late)
}

/// Accumulates the matched collectives as the matching reads them.
pub struct Acc {
    labels: Vec<String>,
    /// Per rank, its steps' windows (start, end) on the common clock and the step table row
    /// of each (None: not in the table).
    windows: Vec<Vec<(i64, i64, Option<usize>)>>,
    rows: Vec<(String, i64)>,
    top_n: usize,
    collectives: usize,
    late: usize,
    /// (rank, kind) → (cost, collectives).
    cost: BTreeMap<(usize, Kind), (i64, usize)>,
    row_cost: Vec<BTreeMap<(usize, Kind), i64>>,
    /// Rows with a matched collective that could not be charged (a member had no collective
    /// before it): left out of the per-step figures, which would undercount them.
    row_skipped: Vec<bool>,
    worst: Vec<(i64, Late)>,
    /// The costliest late arrivals for the merged trace (kept like `worst`, up to [`MARKS`]).
    marks: Vec<(i64, Late)>,
    /// (world, name) → the transfer of each matched collective (one i64 per collective of a
    /// world, not per rank: the median needs them).
    transfers: BTreeMap<(usize, String), Vec<i64>>,
    origin: i64,
}

impl Acc {
    /// `windows[r]`: rank r's step windows (start, duration) on the common clock, in its own
    /// step order (the step table's `idx` points into them).
    pub fn new(
        labels: &[String],
        windows: &[Vec<(i64, i64)>],
        steps: &StepTable,
        top_n: usize,
    ) -> Acc {
        let mut w: Vec<Vec<(i64, i64, Option<usize>)>> = windows
            .iter()
            .map(|v| v.iter().map(|&(s, d)| (s, s + d.max(1), None)).collect())
            .collect();
        for (row, sr) in steps.rows.iter().enumerate() {
            for (r, &i) in sr.idx.iter().enumerate() {
                if let Some(x) = w.get_mut(r).and_then(|v| v.get_mut(i)) {
                    x.2 = Some(row);
                }
            }
        }
        for v in &mut w {
            v.sort_by_key(|x| x.0);
        }
        Acc {
            labels: labels.to_vec(),
            windows: w,
            rows: steps
                .rows
                .iter()
                .map(|r| (r.step.clone(), r.dur_ns.iter().copied().max().unwrap_or(0)))
                .collect(),
            top_n,
            collectives: 0,
            late: 0,
            cost: BTreeMap::new(),
            row_cost: vec![BTreeMap::new(); steps.rows.len()],
            row_skipped: vec![false; steps.rows.len()],
            worst: Vec::new(),
            marks: Vec::new(),
            transfers: BTreeMap::new(),
            origin: i64::MAX,
        }
    }

    fn row_of(&self, r: usize, t: i64) -> Option<usize> {
        let w = self.windows.get(r)?;
        let k = w.partition_point(|x| x.0 <= t);
        (0..k)
            .rev()
            .take(4)
            .find(|&i| t < w[i].1)
            .and_then(|i| w[i].2)
    }

    /// One matched collective: its members (rank indices) and their records; `latest`: the
    /// member position with the latest start, `tie`: another started less than the tolerance
    /// before it (no one arrived last).
    #[allow(clippy::too_many_arguments)]
    pub fn add(
        &mut self,
        world: usize,
        key: &str,
        index: usize,
        name: &str,
        members: &[usize],
        recs: &[CollEv],
        latest: usize,
        tie: bool,
    ) {
        if let Some(lo) = recs.iter().map(|r| r.start).min() {
            self.origin = self.origin.min(lo);
        }
        if members.len() < 2 {
            return;
        }
        if let Some(r) = recs.get(latest) {
            self.transfers
                .entry((world, name.to_string()))
                .or_default()
                .push((r.end - r.start).max(0));
        }
        if recs.iter().any(|r| r.prev_end == NO_PREV) {
            for (&m, r) in members.iter().zip(recs) {
                if let Some(x) = self
                    .row_of(m, r.start)
                    .and_then(|i| self.row_skipped.get_mut(i))
                {
                    *x = true;
                }
            }
            return;
        }
        self.collectives += 1;
        let l = latest;
        let Some(lr) = recs.get(l) else { return };
        let transfer = (lr.end - lr.start).max(0);
        if tie {
            return;
        }
        let parts: Vec<(i64, i64, i64, i64)> = recs.iter().map(split).collect();
        let med = |f: fn(&(i64, i64, i64, i64)) -> i64| lower_median(parts.iter().map(f).collect());
        let mine = parts[l];
        let cost = mine.0 - med(|p| p.0);
        if cost <= 0 {
            return;
        }
        self.late += 1;
        let e_work = (mine.1 - med(|p| p.1)).max(0);
        let e_host = (mine.2 - med(|p| p.2)).max(0);
        let e_late = (mine.3 - med(|p| p.3)).max(0);
        let e = e_work + e_host + e_late;
        let (work, late) = if e == 0 {
            (0, 0)
        } else {
            let share = |x: i64| (i128::from(cost) * i128::from(x) / i128::from(e)) as i64;
            (share(e_work), share(e_late))
        };
        let host = cost - work - late;
        let rank = members[l];
        let row = self.row_of(rank, lr.start);
        for (kind, ns) in [
            (Kind::Work, work),
            (Kind::Host, host),
            (Kind::LateStart, late),
        ] {
            if ns <= 0 {
                continue;
            }
            let c = self.cost.entry((rank, kind)).or_default();
            c.0 += ns;
            c.1 += 1;
            if let Some(m) = row.and_then(|i| self.row_cost.get_mut(i)) {
                *m.entry((rank, kind)).or_default() += ns;
            }
        }
        {
            let item = Late {
                world,
                key: key.to_string(),
                index,
                name: name.to_string(),
                rank: self.labels.get(rank).cloned().unwrap_or_default(),
                t_ms: lr.start as f64,
                seg_start_ns: lr.prev_end,
                start_ns: lr.start,
                cost_ns: cost,
                work_ns: work,
                host_ns: host,
                late_ns: late,
                transfer_ns: transfer,
            };
            if self.top_n > 0 {
                self.worst.push((cost, item.clone()));
                if self.worst.len() > 4 * self.top_n {
                    trim(&mut self.worst, self.top_n);
                }
            }
            self.marks.push((cost, item));
            if self.marks.len() > 2 * MARKS {
                trim(&mut self.marks, MARKS);
            }
        }
    }
}

/// Keeps the `n` costliest (ties in a fixed order).
fn trim(v: &mut Vec<(i64, Late)>, n: usize) {
    v.sort_by(|a, b| {
        b.0.cmp(&a.0)
            .then(a.1.world.cmp(&b.1.world))
            .then(a.1.key.cmp(&b.1.key))
            .then(a.1.index.cmp(&b.1.index))
    });
    v.truncate(n);
}

impl Acc {
    /// The totals; `worlds` as the matching used them.
    pub fn finish(mut self, worlds: &[Vec<usize>]) -> CriticalPath {
        trim(&mut self.worst, self.top_n);
        trim(&mut self.marks, MARKS);
        let origin = self.origin;
        let mut marks: Vec<Late> = std::mem::take(&mut self.marks)
            .into_iter()
            .map(|(_, mut l)| {
                l.t_ms = (l.t_ms - origin as f64) / 1e6;
                l
            })
            .collect();
        marks.sort_by_key(|l| (l.start_ns, l.world, l.index));
        // Per step: over the steps measured in full.
        let measured: Vec<usize> = (0..self.rows.len())
            .filter(|&i| !self.row_skipped[i])
            .collect();
        let steps = measured.len();
        let step_ns = if steps > 0 {
            measured.iter().map(|&i| self.rows[i].1 as f64).sum::<f64>() / steps as f64
        } else {
            0.0
        };
        let mut in_steps: BTreeMap<(usize, Kind), i64> = BTreeMap::new();
        for &i in &measured {
            for (&k, &ns) in &self.row_cost[i] {
                *in_steps.entry(k).or_default() += ns;
            }
        }
        let cost: BTreeMap<(usize, Kind), (i64, i64, usize)> = self
            .cost
            .iter()
            .map(|(&k, &(ns, n))| (k, (ns, in_steps.get(&k).copied().unwrap_or(0), n)))
            .collect();
        // With steps, what was charged inside them over their number; else the whole profile.
        let per = |total: i64, in_steps: i64| {
            if steps > 0 {
                in_steps as f64 / steps as f64
            } else {
                total as f64
            }
        };
        let pct = |x: f64| {
            if step_ns > 0.0 {
                100.0 * x / step_ns
            } else {
                0.0
            }
        };
        let label = |r: usize| self.labels.get(r).cloned().unwrap_or_default();
        let world_of = |r: usize| worlds.iter().position(|w| w.contains(&r));
        let mut causes: Vec<Cause> = cost
            .iter()
            .map(|(&(r, kind), &(ns, in_steps, n))| {
                let mine = per(ns, in_steps);
                // The typical rank of the world in the same kind.
                let peers: Vec<usize> = world_of(r)
                    .and_then(|w| worlds.get(w))
                    .cloned()
                    .unwrap_or_else(|| vec![r]);
                let mut of_peers: Vec<f64> = peers
                    .iter()
                    .map(|&p| cost.get(&(p, kind)).map_or(0.0, |&(t, i, _)| per(t, i)))
                    .collect();
                of_peers.sort_by(f64::total_cmp);
                let typical = of_peers
                    .get(of_peers.len().saturating_sub(1) / 2)
                    .copied()
                    .unwrap_or(0.0);
                let net = (mine - typical).max(0.0);
                Cause {
                    who: label(r),
                    world: world_of(r).unwrap_or(0),
                    kind,
                    cost_ns: ns,
                    collectives: n,
                    per_step_ns: mine,
                    step_pct: pct(mine),
                    net_per_step_ns: net,
                    net_step_pct: pct(net),
                }
            })
            .collect();
        // Transfers: each world's median against the other worlds' (the median of their
        // medians) for the same collective name; medians, as one collective that also moves
        // more data or waits on something else does not make a link slow.
        let medians: BTreeMap<&(usize, String), i64> = self
            .transfers
            .iter()
            .map(|(k, v)| (k, lower_median(v.clone())))
            .collect();
        let rows = self.rows.len();
        let mut transfers = Vec::new();
        for (key, v) in &self.transfers {
            let (w, name) = key;
            let n = v.len();
            let others: Vec<i64> = medians
                .iter()
                .filter(|((ow, on), _)| ow != w && on == name)
                .map(|(_, &m)| m)
                .collect();
            let others_ns = (!others.is_empty()).then(|| lower_median(others) as f64);
            let mean = medians.get(key).copied().unwrap_or(0) as f64;
            if let Some(o) = others_ns {
                let extra = ((mean - o) * n as f64).round() as i64;
                // Out of line: more than a fifth over the others' and at least 1 µs a time.
                if mean > 1.2 * o && mean - o >= 1_000.0 {
                    let who = worlds
                        .get(*w)
                        .map(|m| {
                            let l: Vec<&str> = m
                                .iter()
                                .filter_map(|&r| self.labels.get(r).map(String::as_str))
                                .collect();
                            crate::analyze::rankset::compact(&l)
                        })
                        .unwrap_or_default();
                    // Transfers are not split by step: spread over the steps' share of them.
                    // Over every step (a transfer needs no collective before it).
                    let each = if rows > 0 {
                        extra as f64 / rows as f64
                    } else {
                        extra as f64
                    };
                    causes.push(Cause {
                        who,
                        world: *w,
                        kind: Kind::Transfer,
                        cost_ns: extra,
                        collectives: n,
                        per_step_ns: each,
                        step_pct: pct(each),
                        net_per_step_ns: each,
                        net_step_pct: pct(each),
                    });
                }
            }
            transfers.push(Transfer {
                world: *w,
                name: name.clone(),
                collectives: n,
                median_ns: mean,
                others_ns,
            });
        }
        causes.sort_by(|a, b| {
            b.net_per_step_ns
                .total_cmp(&a.net_per_step_ns)
                .then(b.per_step_ns.total_cmp(&a.per_step_ns))
                .then(a.who.cmp(&b.who))
                .then(a.kind.cmp(&b.kind))
        });
        let origin = self.origin;
        let worst = self
            .worst
            .into_iter()
            .map(|(_, mut l)| {
                l.t_ms = (l.t_ms - origin as f64) / 1e6;
                l
            })
            .collect();
        let per_step = self
            .rows
            .iter()
            .zip(&self.row_cost)
            .map(|((step, dur), m)| {
                let top = m
                    .iter()
                    .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
                    .map(|(&(r, k), &ns)| (label(r), k, ns));
                PathStep {
                    step: step.clone(),
                    step_ns: *dur,
                    cost_ns: m.values().sum(),
                    top_ns: top.as_ref().map_or(0, |t| t.2),
                    top_kind: top.as_ref().map(|t| t.1),
                    top_who: top.map(|t| t.0),
                }
            })
            .collect();
        let mut notes = Vec::new();
        let partial = self.rows.len() - steps;
        if partial > 0 && steps > 0 {
            notes.push(format!(
                "per-step costs are over the {steps} steps measured in full: {partial} step(s) hold a collective that some rank had no collective before (its first), which cannot be charged"
            ));
        }
        if self.collectives == 0 {
            notes.push(
                "no matched collective has a collective before it on every rank: the critical path needs at least two per rank"
                    .to_string(),
            );
        }
        CriticalPath {
            collectives: self.collectives,
            late: self.late,
            steps,
            step_ns,
            causes,
            worst,
            transfers,
            per_step,
            notes,
            marks,
        }
    }
}
