//! Attribution: is a rank's gap *more work* (uneven load) or *the same work, slower* (the
//! device or host), or *more kernels* for the same batch?
//!
//! For each rank the work of its steps ([`crate::analyze::collect::work`]: tokens and sequences from batch
//! annotations, kernel launches always) is set against its time (the step table's *work* time:
//! GPU non-communication busy, or the CPU step time minus `c10d::` in CPU-only traces). A
//! subject is compared with its typical peer — the median of each figure over its peers, so one
//! outlier among them does not hide a second, smaller gap:
//!
//! - a rank with the other ranks of its DP replica (same batches by design);
//! - a DP replica with the other replicas, on per-replica figures (the mean over its ranks);
//!   never a rank of one replica with a rank of another;
//! - a rank that stays above its peers from some later step to the end (the onset rule of
//!   [`crate::analyze::reduce::steps`], for every rank, not only the worst), from that step on.
//!
//! Ratios (T̃: the peers' median): time `t = T / T̃`, work `w = W / W̃` (tokens where every step has them, else
//! sequences), launches `l = L / L̃`. The cause:
//!
//! - `t − 1` ≤ the analysis threshold (5 % by default): **balanced**;
//! - work known and `|w − 1|` > [`SAME_WORK`] (5 %), and the extra work explains at least half
//!   of the extra time (`ln w ≥ ½ ln t`): **uneven load**;
//! - work the same (within 5 %) and launches not: `l − 1` > [`SAME_WORK`]: **more kernels**;
//! - otherwise, with the work known: **slower device or host** (same batches, more time per
//!   unit of work) — **hot experts** when the EP split says so ([`super::ep::defer_hot_experts`]);
//! - work unknown: launches differ → **more kernels** (said to be without batch sizes); the same
//!   launches → **not enough evidence** (what to capture is named).
//!
//! Why 5 %: step batches of one replica are identical by construction, so any difference in
//! tokens is load; 5 % is above the rounding of a few-step profile and equals the default
//! imbalance threshold, so "same work" and "balanced" use one yardstick. The "half the gap" rule
//! splits `ln t = ln w + ln(t / w)` (load × time per unit) by its larger part.
//!
//! Order of the headline: by effect, `ln t` × the share of the profile's steps the comparison
//! covers (a whole-profile gap of 3.6× outranks a 12 % onset in the last third), halved when the
//! cause is *not enough evidence* (less certain).

use serde::{Deserialize, Serialize};

use super::measure::{plural, Measure};
use crate::analyze::collect::busy::RankSummary;
use crate::analyze::collect::steps::StepFig;
use crate::analyze::collect::work::WorkSource;
use crate::analyze::rankset;
use crate::analyze::reduce::steps::{StepRow, StepTable};
use crate::analyze::stats::{median, ratio};
use crate::trace::Ns;

/// Work ratios within this fraction of 1 count as the same work.
pub(crate) const SAME_WORK: f64 = 0.05;

/// Why a subject takes longer than its peers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Cause {
    Balanced,
    UnevenLoad,
    SlowerDevice,
    MoreKernels,
    NotEnoughEvidence,
    /// Set after the EP split ([`super::ep::defer_hot_experts`]), never by [`cause`].
    HotExperts,
}

impl Cause {
    pub fn as_str(self) -> &'static str {
        match self {
            Cause::Balanced => "balanced",
            Cause::UnevenLoad => "uneven load",
            Cause::SlowerDevice => "slower device or host",
            Cause::MoreKernels => "more kernels",
            Cause::NotEnoughEvidence => "not enough evidence",
            Cause::HotExperts => "hot experts",
        }
    }
}

/// One rank's work and time over the step table's steps (whole profile without steps).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RankWork {
    pub rank: String,
    pub dp: Option<u32>,
    pub steps: usize,
    pub time_ns: Ns,
    pub tokens: Option<u64>,
    pub seqs: Option<u64>,
    pub launches: u64,
    /// The compared work (the attribution's unit) and the time per unit of it.
    #[serde(default)]
    pub work: Option<u64>,
    #[serde(default)]
    pub time_per_unit_ns: Option<f64>,
    pub time_per_token_ns: Option<f64>,
    pub time_per_seq_ns: Option<f64>,
    pub time_per_launch_ns: Option<f64>,
}

