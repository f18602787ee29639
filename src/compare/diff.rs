//! The rows of a comparison: two summaries in, baseline / current / delta / delta % out — the
//! job as a whole, every rank, every kernel class (over all ranks and per rank), the top
//! kernels, the kernels that appeared or vanished, and the imbalance. Which rows fail is
//! [`super::gate`]'s business; this module only measures.
//!
//! Times are per-step medians ([`Basis::Steps`]: the summary's `steps.*_median_ns`, so one slow
//! step does not move them) or whole-profile totals ([`Basis::Totals`]). Kernel rows are always
//! totals (the summary keeps no per-step figures per kernel), summed over ranks.
//!
//! (Over ~500 lines: the comparison model and the one function that fills it.)

use std::collections::{BTreeMap, BTreeSet};

use anyhow::{bail, Result};
use serde::Serialize;

use super::normalize::normalize;
use super::samples::{pair, Key, Samples};
use super::sides::SideInfo;
use crate::analyze::summary::{RankEntry, Summary, WhatIfSummary};
use crate::trace::Ns;

/// Which times `compare` gates on.
#[derive(Copy, Clone, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum CompareBasis {
    Auto,
    Steps,
    Totals,
}

/// What the compared times are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Basis {
    /// Per-step medians.
    Steps,
    /// Whole-profile totals.
    Totals,
}

/// A row's outcome ([`super::gate`] sets it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// Within the threshold (or faster).
    Ok,
    /// Slower by more than `--max-regression`, or time where the baseline had none.
    Regression,
    /// Baseline and current both below `--min-time-us`: not judged.
    BelowMinTime,
    /// The steps cannot tell a change larger than the band from none (statistical gate only).
    Inconclusive,
}

/// What the statistical gate concludes about one row, or about the whole comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Decision {
    /// Slower by more than the band, significantly.
    Regression,
    /// The interval lies below the band: no change that matters.
    NoChange,
    /// Neither: more steps would decide.
    Inconclusive,
}

/// A row's statistical test: the change of the per-step median with its interval, the
/// p-values, the band it was held against, and the decision.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RowStat {
    /// The Hodges–Lehmann shift of the current steps over the baseline steps (pooled over the
    /// baselines), over the baseline's median, in %.
    pub change_pct: f64,
    /// The distribution-free interval of that change (Mann–Whitney inverted), in %.
    pub ci_low_pct: f64,
    pub ci_high_pct: f64,
    /// The interval's confidence, in % (95).
    pub confidence_pct: f64,
    /// One-sided Mann–Whitney U p-value of "current is slower".
    pub p_value: f64,
    /// The same, Holm-adjusted over every tested row of the comparison.
    pub p_adjusted: f64,
    /// The metric's learned run-to-run spread, in % (see `Comparison::noise`).
    pub noise_floor_pct: f64,
    /// The change that counts: max(`--max-regression`, noise floor), in %.
    pub band_pct: f64,
    /// One baseline: the noise floor of a rank's row over its peers is how far the ranks'
    /// levels spread in the baseline (how far one rank's may move in another run).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub floor_from_ranks: bool,
    pub baseline_steps: usize,
    pub baseline_runs: usize,
    pub current_steps: usize,
    /// Tested on the rank's per-step ratio over its peers' (the change is the rank's own, not
    /// the machine's), not on its times.
    pub vs_peers: bool,
    pub decision: Decision,
    /// Inconclusive: the steps per side that would likely decide (from the observed spread).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steps_needed: Option<usize>,
}

