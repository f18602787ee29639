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
//! A rank's first collective has its segment from the start of the step it arrives in, the
//! members' segments on one start (the earliest member's step start), so a late step start
//! before it is charged; a first collective outside any step is not charged. Also per collective: the **transfer**, its duration on the last arriver (it
//! waited for no one), per world and collective name; a world whose median transfer is out of
//! line with the same collective's in the other worlds (a slow link) is charged the difference.
//!
//! A collective that compute ran on through (a side stream's: FSDP prefetch, two-batch
//! overlap; [`crate::analyze::collect::overlap`]) costs only what compute waited for it: its
//! late arrival is charged at most its members' longest wait, the rest is [`Hidden`] (where a
//! trace records no `cudaStreamWaitEvent`, every collective is taken as blocking).
//!
//! Figures are totals over the profile and per step (the step table's rows), with the mean step
//! time; the model is checked against an independent script, `tests/check_critical_path.py`.
//! Here the result types; [`acc`] computes them as the matching reads the collectives.

pub(crate) mod acc;
pub(crate) mod graph;
pub mod ideal;
mod kept;
pub mod whatif;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::trace::write::overlay::{Overlay, Slice, CRITICAL_PATH_SORT};
use crate::trace::Ns;

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
    pub cost_ns: Ns,
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
    /// For the costliest causes ([`ROW_CAUSES`]): what it cost in each row of the step table,
    /// `None` for a row not measured in full (the verdict's figure from an onset on).
    #[serde(skip)]
    pub per_row_ns: Vec<Option<Ns>>,
}

/// Causes that keep their cost per step-table row ([`Cause::per_row_ns`]).
pub const ROW_CAUSES: usize = 3;

impl Cause {
    /// Mean cost per step over the rows from `from` on that were measured in full, with the
    /// mean step time of those rows (`steps`: the path's per-step rows); `None` without any.
    pub fn per_step_from(&self, from: usize, steps: &[PathStep]) -> Option<(f64, f64)> {
        let rows: Vec<(i64, i64)> = self
            .per_row_ns
            .iter()
            .zip(steps)
            .skip(from)
            .filter_map(|(c, s)| c.map(|c| (c.get(), s.step_ns.get())))
            .collect();
        if rows.is_empty() {
            return None;
        }
        let n = rows.len() as f64;
        Some((
            rows.iter().map(|r| r.0 as f64).sum::<f64>() / n,
            rows.iter().map(|r| r.1 as f64).sum::<f64>() / n,
        ))
    }

    /// Mean cost per step over the rows before `upto` that were measured in full; `None`
    /// without any.
    pub fn per_step_before(&self, upto: usize) -> Option<f64> {
        let rows: Vec<i64> = self
            .per_row_ns
            .iter()
            .take(upto)
            .filter_map(|c| c.map(Ns::get))
            .collect();
        (!rows.is_empty()).then(|| rows.iter().sum::<i64>() as f64 / rows.len() as f64)
    }
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
    pub seg_start_ns: Ns,
    #[serde(default)]
    pub start_ns: Ns,
    pub cost_ns: Ns,
    pub work_ns: Ns,
    pub host_ns: Ns,
    pub late_ns: Ns,
    pub transfer_ns: Ns,
    /// The members that arrived before it and waited for it (up to [`WAITERS`], the earliest
    /// first): what `merge --critical-path` joins to it by flow arrows. Not in the JSON.
    #[serde(skip)]
    pub waiters: Vec<Waiter>,
}

/// A member that waited at a late arrival's collective: its label and its own arrival on the
/// common clock.
#[derive(Debug, Clone, PartialEq)]
pub struct Waiter {
    pub rank: String,
    pub since_ns: Ns,
}

/// The most waiters kept per late arrival for the merged trace (a world of 1,024 ranks would
/// otherwise draw 1,023 arrows from each).
pub(crate) const WAITERS: usize = 16;

