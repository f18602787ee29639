//! The verdict on top of the report: balanced or not, the largest gap and its cause (from
//! [`super::attribution`]: uneven load, slower device or host, more kernels), the slowest rank,
//! the kernel classes that explain most of its gap, the onset, and the collective straggler.
//!
//! The first line names the cause that costs the step the most ([`Leads`]); the other causes
//! follow, costliest first, each with its cost per step ([`Also`]), then the onset. A rank is compared with the other ranks of its DP
//! replica (the step table's peers), never with another replica's; replicas are compared with
//! each other by the attribution, on per-replica figures.
//!
//! Ranks are compared on *work time*: the union of their non-communication GPU ops (CPU ops in
//! CPU-only traces). Communication is left out because in a synchronous job the fast ranks
//! spend the slow rank's extra time waiting inside collectives. The slowest rank is the one
//! with the most work; it is *imbalanced* when its work exceeds the mean of the others by more
//! than the threshold, or when the step table shows an onset. The gap is split by class: for
//! each non-communication class, the slow rank's time minus the others' mean (over the steps
//! from the onset on when there is one, else over the whole profile); the classes listed are the
//! largest positive contributions, up to 80 % of the positive total (at most three).

use serde::{Deserialize, Serialize};

use super::attribution::{Attribution, Cause, Record};
use super::ep::EpRecord;
use super::evidence::Steps;
use super::moving::{self, Moving};
use crate::analyze::collect::busy::RankSummary;
use crate::analyze::reduce::collectives::CollectiveReport;
use crate::analyze::reduce::path::whatif::StageGroupIf;
use crate::analyze::reduce::path::{self, CriticalPath};
use crate::analyze::reduce::steps::{excess_among, Onset, StepTable};
use crate::trace::Ns;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ClassShare {
    pub class: String,
    /// Slow rank minus the others' mean.
    pub gap_ns: Ns,
    /// Share of the positive gap, percent.
    pub share_pct: f64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Verdict {
    pub ranks: usize,
    pub balanced: bool,
    pub threshold_pct: f64,
    /// What was compared: `gpu work` or `cpu work`.
    pub metric: String,
    pub slowest: Option<String>,
    pub slowest_index: Option<usize>,
    pub slowest_work_ns: Ns,
    pub others_mean_work_ns: f64,
    /// Slowest work over the others' mean, minus one, percent.
    pub excess_pct: f64,
    /// Classes that explain the gap, largest first.
    pub classes: Vec<ClassShare>,
    /// The subject of the largest gap (a rank label or `DPnn`) and its cause.
    #[serde(default)]
    pub lead: Option<String>,
    #[serde(default)]
    pub cause: Option<String>,
    pub onset: Option<Onset>,
    pub straggler: Option<String>,
    pub straggler_pct: f64,
    /// No cause holds from step to step, but some would lead if it did: too few steps to
    /// tell them from noise ([`super::evidence`]).
    #[serde(default)]
    pub inconclusive: bool,
    /// The verdict in sentences.
    pub lines: Vec<String>,
}

/// Inputs per rank: work, class totals (whole profile) and class totals per step.
pub(crate) struct Input<'a> {
    pub(crate) summaries: &'a [RankSummary],
    pub(crate) class_names: &'a [String],
    pub(crate) comm_class: usize,
    /// `class_ns[rank][class]` over the whole profile.
    pub(crate) class_ns: &'a [Vec<i64>],
    /// `step_class_ns[rank][row][class]` aligned with the step table's rows.
    pub(crate) step_class_ns: &'a [Vec<Vec<i64>>],
    pub(crate) steps: &'a StepTable,
    pub(crate) collectives: &'a CollectiveReport,
    /// The critical path across ranks ([`crate::analyze::reduce::path`]).
    pub(crate) path: &'a CriticalPath,
    pub(crate) attribution: &'a Attribution,
    /// MoE EP splits ([`super::ep`]).
    pub(crate) ep: &'a [EpRecord],
    pub(crate) threshold: f64,
    /// The world the traces say they belong to (`distributedInfo.world_size`, the largest).
    pub(crate) world: Option<i64>,
}

/// The verdict, in the order its lines state it: who leads the first line ([`Leads`]), the
/// slowest rank by work, the classes that explain its gap, the onset and the straggler. Each
/// step is a small function below.
pub(crate) fn judge(inp: &Input<'_>) -> Verdict {
    let n = inp.summaries.len();
    let mut v = Verdict {
        ranks: n,
        balanced: true,
        threshold_pct: 100.0 * inp.threshold,
        metric: if inp.summaries.iter().all(|s| s.figures.source == "cpu") {
            "cpu work"
        } else {
            "gpu work"
        }
        .to_string(),
        onset: inp.steps.onset.clone(),
        straggler: inp.collectives.straggler.clone(),
        straggler_pct: inp.collectives.straggler_pct,
        ..Default::default()
    };
    if n < 2 {
        v.lines.push(match inp.world.filter(|&w| w > n as i64) {
            Some(w) => format!(
                "{n} rank of a world of {w} (the trace's distributedInfo): nothing to compare until the others' traces are given (all of them in one folder: --profile-dir DIR)."
            ),
            None => format!("{n} rank: nothing to compare across ranks."),
        });
        return v;
    }
    let work = work_per_rank(inp);
    // Each rank against its peers (its DP replica's other ranks), never across replicas.
    let peers_of = |r: usize| inp.steps.peers_of(r, n);
    let excess: Vec<f64> = (0..n)
        .map(|r| excess_among(&work, r, &peers_of(r)))
        .collect();
    let Some(slow) = (0..n).max_by(|&a, &b| excess[a].total_cmp(&excess[b]).then(b.cmp(&a))) else {
        return v;
    };
    let slow_peers = peers_of(slow);
    let others =
        slow_peers.iter().map(|&i| work[i]).sum::<i64>() as f64 / slow_peers.len().max(1) as f64;
    v.slowest = Some(inp.summaries[slow].figures.rank.clone());
    v.slowest_index = Some(slow);
    v.slowest_work_ns = Ns::new(work[slow]);
    v.others_mean_work_ns = others;
    v.excess_pct = if others > 0.0 {
        100.0 * (work[slow] as f64 / others - 1.0)
    } else {
        0.0
    };
    let leads = Leads::choose(inp, &v);
    let slow_label = &inp.summaries[slow].figures.rank;
    let slow_from = onset_row(v.onset.as_ref(), slow_label);
    let slow_even = v.excess_pct <= 100.0 * inp.threshold
        || hidden(inp, slow_label, slow_from)
        || work_steps(inp, slow, slow_from).varies();
    let onset_even = v
        .onset
        .as_ref()
        .is_none_or(|o| hidden(inp, &o.rank, o.step_index));
    // Nothing leads: balanced when nothing costs the step the threshold either, else
    // inconclusive (a candidate that does not hold from step to step, or an onset the others
    // wait for that no cause explains over its few steps): never a first line that says neither.
    let nothing_leads = leads.nothing();
    v.balanced = nothing_leads && slow_even && onset_even && leads.noisy.is_empty();
    v.inconclusive = nothing_leads && !v.balanced;
    (v.lead, v.cause) = leads.subject();
    if v.inconclusive {
        v.cause = Some("inconclusive".to_string());
    }
    // The rank the gap is explained for: the onset's rank when there is one.
    let who = v.onset.as_ref().map_or(slow, |o| o.rank_index);
    v.classes = class_shares(inp, who, v.onset.as_ref(), &peers_of(who));

    v.lines = lead_lines(inp, &leads, &v, &work);
    // Right below the first line, which it qualifies (the path's line is first when it leads).
    if let Some(w) = what_if_line(inp, &leads) {
        v.lines.insert(1.min(v.lines.len()), w);
    }
    let all_others = slow_peers.len() + 1 == n;
    let balance = balance_line(inp, &v, slow, who, work[slow], others, all_others);
    // A balanced verdict says so first; the ranks that cost the step little follow it.
    let early = early_arrivers(inp, &leads);
    let balance = not_said_again(balance, v.lines.is_empty() && early.is_empty());
    if v.balanced {
        v.lines.push(balance);
        v.lines.extend(early);
    } else {
        v.lines.extend(early);
        v.lines.push(balance);
    }
    v.lines.extend(link_line(inp, &leads, v.balanced));
    v.lines.extend(classes_line(inp, &v, who));
    v.lines.extend(onset_line(inp, &v));
    if let Some(s) = &v.straggler {
        v.lines.push(format!(
            "Collectives: rank {s} arrived last at {:.0} % of the {} matched collectives.",
            v.straggler_pct, inp.collectives.matched
        ));
    }
    v
}