/// One measured figure on both sides.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// What the row is: a metric, a rank label, a class.
    pub name: String,
    pub rank: Option<String>,
    pub class: Option<String>,
    pub baseline_ns: Ns,
    pub current_ns: Ns,
    pub delta_ns: Ns,
    /// `None` when the baseline is 0.
    pub delta_pct: Option<f64>,
    pub status: Status,
    /// The times `--min-time-us` is held against when they are not the row's own (a time per
    /// token is judged unless the work it divides is below the floor): baseline, current.
    #[serde(skip)]
    pub floor_ns: Option<(i64, i64)>,
    /// The metric's per-step samples (baseline and current), when both sides keep them.
    #[serde(skip)]
    pub(crate) samples: Option<Samples>,
    /// Which metric the row is, with the baseline's and the current side's rank labels.
    #[serde(skip)]
    pub(crate) key: Option<(Key, Key)>,
    /// The statistical test, when the row was judged on samples.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stat: Option<RowStat>,
    /// A row without samples judged against several baselines: how far one more run may land
    /// above their mean by chance, in % (its band is max(`--max-regression`, this)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise_floor_pct: Option<f64>,
    /// Held inconclusive: with one baseline, a row measured in times would regress while no
    /// rank regressed against its peers, which the machine's drift between runs explains as
    /// well (the `drift` module of `compare`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub drift: bool,
}

impl Row {
    pub(crate) fn new(
        name: String,
        rank: Option<&str>,
        class: Option<&str>,
        b: i64,
        c: i64,
    ) -> Row {
        Row {
            name,
            rank: rank.map(String::from),
            class: class.map(String::from),
            baseline_ns: Ns::new(b),
            current_ns: Ns::new(c),
            delta_ns: Ns::new(c - b),
            delta_pct: pct(b, c),
            status: Status::Ok,
            floor_ns: None,
            samples: None,
            key: None,
            stat: None,
            noise_floor_pct: None,
            drift: false,
        }
    }

    /// The change a row without samples must exceed: `--max-regression`, or the baselines'
    /// noise floor when that is larger.
    pub(crate) fn fixed_band_pct(&self, max_pct: f64) -> f64 {
        max_pct.max(self.noise_floor_pct.unwrap_or(0.0))
    }

    /// Baseline and current (or the work a rate divides) both below `min_ns`: not judged.
    pub(crate) fn below_min(&self, min: Ns) -> bool {
        let (b, c) = self
            .floor_ns
            .unwrap_or((self.baseline_ns.get(), self.current_ns.get()));
        b < min.get() && c < min.get()
    }

    /// The row with its metric's key and, when both sides keep them, its samples.
    fn keyed(mut self, b: &Summary, c: &Summary, kb: Key, kc: Key, steps: bool) -> Row {
        if steps {
            self.samples = pair(b, &kb, c, &kc);
        }
        self.key = Some((kb, kc));
        self
    }
}

/// `(c - b) / b` in percent; `None` when `b` is 0.
pub(crate) fn pct(b: i64, c: i64) -> Option<f64> {
    (b != 0).then(|| (c - b) as f64 / b as f64 * 100.0)
}

/// A kernel found on both sides (totals summed over ranks).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KernelRow {
    pub name: String,
    pub class: String,
    pub baseline_ns: Ns,
    pub current_ns: Ns,
    pub delta_ns: Ns,
    pub delta_pct: Option<f64>,
    pub baseline_count: u64,
    pub current_count: u64,
}

/// A kernel found on one side only.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KernelOnly {
    pub name: String,
    pub class: String,
    pub total_ns: Ns,
    pub count: u64,
    /// False when the other side's summary folded kernels into `other_kernels`: this one may
    /// be among them.
    pub certain: bool,
    /// Set by the gate: this new kernel fails the comparison.
    pub fails: bool,
}

/// Slowest rank's work over the mean, both sides.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ImbalanceRow {
    pub baseline: f64,
    pub current: f64,
    pub delta: f64,
    pub baseline_slowest: Option<String>,
    pub current_slowest: Option<String>,
    /// Ranks on the current side (the figure means nothing below 2).
    pub ranks: usize,
    pub fails: bool,
}