/// One comparison: a subject against its typical (median) peer.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Record {
    /// `rank`, `replica` or `rank from onset`.
    pub scope: String,
    /// A rank label, or `DPnn` for a replica.
    pub who: String,
    /// Who it is compared with (labels).
    pub peers: Vec<String>,
    /// First step counted (the onset's step for `rank from onset`).
    pub from_step: Option<String>,
    pub steps: usize,
    pub time_ns: f64,
    pub peers_time_ns: f64,
    pub work: Option<f64>,
    pub peers_work: Option<f64>,
    pub launches: f64,
    pub peers_launches: f64,
    /// Subject's share of the group's time and work, percent.
    pub time_share_pct: f64,
    pub work_share_pct: Option<f64>,
    pub time_ratio: f64,
    pub work_ratio: Option<f64>,
    pub launch_ratio: f64,
    /// Time per unit of work over the peers'.
    pub unit_time_ratio: Option<f64>,
    pub cause: Cause,
    /// Size of the effect (see the module doc); records are ordered by it.
    pub effect: f64,
    pub sentence: String,
}

/// The work of every rank in one step of the step table.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct StepWorkRow {
    pub step: String,
    pub tokens: Vec<Option<u64>>,
    pub seqs: Vec<Option<u64>>,
    pub launches: Vec<u64>,
    /// Tokens from the GEMMs' input dims (`record_shapes`).
    #[serde(default)]
    pub shape_tokens: Vec<Option<u64>>,
    /// `In msg nelems` summed over the step's collectives.
    #[serde(default)]
    pub nelems: Vec<Option<u64>>,
    /// The compared work (the attribution's unit); empty for launches.
    #[serde(default)]
    pub work: Vec<Option<u64>>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Attribution {
    /// `token`, `sequence` or `launch`: the unit of work compared.
    pub unit: String,
    /// Where the work figures came from.
    pub source: String,
    pub same_work_pct: f64,
    pub threshold_pct: f64,
    pub ranks: Vec<RankWork>,
    /// Comparisons, largest effect first.
    pub records: Vec<Record>,
    pub per_step: Vec<StepWorkRow>,
}

impl Attribution {
    /// The comparisons that found a gap, largest effect first.
    pub fn gaps(&self) -> impl Iterator<Item = &Record> {
        self.records.iter().filter(|r| r.cause != Cause::Balanced)
    }
}

/// Sums of one subject over some steps (f64: replicas are means of ranks).
#[derive(Debug, Clone, Copy, Default)]
struct Totals {
    time: f64,
    work: Option<f64>,
    /// Sequences (requests), when every step says: told beside tokens for uneven load.
    seqs: Option<f64>,
    launches: f64,
}

impl Totals {
    /// Nothing yet, with work and sequences known until a step lacks them.
    fn zero() -> Totals {
        Totals {
            work: Some(0.0),
            seqs: Some(0.0),
            ..Default::default()
        }
    }

    /// Adds one step: its work time (ns) and figures (`None`: a step the rank does not have).
    fn add(&mut self, time_ns: i64, f: Option<&StepFig>, measure: Measure) {
        self.time += time_ns as f64;
        self.launches += f.map_or(0, |f| f.work.launches) as f64;
        let w = f.and_then(|f| measure.value(&f.work));
        self.work = self.work.zip(w).map(|(a, b)| a + b as f64);
        let q = f.and_then(|f| f.work.seqs);
        self.seqs = self.seqs.zip(q).map(|(a, b)| a + b as f64);
    }
}

/// The typical peer: the median of each figure over the peers (one outlier among them, say a
/// rank with extra kernels, does not hide a second, smaller gap).
fn typical(v: &[Totals]) -> Totals {
    let f = |g: &dyn Fn(&Totals) -> f64| median(&v.iter().map(g).collect::<Vec<_>>());
    Totals {
        time: f(&|t| t.time),
        work: v
            .iter()
            .all(|t| t.work.is_some())
            .then(|| f(&|t| t.work.unwrap_or(0.0))),
        seqs: v
            .iter()
            .all(|t| t.seqs.is_some())
            .then(|| f(&|t| t.seqs.unwrap_or(0.0))),
        launches: f(&|t| t.launches),
    }
}