/// Each rank's work: inside the steps when there are steps (what runs outside them — an idle
/// scheduler loop, warm-up — is no load of the profiled batches), else over the whole profile.
fn work_per_rank(inp: &Input<'_>) -> Vec<i64> {
    if inp.steps.rows.is_empty() {
        return inp
            .summaries
            .iter()
            .map(|s| s.figures.compute_ns.get())
            .collect();
    }
    (0..inp.summaries.len())
        .map(|r| {
            inp.steps
                .rows
                .iter()
                .map(|row| row.work_ns[r])
                .sum::<Ns>()
                .get()
        })
        .collect()
}

/// The candidates for the first line and the one that leads it.
///
/// - the critical path's lead ([`path_lead`]) when it costs at least the threshold of the step
///   ([`lead_pct`]) and more per step than the attribution's lead gap — both measured by
///   [`order_key`]: what making the rank typical gives back when the what-if is trusted, else
///   the local charge — or is the work of the very
///   rank the attribution leads with (the line then carries both: what the rank costs the
///   step, and why its work is longer). In CPU-only traces a rank's attribution time is its
///   step less its collectives, so the time its thread records no op counts there too: the
///   same rank named by both is the same time seen twice, and the path leads whatever its
///   kind, since its split says what that time was;
/// - else an EP split's gap (hot experts, slow dispatch/combine), the largest first;
/// - else the attribution's largest gap not told by an EP split;
/// - else, when the critical path's steps are held up by a different rank from step to step, a
///   slowdown that moves between ranks ([`moving`]).
struct Leads<'a> {
    /// EP gaps, the largest first.
    ep_gaps: Vec<&'a EpRecord>,
    /// The attribution's largest gap that no EP split tells.
    gap: Option<&'a Record>,
    /// The critical path's lead, when it leads.
    path: Option<&'a path::Cause>,
    /// For a `work` path lead: the rank's EP split, else its attribution record, whose cause
    /// and sentence the line carries.
    path_ep: Option<&'a EpRecord>,
    path_record: Option<&'a Record>,
    /// Candidates left out because their per-step figure varies within noise.
    noisy: Vec<Noisy>,
    /// When nothing else leads: a slowdown that moves between ranks from step to step.
    moving: Option<Moving>,
    /// A pipeline stage whose ranks give back more together than the critical path's lead
    /// ([`CriticalPath::stage_lead`]): it leads instead.
    stage: Option<&'a StageGroupIf>,
}

/// The verdict's cause when a pipeline stage leads ([`stage_line`]).
pub(crate) const SLOW_STAGE: &str = "slow pipeline stage";

/// The cause of a slowdown that moves between ranks ([`moving`]), as the verdict and the
/// saved summary name it.
pub(crate) const MOVING: &str = "moves between ranks";

/// A candidate whose per-step figure does not hold from step to step.
struct Noisy {
    who: String,
    cause: String,
    /// What varies: "cost at the collectives" or "work over its peers'".
    what: &'static str,
    steps: Steps,
}

impl<'a> Leads<'a> {
    fn choose(inp: &Input<'a>, v: &Verdict) -> Leads<'a> {
        let mut ep_gaps: Vec<&EpRecord> = inp.ep.iter().filter(|e| e.is_gap()).collect();
        ep_gaps.sort_by(|a, b| b.total_ratio.total_cmp(&a.total_ratio));
        let mut l = Leads {
            ep_gaps,
            gap: None,
            path: None,
            path_ep: None,
            path_record: None,
            noisy: Vec::new(),
            moving: None,
            stage: inp.path.stage_lead(100.0 * inp.threshold),
        };
        let mut noisy = Vec::new();
        let gaps: Vec<&Record> = inp
            .attribution
            .gaps()
            .filter(|g| !l.is_ep_gap(g) && !hidden_gap(inp, g))
            .collect();
        l.gap = rank_gaps(inp, gaps).into_iter().find(|g| {
            let steps = gap_steps(inp, g);
            if steps.varies() {
                noisy.push(Noisy {
                    who: g.who.clone(),
                    cause: g.cause.as_str().to_string(),
                    what: "work over its peers'",
                    steps,
                });
            }
            !steps.varies()
        });
        let cpu_only = v.metric == "cpu work";
        l.path = path_lead(inp, v).filter(|c| {
            l.gap.is_none_or(|g| {
                order_key(inp, &c.who, c.net_per_step_ns) > order_key(inp, &g.who, gap_per_step(g))
                    || ((c.kind == path::Kind::Work || cpu_only) && g.who == c.who)
            })
        });
        if let Some(c) = l.path {
            let steps = path_steps(c, inp.path, v.onset.as_ref());
            if steps.varies() {
                noisy.push(Noisy {
                    who: c.who.clone(),
                    cause: path_cause(c.kind).to_string(),
                    what: "cost at the collectives",
                    steps,
                });
                l.path = None;
            }
        }
        l.noisy = noisy;
        if l.stage.is_some() {
            // The stage's line says what its ranks cost; a rank's is below it, if at all.
            l.path = None;
        }
        if l.path.is_none() && l.gap.is_none() && l.ep_gaps.is_empty() && l.stage.is_none() {
            l.moving = moving::moving(inp.path, inp.threshold);
        }
        let work_lead = l.path.filter(|c| c.kind == path::Kind::Work);
        l.path_ep = work_lead.and_then(|c| l.ep_gaps.iter().copied().find(|e| e.rank == c.who));
        l.path_record = work_lead.filter(|_| l.path_ep.is_none()).and_then(|c| {
            inp.attribution
                .gaps()
                .find(|g| g.who == c.who && !l.is_ep_gap(g))
        });
        l
    }

    /// Records an EP split already tells (the rank, or its replica: hot experts): not repeated.
    fn is_ep_gap(&self, g: &Record) -> bool {
        g.cause == Cause::HotExperts || self.ep_gaps.iter().any(|e| e.rank == g.who)
    }

    /// No candidate leads the first line.
    fn nothing(&self) -> bool {
        self.path.is_none()
            && self.gap.is_none()
            && self.ep_lead().is_none()
            && self.moving.is_none()
            && self.stage.is_none()
    }

    fn ep_lead(&self) -> Option<&'a EpRecord> {
        self.ep_gaps.first().copied()
    }

    /// The cause and sentence of the rank's own explanation a `work` path lead carries.
    fn told(&self) -> Option<(&'a str, &'a str)> {
        match (self.path_ep, self.path_record) {
            (Some(e), _) => Some((e.cause.as_str(), e.sentence.as_str())),
            (None, Some(g)) => Some((g.cause.as_str(), g.sentence.as_str())),
            _ => None,
        }
    }

    /// The first line's subject and cause.
    fn subject(&self) -> (Option<String>, Option<String>) {
        if let Some(g) = self.stage {
            (Some(g.who.clone()), Some(SLOW_STAGE.to_string()))
        } else if let Some(c) = self.path {
            let cause = self.told().map_or(path_cause(c.kind), |t| t.0);
            (Some(c.who.clone()), Some(cause.to_string()))
        } else if let Some(e) = self.ep_lead() {
            (Some(e.rank.clone()), Some(e.cause.clone()))
        } else if let Some(g) = self.gap {
            (Some(g.who.clone()), Some(g.cause.as_str().to_string()))
        } else if self.moving.is_some() {
            (None, Some(MOVING.to_string()))
        } else {
            (None, None)
        }
    }
}

