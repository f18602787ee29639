//! What if: the step time a rank, or a cause, would give back if it were typical — replayed on
//! the matched collectives rather than charged locally.
//!
//! The graph is the one the critical path reads: at each matched collective of a world, every
//! member arrives after its segment (from the end of its previous collective, or the common
//! start of the step's first, to its arrival: [`super::acc`]), and the collective ends at the
//! last arrival plus its transfer. Replayed as a chain, the members leave each collective
//! together and arrive at the next after their segments: a collective takes its longest
//! segment plus its transfer. The re-simulations change the segments and replay again:
//!
//! - **a rank typical**: its segment replaced by the members' (lower) median. The collective
//!   then takes the next longest segment (or the median) plus the transfer: fixing the last
//!   arriver gives back only its lead over the next one — a delay another late rank would have
//!   caused anyway is not its own. (The local charge, `seg(last) − median`, gives it all.)
//! - **a cause removed** (more work, host gaps, late start): every member's part of that kind
//!   cut to the members' median part, the rest of its segment kept.
//! - **every rank typical** (the ideal): every segment the median: `S = T / T_ideal`, the
//!   slowdown the profile's imbalance causes.
//!
//! **Model error**: the replayed time against the recorded one — per world and step, from the
//! first segment's start to the last collective's end. It is what the join model misses
//! (members that leave a collective at different times, as gloo's do); it is always
//! reported. Where it is large the what-if figures are not to be trusted (and the
//! report says so).
//!
//! **Side-stream overlap**: a collective that compute ran on through
//! ([`crate::analyze::collect::overlap`]) ends later when a member arrives late, but the step
//! waits only as long as compute waited for it: what an earlier end gives back there is capped
//! at that wait (the longest of its members'), in every re-simulation. Where a trace cannot
//! tell (no `cudaStreamWaitEvent` recorded), compute is taken to have waited for all of it.
//!
//! **CPU-only runs and pipelines**: a CPU-only (gloo) world, whose members leave a collective
//! milliseconds apart, and a world with point-to-point pairs (sends and receives that name
//! their peer, [`crate::analyze::collect::p2p`]) are replayed on the graph, each rank on its
//! own clock ([`super::graph`]), not as a chain; so is a GPU world whose members leave its
//! collectives at different times ([`Spread`]).
//!
//! **The ideal timeline** (`merge --what-if`): the "every rank typical" replay kept step by
//! step, on the common clock, to be drawn beside each rank ([`super::ideal`]).
//!
//! Limits, said where they apply: each world is replayed on its own (a delay that carries from
//! a TP group into a later DP synchronisation is not followed); send/recv that name no peer are
//! not paired.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::graph::{self, Member, Node};
use super::ideal::{IdealAcc, IdealTimeline, Seen};
use super::{label, Kind};
use crate::analyze::stats::lower_median;
use crate::trace::Ns;

/// The model error above which the what-if figures are said not to be trusted, percent.
pub const TRUSTED_ERROR_PCT: f64 = 5.0;

/// The most ranks made typical together ([`WorstIf`]).
pub const WORST_K: usize = 3;

/// The saved summary's cause for a pipeline stage that leads ([`WhatIf::lead_stage`]).
pub const STAGE: &str = "stage";

/// How much more than any one of its ranks alone a pipeline stage's ranks must give back
/// together for the stage, not a rank, to be named ([`WhatIf::lead_stage`]).
pub const STAGE_OVER_ALONE: f64 = 1.25;

/// What making every rank of one pipeline stage typical together gives back, in one world.
/// A stage whose ranks are all slow (the TP ranks of one stage) waits for itself at its own
/// collectives, so no one of its ranks made typical alone gives back much: the stage is the
/// cause.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct StageGroupIf {
    /// The stage's PP index.
    pub stage: u32,
    pub world: usize,
    /// Its ranks, compact ([`crate::analyze::rankset::compact`]).
    pub who: String,
    pub ranks: Vec<String>,
    pub saved: Ns,
    pub step_pct: f64,
    /// The most any one of its ranks gives back made typical alone.
    pub alone: Ns,
}

/// What making one rank typical gives back.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RankIf {
    pub who: String,
    pub world: usize,
    /// Step time given back, per step.
    pub saved: Ns,
    /// Of the mean step, percent.
    pub step_pct: f64,
}

/// What removing one cause everywhere gives back.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct KindIf {
    pub kind: Kind,
    pub saved: Ns,
    pub step_pct: f64,
}

/// What making the worst `k` ranks typical together gives back: the ranks that give back the
/// most alone, fixed at once, so that one late rank no longer hides behind another.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct WorstIf {
    pub k: usize,
    /// The ranks made typical, the one that gives back the most alone first, joined by ", "
    /// (the JSON's records stay flat); [`WorstIf::ranks`] splits them.
    pub who: String,
    /// Step time given back, per step.
    pub saved: Ns,
    /// Of the mean step, percent.
    pub step_pct: f64,
    /// Of the step time lost to imbalance (replayed less ideal; worlds combined as one step:
    /// those a rank takes part in add up, side-by-side ones do not), percent.
    pub lost_pct: f64,
}

/// A pipeline stage (a rank of a pipeline world): its bubble — how long it waits at the
/// transfers for its neighbours — per step, as recorded and with every rank typical (what the
/// schedule leaves when nobody is slow).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct StageIf {
    pub who: String,
    pub world: usize,
    pub bubble: Ns,
    pub ideal_bubble: Ns,
    /// `bubble` of the mean step, percent.
    pub step_pct: f64,
}