/// Each side's slowdown, re-simulated at the collectives
/// ([`crate::analyze::reduce::path::whatif`]): the replayed step over the step with every rank
/// typical, in the world that loses the most. `None` on a side whose what-if is not trusted
/// (its replay misses the recording by more than 5 %) or that has no matched collectives.
/// Each side's figures are its saved summary's (`path.what_if`: the slowdown, the step time
/// lost in the median step, the rank that gives back the most).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SlowdownRow {
    pub baseline: Option<WhatIfSummary>,
    pub current: Option<WhatIfSummary>,
    pub fails: bool,
}

impl SlowdownRow {
    /// The baseline's and the current side's slowdown.
    pub fn slowdowns(&self) -> (Option<f64>, Option<f64>) {
        let s = |w: &Option<WhatIfSummary>| w.as_ref().map(|w| w.slowdown);
        (s(&self.baseline), s(&self.current))
    }
}

/// One reason the gate failed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Failure {
    /// `overall`, `rank`, `class`, `rank-class`, `new-kernel`, `imbalance` or `slowdown`.
    pub kind: String,
    pub rank: Option<String>,
    pub class: Option<String>,
    pub message: String,
    /// Communication grew on a rank whose own work did not: most likely it waits for a slower
    /// rank, so the report names the slower rank first.
    pub waiting: bool,
}

/// The thresholds a comparison was judged by.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Thresholds {
    pub max_regression_pct: f64,
    pub max_imbalance: Option<f64>,
    /// `--max-slowdown`: the current side's re-simulated slowdown above it fails.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_slowdown: Option<f64>,
    pub min_time_ns: Ns,
    pub new_kernels_fail: bool,
    /// `--gate stats`: rows with per-step samples are tested, not held to the fixed threshold.
    pub statistical: bool,
}

/// The whole comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    pub baseline: SideInfo,
    pub current: SideInfo,
    pub basis: Basis,
    /// Why this basis, in words.
    pub basis_note: String,
    pub normalized: bool,
    /// `--top-n`: kernels shown per list.
    pub top_n: usize,
    pub thresholds: Thresholds,
    /// Slowest rank's busy and work.
    pub overall: Vec<Row>,
    /// Each matched rank's work.
    pub ranks: Vec<Row>,
    /// Each class over all ranks.
    pub classes: Vec<Row>,
    /// Each class on each matched rank.
    pub rank_classes: Vec<Row>,
    /// Each rank's peak allocated memory per device (both sides' summaries with memory).
    pub memory: Vec<super::memory::MemoryChange>,
    pub imbalance: ImbalanceRow,
    /// The slowdown the imbalance causes, re-simulated (the what-if), on each side.
    pub slowdown: SlowdownRow,
    /// Top kernels found on both sides, by the larger of the two totals.
    pub kernels: Vec<KernelRow>,
    /// Kernels only in CURRENT, largest first.
    pub appeared: Vec<KernelOnly>,
    /// Kernels only in BASELINE, largest first.
    pub vanished: Vec<KernelOnly>,
    pub baseline_only_ranks: Vec<String>,
    pub current_only_ranks: Vec<String>,
    pub failures: Vec<Failure>,
    /// No regression (inconclusive rows do not fail it: see `decision`).
    pub passed: bool,
    /// Regression; inconclusive: none fails, but a row the steps cannot decide has its estimate
    /// above the band; else no change (undecided rows leaning to no change are listed only).
    pub decision: Decision,
    /// How the rows were judged, in words: the statistical rule, or the fixed threshold and why.
    pub rule: String,
    /// Where each metric's noise floor comes from: several baselines' run-to-run spread, or one
    /// baseline's step-to-step spread.
    pub noise: String,
    /// The rows the steps cannot decide (statistical gate), worded like failures, those whose
    /// estimate is above the band (which make the comparison inconclusive) first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inconclusive: Vec<Failure>,
    /// Baselines after the first (`--baseline a b c`): their steps are pooled with its own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub more_baselines: Vec<SideInfo>,
    /// The worst regression in plain words (`TP01's gemm time per step +20.0 % (…)`), set by
    /// the gate when it fails.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lead: Option<String>,
    /// Why the two sides look like different runs (other GPU, other ranks, other naming, other
    /// step markers): said before any failure, since their figures do not compare. Empty: the
    /// same kind of run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub different_runs: Vec<String>,
    pub notes: Vec<String>,
}