/// The critical path's candidate for the first line: its lead ([`CriticalPath::lead`], the
/// largest local charge that is the rank's own) when it costs at least the threshold of the
/// step — or, when the what-if is trusted, another such cause whose rank gives back more when
/// made typical ([`order_key`]): a rank charged the most locally may give back little alone,
/// because another rank arrives late at the same collectives.
fn path_lead<'a>(inp: &Input<'a>, v: &Verdict) -> Option<&'a path::Cause> {
    let p = inp.path;
    let eligible = |c: &path::Cause| {
        let pct = p
            .replayed_pct(c)
            .unwrap_or_else(|| lead_pct(c, p, v.onset.as_ref()));
        p.steps > 0 && pct >= 100.0 * inp.threshold
    };
    let first = p.lead().filter(|c| eligible(c))?;
    let own = |c: &path::Cause| {
        c.kind != path::Kind::Transfer
            && c.net_per_step_ns > 0.0
            && c.net_per_step_ns >= 0.5 * c.per_step_ns
    };
    let key = |c: &path::Cause| order_key(inp, &c.who, c.net_per_step_ns);
    let best = p
        .causes
        .iter()
        .filter(|c| own(c) && eligible(c))
        .max_by(|a, b| {
            key(a)
                .partial_cmp(&key(b))
                .unwrap_or(std::cmp::Ordering::Equal)
        });
    Some(best.filter(|b| key(b) > key(first)).unwrap_or(first))
}

/// What orders the candidates for the first line, per step (ns): first what making the rank
/// typical gives back, re-simulated at the collectives ([`replayed_saving`]), when the replay
/// can be trusted and measured the rank — else its local charge `local`, which also breaks
/// ties. Whether a candidate is one at all (its threshold, its noise) stays on its local
/// charge.
fn order_key(inp: &Input<'_>, who: &str, local: f64) -> (f64, f64) {
    (replayed_saving(inp, who).unwrap_or(local), local)
}

/// What making `who` typical gives back per step (ns), when the what-if is trusted (its model
/// error small) and the critical path measured the rank ([`path_cost`]); `None` otherwise.
fn replayed_saving(inp: &Input<'_>, who: &str) -> Option<f64> {
    let w = &inp.path.what_if;
    (w.trusted() && local_path_cost(inp, who, 0).is_some()).then(|| w.saved_by(who).get() as f64)
}

/// What a path cause costs as a share of the step, as its line states it: from the onset on
/// for the rank that became slower there (the steps before it do not dilute it), else its cost
/// over the typical rank's.
fn lead_pct(c: &path::Cause, p: &CriticalPath, onset: Option<&Onset>) -> f64 {
    cost_onset(c, p, onset)
        .and_then(|o| c.per_step_from(o.step_index, &p.per_step))
        .filter(|&(_, step)| step > 0.0)
        .map_or(c.net_step_pct, |(ns, step)| 100.0 * ns / step)
}

/// The onset of a path cause: the work onset of its rank, when its cost began there too —
/// the steps before cost at most half of what the steps from it on cost each. A rank late in
/// every step whose work grew in a later one did not start costing there.
fn cost_onset<'a>(
    c: &path::Cause,
    p: &CriticalPath,
    onset: Option<&'a Onset>,
) -> Option<&'a Onset> {
    onset.filter(|o| {
        o.rank == c.who
            && o.step_index > 0
            && c.per_step_from(o.step_index, &p.per_step)
                .is_some_and(|(from, _)| {
                    c.per_step_before(o.step_index)
                        .is_none_or(|b| b <= from / 2.0)
                })
    })
}

/// What a rank costs the step at the collectives, per step, and the step it is a share of
/// (ns), from row `from` of the step table on — when the critical path measured it: its
/// [`local_path_cost`], except in a pipeline, where the replay's saving over the profile
/// stands for it when trusted ([`path::whatif::WhatIf::pipeline_saving`]: a wait imposed
/// on a neighbour may sit in a bubble). `None` when the path cannot say (no matched
/// collective of that rank, no steps): the rank's own gap then stands.
fn path_cost(inp: &Input<'_>, who: &str, from: usize) -> Option<(f64, f64)> {
    let local = local_path_cost(inp, who, from)?;
    Some(match inp.path.what_if.pipeline_saving(who) {
        Some(ns) => (ns.get() as f64, inp.path.step_ns),
        None => local,
    })
}

/// What a rank's late arrivals are charged at the collectives, per step, and the step it is
/// a share of (ns), from row `from` of the step table on — when the critical path measured
/// it: its world's collectives were matched and charged per step.
fn local_path_cost(inp: &Input<'_>, who: &str, from: usize) -> Option<(f64, f64)> {
    let p = inp.path;
    let matched = inp
        .collectives
        .ranks
        .iter()
        .any(|r| r.rank == who && r.matched > 0);
    if p.collectives == 0 || p.steps == 0 || p.step_ns <= 0.0 || !matched {
        return None;
    }
    let (mut ns, mut step) = (0.0, p.step_ns);
    for c in p.causes.iter().filter(|c| c.who == who) {
        match c.per_step_from(from, &p.per_step).filter(|_| from > 0) {
            Some((x, s)) if s > 0.0 => {
                ns += x;
                step = s;
            }
            _ => ns += c.per_step_ns,
        }
    }
    Some((ns, step))
}

/// [`path_cost`] as a percentage of the step.
fn path_cost_pct(inp: &Input<'_>, who: &str, from: usize) -> Option<f64> {
    path_cost(inp, who, from).map(|(ns, step)| 100.0 * ns / step)
}

/// A rank whose extra work the others do not wait for: the critical path measured it and it
/// costs the step less than the threshold. Its work may be longer, but the step is not
/// (it arrives early, or waits for someone else anyway); it is said, never the verdict.
fn hidden(inp: &Input<'_>, who: &str, from: usize) -> bool {
    path_cost_pct(inp, who, from).is_some_and(|pct| pct < 100.0 * inp.threshold)
}

/// An attribution gap of a rank (not a replica: replicas share no collective) that
/// [`hidden`] says costs the step little.
fn hidden_gap(inp: &Input<'_>, g: &Record) -> bool {
    g.scope != "replica" && hidden(inp, &g.who, from_row(inp, g))
}

/// What a rank gap costs the step at the collectives, per step, and the step it is a share
/// of (ns), from the record's first step on ([`path_cost`]); `None` for a replica (replicas
/// share no collective) or a rank the critical path did not measure.
fn gap_path_cost(inp: &Input<'_>, g: &Record) -> Option<(f64, f64)> {
    (g.scope != "replica")
        .then(|| path_cost(inp, &g.who, from_row(inp, g)))
        .flatten()
}

/// The step table's row a record counts from (0: all of them).
fn from_row(inp: &Input<'_>, g: &Record) -> usize {
    g.from_step
        .as_ref()
        .and_then(|s| inp.steps.rows.iter().position(|r| &r.step == s))
        .unwrap_or(0)
}

/// The onset's row when `who` is the rank that became slower there, else 0 (all rows).
fn onset_row(onset: Option<&Onset>, who: &str) -> usize {
    onset
        .filter(|o| o.rank == who && o.step_index > 0)
        .map_or(0, |o| o.step_index)
}

/// A path cause's cost in each row of the step table (from the onset on for the rank that
/// became slower there), as [`Steps`] judges it.
fn path_steps(c: &path::Cause, p: &CriticalPath, onset: Option<&Onset>) -> Steps {
    let from = onset_row(onset, &c.who);
    let samples: Vec<f64> = c
        .per_row_ns
        .iter()
        .skip(from)
        .take(p.per_step.len().max(c.per_row_ns.len()))
        .filter_map(|x| x.map(|ns| ns.get() as f64))
        .collect();
    Steps::of(&samples)
}

/// A rank's work over its peers' mean in each row of the step table from `from` on.
fn work_steps(inp: &Input<'_>, r: usize, from: usize) -> Steps {
    let samples = work_excess(inp, r, from);
    if samples.is_empty() {
        return Steps::Holds;
    }
    Steps::of(&samples)
}

/// [`work_steps`]' samples: rank `r`'s work less its peers' mean, each row from `from` on
/// (none when it has no peers).
fn work_excess(inp: &Input<'_>, r: usize, from: usize) -> Vec<f64> {
    let peers = inp.steps.peers_of(r, inp.summaries.len());
    if peers.is_empty() {
        return Vec::new();
    }
    inp.steps
        .rows
        .iter()
        .skip(from)
        .map(|row| {
            let theirs = peers
                .iter()
                .map(|&i| row.work_ns[i].get() as f64)
                .sum::<f64>();
            row.work_ns[r].get() as f64 - theirs / peers.len() as f64
        })
        .collect()
}