/// One world replayed: its time per step as recorded and replayed, and with every rank typical.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct WorldIf {
    pub world: usize,
    /// Its ranks (compact).
    pub who: String,
    pub collectives: usize,
    /// Per step, the span of its matched collectives: recorded, replayed, and ideal.
    pub recorded: Ns,
    pub replayed: Ns,
    pub ideal: Ns,
    /// `replayed / ideal`.
    pub slowdown: f64,
    /// Replayed less ideal in its median step: what the imbalance costs a typical step (one
    /// slow step does not move it).
    #[serde(default)]
    pub lost_median: Ns,
    /// |replayed − recorded| over recorded, percent.
    pub error_pct: f64,
    /// A pipeline: its ranks pass point-to-point transfers that name their peer, and its graph
    /// replays. Its stages' bubbles are reported ([`WhatIf::stages`]); whether the replay
    /// also stands for a rank's cost depends on its steps running in lockstep
    /// ([`WhatIf::pipeline_saving`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pipeline: bool,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct WhatIf {
    /// Ranks that give back time, the most first.
    pub ranks: Vec<RankIf>,
    pub kinds: Vec<KindIf>,
    /// The worst 1, 2, … [`WORST_K`] ranks made typical together.
    #[serde(default)]
    pub worst: Vec<WorstIf>,
    pub worlds: Vec<WorldIf>,
    /// The largest world slowdown.
    pub slowdown: f64,
    /// The model error over every world, percent.
    pub error_pct: f64,
    /// The ranks of the pipeline worlds ([`WorldIf::pipeline`]) that run their steps in
    /// lockstep, as training pipelines do ([`WhatIf::pipeline_saving`]).
    #[serde(skip)]
    pub pipeline_ranks: Vec<String>,
    /// Each pipeline stage's bubble, in rank order (empty without a pipeline).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stages: Vec<StageIf>,
    /// Each stage of a lockstep pipeline world (its ranks by their PP index), made typical
    /// together; only one of two or more ranks can lead ([`WhatIf::lead_stage`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stage_groups: Vec<StageGroupIf>,
    /// Every rank typical, step by step on the common clock: what `merge --what-if` draws
    /// ([`IdealTimeline::overlay`]). Not in the JSON.
    #[serde(skip)]
    pub timeline: IdealTimeline,
}

impl WorstIf {
    /// The ranks made typical, in order.
    pub fn ranks(&self) -> impl Iterator<Item = &str> {
        self.who.split(", ")
    }
}

impl WhatIf {
    /// Whether the figures can be used: replayed within [`TRUSTED_ERROR_PCT`] of the recording.
    pub fn trusted(&self) -> bool {
        !self.worlds.is_empty() && self.error_pct <= TRUSTED_ERROR_PCT
    }

    /// What making `who` typical gives back, when it gives back anything.
    pub fn rank(&self, who: &str) -> Option<&RankIf> {
        self.ranks.iter().find(|r| r.who == who)
    }

    /// What making `who` typical gives back per step, ns (0 when nothing).
    pub fn saved_by(&self, who: &str) -> Ns {
        self.rank(who).map_or(Ns::ZERO, |r| r.saved)
    }

    /// Whether `who` is a rank of a pipeline world ([`WorldIf::pipeline`]) that runs its
    /// steps in lockstep.
    pub fn in_pipeline(&self, who: &str) -> bool {
        self.pipeline_ranks.iter().any(|r| r == who)
    }

    /// What `who` costs the step when it is a rank of a pipeline whose stages run their steps
    /// in lockstep (training: each step on every stage, one after another) and the replay is
    /// trusted: what making it typical gives back per step (its local charge counts waits its
    /// neighbours would have spent in the pipeline's bubbles anyway). `None` otherwise: the
    /// local charge stands — also in a serving pipeline, whose stages work on different
    /// batches at once, where the replay of one step's span is no measure of what a stage
    /// costs (`rankprof synth --pp 4 --steps 8`, stage 2 at 2× its kernel time: the local
    /// charge 0.14 ms a step, the plant's last step ending 0.13 ms a step later than the
    /// control's; the replay 0.36).
    pub fn pipeline_saving(&self, who: &str) -> Option<Ns> {
        (self.trusted() && self.in_pipeline(who)).then(|| self.saved_by(who))
    }

    /// The pipeline stage whose ranks made typical together give back the most, when the
    /// replay is trusted, that is at least `threshold_pct` of the step, and clearly more than
    /// any one of its ranks alone ([`STAGE_OVER_ALONE`]): otherwise a rank explains it. A
    /// stage of one rank is that rank.
    pub fn lead_stage(&self, threshold_pct: f64) -> Option<&StageGroupIf> {
        if !self.trusted() {
            return None;
        }
        self.stage_groups
            .iter()
            .filter(|g| g.ranks.len() >= 2 && g.step_pct >= threshold_pct)
            .filter(|g| g.saved.get() as f64 >= STAGE_OVER_ALONE * g.alone.get() as f64)
            .max_by(|a, b| a.saved.cmp(&b.saved).then(b.who.cmp(&a.who)))
    }
}

/// One world's sums in one row of the step table.
#[derive(Debug, Clone, Default)]
struct Sums {
    collectives: usize,
    first_from: Option<i64>,
    last_end: Option<i64>,
    replayed: i64,
    ideal_saved: i64,
    kinds: [i64; 3],
    ranks: BTreeMap<usize, i64>,
}

impl Sums {
    /// The recorded span of its collectives: first segment's start to last collective's end.
    fn recorded(&self) -> i64 {
        self.last_end.unwrap_or(0) - self.first_from.unwrap_or(0)
    }
}

/// One world's sums over the rows measured in full.
#[derive(Debug, Default)]
struct WorldTotals {
    collectives: usize,
    recorded: i64,
    replayed: i64,
    /// Replayed less ideal.
    lost: i64,
    /// |replayed − recorded|, row by row.
    off: i64,
    /// `lost` in each row.
    lost_rows: Vec<i64>,
}

impl WorldTotals {
    fn add(&mut self, s: &Sums) {
        self.add_row(s.collectives, s.recorded(), s.replayed, s.ideal_saved);
    }