/// A replica's figures: the mean over its ranks.
fn mean(v: &[Totals]) -> Totals {
    let n = v.len().max(1) as f64;
    Totals {
        time: v.iter().map(|t| t.time).sum::<f64>() / n,
        work: v.iter().map(|t| t.work).sum::<Option<f64>>().map(|w| w / n),
        seqs: v.iter().map(|t| t.seqs).sum::<Option<f64>>().map(|w| w / n),
        launches: v.iter().map(|t| t.launches).sum::<f64>() / n,
    }
}

/// What the analysis hands over.
pub(crate) struct Input<'a> {
    pub(crate) labels: &'a [String],
    /// DP replica of each rank, when the file names say.
    pub(crate) dp: &'a [Option<u32>],
    /// Pipeline stage of each rank, when the file names say.
    pub(crate) pp: &'a [Option<u32>],
    pub(crate) figs: &'a [&'a [StepFig]],
    pub(crate) summaries: &'a [RankSummary],
    pub(crate) steps: &'a StepTable,
    pub(crate) threshold: f64,
}

/// Attributes every rank's and replica's gap: the measure of work, each rank's sums and
/// per-step work, then the comparisons (ranks within their group, replicas with replicas,
/// ranks from an onset), largest effect first.
pub(crate) fn attribute(inp: &Input<'_>) -> Attribution {
    let (measure, source) = pick_measure(inp);
    let sums = Sums { inp, measure };
    let nsteps = inp.steps.rows.len();
    let mut out = Attribution {
        unit: measure.unit().to_string(),
        source,
        same_work_pct: 100.0 * SAME_WORK,
        threshold_pct: 100.0 * inp.threshold,
        ..Default::default()
    };
    out.ranks = (0..inp.labels.len())
        .map(|r| rank_work(inp, r, &sums.totals(r, 0), nsteps, measure))
        .collect();
    out.per_step = (0..nsteps).map(|s| sums.step_row(s)).collect();
    let ctx = Ctx {
        unit: measure.unit(),
        threshold: inp.threshold,
        nsteps,
    };
    let replicas = replicas(inp.dp);
    out.records.extend(rank_records(&ctx, &sums, &replicas));
    if replicas.len() >= 2 {
        out.records.extend(replica_records(&ctx, &sums, &replicas));
    }
    out.records.extend(onset_records(&ctx, &sums));
    out.records
        .sort_by(|a, b| b.effect.total_cmp(&a.effect).then(a.who.cmp(&b.who)));
    out
}

/// The work compared (see the module doc) and where its figures come from, in words.
fn pick_measure(inp: &Input<'_>) -> (Measure, String) {
    let rows = &inp.steps.rows;
    let n = inp.labels.len();
    let annotation = (0..n)
        .flat_map(|r| inp.figs[r].iter().map(|f| f.work.source))
        .find(|s| {
            matches!(
                s,
                WorkSource::Sglang | WorkSource::Vllm | WorkSource::VllmTokens
            )
        })
        .unwrap_or_default();
    let cells = (0..n).flat_map(|r| (0..rows.len()).map(move |s| (r, s)));
    let fig = |r: usize, s: usize| inp.figs[r].get(rows[s].idx[r]);
    let (measure, src) = Measure::pick(cells.map(|(r, s)| fig(r, s).map(|f| &f.work)), annotation);
    let source = if rows.is_empty() {
        "kernel launches over the whole profile (no steps)".to_string()
    } else {
        src.describe().to_string()
    };
    (measure, source)
}

/// Each rank's sums of work and time, in the compared measure.
struct Sums<'a> {
    inp: &'a Input<'a>,
    measure: Measure,
}