/// A rank gap's [`work_steps`] from its record's first step; a replica's holds (replicas'
/// steps are not one another's).
fn gap_steps(inp: &Input<'_>, g: &Record) -> Steps {
    if g.scope == "replica" {
        return Steps::Holds;
    }
    match inp.summaries.iter().position(|s| s.figures.rank == g.who) {
        Some(r) => work_steps(inp, r, from_row(inp, g)),
        None => Steps::Holds,
    }
}

/// What a gap costs the step, as its line ends: "; it costs every step 4.11 ms (6.1 % of the
/// 67.44 ms step) at the collectives" when the critical path measured its rank, else its own
/// time over its peers' per step ("; its work takes 3.10 ms a step more than its peers'": a
/// replica, or a rank no matched collective tells about), the figure it is ranked by
/// ([`gap_cost_ns`]).
fn gap_cost(inp: &Input<'_>, g: &Record) -> String {
    match gap_path_cost(inp, g).filter(|&(_, step)| step > 0.0) {
        Some((ns, step)) => format!(
            "; it costs every step {:.2} ms ({:.1} % of the {:.2} ms step) at the collectives",
            ns / 1e6,
            100.0 * ns / step,
            step / 1e6
        ),
        None if gap_per_step(g) > 0.0 => format!(
            "; its work takes {:.2} ms a step more than its peers'",
            gap_per_step(g) / 1e6
        ),
        None => String::new(),
    }
}

/// The classes that explain `who`'s gap against its peers: for each non-communication class,
/// its time minus the peers' mean (from the onset on when there is one, else over the whole
/// profile); the largest positive ones, up to 80 % of the positive total (at most three).
fn class_shares(
    inp: &Input<'_>,
    who: usize,
    onset: Option<&Onset>,
    peers: &[usize],
) -> Vec<ClassShare> {
    let per_class: Vec<Vec<i64>> = match onset {
        Some(o) => inp
            .step_class_ns
            .iter()
            .map(|rows| {
                let mut sum = vec![0i64; inp.class_names.len()];
                for row in rows.iter().skip(o.step_index) {
                    for (s, x) in sum.iter_mut().zip(row) {
                        *s += x;
                    }
                }
                sum
            })
            .collect(),
        None => inp.class_ns.to_vec(),
    };
    let mut gaps: Vec<(usize, f64)> = (0..inp.class_names.len())
        .filter(|&c| c != inp.comm_class)
        .map(|c| {
            let mine = per_class[who].get(c).copied().unwrap_or(0) as f64;
            let rest: f64 = peers
                .iter()
                .map(|&r| per_class[r].get(c).copied().unwrap_or(0) as f64)
                .sum::<f64>()
                / peers.len().max(1) as f64;
            (c, mine - rest)
        })
        .filter(|&(_, g)| g > 0.0)
        .collect();
    gaps.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    let positive: f64 = gaps.iter().map(|g| g.1).sum();
    let mut covered = 0.0;
    let mut out = Vec::new();
    for &(c, g) in &gaps {
        if out.len() == 3 || (positive > 0.0 && covered >= 0.8 * positive) {
            break;
        }
        covered += g;
        out.push(ClassShare {
            class: inp.class_names[c].clone(),
            gap_ns: Ns::new(g.round() as i64),
            share_pct: if positive > 0.0 {
                100.0 * g / positive
            } else {
                0.0
            },
        });
    }
    out
}

/// The first line and the causes below it: the first line ([`Leads`]), then every other cause
/// in the order of what it costs the step ([`Also`]): the EP gaps not told by the first line
/// (at most three), the attribution's gaps (three subjects in all, the first line's included)
/// and, when the profile is imbalanced, a slow link. `work`: each rank's, as [`judge`] measured.
fn lead_lines(inp: &Input<'_>, leads: &Leads<'_>, v: &Verdict, work: &[i64]) -> Vec<String> {
    let mut lines = Vec::new();
    if v.inconclusive {
        lines.extend(inconclusive_line(&leads.noisy).or_else(|| unexplained_onset_line(inp, v)));
    }
    if let Some(m) = &leads.moving {
        lines.push(moving::line(m, &v.metric));
    }
    if let Some(g) = leads.stage {
        lines.push(stage_line(inp, g, compared(inp, v), work));
    }
    if let Some(c) = leads.path {
        lines.push(
            path_line(c, leads.told(), inp.path, &v.metric, v.onset.as_ref())
                + &rank_stage_elsewhere(inp, c),
        );
    }
    let ep_told = |e: &EpRecord| leads.path_ep.is_some_and(|t| std::ptr::eq(t, e));
    let mut also: Vec<Also> = Vec::new();
    let mut ep_left = leads.ep_gaps.iter().filter(|e| !ep_told(e)).take(3);
    if leads.path.is_none() && leads.stage.is_none() {
        if let Some(e) = ep_left.next() {
            lines.push(format!("Imbalanced, {}: {}.", e.cause, e.sentence));
        }
    }
    also.extend(ep_left.map(|e| Also::ep(inp, e)));
    let headline_gap = leads
        .gap
        .filter(|_| leads.path.is_none() && leads.ep_lead().is_none() && leads.stage.is_none());
    if let Some(g) = headline_gap {
        lines.push(format!(
            "Imbalanced, {}: {}{}.",
            gap_word(g.cause, true),
            g.sentence,
            gap_cost(inp, g)
        ));
    }
    also.extend(
        other_gaps(inp, leads)
            .into_iter()
            .map(|g| Also::gap(inp, leads, g)),
    );
    if !v.balanced {
        also.extend(slow_link(inp, leads).map(|c| Also::link(c, inp.path)));
    }
    also.sort_by(|a, b| b.cost_ns.total_cmp(&a.cost_ns));
    lines.extend(also.into_iter().map(|a| a.line));
    lines
}

/// A cause stated below the first line, with what it costs the step (ns per step): the
/// verdict lists them costliest first.
struct Also {
    cost_ns: f64,
    line: String,
}

impl Also {
    /// An EP rank's gap: its kernel time over its EP peers' median, per step.
    fn ep(inp: &Input<'_>, e: &EpRecord) -> Also {
        let steps = inp.steps.rows.len().max(1) as f64;
        let cost_ns = (e.parts.total() - e.peers_parts.total()) / steps;
        Also {
            cost_ns,
            line: format!("Also {}: {}.", e.cause, e.sentence),
        }
    }

    /// An attribution gap, with its cost at the collectives when the critical path measured
    /// it ([`gap_cost`]) — unless the first line charges its rank already: the same time, seen
    /// from the rank's own work, said once.
    fn gap(inp: &Input<'_>, leads: &Leads<'_>, g: &Record) -> Also {
        let local = gap_cost_ns(inp, g);
        let cost = match leads.path.filter(|c| c.who == g.who) {
            Some(_) => "; it is the time the first line charges".to_string(),
            None => gap_cost(inp, g) + &alone_saving(inp, leads, g, local),
        };
        Also {
            cost_ns: order_key(inp, &g.who, local).0,
            line: format!("Also {}: {}{cost}.", gap_word(g.cause, false), g.sentence),
        }
    }

    /// A slow link: what its group's transfers cost every step.
    fn link(c: &path::Cause, p: &CriticalPath) -> Also {
        Also {
            cost_ns: c.per_step_ns,
            line: link_sentence("Also slow link", c, p),
        }
    }
}

/// "; made typical alone it gives back …": why a gap charged more locally (`local`, ns per
/// step) than the first line's rank ([`lead_charge`]) does not lead — its rank gives back
/// clearly less when made typical ([`replayed_saving`] under 80 % of `local`).
fn alone_saving(inp: &Input<'_>, leads: &Leads<'_>, g: &Record, local: f64) -> String {
    let outranks = lead_charge(inp, leads).is_some_and(|lead| local > lead);
    let Some(saved) = replayed_saving(inp, &g.who).filter(|&s| outranks && s < 0.8 * local) else {
        return String::new();
    };
    format!(
        "; made typical alone it gives back {:.2} ms a step (re-simulated): others arrive late \
         at the same collectives",
        saved / 1e6
    )
}

/// What the first line charges its rank per step (ns): the critical path's charge, or the
/// lead gap's cost ([`gap_cost_ns`]).
fn lead_charge(inp: &Input<'_>, leads: &Leads<'_>) -> Option<f64> {
    match (leads.path, leads.gap) {
        (Some(c), _) => Some(
            inp.path
                .replayed_cost(c)
                .unwrap_or_else(|| inp.path.rank_per_step(&c.who)),
        ),
        (None, Some(g)) => Some(gap_cost_ns(inp, g)),
        _ => None,
    }
}