impl Comparison {
    /// Every time row: overall, ranks, classes, classes by rank.
    pub(crate) fn time_rows_mut(&mut self) -> impl Iterator<Item = &mut Row> {
        self.overall
            .iter_mut()
            .chain(self.ranks.iter_mut())
            .chain(self.classes.iter_mut())
            .chain(self.rank_classes.iter_mut())
    }

    /// Every time row, read-only: overall, ranks, classes, classes by rank.
    pub fn time_rows(&self) -> impl Iterator<Item = &Row> {
        self.overall
            .iter()
            .chain(&self.ranks)
            .chain(&self.classes)
            .chain(&self.rank_classes)
    }
}

/// How to build the rows.
#[derive(Debug, Clone)]
pub(crate) struct Options {
    pub(crate) basis: CompareBasis,
    pub(crate) normalize: bool,
    pub(crate) top_n: usize,
    pub(crate) thresholds: Thresholds,
}

/// Pairs ranks by label; when no label is shared and both sides have as many ranks, by
/// position (two single-rank traces of different ranks, say).
fn match_ranks(b: &[RankEntry], c: &[RankEntry]) -> (Vec<(usize, usize)>, Option<String>) {
    let pairs: Vec<(usize, usize)> = b
        .iter()
        .enumerate()
        .filter_map(|(i, r)| {
            c.iter()
                .position(|q| q.figures.rank == r.figures.rank)
                .map(|j| (i, j))
        })
        .collect();
    if pairs.is_empty() && !b.is_empty() && b.len() == c.len() {
        let note = format!(
            "no rank label is on both sides; ranks matched by position ({})",
            b.iter()
                .zip(c)
                .map(|(x, y)| format!("{}→{}", x.figures.rank, y.figures.rank))
                .collect::<Vec<_>>()
                .join(", ")
        );
        return ((0..b.len()).map(|i| (i, i)).collect(), Some(note));
    }
    (pairs, None)
}

fn rank_name(b: &RankEntry, c: &RankEntry) -> String {
    if b.figures.rank == c.figures.rank {
        b.figures.rank.clone()
    } else {
        format!("{}→{}", b.figures.rank, c.figures.rank)
    }
}

/// Per-kernel totals over ranks: name → (class, total, count), names normalized if asked.
fn kernel_totals(s: &Summary, norm: bool) -> BTreeMap<String, (String, i64, u64)> {
    let mut m: BTreeMap<String, (String, i64, u64)> = BTreeMap::new();
    for k in &s.kernels {
        let name = if norm {
            normalize(&k.name)
        } else {
            k.name.clone()
        };
        let e = m.entry(name).or_insert_with(|| (k.class.clone(), 0, 0));
        e.1 += k.total_ns.iter().sum::<i64>();
        e.2 += k.count.iter().sum::<u64>();
    }
    m
}

/// The slowest rank by work, if there are at least two ranks.
fn slowest(s: &Summary) -> Option<String> {
    if s.ranks.len() < 2 {
        return None;
    }
    s.ranks
        .iter()
        .max_by_key(|r| r.figures.compute_ns.get())
        .map(|r| r.figures.rank.clone())
}