impl Sums<'_> {
    /// Rank `r`'s figures in row `s` of the step table, when it has that step.
    fn fig(&self, r: usize, s: usize) -> Option<&StepFig> {
        self.inp.figs[r].get(self.inp.steps.rows[s].idx[r])
    }

    /// Rank `r` over the step table's steps from row `from` (the whole profile's kernels
    /// without steps).
    fn totals(&self, r: usize, from: usize) -> Totals {
        let rows = &self.inp.steps.rows;
        if rows.is_empty() {
            let s = &self.inp.summaries[r];
            return Totals {
                time: s.figures.compute_ns.get() as f64,
                work: None,
                seqs: None,
                launches: s.figures.kernels as f64,
            };
        }
        let mut t = Totals::zero();
        for (s, row) in rows.iter().enumerate().skip(from) {
            t.add(row.work_ns[r].get(), self.fig(r, s), self.measure);
        }
        t
    }

    /// Rank `r` over all its own steps, those outside the table included: what a replica is
    /// compared on ([`replica_records`]).
    fn own(&self, r: usize) -> Totals {
        if self.inp.steps.rows.is_empty() {
            return self.totals(r, 0);
        }
        let mut t = Totals::zero();
        for f in self.inp.figs[r] {
            t.add(f.work_ns.get(), Some(f), self.measure);
        }
        t
    }

    /// Every rank's work in row `s` of the step table.
    fn step_row(&self, s: usize) -> StepWorkRow {
        let n = self.inp.labels.len();
        let each = |get: &dyn Fn(&StepFig) -> Option<u64>| -> Vec<Option<u64>> {
            (0..n).map(|r| self.fig(r, s).and_then(get)).collect()
        };
        StepWorkRow {
            step: self.inp.steps.rows[s].step.clone(),
            tokens: each(&|f| f.work.tokens),
            seqs: each(&|f| f.work.seqs),
            shape_tokens: each(&|f| f.work.shape_tokens),
            nelems: each(&|f| f.work.nelems),
            work: each(&|f| self.measure.value(&f.work)),
            launches: (0..n)
                .map(|r| self.fig(r, s).map_or(0, |f| f.work.launches))
                .collect(),
        }
    }
}

/// The ranks of each DP replica, by replica.
type Replicas = std::collections::BTreeMap<u32, Vec<usize>>;

/// The ranks of each DP replica, when every rank has one (empty otherwise).
fn replicas(dp: &[Option<u32>]) -> Replicas {
    let mut out = Replicas::new();
    if dp.iter().all(|d| d.is_some()) {
        for (r, d) in dp.iter().enumerate() {
            out.entry(d.unwrap_or(0)).or_default().push(r);
        }
    }
    out
}

/// Every rank against the other ranks of its group ([`rank_groups`]).
fn rank_records(ctx: &Ctx<'_>, sums: &Sums<'_>, replicas: &Replicas) -> Vec<Record> {
    let inp = sums.inp;
    let n = inp.labels.len();
    let groups = rank_groups(inp.pp, replicas, n);
    let whole: Vec<Totals> = (0..n).map(|r| sums.totals(r, 0)).collect();
    let mut out = Vec::new();
    for g in groups.iter().filter(|g| g.len() >= 2) {
        for &r in g {
            let peers: Vec<usize> = g.iter().copied().filter(|&p| p != r).collect();
            let pt: Vec<Totals> = peers.iter().map(|&p| whole[p]).collect();
            let names = peers.iter().map(|&p| inp.labels[p].clone()).collect();
            out.push(ctx.record(
                "rank",
                format!("rank {}", inp.labels[r]),
                inp.labels[r].clone(),
                names,
                None,
                ctx.nsteps,
                whole[r],
                &pt,
            ));
        }
    }
    out
}

/// The ranks each rank is compared with: its DP replica when there are two or more, else all
/// ranks; and within those, its pipeline stage when every stage has two ranks or more (TP
/// inside the stages). The stages of a pipeline run different programs (the first embeds,
/// the last runs the LM head and the loss), so a rank of one is no typical peer of another:
/// compared across stages, a 2× slower rank of the last stage read as "more kernels".
fn rank_groups(pp: &[Option<u32>], replicas: &Replicas, n: usize) -> Vec<Vec<usize>> {
    let base: Vec<Vec<usize>> = if replicas.len() >= 2 {
        replicas.values().cloned().collect()
    } else {
        vec![(0..n).collect()]
    };
    let mut stages: Vec<Vec<usize>> = Vec::new();
    for g in &base {
        let mut by: std::collections::BTreeMap<Option<u32>, Vec<usize>> = Default::default();
        for &r in g {
            by.entry(pp.get(r).copied().flatten()).or_default().push(r);
        }
        stages.extend(by.into_values());
    }
    let staged = pp.iter().all(Option::is_some) && stages.len() > base.len();
    if staged && stages.iter().all(|g| g.len() >= 2) {
        stages
    } else {
        base
    }
}