/// The attribution's gaps stated below the first line, when one leads ([`Leads::gap`]): the
/// lead gap unless the first line is it or carries it, then the others not told by an EP
/// split, three subjects in all.
fn other_gaps<'a>(inp: &Input<'a>, leads: &Leads<'a>) -> Vec<&'a Record> {
    let headline = leads.path.is_none() && leads.ep_lead().is_none();
    let carried = |g: &Record| leads.path_record.is_some_and(|r| std::ptr::eq(r, g));
    // Without a gap that holds, the others are hidden or noise: the lines after the balance
    // line say so ([`early_arrivers`], [`inconclusive_line`]).
    let Some(g) = leads.gap else {
        return Vec::new();
    };
    let mut said = vec![(g.who.as_str(), g.cause)];
    let mut out = Vec::new();
    if !headline && !carried(g) {
        out.push(g);
    }
    if let Some(r) = leads.path_record.filter(|r| !std::ptr::eq(*r, g)) {
        said.push((r.who.as_str(), r.cause));
    }
    for o in inp.attribution.gaps() {
        let told = said.contains(&(o.who.as_str(), o.cause)) || leads.is_ep_gap(o);
        if said.len() >= 3 || told || arrives_early(inp, leads, o) {
            continue;
        }
        said.push((o.who.as_str(), o.cause));
        out.push(o);
    }
    out
}

/// The verdict's words for an attribution cause, on the first line or below it.
fn gap_word(c: Cause, first: bool) -> &'static str {
    match c {
        Cause::NotEnoughEvidence if first => "cause unclear (not enough evidence)",
        Cause::NotEnoughEvidence => "cause unclear",
        c => c.as_str(),
    }
}

/// What a gap costs the step, ns per step: at the collectives when the critical path
/// measured its rank ([`path_cost`]), else its own time over its peers' ([`gap_per_step`]:
/// a replica, or a rank no matched collective tells about).
fn gap_cost_ns(inp: &Input<'_>, g: &Record) -> f64 {
    gap_path_cost(inp, g).map_or_else(|| gap_per_step(g), |(ns, _)| ns)
}

/// The order the attribution's gaps lead in: a gap with evidence before one without (its
/// cause unclear), then the costliest per step ([`order_key`] of [`gap_cost_ns`]: what making
/// the rank typical gives back when the what-if is trusted); ties keep the attribution's order
/// (by effect).
fn rank_gaps<'a>(inp: &Input<'_>, gaps: Vec<&'a Record>) -> Vec<&'a Record> {
    let mut keyed: Vec<(bool, (f64, f64), &Record)> = gaps
        .into_iter()
        .map(|g| {
            let key = order_key(inp, &g.who, gap_cost_ns(inp, g));
            (g.cause == Cause::NotEnoughEvidence, key, g)
        })
        .collect();
    keyed.sort_by(|a, b| {
        a.0.cmp(&b.0)
            .then(b.1 .0.total_cmp(&a.1 .0))
            .then(b.1 .1.total_cmp(&a.1 .1))
    });
    keyed.into_iter().map(|k| k.2).collect()
}

/// What making the first line's rank typical gives back, re-simulated at the collectives
/// ([`path::whatif`]), when the replay matches the recording: less than its charge when other
/// ranks arrive late at the same collectives (fixing it alone leaves them last).
fn what_if_line(inp: &Input<'_>, leads: &Leads<'_>) -> Option<String> {
    let c = leads.path.filter(|c| c.kind != path::Kind::Transfer)?;
    let w = &inp.path.what_if;
    if !w.trusted() {
        return (!w.worlds.is_empty()).then(|| {
            format!(
                "What if: not used — replaying the collectives misses the recording by {:.1} % (members leave the collectives at different times), so the cost above is the local charge.",
                w.error_pct
            )
        });
    }
    let (saved, pct) = w
        .rank(&c.who)
        .map_or((Ns::ZERO, 0.0), |r| (r.saved, r.step_pct));
    let charged = inp.path.rank_per_step(&c.who);
    if w.pipeline_saving(&c.who).is_some() {
        return Some(format!(
            "What if: the {:.2} ms are replayed on the pipeline's transfers (model error {:.1} %). The waits {} imposes where it arrives last come to {:.2} ms a step (the critical-path table), but a neighbour in a pipeline that waits for it may otherwise have idled in a bubble or waited for another stage{}.{}",
            w.saved_by(&c.who).as_ms(),
            w.error_pct,
            c.who,
            charged / 1e6,
            worst_together(w, w.saved_by(&c.who)),
            stage_bubbles(w),
        ));
    }
    let head = format!(
        "What if: making {} typical gives back {:.2} ms a step ({pct:.1} % of the step",
        c.who,
        saved.as_ms(),
    );
    let tail = format!(
        "re-simulated at the collectives, model error {:.1} %",
        w.error_pct
    );
    if (saved.get() as f64) < 0.8 * charged {
        let all = w
            .kinds
            .iter()
            .find(|k| k.kind == c.kind)
            .map_or(String::new(), |k| {
                let what = match c.kind {
                    path::Kind::Work => "extra work",
                    path::Kind::Host => "host gaps",
                    _ => "late starts",
                };
                format!(
                    "; with every rank's {what} cut to the median, the step gives back {:.2} ms",
                    k.saved.as_ms()
                )
            });
        Some(format!(
            "{head}; {tail}), less than the {:.2} ms it is charged: other ranks arrive late at the same collectives, so fixing it alone leaves them last{}{all}.",
            charged / 1e6,
            worst_together(w, saved),
        ))
    } else {
        Some(format!("{head}; {tail}){}.", worst_together(w, saved)))
    }
}

/// The first line when a pipeline stage leads ([`Leads::stage`]): what its ranks made typical
/// together give back, how much more work they do than the rest of their world, what any one
/// of them gives back alone, and the same stage of the other worlds (DP replicas) where it
/// costs as much. `work`: each rank's, as [`judge`] measured.
fn stage_line(inp: &Input<'_>, g: &StageGroupIf, metric: &str, work: &[i64]) -> String {
    let w = &inp.path.what_if;
    let index = |name: &str| inp.summaries.iter().position(|s| s.figures.rank == name);
    let mine: Vec<usize> = g.ranks.iter().filter_map(|r| index(r)).collect();
    // The rest of its replica (its world, as the step table pairs ranks).
    let rest: Vec<usize> = mine.first().map_or(Vec::new(), |&r| {
        inp.steps
            .peers_of(r, inp.summaries.len())
            .into_iter()
            .filter(|p| !mine.contains(p))
            .collect()
    });
    let mean =
        |rs: &[usize]| rs.iter().map(|&r| work[r] as f64).sum::<f64>() / rs.len().max(1) as f64;
    let ratio = if rest.is_empty() || mean(&rest) <= 0.0 {
        String::new()
    } else {
        format!(
            "its ranks do {:.2}× the {metric} of the other stages' ranks a step, ",
            mean(&mine) / mean(&rest)
        )
    };
    let likewise = same_stage_elsewhere(w, g, 100.0 * inp.threshold);
    format!(
        "Imbalanced, {SLOW_STAGE}: stage PP{:02} ({}) costs every step {:.2} ms ({:.0} % of the {:.2} ms step; what making its {} ranks typical together gives back, re-simulated on the pipeline, model error {:.1} %): {ratio}and any one of them made typical alone gives back at most {:.2} ms — they wait for each other at their own collectives, so the stage, not one rank, holds the pipeline up.{likewise}",
        g.stage,
        g.who,
        g.saved.as_ms(),
        g.step_pct,
        inp.path.step_ns / 1e6,
        g.ranks.len(),
        w.error_pct,
        g.alone.as_ms(),
    )
}

/// " The same stage costs as much in the other worlds …": the stages with `g`'s PP index in
/// the other worlds (each DP replica its own pipeline) that give back at least `threshold_pct`
/// of the step made typical, with what they give back; or nothing.
fn same_stage_elsewhere(w: &path::whatif::WhatIf, g: &StageGroupIf, threshold_pct: f64) -> String {
    if !w.trusted() {
        return String::new();
    }
    let each: Vec<String> = w
        .stage_groups
        .iter()
        .filter(|o| o.stage == g.stage && o.world != g.world && o.step_pct >= threshold_pct)
        .map(|o| format!("{} {:.2} ms", o.who, o.saved.as_ms()))
        .collect();
    if each.is_empty() {
        return String::new();
    }
    format!(
        " The same stage costs as much in the other worlds (each DP replica its own pipeline): {} a step.",
        each.join(", ")
    )
}