/// Transfers of one collective name in one world.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Transfer {
    pub world: usize,
    pub name: String,
    pub collectives: usize,
    /// The median transfer (the collective's duration on its last arriver), ns.
    pub median_ns: f64,
    /// The other worlds' median (of their medians) for the same name, when there are others
    /// moving as much data (within 10 %, or sizes unknown).
    pub others_ns: Option<f64>,
    /// The median data moved, bytes, when every one says (`In`/`Out msg nelems` × `dtype`).
    #[serde(default)]
    pub bytes: Option<f64>,
    /// The median bus bandwidth, GB/s (NCCL's: size / transfer × the collective's factor).
    #[serde(default)]
    pub busbw_gbps: Option<f64>,
}

/// What a host-bound rank's launching thread did while its GPU sat idle before the collectives
/// it arrived last at ([`crate::analyze::collect::gaps`]).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct HostOps {
    pub who: String,
    /// Segments looked into (its late arrivals with a host part, the costliest kept).
    pub segments: usize,
    /// GPU idle time inside them, ns.
    pub idle_ns: Ns,
    /// Of it, what no op of the launching thread covers, ns.
    pub unrecorded_ns: Ns,
    /// The ops with the most self time inside the idle time, largest first.
    pub ops: Vec<HostOp>,
    /// The CPU events inside the segments were too many: the figures cover the first.
    #[serde(default)]
    pub capped: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct HostOp {
    pub name: String,
    /// Self time inside the GPU's idle time, ns.
    pub ns: Ns,
}

/// A rank's late arrivals at collectives that compute ran on through (a side stream's:
/// [`crate::analyze::collect::overlap`]): charged only the part compute waited for, the rest
/// hidden by the overlap.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Hidden {
    pub who: String,
    pub world: usize,
    /// Overlapped collectives it arrived last at.
    pub collectives: usize,
    /// Per step: its lead at them over the median member (what the critical path would charge
    /// had compute waited for them), ns.
    pub lead_per_step_ns: f64,
    /// Of it, the part compute did not wait for, ns.
    pub hidden_per_step_ns: f64,
}

impl Hidden {
    /// "hidden by overlap: 0.09 ms of TP01's 0.09 ms a step …".
    pub fn note(&self) -> String {
        format!(
            "hidden by overlap: {:.2} ms of {}'s {:.2} ms a step (its late arrivals at {} side-stream collectives that compute ran on through; charged only the {:.2} ms compute waited for them)",
            self.hidden_per_step_ns / 1e6,
            self.who,
            self.lead_per_step_ns / 1e6,
            self.collectives,
            (self.lead_per_step_ns - self.hidden_per_step_ns).max(0.0) / 1e6
        )
    }
}

/// One step of the step table: what the late arrivals cost it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PathStep {
    pub step: String,
    /// The longest rank's step duration, ns.
    pub step_ns: Ns,
    pub cost_ns: Ns,
    /// The (rank, kind) that cost it the most, and how much.
    pub top_who: Option<String>,
    pub top_kind: Option<Kind>,
    pub top_ns: Ns,
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
    /// For the host-bound ranks that cost the step the most: what their host did in the gaps.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub host_ops: Vec<HostOps>,
    /// The ranks whose late arrivals at side-stream collectives the overlap hid, in part or
    /// all ([`Hidden`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hidden: Vec<Hidden>,
    /// What making each rank, or removing each cause, would give back, re-simulated on the
    /// matched collectives ([`whatif`]).
    #[serde(default)]
    pub what_if: whatif::WhatIf,
    /// The costliest late arrivals, up to [`MARKS`], in time order: what `merge
    /// --critical-path` draws in the merged trace ([`CriticalPath::overlay`]).
    #[serde(skip)]
    pub marks: Vec<Late>,
}

/// Late arrivals kept for the merged trace's critical-path tracks.
pub(crate) const MARKS: usize = 20_000;