/// Every replica against the other replicas, on the mean of its ranks. Replicas each run
/// their own iterations in the profile's window (serving), or the same steps (lockstep
/// training, where own steps are the table's): each is compared over all its own steps, none
/// left out for want of a peer's step.
fn replica_records(ctx: &Ctx<'_>, sums: &Sums<'_>, replicas: &Replicas) -> Vec<Record> {
    let inp = sums.inp;
    let rep: Vec<(u32, Totals, String)> = replicas
        .iter()
        .map(|(d, members)| {
            let t: Vec<Totals> = members.iter().map(|&r| sums.own(r)).collect();
            let names: Vec<&str> = members.iter().map(|&r| inp.labels[r].as_str()).collect();
            (*d, mean(&t), rankset::compact(&names))
        })
        .collect();
    let mut out = Vec::new();
    for (i, (d, t, members)) in rep.iter().enumerate() {
        let others = || rep.iter().enumerate().filter(move |&(j, _)| j != i);
        let peers: Vec<Totals> = others().map(|(_, x)| x.1).collect();
        let names = others().map(|(_, x)| format!("DP{:02}", x.0)).collect();
        out.push(ctx.record(
            "replica",
            format!("replica DP{d:02} ({members})"),
            format!("DP{d:02}"),
            names,
            None,
            ctx.nsteps,
            *t,
            &peers,
        ));
    }
    out
}

/// Every rank that stays above its peers from some step (after the first) to the end, from
/// that step on. Never a rank of one replica against a rank of another: their steps are not
/// the same iterations.
fn onset_records(ctx: &Ctx<'_>, sums: &Sums<'_>) -> Vec<Record> {
    let inp = sums.inp;
    let rows = &inp.steps.rows;
    let mut out = Vec::new();
    for r in 0..inp.labels.len() {
        let peers: Vec<usize> = inp
            .steps
            .peers
            .get(r)
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .filter(|&p| inp.dp[p] == inp.dp[r])
            .collect();
        let Some(s0) = sustained_from(inp.steps, r, &peers, inp.threshold) else {
            continue;
        };
        let pt: Vec<Totals> = peers.iter().map(|&p| sums.totals(p, s0)).collect();
        let names = peers.iter().map(|&p| inp.labels[p].clone()).collect();
        out.push(ctx.record(
            "rank from onset",
            format!("rank {}", inp.labels[r]),
            inp.labels[r].clone(),
            names,
            Some(rows[s0].step.clone()),
            ctx.nsteps - s0,
            sums.totals(r, s0),
            &pt,
        ));
    }
    out
}

/// `; 89 % of all, where an even split of N gives 50 %`: the subject's share of the group's
/// work against the fair one (empty when unknown).
fn work_share(me: Option<f64>, group: Option<f64>, n: usize) -> String {
    match me.zip(group) {
        Some((a, g)) if g > 0.0 && n > 1 => format!(
            "; {:.0} % of all, where an even split of {n} gives {:.0} %",
            100.0 * a / g,
            100.0 / n as f64
        ),
        _ => String::new(),
    }
}

/// ` and 8.00× the sequences (96 vs 12)` beside tokens (requests are what a router routes).
fn seqs_too(unit: &str, me: Option<f64>, peer: Option<f64>) -> String {
    match me.zip(peer) {
        Some((a, b)) if unit == "token" && b > 0.0 => {
            format!(" and {:.2}× the sequences ({a:.0} vs {b:.0})", a / b)
        }
        _ => String::new(),
    }
}

/// The first step (not the first of the profile) from which rank `r` stays above its typical
/// peer (median) by more than the threshold to the end, at least two steps (the step table's
/// onset rule, against the median).
fn sustained_from(t: &StepTable, r: usize, peers: &[usize], threshold: f64) -> Option<usize> {
    let n = t.rows.len();
    if peers.is_empty() {
        return None;
    }
    let above = |row: &StepRow| {
        let m = median(
            &peers
                .iter()
                .map(|&p| row.work_ns[p].get() as f64)
                .collect::<Vec<_>>(),
        );
        m > 0.0 && row.work_ns[r].get() as f64 > m * (1.0 + threshold)
    };
    let mut s0 = n;
    while s0 > 0 && above(&t.rows[s0 - 1]) {
        s0 -= 1;
    }
    (s0 > 0 && n - s0 >= 2).then_some(s0)
}