    /// The world's record: its `members` named by `labels`, its totals per step (`at`).
    fn world_if(
        self,
        world: usize,
        members: &[usize],
        labels: &[String],
        pipeline: bool,
        at: PerStep,
    ) -> WorldIf {
        let per = |x: i64| at.per(x);
        WorldIf {
            world,
            who: named(members, labels).0,
            collectives: self.collectives,
            recorded: per(self.recorded),
            replayed: per(self.replayed),
            ideal: per(self.replayed - self.lost),
            slowdown: ratio(self.replayed, self.replayed - self.lost),
            lost_median: Ns::new(lower_median(self.lost_rows)),
            error_pct: 100.0 * ratio(self.off, self.recorded),
            pipeline,
        }
    }

    /// One row: its collectives, its recorded and replayed spans, and replayed less ideal.
    fn add_row(&mut self, collectives: usize, recorded: i64, replayed: i64, lost: i64) {
        self.collectives += collectives;
        self.recorded += recorded;
        self.replayed += replayed;
        self.lost += lost;
        self.off += (replayed - recorded).abs();
        self.lost_rows.push(lost);
    }
}

/// One collective, as far as making the worst few ranks typical needs: its step-table row,
/// its members' lower median segment, and its longest segments (rank, segment), the longest
/// first. Fixing at most [`WORST_K`] ranks leaves one of the first `WORST_K + 1` the last.
#[derive(Debug, Clone, Copy)]
struct Longest {
    row: usize,
    world: usize,
    median: i64,
    top: [(usize, i64); WORST_K + 1],
    n: usize,
    /// How long compute waited for it (`i64::MAX`: in full): what it gives back at most.
    cap: i64,
}

impl Longest {
    fn of(row: usize, world: usize, members: &[Member], median: i64) -> Longest {
        let mut top = [(usize::MAX, i64::MIN); WORST_K + 1];
        let mut n = 0;
        for m in members {
            let at = top[..n]
                .iter()
                .position(|&(_, seg)| m.seg > seg)
                .unwrap_or(n);
            if at <= WORST_K {
                top.copy_within(at..WORST_K, at + 1);
                top[at] = (m.rank, m.seg);
                n = (n + 1).min(WORST_K + 1);
            }
        }
        Longest {
            row,
            world,
            median,
            top,
            n,
            cap: i64::MAX,
        }
    }

    /// What the collective gives back when the ranks in `fixed` arrive after the median
    /// segment: the longest segment less the longest of the others (or the median, if later).
    fn saved_without(&self, fixed: &[usize]) -> i64 {
        let top = &self.top[..self.n];
        let Some(&(_, latest)) = top.first() else {
            return 0;
        };
        let others = top
            .iter()
            .find(|(r, _)| !fixed.contains(r))
            .map_or(self.median, |&(_, seg)| seg);
        (latest - others.max(self.median)).clamp(0, self.cap.max(0))
    }
}

/// The what-if, accumulated collective by collective.
#[derive(Debug, Default)]
pub(crate) struct WhatIfAcc {
    /// (row, world) → sums.
    sums: BTreeMap<(usize, usize), Sums>,
    /// Every collective's longest segments, for the worst ranks fixed together.
    longest: Vec<Longest>,
    /// The worlds replayed on the graph ([`super::graph`]: CPU-only ones, and those with
    /// point-to-point pairs), and their collectives.
    graph: BTreeMap<usize, Vec<Node>>,
    /// The worlds with point-to-point pairs: pipelines.
    pipelines: BTreeSet<usize>,
    /// GPU worlds replayed on the graph if their members leave collectives at different
    /// times ([`Spread`]), and their collectives so far.
    maybe: BTreeMap<usize, Spread>,
    /// Members kept in [`WhatIfAcc::maybe`], in all.
    maybe_kept: usize,
    /// The ideal timeline's records (bounded).
    ideal: IdealAcc,
}

/// A GPU world that may be replayed on the graph: NCCL members end a collective within µs of
/// each other, and the chain has them leave together; but ranks that share a GPU or talk
/// over sockets leave up to ms apart (`fixtures/real-nccl/tp4-*`: the chain missed them by
/// 4 %). Such a world is replayed on the graph, as a gloo world is, when the median spread of
/// its collectives' ends is over [`SPREAD_NS`] and no collective of it ran beside compute (a
/// side-stream cap, which only the chain applies). Decided on its first [`SPREAD_SAMPLE`]
/// collectives: under the spread, or past [`MAYBE_MEMBERS`] members kept in all, its nodes
/// are dropped and it stays a chain.
#[derive(Debug, Default)]
struct Spread {
    nodes: Vec<Node>,
    /// Each collective's end spread (last member's end less the first's), the first ones.
    spreads: Vec<i64>,
    /// Decided: a chain.
    chain: bool,
}

/// The median end spread over which a GPU world's members leave at different times, ns.
const SPREAD_NS: i64 = 50_000;

/// How many collectives decide a GPU world's spread.
const SPREAD_SAMPLE: usize = 32;

/// The most members of undecided and spread GPU worlds kept, in all (~56 bytes each).
const MAYBE_MEMBERS: usize = 1 << 20;

impl Spread {
    /// Keeps a collective of the world, unless it is decided a chain: `capped`, it ran
    /// beside compute; `kept`: members kept so far in all such worlds.
    fn add(
        &mut self,
        row: usize,
        members: &[Member],
        capped: bool,
        kept: &mut usize,
    ) -> Option<usize> {
        if self.chain {
            return None;
        }
        let sampling = self.spreads.len() < SPREAD_SAMPLE;
        if sampling {
            let lo = members.iter().map(|m| m.end).min().unwrap_or(0);
            let hi = members.iter().map(|m| m.end).max().unwrap_or(0);
            self.spreads.push(hi - lo);
        }
        // Decided once, on the sample's last collective.
        let tight = sampling && self.spreads.len() == SPREAD_SAMPLE && !self.spread();
        if capped || tight || *kept + members.len() > MAYBE_MEMBERS {
            *kept -= self.nodes.iter().map(|n| n.members.len()).sum::<usize>();
            *self = Spread {
                chain: true,
                ..Spread::default()
            };
            return None;
        }
        *kept += members.len();
        self.nodes.push(Node {
            row,
            members: members.to_vec(),
        });
        Some(self.nodes.len() - 1)
    }