/// Chooses the basis.
fn basis(
    want: CompareBasis,
    b: &Summary,
    c: &Summary,
    pairs: &[(usize, usize)],
) -> Result<(Basis, String)> {
    let why_not = |s: &Summary, side: &str| -> Option<String> {
        if s.overall.steps.count == 0 {
            Some(format!("{side} has no steps"))
        } else if s.overall.steps.class_median_ns.is_empty() {
            Some(format!(
                "{side} is a summary without per-class step medians (an older file)"
            ))
        } else {
            None
        }
    };
    let mut reason = why_not(b, "baseline").or_else(|| why_not(c, "current"));
    if reason.is_none() {
        if let Some((i, j)) = pairs
            .iter()
            .find(|(i, j)| b.ranks[*i].steps.count == 0 || c.ranks[*j].steps.count == 0)
        {
            reason = Some(format!(
                "rank {} has no steps on one side",
                rank_name(&b.ranks[*i], &c.ranks[*j])
            ));
        }
    }
    let steps = format!(
        "per-step medians over {} baseline and {} current steps ({} / {})",
        b.overall.steps.count, c.overall.steps.count, b.profile.step_source, c.profile.step_source
    );
    match (want, reason) {
        (CompareBasis::Totals, _) => Ok((
            Basis::Totals,
            "whole-profile totals (--basis totals)".into(),
        )),
        (CompareBasis::Steps | CompareBasis::Auto, None) => Ok((Basis::Steps, steps)),
        (CompareBasis::Steps, Some(r)) => bail!("--basis steps: {r}"),
        (CompareBasis::Auto, Some(r)) => Ok((Basis::Totals, format!("whole-profile totals: {r}"))),
    }
}

/// Builds every row (all statuses `Ok`; [`super::gate::apply`] judges them).
// Long on purpose: one row family per block (overall, ranks, classes, classes by rank,
// kernels, appeared/vanished), all from the same two summaries.
pub(crate) fn build(
    base: &Summary,
    cur: &Summary,
    baseline: SideInfo,
    current: SideInfo,
    opts: &Options,
) -> Result<Comparison> {
    let mut notes = Vec::new();
    let (pairs, pnote) = match_ranks(&base.ranks, &cur.ranks);
    notes.extend(pnote);
    let (basis, basis_note) = basis(opts.basis, base, cur, &pairs)?;
    let steps = basis == Basis::Steps;
    if !steps && base.overall.steps.count != cur.overall.steps.count {
        notes.push(format!(
            "the sides have {} and {} steps: totals grow with the number of steps",
            base.overall.steps.count, cur.overall.steps.count
        ));
    }
    let sides = Sides {
        base,
        cur,
        steps,
        pairs: &pairs,
    };
    let overall = sides.overall_rows(&mut notes);
    let class_names = sides.class_names();
    let (kernels, appeared, vanished) = kernel_rows(base, cur, opts, &mut notes);
    let (baseline_only_ranks, current_only_ranks) = sides.one_sided_ranks(&mut notes);
    if base.profile.source != cur.profile.source {
        notes.push(format!(
            "baseline figures come from {} events, current from {}: they do not compare well",
            base.profile.source, cur.profile.source
        ));
    }
    Ok(Comparison {
        baseline,
        current,
        basis,
        basis_note,
        normalized: opts.normalize,
        top_n: opts.top_n,
        thresholds: opts.thresholds.clone(),
        overall,
        ranks: sides.rank_rows(),
        classes: sides.class_rows(&class_names),
        rank_classes: sides.rank_class_rows(&class_names),
        memory: super::memory::rows(base, cur),
        imbalance: imbalance_row(base, cur),
        slowdown: slowdown_row(base, cur),
        kernels,
        appeared,
        vanished,
        baseline_only_ranks,
        current_only_ranks,
        failures: Vec::new(),
        passed: true,
        decision: Decision::NoChange,
        rule: String::new(),
        noise: String::new(),
        inconclusive: Vec::new(),
        more_baselines: Vec::new(),
        lead: None,
        different_runs: super::runs::different_runs(base, cur, pairs.len()),
        notes,
    })
}

/// The two summaries, their matched ranks (baseline index, current index), and whether
/// figures are per step ([`Basis::Steps`]) or totals.
struct Sides<'a> {
    base: &'a Summary,
    cur: &'a Summary,
    steps: bool,
    pairs: &'a [(usize, usize)],
}