fn rank_work(inp: &Input<'_>, r: usize, t: &Totals, nsteps: usize, m: Measure) -> RankWork {
    let rows = &inp.steps.rows;
    let sum = |get: &dyn Fn(&StepFig) -> Option<u64>| -> Option<u64> {
        if rows.is_empty() {
            return None;
        }
        rows.iter()
            .map(|row| inp.figs[r].get(row.idx[r]).and_then(get))
            .sum()
    };
    let tokens = sum(&|f| f.work.tokens);
    let seqs = sum(&|f| f.work.seqs);
    let work = sum(&|f| m.value(&f.work));
    let per = |x: Option<u64>| x.filter(|&x| x > 0).map(|x| t.time / x as f64);
    RankWork {
        rank: inp.labels[r].clone(),
        dp: inp.dp[r],
        steps: nsteps,
        time_ns: Ns::new(t.time as i64),
        tokens,
        seqs,
        launches: t.launches as u64,
        work,
        time_per_unit_ns: per(work),
        time_per_token_ns: per(tokens),
        time_per_seq_ns: per(seqs),
        time_per_launch_ns: per(Some(t.launches as u64)),
    }
}

struct Ctx<'a> {
    unit: &'a str,
    threshold: f64,
    nsteps: usize,
}

/// The cause of a replica's gap: [`cause`], except that more work than the typical replica
/// beyond the threshold is **uneven load** even in the same time — replicas of one server
/// that take equal step times while one serves 8× the tokens are the imbalance, not balance
/// (a GPU's decode step takes about as long for 8 sequences as for 1).
pub(crate) fn replica_cause(t: f64, w: Option<f64>, l: f64, threshold: f64) -> Cause {
    match w {
        Some(w) if w - 1.0 > threshold && (t - 1.0 <= threshold || w.ln() >= 0.5 * t.ln()) => {
            Cause::UnevenLoad
        }
        _ => cause(t, w, l, threshold),
    }
}

/// The cause of a gap from its ratios (see the module doc).
pub(crate) fn cause(t: f64, w: Option<f64>, l: f64, threshold: f64) -> Cause {
    if t - 1.0 <= threshold {
        return Cause::Balanced;
    }
    let more_launches = l - 1.0 > SAME_WORK;
    match w {
        Some(w) if (w - 1.0).abs() > SAME_WORK && w > 1.0 && w.ln() >= 0.5 * t.ln() => {
            Cause::UnevenLoad
        }
        Some(w) if (w - 1.0).abs() <= SAME_WORK && more_launches => Cause::MoreKernels,
        Some(_) => Cause::SlowerDevice,
        None if more_launches => Cause::MoreKernels,
        None => Cause::NotEnoughEvidence,
    }
}

/// A subject's ratios to its typical peer: time, work, launches, and time per unit of work.
#[derive(Debug, Clone, Copy)]
struct Ratios {
    t: f64,
    w: Option<f64>,
    l: f64,
    u: Option<f64>,
}

impl Ratios {
    fn of(me: &Totals, m: &Totals) -> Ratios {
        let t = ratio(me.time, m.time);
        let w = me.work.zip(m.work).map(|(a, b)| ratio(a, b));
        Ratios {
            t,
            w,
            l: ratio(me.launches, m.launches),
            u: w.map(|w| t / w),
        }
    }

    /// Some ratio is ∞ or NaN: the peers recorded nothing to compare with.
    fn undefined(&self) -> bool {
        [Some(self.t), self.w, Some(self.l), self.u]
            .into_iter()
            .flatten()
            .any(|x| !x.is_finite())
    }
}