    /// Whether its members leave at different times: the median end spread of the first
    /// collectives over [`SPREAD_NS`].
    fn spread(&self) -> bool {
        lower_median(self.spreads.clone()) > SPREAD_NS
    }
}

/// The kinds a segment splits into, in [`Member::parts`] order.
const KINDS: [Kind; 3] = [Kind::Work, Kind::Host, Kind::LateStart];

impl WhatIfAcc {
    /// `steps`: the step table's step names, by row, when the ideal timeline is kept (it names
    /// its steps so); `None`: not kept.
    pub(crate) fn new(steps: Option<Vec<String>>) -> WhatIfAcc {
        WhatIfAcc {
            ideal: steps.map(IdealAcc::new).unwrap_or_default(),
            ..WhatIfAcc::default()
        }
    }

    /// World `world` is replayed on the graph, not as a chain ([`super::graph`]): its members
    /// leave a collective at different times (gloo), or its collectives are not all joined by
    /// every member (a pipeline's transfers: `pipeline`).
    pub(crate) fn graph_world(&mut self, world: usize, pipeline: bool) {
        self.graph.entry(world).or_default();
        if pipeline {
            self.pipelines.insert(world);
        }
    }

    /// GPU world `world` is replayed on the graph if its members leave its collectives at
    /// different times ([`Spread`]).
    pub(crate) fn maybe_graph_world(&mut self, world: usize) {
        self.maybe.entry(world).or_default();
    }

    /// One matched collective `name` of `world` in step-table row `row`: its members and the
    /// last arriver's transfer.
    /// `cap`: how long compute waited for it (a side-stream collective that compute ran on
    /// through, [`crate::analyze::collect::overlap`]; `i64::MAX` for one it waited for in
    /// full): an earlier end gives back no more than that.
    pub(crate) fn add(
        &mut self,
        row: usize,
        world: usize,
        name: &str,
        members: &[Member],
        transfer: i64,
        cap: i64,
    ) {
        if members.len() < 2 {
            return;
        }
        let median = lower_median(members.iter().map(|m| m.seg).collect());
        let latest = latest_arrival(members, |m| m.seg);
        let s = self.sums.entry((row, world)).or_default();
        s.collectives += 1;
        let from = members.iter().map(|m| m.from).min().unwrap_or(0);
        let end = members.iter().map(|m| m.end).max().unwrap_or(0);
        s.first_from = Some(s.first_from.map_or(from, |f| f.min(from)));
        s.last_end = Some(s.last_end.map_or(end, |e| e.max(end)));
        let capped = |x: i64| x.clamp(0, cap.max(0));
        s.replayed += latest + transfer;
        let ideal_saved = capped(latest - latest_arrival(members, |_| median));
        s.ideal_saved += ideal_saved;
        if let Some((who, saved)) = typical_rank_saves(members, latest, median) {
            *s.ranks.entry(who).or_default() += capped(saved);
        }
        for (k, saved) in s.kinds.iter_mut().enumerate() {
            *saved += capped(latest - latest_without(members, k));
        }
        self.longest.push(Longest {
            cap,
            ..Longest::of(row, world, members, median)
        });
        let node = match (self.graph.get_mut(&world), self.maybe.get_mut(&world)) {
            (Some(nodes), _) => {
                nodes.push(Node {
                    row,
                    members: members.to_vec(),
                });
                Some(nodes.len() - 1)
            }
            (None, Some(m)) => m.add(row, members, cap < i64::MAX, &mut self.maybe_kept),
            (None, None) => None,
        };
        self.ideal.add(Seen {
            row,
            world,
            name,
            node,
            members,
            seg: latest - ideal_saved,
            transfer,
        });
    }