impl Sides<'_> {
    /// The slowest rank's busy and work time, time per unit of work, the wait imposed and
    /// the bus time per GB (the what-if's slowdown is its own row, [`slowdown_row`]).
    fn overall_rows(&self, notes: &mut Vec<String>) -> Vec<Row> {
        let (base, cur, steps) = (self.base, self.cur, self.steps);
        let (busy, work) = if steps {
            (
                "busy per step (slowest rank)",
                "work per step (slowest rank)",
            )
        } else {
            ("busy (slowest rank)", "work (slowest rank)")
        };
        let ov = |s: &Summary| -> (i64, i64) {
            if steps {
                (
                    s.overall.steps.busy_median_ns.get(),
                    s.overall.steps.work_median_ns.get(),
                )
            } else {
                (s.overall.busy_ns_max.get(), s.overall.work_ns_max.get())
            }
        };
        let (bb, bw) = ov(base);
        let (cb, cw) = ov(cur);
        let mut overall = vec![
            Row::new(busy.into(), None, None, bb, cb).keyed(base, cur, Key::Busy, Key::Busy, steps),
            Row::new(work.into(), None, None, bw, cw).keyed(base, cur, Key::Work, Key::Work, steps),
        ];
        overall.extend(time_per_unit_row(base, cur, (bw, cw), notes));
        overall.extend(path_rows(base, cur));
        overall
    }

    /// Each matched rank's work.
    fn rank_rows(&self) -> Vec<Row> {
        let rank_work = |r: &RankEntry| {
            if self.steps {
                r.steps.work_median_ns.get()
            } else {
                r.figures.compute_ns.get()
            }
        };
        self.pairs
            .iter()
            .map(|&(i, j)| {
                let (rb, rc) = (&self.base.ranks[i], &self.cur.ranks[j]);
                let name = rank_name(rb, rc);
                Row::new(
                    name.clone(),
                    Some(&name),
                    None,
                    rank_work(rb),
                    rank_work(rc),
                )
                .keyed(
                    self.base,
                    self.cur,
                    Key::RankWork(rb.figures.rank.clone()),
                    Key::RankWork(rc.figures.rank.clone()),
                    self.steps,
                )
            })
            .collect()
    }

    /// The classes: the baseline's order, then any the current side adds.
    fn class_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.base.classes.clone();
        for c in &self.cur.classes {
            if !names.contains(c) {
                names.push(c.clone());
            }
        }
        names
    }

    /// A class's time from the per-step medians or the totals, by the basis.
    fn class_of(
        &self,
        m_steps: &BTreeMap<String, i64>,
        m_tot: &BTreeMap<String, i64>,
        c: &str,
    ) -> i64 {
        let m = if self.steps { m_steps } else { m_tot };
        m.get(c).copied().unwrap_or(0)
    }

    /// Each class over all ranks (those with time on either side).
    fn class_rows(&self, class_names: &[String]) -> Vec<Row> {
        let (base, cur) = (self.base, self.cur);
        class_names
            .iter()
            .map(|c| {
                let b = self.class_of(
                    &base.overall.steps.class_median_ns,
                    &base.overall.class_ns,
                    c,
                );
                let x = self.class_of(&cur.overall.steps.class_median_ns, &cur.overall.class_ns, c);
                Row::new(c.clone(), None, Some(c), b, x).keyed(
                    base,
                    cur,
                    Key::Class(c.clone()),
                    Key::Class(c.clone()),
                    self.steps,
                )
            })
            .filter(|r| r.baseline_ns != Ns::ZERO || r.current_ns != Ns::ZERO)
            .collect()
    }

    /// Each class on each matched rank (those with time on either side).
    fn rank_class_rows(&self, class_names: &[String]) -> Vec<Row> {
        let mut rows = Vec::new();
        for &(i, j) in self.pairs {
            let (rb, rc) = (&self.base.ranks[i], &self.cur.ranks[j]);
            let name = rank_name(rb, rc);
            for c in class_names {
                let b = self.class_of(&rb.steps.class_median_ns, &rb.class_ns, c);
                let x = self.class_of(&rc.steps.class_median_ns, &rc.class_ns, c);
                if b != 0 || x != 0 {
                    let key = |r: &RankEntry| Key::RankClass(r.figures.rank.clone(), c.clone());
                    rows.push(
                        Row::new(format!("{c} on {name}"), Some(&name), Some(c), b, x).keyed(
                            self.base,
                            self.cur,
                            key(rb),
                            key(rc),
                            self.steps,
                        ),
                    );
                }
            }
        }
        rows
    }

    /// The ranks of each side without a match on the other, with a note when there are any.
    fn one_sided_ranks(&self, notes: &mut Vec<String>) -> (Vec<String>, Vec<String>) {
        let unmatched = |s: &Summary, matched: BTreeSet<usize>| -> Vec<String> {
            (0..s.ranks.len())
                .filter(|i| !matched.contains(i))
                .map(|i| s.ranks[i].figures.rank.clone())
                .collect()
        };
        let b = unmatched(self.base, self.pairs.iter().map(|p| p.0).collect());
        let c = unmatched(self.cur, self.pairs.iter().map(|p| p.1).collect());
        if !b.is_empty() || !c.is_empty() {
            notes.push(format!(
                "ranks on one side only (not compared one by one): baseline {}; current {}",
                list_or_none(&b),
                list_or_none(&c)
            ));
        }
        (b, c)
    }
}