/// The effect by which records are ranked: the log of the time ratio (of the work's, for
/// uneven load in about the same time), scaled by the share of steps it holds in and halved
/// without evidence of the batches; 0 when balanced.
fn effect(c: Cause, r: Ratios, steps: usize, nsteps: usize) -> f64 {
    let Ratios { t, w, .. } = r;
    if !t.is_finite() {
        return f64::MAX;
    }
    if c == Cause::Balanced {
        return 0.0;
    }
    let certainty = if c == Cause::NotEnoughEvidence {
        0.5
    } else {
        1.0
    };
    // Uneven load in about the same time is as large as the load's ratio.
    let size = match (c, w) {
        (Cause::UnevenLoad, Some(w)) if w.is_finite() => t.max(w).ln(),
        _ => t.ln(),
    };
    size * (steps as f64 / nsteps.max(1) as f64).min(1.0) * certainty
}

/// One subject set against its peers, for the sentence that says its cause.
struct Gap<'a> {
    name: &'a str,
    /// The peers, as the sentence names them (`the median of …`).
    peer_text: String,
    /// ` from step N on`, or nothing.
    from: String,
    me: Totals,
    /// The typical peer.
    m: Totals,
    /// The work of the subject and its peers together, and how many they are.
    group_work: Option<f64>,
    group: usize,
}