    /// The totals per step over the rows measured in full (`measured`), with the mean step
    /// time; `labels` and `worlds` name the ranks; `lockstep`: the worlds whose ranks run
    /// their steps one after another ([`WhatIf::pipeline_saving`]); `stage_of`: each rank's
    /// pipeline stage, where its name says it.
    pub(crate) fn finish(
        mut self,
        measured: &[usize],
        step_ns: f64,
        labels: &[String],
        worlds: &[Vec<usize>],
        lockstep: &BTreeSet<usize>,
        stage_of: &[Option<u32>],
    ) -> WhatIf {
        if measured.is_empty() {
            return WhatIf::default();
        }
        let at = PerStep {
            steps: measured.len(),
            step_ns,
        };
        let measured: BTreeSet<usize> = measured.iter().copied().collect();
        self.join_spread_worlds();
        // The graph worlds that replay; the others (orders that cannot be met) stay chains.
        let graphs: BTreeMap<usize, graph::World<'_>> = self
            .graph
            .iter()
            .filter_map(|(&w, nodes)| Some((w, graph::World::new(nodes, &measured)?)))
            .collect();
        let timeline = self.ideal.finish(&graphs, &measured, labels);
        let mut t = Totals::default();
        let waits = t.add_graphs(&graphs, &self.pipelines);
        t.add_chains(&self.sums, &measured, &graphs);
        let pipelines: BTreeSet<usize> = self.pipelines.intersection(lockstep).copied().collect();
        let stage_groups = stage_groups(&graphs, &pipelines, worlds, stage_of)
            .into_iter()
            .map(|(world, stage, members, ns)| {
                t.stage_group(world, stage, &members, ns, labels, at)
            })
            .collect();
        let chain: Vec<Longest> = self
            .longest
            .iter()
            .filter(|c| !graphs.contains_key(&c.world))
            .copied()
            .collect();
        let worst = t.worst(&chain, &graphs, &measured, worlds, labels, at);
        let ranks = t.ranks_if(labels, at);
        let kinds = KINDS
            .iter()
            .zip(t.kinds)
            .map(|(&kind, ns)| {
                let (saved, step_pct) = at.share(ns);
                KindIf {
                    kind,
                    saved,
                    step_pct,
                }
            })
            .collect();
        let off: i64 = t.by_world.values().map(|w| w.off).sum();
        let recorded_all: i64 = t.by_world.values().map(|w| w.recorded).sum();
        let worlds_if: Vec<WorldIf> = t
            .by_world
            .into_iter()
            .map(|(world, w)| {
                let members = worlds.get(world).map_or(&[][..], Vec::as_slice);
                // A pipeline replayed on its graph (one that could not be stays a chain).
                let pipeline = self.pipelines.contains(&world) && graphs.contains_key(&world);
                w.world_if(world, members, labels, pipeline, at)
            })
            .collect();
        let pipeline_ranks = worlds_if
            .iter()
            .filter(|w| w.pipeline && lockstep.contains(&w.world))
            .flat_map(|w| worlds.get(w.world).into_iter().flatten())
            .map(|&r| label(labels, r))
            .collect();
        // In (world, rank) order: the stages in rank order.
        let stages: Vec<StageIf> = waits
            .into_iter()
            .map(|((world, r), [rec, ideal])| {
                let (bubble, step_pct) = at.share(rec);
                StageIf {
                    who: label(labels, r),
                    world,
                    bubble,
                    ideal_bubble: at.per(ideal),
                    step_pct,
                }
            })
            .collect();
        WhatIf {
            ranks,
            kinds,
            worst,
            slowdown: worlds_if.iter().map(|w| w.slowdown).fold(1.0, f64::max),
            error_pct: 100.0 * ratio(off, recorded_all),
            worlds: worlds_if,
            pipeline_ranks,
            stages,
            stage_groups,
            timeline,
        }
    }

    /// The GPU worlds whose members leave at different times join the graph worlds.
    fn join_spread_worlds(&mut self) {
        for (w, m) in std::mem::take(&mut self.maybe) {
            if !m.chain && !m.nodes.is_empty() && m.spread() {
                self.graph.insert(w, m.nodes);
            }
        }
    }
}

/// Sums over the measured rows as per-step figures: over `steps` rows, against a mean step
/// of `step_ns`.
#[derive(Debug, Clone, Copy)]
struct PerStep {
    steps: usize,
    step_ns: f64,
}

impl PerStep {
    /// A sum over the rows, per step.
    fn per(self, x: i64) -> Ns {
        Ns::new((x as f64 / self.steps as f64).round() as i64)
    }

    /// A per-step figure as a percentage of the step (0 without a step time).
    fn pct(self, x: Ns) -> f64 {
        if self.step_ns > 0.0 {
            100.0 * x.get() as f64 / self.step_ns
        } else {
            0.0
        }
    }

    /// A sum over the rows, per step and as a percentage of the step.
    fn share(self, x: i64) -> (Ns, f64) {
        let per = self.per(x);
        (per, self.pct(per))
    }
}

/// What the replays give back over the measured rows: per world, per (rank, world) made
/// typical alone, and per kind of cause.
#[derive(Debug, Default)]
struct Totals {
    by_world: BTreeMap<usize, WorldTotals>,
    ranks: BTreeMap<(usize, usize), i64>,
    kinds: [i64; 3],
}

impl Totals {
    /// The graph worlds' replays added: each world's rows, what each of its ranks gives back
    /// and each cause. Returns the waits of the ranks of the `pipelines` ((world, rank) →
    /// recorded, ideal).
    fn add_graphs(
        &mut self,
        graphs: &BTreeMap<usize, graph::World<'_>>,
        pipelines: &BTreeSet<usize>,
    ) -> BTreeMap<(usize, usize), [i64; 2]> {
        let mut waits = BTreeMap::new();
        for (&w, g) in graphs {
            let f = g.figures(pipelines.contains(&w));
            waits.extend(f.waits.iter().map(|(&r, &x)| ((w, r), x)));
            let t = self.by_world.entry(w).or_default();
            for &(n, recorded, replayed, ideal) in f.rows.values() {
                t.add_row(n, recorded, replayed, replayed - ideal);
            }
            for (&r, &ns) in &f.ranks {
                *self.ranks.entry((r, w)).or_default() += ns;
            }
            for (t, x) in self.kinds.iter_mut().zip(f.kinds) {
                *t += x;
            }
        }
        waits
    }

    /// The chain worlds' sums (`sums`: (row, world) → sums) over the `measured` rows; the
    /// `graphs` worlds are added from their replays instead ([`Totals::add_graphs`]).
    fn add_chains(
        &mut self,
        sums: &BTreeMap<(usize, usize), Sums>,
        measured: &BTreeSet<usize>,
        graphs: &BTreeMap<usize, graph::World<'_>>,
    ) {
        for ((row, world), s) in sums {
            if !measured.contains(row) || graphs.contains_key(world) {
                continue;
            }
            self.by_world.entry(*world).or_default().add(s);
            for (&r, &ns) in &s.ranks {
                *self.ranks.entry((r, *world)).or_default() += ns;
            }
            for (t, x) in self.kinds.iter_mut().zip(s.kinds) {
                *t += x;
            }
        }
    }