/// [`same_stage_elsewhere`] for a rank that leads the first line at its replayed pipeline
/// cost: its stage's other worlds.
fn rank_stage_elsewhere(inp: &Input<'_>, c: &path::Cause) -> String {
    let w = &inp.path.what_if;
    inp.path
        .replayed_cost(c)
        .and_then(|_| w.stage_groups.iter().find(|g| g.ranks.contains(&c.who)))
        .map_or(String::new(), |g| {
            same_stage_elsewhere(w, g, 100.0 * inp.threshold)
        })
}

/// " Each stage's bubble …": a pipeline's stages' waits at the transfers per step, recorded
/// and with every rank typical (up to [`STAGES_SAID`] stages; the table has them all).
fn stage_bubbles(w: &path::whatif::WhatIf) -> String {
    if w.stages.is_empty() || w.stages.len() > STAGES_SAID {
        return String::new();
    }
    let each: Vec<String> = w
        .stages
        .iter()
        .map(|s| {
            format!(
                "{} {:.2} → {:.2}",
                s.who,
                s.bubble.as_ms(),
                s.ideal_bubble.as_ms()
            )
        })
        .collect();
    format!(
        " Each stage's bubble (its wait at the transfers) per step, recorded → with every rank typical: {} ms.",
        each.join(", ")
    )
}

/// The most pipeline stages [`stage_bubbles`] names in the verdict.
const STAGES_SAID: usize = 8;

/// "; fixing the worst 3 (…) together gives back …": the largest set of worst ranks that gives
/// back more than the first line's rank alone (`alone`), or nothing.
fn worst_together(w: &path::whatif::WhatIf, alone: Ns) -> String {
    w.worst
        .iter()
        .rev()
        .find(|x| x.k > 1 && x.saved.get() as f64 >= 1.1 * alone.get() as f64 && x.saved > alone)
        .map_or(String::new(), |x| {
            format!(
                "; fixing the worst {} ({}) together gives back {:.2} ms ({:.0} % of the step time lost to imbalance)",
                x.k,
                x.who,
                x.saved.as_ms(),
                x.lost_pct
            )
        })
}

/// The first line when every candidate varies within its noise: the largest, and the others'
/// names.
fn inconclusive_line(noisy: &[Noisy]) -> Option<String> {
    let first = noisy.first()?;
    let mut others: Vec<&str> = Vec::new();
    for n in noisy.iter().skip(1) {
        if n.who != first.who && !others.contains(&n.who.as_str()) {
            others.push(&n.who);
        }
    }
    let n = match first.steps {
        Steps::Varies { n, .. } => n,
        Steps::Holds => 0,
    };
    Some(format!(
        "Inconclusive: {}'s {} ({}) goes {}{}: it does not hold from step to step, and {n} steps cannot tell it from noise — capture more steps to decide.",
        first.who,
        first.what,
        first.cause,
        first.steps.range(),
        if others.is_empty() {
            String::new()
        } else {
            format!(", and so does {}'s", others.join(", "))
        }
    ))
}

/// The first line when nothing leads and no candidate was set aside as noise, yet the onset's
/// rank costs the step the threshold at the collectives from its onset on: too few steps for a
/// cause. (Or, without an onset, the busiest rank's work.)
fn unexplained_onset_line(inp: &Input<'_>, v: &Verdict) -> Option<String> {
    let capture = "capture more steps to decide.";
    if let Some(o) = &v.onset {
        let cost = path_cost_pct(inp, &o.rank, o.step_index).map_or(String::new(), |p| {
            format!(", and it costs those steps {p:.1} % at the collectives")
        });
        return Some(format!(
            "Inconclusive: {} ({} step{}){cost}, but no cause of it holds over those steps — {capture}",
            o.sentence(),
            o.steps_after,
            if o.steps_after == 1 { "" } else { "s" },
        ));
    }
    let slow = v.slowest.as_deref()?;
    Some(format!(
        "Inconclusive: the busiest rank ({slow}) has {:.1} % more {} than its peers, but no cause of it holds — {capture}",
        v.excess_pct,
        compared(inp, v)
    ))
}

/// A rank the attribution names that costs the step little at the collectives: it arrives
/// early (its extra time is spent while the others are still busy).
fn early_arrivers(inp: &Input<'_>, leads: &Leads<'_>) -> Vec<String> {
    if inp.path.collectives == 0 || inp.path.steps == 0 {
        return Vec::new();
    }
    inp.attribution
        .gaps()
        .filter(|g| g.scope != "replica")
        .take(3)
        .filter(|g| arrives_early(inp, leads, g))
        .map(|g| {
            format!(
                "{}'s {}{} costs the step only {:.2} ms at the collectives (its gap is {:.2} ms a step): it does not arrive last, so the others do not wait for it.",
                g.who,
                gap_word(g.cause, false),
                g.from_step
                    .as_ref()
                    .map_or(String::new(), |s| format!(" from step {s} on")),
                gap_path_cost(inp, g).map_or(0.0, |c| c.0) / 1e6,
                gap_per_step(g) / 1e6
            )
        })
        .collect()
}

/// A rank gap that costs the step less than a quarter of itself at the collectives, when the
/// first line does not name the rank: [`early_arrivers`] says it.
fn arrives_early(inp: &Input<'_>, leads: &Leads<'_>, g: &Record) -> bool {
    let gap = gap_per_step(g);
    gap_path_cost(inp, g).is_some_and(|(ns, _)| gap > 0.0 && ns < 0.25 * gap)
        && leads.path.is_none_or(|c| c.who != g.who)
}

/// Whether the work compared between ranks is a CPU-only rank's step less its collectives
/// ([`work_per_rank`] with steps): that holds the time its thread recorded no op (a sleep, a
/// late start, Python between ops) as well as its ops, so the lines below the first name it
/// "time outside collectives", not "cpu work" ([`compared`]; on a rank that slept 40 ms a step
/// they said "664.7 % more cpu work" below a first line that rightly said late start).
fn outside_collectives(inp: &Input<'_>, v: &Verdict) -> bool {
    v.metric == "cpu work" && !inp.steps.rows.is_empty()
}

/// What the work compared between ranks is, as the lines below the first name it.
fn compared<'v>(inp: &Input<'_>, v: &'v Verdict) -> &'v str {
    if outside_collectives(inp, v) {
        "time outside collectives"
    } else {
        &v.metric
    }
}

/// Balanced, or which rank has the most work and by how much.
fn balance_line(
    inp: &Input<'_>,
    v: &Verdict,
    slow: usize,
    who: usize,
    slow_work: i64,
    others: f64,
    all_others: bool,
) -> String {
    let ms = |x: f64| x / 1e6;
    let mine = if all_others {
        "the others' mean"
    } else {
        "its replica's other ranks' mean"
    };
    let name = |r: usize| &inp.summaries[r].figures.rank;
    let metric = compared(inp, v);
    let (slow_ms, others_ms) = (ms(slow_work as f64), ms(others));
    if inp.steps.peers_of(slow, inp.summaries.len()).is_empty() {
        return if v.balanced {
            format!(
                "Balanced: each replica is one rank, so ranks are compared only as replicas, and no replica differs from the others by more than the {:.0} % threshold.",
                v.threshold_pct
            )
        } else {
            "Each replica is one rank: no rank has a peer in its replica, so ranks are compared only as replicas.".to_string()
        };
    }
    let but = (v.excess_pct > v.threshold_pct)
        .then(|| slow_but(inp, slow, onset_row(v.onset.as_ref(), name(slow))))
        .flatten();
    if let Some((why, but)) = &but {
        // More work, but the step does not wait for it, or not in every step.
        format!(
            "{}The busiest rank ({}) has {:.1} % more {} than {mine} ({slow_ms:.2} ms vs {others_ms:.2} ms), {but}.",
            if v.balanced { why.as_str() } else { "" },
            name(slow),
            v.excess_pct,
            metric,
        )
    } else if v.balanced {
        format!(
            "Balanced: the busiest rank ({}) has {:.1} % more {} than {mine} ({slow_ms:.2} ms vs {others_ms:.2} ms), within the {:.0} % threshold.",
            name(slow), v.excess_pct, metric, v.threshold_pct
        )
    } else if who != slow {
        // The rank that became slower is not the one with the most work over the profile.
        format!(
            "Imbalanced: rank {} became slower (see the onset); over the whole profile rank {} has the most {}, {:.1} % above {mine} ({slow_ms:.2} ms vs {others_ms:.2} ms).",
            name(who), name(slow), metric, v.excess_pct
        )
    } else if v.excess_pct <= v.threshold_pct {
        // The gap is elsewhere (between replicas, or an onset): ranks are even against peers.
        format!(
            "Against its peers the busiest rank ({}) has only {:.1} % more {} than {mine} ({slow_ms:.2} ms vs {others_ms:.2} ms).",
            name(slow), v.excess_pct, metric
        )
    } else {
        format!(
            "Imbalanced: rank {} is the slowest, with {:.1} % more {} than {mine} ({slow_ms:.2} ms vs {others_ms:.2} ms).",
            name(slow), v.excess_pct, metric
        )
    }
}