impl CriticalPath {
    /// The late arrivals as slices for a merged trace: on each late rank's "critical path"
    /// track, its segment before the collective it arrived last at (what it was doing while the
    /// others were already waiting), named by cost and cause; on each waiter's, the wait from
    /// its own arrival to the late one, joined to the late slice by a flow arrow
    /// ([`waiting`]).
    pub fn overlay(&self) -> Overlay {
        let mut slices = Vec::new();
        for (k, l) in self.marks.iter().enumerate() {
            let mut late = late_slice(l);
            let mut waits = Vec::with_capacity(l.waiters.len());
            for (j, w) in l.waiters.iter().enumerate() {
                let id = (k * WAITERS + j) as u64 + 1;
                let mut wait = waiting(l, w);
                if late.dur_ns.get() >= 2 && wait.dur_ns.get() >= 2 {
                    late.flows_out.push(id);
                    wait.flows_in.push(id);
                }
                waits.push(wait);
            }
            // The late slice first: its flows begin at the very time the waits' end, and a
            // viewer takes events of one time in the order written.
            slices.push(late);
            slices.append(&mut waits);
        }
        Overlay {
            track: "critical path".into(),
            sort: CRITICAL_PATH_SORT,
            threads: Vec::new(),
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

    /// What a rank costs in all, per step, ns (0, never −0, for a rank charged nothing: a
    /// float `sum` of nothing is −0.0 and would print as "-0.00").
    pub fn rank_per_step(&self, who: &str) -> f64 {
        self.causes
            .iter()
            .filter(|c| c.who == who)
            .fold(0.0, |sum, c| sum + c.per_step_ns)
    }

    /// What the rank of `c` costs the step, per step (ns), when it is a stage of a pipeline
    /// that runs its steps in lockstep and the replay is trusted
    /// ([`whatif::WhatIf::pipeline_saving`]); `None` for a slow link or any other rank, whose
    /// local charge stands.
    pub fn replayed_cost(&self, c: &Cause) -> Option<f64> {
        (c.kind != Kind::Transfer)
            .then(|| self.what_if.pipeline_saving(&c.who))
            .flatten()
            .map(|ns| ns.get() as f64)
    }

    /// The pipeline stage the first line names instead of a rank ([`whatif::WhatIf::lead_stage`])
    /// when its ranks made typical together give back more than the critical path's lead
    /// costs (its replayed cost where there is one, else its local charge).
    pub fn stage_lead(&self, threshold_pct: f64) -> Option<&whatif::StageGroupIf> {
        let g = self.what_if.lead_stage(threshold_pct)?;
        let lead = self.lead().map_or(0.0, |c| {
            self.replayed_cost(c)
                .unwrap_or_else(|| self.rank_per_step(&c.who))
        });
        (g.saved.get() as f64 > lead).then_some(g)
    }

    /// [`CriticalPath::replayed_cost`] as a percentage of the step.
    pub fn replayed_pct(&self, c: &Cause) -> Option<f64> {
        self.replayed_cost(c)
            .filter(|_| self.step_ns > 0.0)
            .map(|ns| 100.0 * ns / self.step_ns)
    }
}

/// A late arrival on its rank's track: its segment before the collective it arrived last at,
/// named by cost and cause.
/// The label of rank `r` (empty when `labels` has none): the accumulator's, the what-if's and
/// the ideal timeline's.
fn label(labels: &[String], r: usize) -> String {
    labels.get(r).cloned().unwrap_or_default()
}

fn late_slice(l: &Late) -> Slice {
    let parts = [
        (l.work_ns, "more work"),
        (l.host_ns, "host gap"),
        (l.late_ns, "late step start"),
    ];
    let why = parts.iter().max_by_key(|p| p.0).map_or("", |p| p.1);
    let mut args = Map::new();
    let us = |ns: Ns| Value::from((ns.get() as f64 / 1e3 * 1e3).round() / 1e3);
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
            l.cost_ns.as_us()
        ),
        start_ns: l.seg_start_ns,
        dur_ns: l.start_ns - l.seg_start_ns,
        args,
        ..Slice::default()
    }
}

/// A member's wait at a late arrival's collective, on the member's track: from its own
/// arrival to the late one's.
fn waiting(l: &Late, w: &Waiter) -> Slice {
    let mut args = Map::new();
    args.insert("for".into(), Value::from(l.rank.clone()));
    args.insert("collective".into(), Value::from(l.name.clone()));
    args.insert("index".into(), Value::from(l.index));
    Slice {
        rank: w.rank.clone(),
        name: format!("waits for {} at {} #{}", l.rank, l.name, l.index),
        start_ns: w.since_ns,
        dur_ns: l.start_ns - w.since_ns,
        args,
        ..Slice::default()
    }
}