    /// The worst 1 … [`WORST_K`] ranks made typical together ([`worst_fixed`]): `chain`, the
    /// chain worlds' collectives; `graphs`, the graph worlds.
    fn worst(
        &self,
        chain: &[Longest],
        graphs: &BTreeMap<usize, graph::World<'_>>,
        measured: &BTreeSet<usize>,
        worlds: &[Vec<usize>],
        labels: &[String],
        at: PerStep,
    ) -> Vec<WorstIf> {
        let on_graphs = |fixed: &[usize]| {
            graphs
                .iter()
                .map(|(&w, g)| (w, g.saved_fixed(fixed)))
                .collect()
        };
        let lost: BTreeMap<usize, i64> = self.by_world.iter().map(|(&w, t)| (w, t.lost)).collect();
        let lost_all = along_ranks(&lost, worlds);
        worst_fixed(chain, measured, &self.ranks, worlds, lost_all, on_graphs)
            .into_iter()
            .map(|(fixed, ns)| {
                let (saved, step_pct) = at.share(ns);
                WorstIf {
                    k: fixed.len(),
                    who: fixed
                        .iter()
                        .map(|&r| label(labels, r))
                        .collect::<Vec<_>>()
                        .join(", "),
                    saved,
                    step_pct,
                    lost_pct: 100.0 * ratio(ns, lost_all),
                }
            })
            .collect()
    }

    /// A pipeline stage's ranks made typical together (`ns` over the rows), beside the most
    /// one of them gives back alone.
    fn stage_group(
        &self,
        world: usize,
        stage: u32,
        members: &[usize],
        ns: i64,
        labels: &[String],
        at: PerStep,
    ) -> StageGroupIf {
        let (who, names) = named(members, labels);
        let (saved, step_pct) = at.share(ns);
        StageGroupIf {
            stage,
            world,
            who,
            ranks: names,
            saved,
            step_pct,
            alone: at.per(most_alone(members, world, &self.ranks)),
        }
    }

    /// Each rank that gives back anything made typical alone, the most first.
    fn ranks_if(&self, labels: &[String], at: PerStep) -> Vec<RankIf> {
        let mut ranks: Vec<RankIf> = self
            .ranks
            .iter()
            .filter(|&(_, &ns)| ns > 0)
            .map(|(&(r, world), &ns)| {
                let (saved, step_pct) = at.share(ns);
                RankIf {
                    who: label(labels, r),
                    world,
                    saved,
                    step_pct,
                }
            })
            .collect();
        ranks.sort_by(|a, b| b.saved.cmp(&a.saved).then(a.who.cmp(&b.who)));
        ranks
    }
}

/// `members` named by `labels`: compact ([`crate::analyze::rankset::compact`]), and each.
fn named(members: &[usize], labels: &[String]) -> (String, Vec<String>) {
    let names: Vec<&str> = members
        .iter()
        .filter_map(|&r| labels.get(r))
        .map(String::as_str)
        .collect();
    (
        crate::analyze::rankset::compact(&names),
        names.iter().map(|n| n.to_string()).collect(),
    )
}

/// The most any one of `members` gives back made typical alone in `world` (`alone`:
/// (rank, world) → ns over the rows).
fn most_alone(members: &[usize], world: usize, alone: &BTreeMap<(usize, usize), i64>) -> i64 {
    members
        .iter()
        .filter_map(|&r| alone.get(&(r, world)))
        .fold(0, |m, &x| m.max(x))
}

/// Each stage (not the whole world) of the `pipelines` replayed on their graphs, with what its ranks made typical together give back over the measured rows:
/// (world, stage, its ranks, ns).
fn stage_groups(
    graphs: &BTreeMap<usize, graph::World<'_>>,
    pipelines: &BTreeSet<usize>,
    worlds: &[Vec<usize>],
    stage_of: &[Option<u32>],
) -> Vec<(usize, u32, Vec<usize>, i64)> {
    let mut out = Vec::new();
    for (&w, g) in graphs.iter().filter(|(w, _)| pipelines.contains(w)) {
        let members = worlds.get(w).map_or(&[][..], Vec::as_slice);
        let mut by: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
        for &r in members {
            if let Some(&Some(p)) = stage_of.get(r) {
                by.entry(p).or_default().push(r);
            }
        }
        for (stage, ranks) in by {
            if ranks.len() < members.len() {
                let ns = g.saved_fixed(&ranks);
                out.push((w, stage, ranks, ns));
            }
        }
    }
    out
}

/// How many of the ranks that give back the most alone [`worst_fixed`] tries, in that order.
const WORST_TRIED: usize = 4 * WORST_K;

/// The worst 1 … [`WORST_K`] ranks made typical together, each set with what it gives back
/// over the measured rows ([`along_ranks`] of each world's: the chain worlds' `longest`, plus
/// `on_graphs` for the graph worlds). The ranks are taken in the order of what they give back
/// alone (`alone`: (rank, world) → ns), skipping one that adds nothing to the set: a rank of
/// another DP replica steps beside the set's, not after it. Sets are cut where the imbalance
/// (`lost_all`, the worlds' combined the same way) is all given back.
fn worst_fixed(
    longest: &[Longest],
    measured: &BTreeSet<usize>,
    alone: &BTreeMap<(usize, usize), i64>,
    worlds: &[Vec<usize>],
    lost_all: i64,
    on_graphs: impl Fn(&[usize]) -> BTreeMap<usize, i64>,
) -> Vec<(Vec<usize>, i64)> {
    let mut by_rank: BTreeMap<usize, i64> = BTreeMap::new();
    for (&(r, _), &ns) in alone {
        *by_rank.entry(r).or_default() += ns;
    }
    let mut order: Vec<(usize, i64)> = by_rank.into_iter().filter(|&(_, ns)| ns > 0).collect();
    order.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let saved = |fixed: &[usize]| {
        let mut by_world = on_graphs(fixed);
        for c in longest.iter().filter(|c| measured.contains(&c.row)) {
            *by_world.entry(c.world).or_default() += c.saved_without(fixed);
        }
        along_ranks(&by_world, worlds)
    };
    let mut out: Vec<(Vec<usize>, i64)> = Vec::new();
    let mut fixed: Vec<usize> = Vec::new();
    let mut have = 0;
    for &(r, _) in order.iter().take(WORST_TRIED) {
        fixed.push(r);
        let ns = saved(&fixed);
        if ns <= have && !out.is_empty() {
            fixed.pop();
            continue;
        }
        have = ns;
        out.push((fixed.clone(), ns));
        if ns >= lost_all || out.len() == WORST_K {
            break;
        }
    }
    out
}