impl Ctx<'_> {
    #[allow(clippy::too_many_arguments)]
    fn record(
        &self,
        scope: &str,
        name: String,
        who: String,
        peers: Vec<String>,
        from_step: Option<String>,
        steps: usize,
        me: Totals,
        others: &[Totals],
    ) -> Record {
        let m = typical(others);
        let r = Ratios::of(&me, &m);
        let c = if scope == "replica" {
            replica_cause(r.t, r.w, r.l, self.threshold)
        } else {
            cause(r.t, r.w, r.l, self.threshold)
        };
        let group_time = me.time + others.iter().map(|o| o.time).sum::<f64>();
        let group_work = others
            .iter()
            .map(|o| o.work)
            .sum::<Option<f64>>()
            .zip(me.work)
            .map(|(a, b)| a + b);
        let gap = Gap {
            name: &name,
            peer_text: rankset::median_of(&peers),
            from: from_step
                .as_ref()
                .map(|s| format!(" from step {s} on"))
                .unwrap_or_default(),
            me,
            m,
            group_work,
            group: others.len() + 1,
        };
        let sentence = self.sentence(&gap, c, r);
        Record {
            scope: scope.to_string(),
            who,
            peers,
            from_step,
            steps,
            time_ns: me.time,
            peers_time_ns: m.time,
            work: me.work,
            peers_work: m.work,
            launches: me.launches,
            peers_launches: m.launches,
            time_share_pct: 100.0 * ratio(me.time, group_time).min(1.0),
            work_share_pct: me
                .work
                .zip(group_work)
                .map(|(a, b)| 100.0 * ratio(a, b).min(1.0)),
            time_ratio: r.t,
            work_ratio: r.w,
            launch_ratio: r.l,
            unit_time_ratio: r.u,
            cause: c,
            effect: effect(c, r, steps, self.nsteps),
            sentence,
        }
    }

    /// The sentence that says a gap's cause `c` with its figures. Peers with nothing
    /// recorded give no ratio (∞ or NaN): said in words, never printed.
    fn sentence(&self, g: &Gap<'_>, c: Cause, r: Ratios) -> String {
        let Ratios { t, w, l, u } = r;
        let Gap {
            name,
            peer_text: peer_txt,
            from,
            me,
            m,
            ..
        } = g;
        let unit = self.unit;
        let units = plural(unit);
        match c {
            _ if r.undefined() => format!(
                "{name}: {peer_txt} recorded no {}{from} to compare with ({name}: {:.2} ms of \
                 kernel time, {:.0} launches)",
                if m.time > 0.0 { "launches or work" } else { "kernel time" },
                me.time / 1e6,
                me.launches
            ),
            Cause::Balanced => format!(
                "{name}: {t:.2}× the time of {peer_txt}{from}, within the {:.0} % threshold",
                100.0 * self.threshold
            ),
            Cause::UnevenLoad => format!(
                "{name} got {:.2}× the {units} of {peer_txt}{from} ({:.0} vs {:.0}{}){} and took \
                 {}, {:.2}× the time per {unit}: a routing/scheduling imbalance",
                w.unwrap_or(1.0),
                me.work.unwrap_or(0.0),
                m.work.unwrap_or(0.0),
                work_share(me.work, g.group_work, g.group),
                seqs_too(unit, me.seqs, m.seqs),
                if t - 1.0 <= self.threshold {
                    format!("about the same time ({t:.2}×)")
                } else {
                    format!("{t:.2}× the time")
                },
                u.unwrap_or(1.0)
            ),
            Cause::SlowerDevice | Cause::HotExperts => format!(
                "{name}: the same batches as {peer_txt}{from} ({:.2}× the {units}, {l:.2}× the launches) in {t:.2}× the time: {:.2}× the time per {unit}",
                w.unwrap_or(1.0), u.unwrap_or(t)
            ),
            Cause::MoreKernels => format!(
                "{name} launched {l:.2}× the kernels of {peer_txt}{from} {} and took {t:.2}× the time",
                match w {
                    Some(w) => format!("for the same batches ({w:.2}× the {units})"),
                    None => "(batch sizes not in the trace)".to_string(),
                }
            ),
            Cause::NotEnoughEvidence => format!(
                "{name}: {t:.2}× the time of {peer_txt}{from} with {l:.2}× the launches; the trace does not say the batch sizes — profile with SGLang's step annotations or vLLM's profiler (execute_new_… ranges), or enable record_shapes"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn causes_follow_the_ratios() {
        let th = 0.05;
        assert_eq!(cause(1.04, Some(1.0), 1.0, th), Cause::Balanced);
        assert_eq!(cause(1.8, Some(1.8), 1.0, th), Cause::UnevenLoad);
        assert_eq!(cause(3.0, Some(1.0), 1.0, th), Cause::SlowerDevice);
        assert_eq!(cause(1.5, Some(1.02), 1.6, th), Cause::MoreKernels);
        // More work, but most of the gap is time per unit: the device.
        assert_eq!(cause(3.0, Some(1.1), 1.0, th), Cause::SlowerDevice);
        // Less work, more time.
        assert_eq!(cause(1.5, Some(0.8), 1.0, th), Cause::SlowerDevice);
        assert_eq!(cause(3.6, None, 3.6, th), Cause::MoreKernels);
        assert_eq!(cause(1.5, None, 1.0, th), Cause::NotEnoughEvidence);
    }

    #[test]
    fn a_replica_with_more_load_in_the_same_time_is_uneven_load() {
        let th = 0.05;
        // A GPU decode step of 8 sequences takes about as long as one of 1.
        assert_eq!(replica_cause(1.0, Some(8.0), 8.0, th), Cause::UnevenLoad);
        assert_eq!(cause(1.0, Some(8.0), 8.0, th), Cause::Balanced);
        // Within the threshold: balanced; less load: not this replica's imbalance.
        assert_eq!(replica_cause(1.0, Some(1.04), 1.0, th), Cause::Balanced);
        assert_eq!(replica_cause(1.0, Some(0.125), 1.0, th), Cause::Balanced);
        // More load, but most of a large gap is time per unit: the device.
        assert_eq!(replica_cause(3.0, Some(1.1), 1.0, th), Cause::SlowerDevice);
    }

    #[test]
    fn a_rank_is_compared_within_its_stage_when_the_stage_has_peers() {
        let none = Replicas::new();
        // TP 2 × PP 2: each stage's two ranks.
        let pp = [Some(0), Some(0), Some(1), Some(1)];
        assert_eq!(rank_groups(&pp, &none, 4), vec![vec![0, 1], vec![2, 3]]);
        // TP 1 × PP 4: no stage has a peer; the whole replica.
        let pp = [Some(0), Some(1), Some(2), Some(3)];
        assert_eq!(rank_groups(&pp, &none, 4), vec![vec![0, 1, 2, 3]]);
        // No stage in the names: the replica.
        assert_eq!(rank_groups(&[None, None], &none, 2), vec![vec![0, 1]]);
        // DP 2 × PP 2 × TP 2: per replica, per stage.
        let mut reps = Replicas::new();
        reps.insert(0, vec![0, 1, 2, 3]);
        reps.insert(1, vec![4, 5, 6, 7]);
        let pp = [0, 0, 1, 1, 0, 0, 1, 1].map(Some);
        assert_eq!(
            rank_groups(&pp, &reps, 8),
            vec![vec![0, 1], vec![2, 3], vec![4, 5], vec![6, 7]]
        );
    }
}