/// The work line ([`balance_line`]) as it reads below a first line that said "Imbalanced":
/// "Rank TP02 is the slowest, …", not "Imbalanced: rank TP02 is the slowest, …" again;
/// unchanged when it is the `first` line.
fn not_said_again(balance: String, first: bool) -> String {
    match balance.strip_prefix("Imbalanced: rank ") {
        Some(rest) if !first => format!("Rank {rest}"),
        _ => balance,
    }
}

/// Why the busiest rank's extra work is no imbalance: ("Balanced: …", "but …"). It costs the
/// step little at the collectives ([`hidden`]), or its excess does not hold from step to
/// step ([`work_steps`]).
fn slow_but(inp: &Input<'_>, slow: usize, from: usize) -> Option<(String, String)> {
    let who = &inp.summaries[slow].figures.rank;
    if let Some(pct) = path_cost_pct(inp, who, from).filter(|&p| p < 100.0 * inp.threshold) {
        return Some((
            format!(
                "Balanced: no rank costs the step {:.0} % or more at the collectives. ",
                100.0 * inp.threshold
            ),
            if in_lead_stage(inp, who) {
                format!("but alone it costs the step only {pct:.1} %: its stage's other ranks are as slow (the first line)")
            } else {
                format!("but it costs the step only {pct:.1} %: the others do not wait for it")
            },
        ));
    }
    let steps = work_steps(inp, slow, from);
    steps.varies().then(|| {
        (
            "Balanced within step-to-step noise: ".to_string(),
            format!(
                "but not from step to step (its excess goes {})",
                steps.range()
            ),
        )
    })
}

/// A slow link that does not lead: a fault of the hardware all the same, said with its
/// figures — ranked with the other causes when the profile is imbalanced ([`lead_lines`]),
/// after the balance line when it is balanced ([`link_line`]).
fn slow_link<'a>(inp: &Input<'a>, leads: &Leads<'_>) -> Option<&'a path::Cause> {
    inp.path.causes.iter().find(|c| {
        c.kind == path::Kind::Transfer
            && c.per_step_ns > 0.0
            && leads.path.is_none_or(|l| !std::ptr::eq(l, *c))
    })
}

/// A slow link's line: "{head}: the group of … costs every step …".
fn link_sentence(head: &str, c: &path::Cause, p: &CriticalPath) -> String {
    format!(
        "{head}: the group of {} costs every step {:.3} ms ({:.1} % of the step): {}.",
        c.who,
        c.per_step_ns / 1e6,
        c.step_pct,
        link_why(c, p)
    )
}

/// A slow link under the threshold in a balanced profile, after the balance line.
fn link_line(inp: &Input<'_>, leads: &Leads<'_>, balanced: bool) -> Option<String> {
    let c = slow_link(inp, leads).filter(|_| balanced)?;
    Some(link_sentence("Slow link, under the threshold", c, inp.path))
}

/// The classes the gap of `who` is mostly in, when there is a gap to explain (not when
/// nothing holds from step to step).
fn classes_line(inp: &Input<'_>, v: &Verdict, who: usize) -> Option<String> {
    let even = v.excess_pct <= v.threshold_pct && v.onset.is_none();
    if v.balanced || v.inconclusive || even || v.classes.is_empty() {
        return None;
    }
    let steps = if v.onset.is_some() {
        " (steps from the onset on)"
    } else {
        ""
    };
    let name = &inp.summaries[who].figures.rank;
    if let Some((gap, in_ops)) = ops_short_of_gap(inp, v, who) {
        // A CPU-only rank whose time outside collectives is mostly time no op covers: its
        // ops' classes are not where its gap is.
        return Some(format!(
            "Of rank {name}'s {:.2} ms of time outside collectives over its peers'{steps}, its ops hold only {:.2} ms ({}); the rest is time its thread recorded no op in (the host's: a sleep, a late start, Python between ops).",
            gap / 1e6,
            in_ops / 1e6,
            v.classes
                .iter()
                .map(|c| format!("{} +{:.2} ms", c.class, c.gap_ns.as_ms()))
                .collect::<Vec<_>>()
                .join(", "),
        ));
    }
    let parts: Vec<String> = v
        .classes
        .iter()
        .map(|c| {
            format!(
                "{} {:.0} % (+{:.2} ms)",
                c.class,
                c.share_pct,
                c.gap_ns.as_ms()
            )
        })
        .collect();
    Some(format!(
        "The gap of rank {name} is mostly {}{steps}.",
        parts.join(", "),
    ))
}

/// For a CPU-only profile with steps: rank `who`'s time outside collectives over its peers'
/// mean and what its ops' classes hold of it (the sum of their positive gaps, over the steps
/// from the onset on, as [`class_shares`]), when they hold less than half of it.
fn ops_short_of_gap(inp: &Input<'_>, v: &Verdict, who: usize) -> Option<(f64, f64)> {
    if !outside_collectives(inp, v) {
        return None;
    }
    let from = v.onset.as_ref().map_or(0, |o| o.step_index);
    let gap: f64 = work_excess(inp, who, from).iter().sum();
    // All the classes' positive gaps, of which `v.classes` lists the largest with their share.
    let in_ops = v
        .classes
        .first()
        .filter(|c| c.share_pct > 0.0)
        .map_or(0.0, |c| c.gap_ns.get() as f64 * 100.0 / c.share_pct);
    (gap > 0.0 && in_ops < 0.5 * gap).then_some((gap, in_ops))
}

/// The onset, or that there is none (when there are steps to have one).
fn onset_line(inp: &Input<'_>, v: &Verdict) -> Option<String> {
    match &v.onset {
        Some(o) if hidden(inp, &o.rank, o.step_index) => Some(format!(
            "Onset: {}, but {} costs the step only {:.1} % at the collectives{}.",
            o.sentence(),
            if in_lead_stage(inp, &o.rank) {
                "alone it"
            } else {
                "it"
            },
            path_cost_pct(inp, &o.rank, o.step_index).unwrap_or(0.0),
            if in_lead_stage(inp, &o.rank) {
                " (its stage together: the first line)"
            } else {
                ""
            },
        )),
        Some(o) => Some(format!("Onset: {}.", o.sentence())),
        None if !inp.steps.rows.is_empty() && any_peers(inp) => Some(format!(
            "No onset: no rank stays more than {:.0} % above the others from some step to the end.",
            v.threshold_pct
        )),
        None => None,
    }
}

/// Whether `who` is a rank of the pipeline stage that leads the first line ([`stage_line`]).
fn in_lead_stage(inp: &Input<'_>, who: &str) -> bool {
    inp.path
        .stage_lead(100.0 * inp.threshold)
        .is_some_and(|g| g.ranks.iter().any(|r| r == who))
}

/// Whether some rank has a peer to be compared with (not when each replica is one rank).
fn any_peers(inp: &Input<'_>) -> bool {
    let n = inp.summaries.len();
    (0..n).any(|r| !inp.steps.peers_of(r, n).is_empty())
}

/// The attribution record's gap per step: its time over the peers', ns.
fn gap_per_step(g: &Record) -> f64 {
    (g.time_ns - g.peers_time_ns) / g.steps.max(1) as f64
}