/// Per-world figures (world → ns) as one step's: the most any one rank's own worlds add up
/// to. A rank's collectives of several worlds (its TP group's, then its DP group's) follow one
/// another in its step, so theirs add; worlds that share no rank (the TP groups of two DP
/// replicas) step side by side, so theirs do not. A world `worlds` does not list counts alone.
fn along_ranks(by_world: &BTreeMap<usize, i64>, worlds: &[Vec<usize>]) -> i64 {
    let mut per_rank: BTreeMap<usize, i64> = BTreeMap::new();
    let mut most = 0;
    for (&w, &ns) in by_world {
        match worlds.get(w) {
            Some(members) if !members.is_empty() => {
                for &r in members {
                    *per_rank.entry(r).or_default() += ns;
                }
            }
            _ => most = most.max(ns),
        }
    }
    per_rank.into_values().fold(most, i64::max)
}

/// `a / b`, 0 when `b` is not positive (no NaN, no inf).
fn ratio(a: i64, b: i64) -> f64 {
    if b > 0 {
        a as f64 / b as f64
    } else {
        0.0
    }
}

/// The last arrival after the previous collective, when each member's segment is
/// `seg(member)`: the longest segment (the replay's members all leave the previous collective
/// together).
fn latest_arrival(members: &[Member], seg: impl Fn(&Member) -> i64) -> i64 {
    members.iter().map(seg).max().unwrap_or(0)
}

/// The member that alone arrives last, and what its segment at the median gives back: its
/// lead over the next arrival (or over the median, whichever is later). Two members arriving
/// together give back nothing alone.
fn typical_rank_saves(members: &[Member], latest: i64, median: i64) -> Option<(usize, i64)> {
    let mut at_latest = members.iter().filter(|m| m.seg == latest);
    let last = at_latest.next()?;
    if at_latest.next().is_some() {
        return None;
    }
    let next = members
        .iter()
        .filter(|m| m.rank != last.rank)
        .map(|m| m.seg)
        .max()
        .unwrap_or(median);
    let saved = latest - next.max(median);
    (saved > 0).then_some((last.rank, saved))
}