/// Time per unit of work (version 2 summaries), gated by --max-regression like the others;
/// `work`: the slowest rank's work on each side, the floor that --min-time-us holds.
fn time_per_unit_row(
    base: &Summary,
    cur: &Summary,
    work: (i64, i64),
    notes: &mut Vec<String>,
) -> Option<Row> {
    let (wb, wc) = (base.work.as_ref()?, cur.work.as_ref()?);
    match (wb.time_per_unit_ns_max, wc.time_per_unit_ns_max) {
        (Some(b), Some(c)) if wb.unit == wc.unit => Some(Row {
            // A rate, not a time: --min-time-us holds the work it divides.
            floor_ns: Some(work),
            ..Row::new(
                format!("time per {} (slowest rank)", wb.unit),
                None,
                None,
                b.get(),
                c.get(),
            )
        }),
        (Some(_), Some(_)) => {
            notes.push(format!(
                "the sides measure work in different units ({} vs {}): time per unit not compared",
                wb.unit, wc.unit
            ));
            None
        }
        _ => None,
    }
}

/// The critical path's rows: the wait its lead imposes per step (a regression in how much one
/// rank holds the group up; both 0 is nothing to compare) and each collective's time per GB of
/// bus traffic (a slower link is a longer time). The slowdown the imbalance causes,
/// re-simulated, is its own row ([`slowdown_row`]), gated only by `--max-slowdown`.
fn path_rows(base: &Summary, cur: &Summary) -> Vec<Row> {
    let mut rows = Vec::new();
    let (Some(pb), Some(pc)) = (&base.path, &cur.path) else {
        return rows;
    };
    if pb.imposed_per_step_ns != Ns::ZERO || pc.imposed_per_step_ns != Ns::ZERO {
        rows.push(Row::new(
            "wait imposed per step (critical path)".into(),
            None,
            None,
            pb.imposed_per_step_ns.get(),
            pc.imposed_per_step_ns.get(),
        ));
    }
    for (name, &b) in &pb.bus_ns_per_gb {
        if let Some(&c) = pc.bus_ns_per_gb.get(name) {
            rows.push(Row::new(
                format!("{name}: time per GB of bus traffic (slowest group)"),
                None,
                None,
                b,
                c,
            ));
        }
    }
    rows
}