/// The verdict's word for a critical-path cause.
fn path_cause(k: path::Kind) -> &'static str {
    match k {
        path::Kind::Work => "more work before the collectives",
        path::Kind::Host => "host-bound",
        path::Kind::LateStart => "late step start",
        path::Kind::Transfer => "slow link",
    }
}

/// The first line when the critical path leads.
/// `told`: the cause and sentence of the rank's own explanation (EP split or attribution) that
/// the line carries.
fn path_line(
    c: &path::Cause,
    told: Option<(&str, &str)>,
    p: &CriticalPath,
    metric: &str,
    onset: Option<&crate::analyze::reduce::steps::Onset>,
) -> String {
    let who = if c.kind == path::Kind::Transfer {
        format!("the group of {}", c.who)
    } else {
        c.who.clone()
    };
    // A rank that became slower at an onset costs the steps from there on: their figure,
    // not the mean over steps it did not slow down.
    let from = cost_onset(c, p, onset)
        .and_then(|o| c.per_step_from(o.step_index, &p.per_step).map(|x| (o, x)));
    let cost = match (p.replayed_cost(c), from) {
        (Some(ns), _) => format!(
            "{who} costs every step {:.2} ms ({:.0} % of the {:.2} ms step; what making it typical gives back, re-simulated on the pipeline)",
            ns / 1e6,
            p.replayed_pct(c).unwrap_or(0.0),
            p.step_ns / 1e6
        ),
        (None, Some((o, (ns, step)))) if step > 0.0 => format!(
            "{who} costs {:.2} ms every step from step {} on ({:.0} % of the {:.2} ms step)",
            ns / 1e6,
            o.step,
            100.0 * ns / step,
            step / 1e6
        ),
        _ => rank_cost(c, p, metric),
    };
    let why = match c.kind {
        path::Kind::LateStart => format!(
            "it starts the step late (its host begins the step after the others: the cause is before the step, e.g. the previous iteration or the input pipeline), and the others wait for it at the collectives ({} of {})",
            c.collectives, p.collectives
        ),
        path::Kind::Host if metric == "cpu work" => format!(
            "before the collectives it arrives last at, its threads record no op (Python, a sync or data loading outside the profiled ops), and the others wait for it ({} of {})",
            c.collectives,
            super::measure::count(p.collectives, "collective")
        ),
        path::Kind::Host => match p.host_ops.iter().find(|h| h.who == c.who) {
            Some(h) => format!(
                "before the collectives it arrives last at, its GPU sits idle while the host has not launched the work: its launching thread ran {} in those gaps, and the others wait for it ({} of {})",
                gap_ops(h),
                c.collectives,
                super::measure::count(p.collectives, "collective")
            ),
            None => format!(
                "before the collectives it arrives last at, its GPU sits idle while the host has not launched the work (host-bound: a sync, Python or data loading on that rank), and the others wait for it ({} of {})",
                c.collectives,
                super::measure::count(p.collectives, "collective")
            ),
        },
        path::Kind::Work => match told {
            Some((_, sentence)) => format!(
                "it arrives last at {} of {} after more {metric} than the median rank; {sentence}",
                c.collectives,
                super::measure::count(p.collectives, "collective")
            ),
            None => format!(
                "it arrives last at {} of {} after more {metric} than the median rank",
                c.collectives,
                super::measure::count(p.collectives, "collective")
            ),
        },
        path::Kind::Transfer => link_why(c, p),
    };
    let cause = told.map_or(path_cause(c.kind), |t| t.0);
    format!("Imbalanced, {cause}: {cost}: {why}.")
}

/// What the lead's rank costs every step in all — the sum of its causes on the critical path
/// (what fixing the rank would give back), each part as the critical-path table states it:
/// "RANK07 costs every step 6.10 ms (31 % of the 19.90 ms step: 4.58 ms late start, 1.49 ms
/// host gaps)": the parts of at least a fifth of the total are named, the rest summed as
/// "other causes", so that the parts add up to the total the line states and each is the
/// table's (one cost per rank and cause). A slow link is its group's alone.
fn rank_cost(c: &path::Cause, p: &CriticalPath, metric: &str) -> String {
    let who = if c.kind == path::Kind::Transfer {
        format!("the group of {}", c.who)
    } else {
        c.who.clone()
    };
    let mut parts: Vec<&path::Cause> = p
        .causes
        .iter()
        .filter(|x| c.kind != path::Kind::Transfer && x.kind != path::Kind::Transfer)
        .filter(|x| x.who == c.who && x.per_step_ns > 0.0)
        .collect();
    if parts.is_empty() {
        parts.push(c);
    }
    parts.sort_by(|a, b| b.per_step_ns.total_cmp(&a.per_step_ns));
    let total: f64 = parts.iter().fold(0.0, |t, x| t + x.per_step_ns);
    let pct: f64 = parts.iter().fold(0.0, |t, x| t + x.step_pct);
    // The parts worth a word: at least a fifth of the total (every part is in the table).
    let shown: Vec<&&path::Cause> = parts
        .iter()
        .filter(|x| x.per_step_ns >= 0.2 * total)
        .collect();
    let rest = total - shown.iter().fold(0.0, |t, x| t + x.per_step_ns);
    let split = if shown.len() > 1 || rest >= 5e3 {
        let mut each: Vec<String> = shown
            .iter()
            .map(|x| {
                format!(
                    "{:.2} ms {}",
                    x.per_step_ns / 1e6,
                    part_name(x.kind, metric)
                )
            })
            .collect();
        if rest >= 5e3 {
            each.push(format!("{:.2} ms other causes", rest / 1e6));
        }
        format!(": {}", each.join(", "))
    } else {
        String::new()
    };
    format!(
        "{who} costs every step {:.2} ms ({pct:.0} % of the {:.2} ms step{split})",
        total / 1e6,
        p.step_ns / 1e6
    )
}

/// A critical-path cause as one part of a rank's cost.
fn part_name(k: path::Kind, metric: &str) -> String {
    match k {
        path::Kind::Work => format!("more {metric}"),
        path::Kind::Host => "host gaps".to_string(),
        path::Kind::LateStart => "late start".to_string(),
        path::Kind::Transfer => "slow link".to_string(),
    }
}

/// The ops that filled a host-bound rank's GPU idle time, as shares of it: the largest three
/// of at least 1 %, and what no op covers.
fn gap_ops(h: &path::HostOps) -> String {
    let pct = |ns: Ns| {
        if h.idle_ns > Ns::ZERO {
            100.0 * ns.get() as f64 / h.idle_ns.get() as f64
        } else {
            0.0
        }
    };
    let mut parts: Vec<String> = h
        .ops
        .iter()
        .filter(|o| pct(o.ns) >= 1.0)
        .take(3)
        .map(|o| format!("{} ({:.0} % of the idle time)", o.name, pct(o.ns)))
        .collect();
    let none = pct(h.unrecorded_ns);
    if parts.is_empty() {
        return "no recorded op (Python or a sync outside the profiled ops: profile with with_stack=True to see it)".to_string();
    }
    if none >= 1.0 {
        parts.push(format!("nothing recorded {none:.0} %"));
    }
    parts.join(", ")
}

/// Why a group's transfers are a slow link: its most out-of-line collective against the same
/// collective in the other groups.
fn link_why(c: &path::Cause, p: &CriticalPath) -> String {
    let worst = p
        .transfers
        .iter()
        .filter(|t| t.world == c.world)
        .filter_map(|t| {
            t.others_ns
                .filter(|&o| o > 0.0)
                .map(|o| (t, t.median_ns / o))
        })
        .max_by(|a, b| a.1.total_cmp(&b.1));
    match worst {
        Some((t, ratio)) => format!(
            "its {} collectives take {ratio:.2}× the transfer time of the same collectives in the other groups (median {:.1} µs vs {:.1} µs{}): a slow link",
            t.name,
            t.median_ns / 1e3,
            t.others_ns.unwrap_or(0.0) / 1e3,
            t.busbw_gbps.map_or(String::new(), |b| format!(
                "; {b:.1} GB/s bus bandwidth for {:.2} MB",
                t.bytes.unwrap_or(0.0) / 1e6
            ))
        ),
        None => "its collectives take longer to transfer than the same collectives in the other groups: a slow link".to_string(),
    }
}