/// The last arrival with every member's part `k` cut to the members' median part.
fn latest_without(members: &[Member], k: usize) -> i64 {
    let median = lower_median(members.iter().map(|m| m.parts[k]).collect());
    latest_arrival(members, |m| m.seg - (m.parts[k] - median).max(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(rank: usize, seg: i64) -> Member {
        Member {
            rank,
            seq: 0,
            from: 0,
            seg,
            parts: [seg, 0, 0],
            end: seg + 10,
        }
    }

    #[test]
    fn the_last_arriver_gives_back_its_lead_over_the_next() {
        // 100, 90, 50, 50: fixing rank 0 leaves rank 1 at 90.
        let ms = [m(0, 100), m(1, 90), m(2, 50), m(3, 50)];
        assert_eq!(typical_rank_saves(&ms, 100, 50), Some((0, 10)));
        // Alone: it gives back down to the median.
        let ms = [m(0, 100), m(1, 50), m(2, 50), m(3, 50)];
        assert_eq!(typical_rank_saves(&ms, 100, 50), Some((0, 50)));
        // Two tied: neither alone.
        let ms = [m(0, 100), m(1, 100), m(2, 50)];
        assert_eq!(typical_rank_saves(&ms, 100, 50), None);
    }

    #[test]
    fn the_worst_ranks_fixed_together_give_back_down_to_the_next() {
        // 100, 90, 70, 50, 50 (median 70): fixing 0 gives back 10; 0 and 1, 30; 0, 1 and 2
        // still 30, the median is the floor; fixing 1 alone, nothing (0 is still last).
        let ms = [m(0, 100), m(1, 90), m(2, 70), m(3, 50), m(4, 50)];
        let c = Longest::of(0, 0, &ms, 70);
        assert_eq!(c.top[..c.n], [(0, 100), (1, 90), (2, 70), (3, 50)]);
        assert_eq!(c.saved_without(&[0]), 10);
        assert_eq!(c.saved_without(&[0, 1]), 30);
        assert_eq!(
            c.saved_without(&[0, 1, 2]),
            30,
            "the median (70) is the floor"
        );
        assert_eq!(c.saved_without(&[1]), 0);
        // Fewer members than the set: all typical, down to the median.
        let two = Longest::of(0, 0, &[m(0, 80), m(1, 40)], 40);
        assert_eq!(two.saved_without(&[0, 1]), 40);
    }

    #[test]
    fn ranks_of_side_by_side_replicas_do_not_add_up() {
        // Two DP replicas' TP worlds ({0, 1, 4, 6, 7} and {2, 3, 5, 8, 9}) and a DP world
        // {0, 2}: a rank's own worlds add up, side-by-side ones do not.
        let worlds = vec![vec![0, 1, 4, 6, 7], vec![2, 3, 5, 8, 9], vec![0, 2]];
        let by = |v: &[(usize, i64)]| v.iter().copied().collect::<BTreeMap<usize, i64>>();
        assert_eq!(along_ranks(&by(&[(0, 10), (1, 8)]), &worlds), 10);
        assert_eq!(along_ranks(&by(&[(0, 10), (1, 8), (2, 3)]), &worlds), 13);
        assert_eq!(
            along_ranks(&by(&[(7, 5)]), &worlds),
            5,
            "a world not listed"
        );
        // Rank 0 arrives 4 after rank 1 and 10 after the median in the first (step, world),
        // rank 2 9 after everyone in the second.
        let two = |a: (usize, usize), b: (usize, usize)| {
            [
                Longest::of(
                    a.0,
                    a.1,
                    &[m(0, 100), m(1, 96), m(4, 90), m(6, 90), m(7, 90)],
                    90,
                ),
                Longest::of(
                    b.0,
                    b.1,
                    &[m(2, 99), m(3, 90), m(5, 90), m(8, 90), m(9, 90)],
                    90,
                ),
            ]
        };
        // Replicas 0 and 1 in one step: fixing rank 2 gives back 9; fixing rank 0 too gives
        // replica 0 back 4, beside replica 1's step, not after it: no better set of two.
        let longest = two((0, 0), (0, 1));
        let alone = BTreeMap::from([((0, 0), 4), ((2, 1), 9)]);
        let measured = BTreeSet::from([0]);
        let sets = worst_fixed(&longest, &measured, &alone, &worlds, 10, |_| {
            BTreeMap::new()
        });
        assert_eq!(sets, vec![(vec![2], 9)]);
        // One world: the two ranks follow one another in every member's step.
        let one = vec![vec![0, 1, 2, 3, 4, 5, 6, 7, 8, 9]];
        let longest = two((0, 0), (1, 0));
        let alone = BTreeMap::from([((0, 0), 4), ((2, 0), 9)]);
        let measured = BTreeSet::from([0, 1]);
        let sets = worst_fixed(&longest, &measured, &alone, &one, 19, |_| BTreeMap::new());
        assert_eq!(sets, vec![(vec![2], 9), (vec![2, 0], 13)]);
    }

    #[test]
    fn a_cause_removed_cuts_each_part_to_the_median() {
        let mut a = m(0, 100);
        a.parts = [60, 40, 0];
        let mut b = m(1, 70);
        b.parts = [60, 10, 0];
        let mut c = m(2, 60);
        c.parts = [50, 10, 0];
        let ms = [a, b, c];
        // Host: 40 → 10 on rank 0: 70; work: 60 → 60 (median): rank 0 stays 100.
        assert_eq!(latest_without(&ms, 1), 70);
        assert_eq!(latest_without(&ms, 0), 100);
    }

    #[test]
    fn only_a_trusted_pipelines_ranks_are_costed_by_the_replay() {
        let w = |error_pct: f64| WhatIf {
            ranks: vec![RankIf {
                who: "RANK02".into(),
                world: 0,
                saved: Ns::new(40),
                step_pct: 4.0,
            }],
            error_pct,
            worlds: vec![WorldIf {
                world: 0,
                who: "RANK00–03".into(),
                collectives: 8,
                recorded: Ns::new(1000),
                replayed: Ns::new(1000),
                ideal: Ns::new(950),
                slowdown: 1000.0 / 950.0,
                lost_median: Ns::new(50),
                error_pct,
                pipeline: true,
            }],
            pipeline_ranks: ["RANK00", "RANK01", "RANK02", "RANK03"]
                .map(String::from)
                .into(),
            ..Default::default()
        };
        assert_eq!(w(1.0).pipeline_saving("RANK02"), Some(Ns::new(40)));
        // A rank of the pipeline that gives back nothing costs nothing, not its charge.
        assert_eq!(w(1.0).pipeline_saving("RANK01"), Some(Ns::ZERO));
        // Not a rank of it; or the replay misses the recording: the local charge stands.
        assert_eq!(w(1.0).pipeline_saving("RANK04"), None);
        assert_eq!(w(TRUSTED_ERROR_PCT + 1.0).pipeline_saving("RANK02"), None);
    }

    #[test]
    fn a_stage_leads_when_its_ranks_together_give_back_clearly_more_than_one_alone() {
        let group = |stage: u32, saved: i64, step_pct: f64, alone: i64| StageGroupIf {
            stage,
            world: 0,
            who: format!("TP00-PP{stage:02}, TP01-PP{stage:02}"),
            ranks: vec![format!("TP00-PP{stage:02}"), format!("TP01-PP{stage:02}")],
            saved: Ns::new(saved),
            step_pct,
            alone: Ns::new(alone),
        };
        let w = |error_pct: f64, groups: Vec<StageGroupIf>| WhatIf {
            error_pct,
            worlds: vec![WorldIf {
                world: 0,
                who: "TP00-PP00 … TP01-PP03".into(),
                collectives: 8,
                recorded: Ns::new(1000),
                replayed: Ns::new(1000),
                ideal: Ns::new(900),
                slowdown: 1000.0 / 900.0,
                lost_median: Ns::new(100),
                error_pct,
                pipeline: true,
            }],
            stage_groups: groups,
            ..Default::default()
        };
        // Stage 2 gives back 14 % together and 0.2 % alone: it leads over stage 3's 6 %.
        let both = vec![group(2, 140, 14.0, 2), group(3, 60, 6.0, 1)];
        assert_eq!(
            w(0.5, both.clone()).lead_stage(5.0).map(|g| g.stage),
            Some(2)
        );
        // Under the threshold; not clearly more than one rank alone (1.2×); untrusted: none.
        assert_eq!(w(0.5, both.clone()).lead_stage(15.0), None);
        assert_eq!(w(0.5, vec![group(2, 120, 12.0, 100)]).lead_stage(5.0), None);
        assert_eq!(w(TRUSTED_ERROR_PCT + 1.0, both).lead_stage(5.0), None);
        // A stage of one rank is that rank: never a stage lead.
        let mut one = group(2, 140, 14.0, 0);
        one.ranks.truncate(1);
        assert_eq!(w(0.5, vec![one]).lead_stage(5.0), None);
    }
}