/// Each side's re-simulated slowdown (the gate judges it, [`super::gate`]).
fn slowdown_row(base: &Summary, cur: &Summary) -> SlowdownRow {
    let what_if = |s: &Summary| s.path.as_ref().and_then(|p| p.what_if.clone());
    SlowdownRow {
        baseline: what_if(base),
        current: what_if(cur),
        fails: false,
    }
}

/// The work imbalance (max over mean) of each side.
fn imbalance_row(base: &Summary, cur: &Summary) -> ImbalanceRow {
    let bi = base.imbalance.work_max_over_mean;
    let ci = cur.imbalance.work_max_over_mean;
    ImbalanceRow {
        baseline: bi,
        current: ci,
        delta: ((ci - bi) * 1e4).round() / 1e4,
        baseline_slowest: slowest(base),
        current_slowest: slowest(cur),
        ranks: cur.ranks.len(),
        fails: false,
    }
}

/// A kernel's class, total time and count, by name ([`kernel_totals`]).
type KernelTotals = BTreeMap<String, (String, i64, u64)>;

/// The kernels both sides ran (the top `opts.top_n` by the larger side), and those only the
/// current side (appeared) or only the baseline (vanished) has, with a note when a side folds
/// kernels it does not name.
fn kernel_rows(
    base: &Summary,
    cur: &Summary,
    opts: &Options,
    notes: &mut Vec<String>,
) -> (Vec<KernelRow>, Vec<KernelOnly>, Vec<KernelOnly>) {
    let kb = kernel_totals(base, opts.normalize);
    let kc = kernel_totals(cur, opts.normalize);
    let mut kernels: Vec<KernelRow> = kb
        .iter()
        .filter_map(|(name, (class, bt, bn))| {
            kc.get(name).map(|(_, ct, cn)| KernelRow {
                name: name.clone(),
                class: class.clone(),
                baseline_ns: Ns::new(*bt),
                current_ns: Ns::new(*ct),
                delta_ns: Ns::new(ct - bt),
                delta_pct: pct(*bt, *ct),
                baseline_count: *bn,
                current_count: *cn,
            })
        })
        .collect();
    kernels.sort_by(|a, b| {
        b.baseline_ns
            .max(b.current_ns)
            .cmp(&a.baseline_ns.max(a.current_ns))
            .then(a.name.cmp(&b.name))
    });
    kernels.truncate(opts.top_n);
    let appeared = kernels_only(&kc, &kb, base.other_kernels.names == 0);
    let vanished = kernels_only(&kb, &kc, cur.other_kernels.names == 0);
    for (s, side, n) in [(base, "baseline", &appeared), (cur, "current", &vanished)] {
        if s.other_kernels.names > 0 && !n.is_empty() {
            notes.push(format!(
                "the {side} summary keeps {} kernels by name and folds {} more: a kernel missing from it may be among those",
                s.kernels.len(),
                s.other_kernels.names
            ));
        }
    }
    (kernels, appeared, vanished)
}

/// The kernels of `from` that `other` does not name, the longest first; `certain`: `other`
/// names every kernel it ran (folds none).
fn kernels_only(from: &KernelTotals, other: &KernelTotals, certain: bool) -> Vec<KernelOnly> {
    let mut v: Vec<KernelOnly> = from
        .iter()
        .filter(|(n, _)| !other.contains_key(*n))
        .map(|(n, (class, t, k))| KernelOnly {
            name: n.clone(),
            class: class.clone(),
            total_ns: Ns::new(*t),
            count: *k,
            certain,
            fails: false,
        })
        .collect();
    v.sort_by(|a, b| b.total_ns.cmp(&a.total_ns).then(a.name.cmp(&b.name)));
    v
}

fn list_or_none(v: &[String]) -> String {
    if v.is_empty() {
        "none".into()
    } else {
        v.join(", ")
    }
}
