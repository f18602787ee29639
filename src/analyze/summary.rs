//! The saved summary (`--save-summary FILE.json`): a small, versioned JSON digest of one
//! profile that `compare` reads back with [`load_summary`]. It is meant to be committed next to
//! a benchmark, so it is deterministic (no clocks, paths or hash order: the same traces give
//! the same bytes) and small (kernels limited to the top `--summary-kernels`, 200 by default,
//! the rest folded into `other_kernels`).
//!
//! Format, version 2 (version 1 files, without `work`, still load; all times integer nanoseconds; percentages rounded to 4 decimals):
//!
//! ```text
//! {
//!   "version": 1, "kind": "rankprof-summary",
//!   "profile": { "id", "stage", "ranks": [labels], "source": "gpu"|"cpu"|"mixed",
//!                "step_source", "devices": [name|null per rank] },
//!   "classes": [class names, column order],
//!   "overall": { "ranks", "kernels", "kernel_sum_ns", "busy_ns_mean", "busy_ns_max",
//!                "work_ns_mean", "work_ns_max", "class_ns": {class: ns summed over ranks},
//!                "steps": StepStats of the per-step maximum over ranks (the job's step) },
//!   "ranks": [ { "rank", "device", "source", "span_ns", "busy_ns", "idle_ns",
//!                "utilization_pct", "compute_ns", "comm_ns", "exposed_comm_ns",
//!                "memcpy_memset_ns", "kernels", "kernel_sum_ns", "class_ns": {class: ns},
//!                "steps": StepStats } ],
//!   "kernels": [ { "name", "class", "kind", "total_ns": [per rank], "count": [per rank] } ],
//!   "other_kernels": { "names", "total_ns": [per rank], "count": [per rank] },
//!   "imbalance": { "balanced", "threshold_pct", "metric", "slowest", "excess_pct",
//!                  "work_max_over_mean", "work_cv", "classes": [{class, gap_ns, share_pct}],
//!                  "onset": {rank, rank_index, step, step_index, t_ms, excess_pct,
//!                            steps_after} | null,
//!                  "straggler", "straggler_pct" },
//!   "work": { "unit": "token"|"sequence"|"message element"|"launch", "source", "lead", "cause",
//!             "time_per_unit_ns_max", "ranks": [ { "rank", "time_ns", "work", "launches",
//!             "time_per_unit_ns", "time_per_launch_ns" } ] }   (version 2; absent in 1)
//! }
//! StepStats = { "count", "time_median_ns", "time_p90_ns", "busy_median_ns", "busy_p90_ns",
//!               "work_median_ns", "work_p90_ns", "class_median_ns": {class: ns} }
//!               (time = the step annotation's duration; median and p90 by nearest rank;
//!               class_median_ns = median over steps of the step's summed op time per class,
//!               for "overall" summed over ranks; absent in older files, read as empty;
//!               "samples": { "busy_ns": [..], "work_ns": [..], "class_ns": {class: [..]} }:
//!               the per-step figures themselves, at most MAX_SAMPLES (128) evenly spaced
//!               steps, classes with time only; absent in older files and without steps)
//! ```
//!
//! Size: dominated by the kernel names (C++ template names run to hundreds of characters)
//! plus about 12 bytes per rank and kernel. Measured: 18,484 bytes for `rankprof synth --tp 8`
//! (8 ranks, 16 kernel names); 44 KB (6 KB gzipped) for the 8-rank benchmark set (72 A100
//! training kernel names); 143,638 bytes (9,692 gzipped) for 8 ranks of real HTA traces with 199
//! names of 322 characters on average. With the default cap of 200 names an 8-rank profile stays
//! under ~150 KB.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use super::collect::busy::RankFigures;
use super::collect::rank::RankResult;
use super::explain::attribution::Attribution;
use super::explain::verdict::{ClassShare, Verdict};
use super::reduce::path::whatif::WhatIf;
use super::reduce::path::{CriticalPath, Kind as PathKind};
use super::reduce::steps::{Onset, StepTable};
use super::stats::{median_p90, spread};
use crate::trace::Ns;

pub(crate) const VERSION: u32 = 2;
/// The oldest version [`load_summary`] reads.
pub(crate) const OLDEST_VERSION: u32 = 1;
pub(crate) const KIND: &str = "rankprof-summary";

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Summary {
    pub version: u32,
    pub kind: String,
    pub profile: ProfileMeta,
    pub classes: Vec<String>,
    pub overall: Overall,
    pub ranks: Vec<RankEntry>,
    pub kernels: Vec<KernelEntry>,
    pub other_kernels: OtherKernels,
    pub imbalance: Imbalance,
    /// Work against time (version 2; `None` in version 1 files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work: Option<WorkSummary>,
    /// The critical path across ranks (absent in older files and without steps).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<PathSummary>,
    /// Each rank's peak allocated memory per device (absent without `[memory]` events).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<Vec<MemoryPeak>>,
}

/// One rank's peak on one device: the memory table's figure, for `compare` to gate on.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct MemoryPeak {
    pub rank: String,
    pub device: String,
    pub peak_allocated_bytes: i64,
}

/// The memory peaks of `results`, `None` when no rank has a memory event.
fn memory_peaks(results: &[RankResult]) -> Option<Vec<MemoryPeak>> {
    let v: Vec<MemoryPeak> = results
        .iter()
        .flat_map(|r| {
            r.memory.iter().map(|m| MemoryPeak {
                rank: r.label.clone(),
                device: m.device.clone(),
                peak_allocated_bytes: m.peak_allocated_bytes,
            })
        })
        .collect();
    (!v.is_empty()).then_some(v)
}

/// What late arrivals at the collectives cost the step, for `compare` to gate on.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PathSummary {
    /// Steps measured in full, and their mean time.
    pub steps: usize,
    pub step_ns: Ns,
    /// The (rank, cause) that costs the step most over the typical rank, when that is at least
    /// the threshold of the step time (`None`: none does).
    pub lead: Option<String>,
    pub cause: Option<String>,
    /// What the lead's rank costs the step, all its causes, per step, ns (0 without a lead):
    /// the figure the verdict's first line states — in a pipeline, when the replay is trusted,
    /// what making the rank typical gives back ([`WhatIf::pipeline_saving`]).
    pub imposed_per_step_ns: Ns,
    pub ranks: Vec<PathRank>,
    /// Every (rank, cause) charged, per step, as the critical-path table states them (absent
    /// in older files).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub causes: Vec<PathCause>,
    /// Per collective name, the slowest group's transfer time per GB of bus traffic (the
    /// inverse of its median bus bandwidth), ns: higher is worse, as for every time `compare`
    /// gates on. Only collectives whose size the trace gives.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub bus_ns_per_gb: BTreeMap<String, i64>,
    /// The what-if re-simulation ([`crate::analyze::reduce::path::whatif`]), when its replay
    /// matches the recording (absent otherwise and in older files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub what_if: Option<WhatIfSummary>,
}

/// What the imbalance costs the step, re-simulated: the world that loses the most.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct WhatIfSummary {
    /// Replayed over ideal (every rank typical).
    pub slowdown: f64,
    /// Replayed less ideal in the median step: the step time the imbalance costs.
    pub lost_per_step_ns: Ns,
    pub error_pct: f64,
    /// The rank whose making typical gives back the most, and what it gives back per step
    /// (absent when no rank gives back anything, and in older files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worst_rank: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worst_rank_saved_per_step_ns: Option<Ns>,
}

/// The world that loses the most to its imbalance, when the what-if can be trusted.
fn what_if_summary(w: &WhatIf) -> Option<WhatIfSummary> {
    if !w.trusted() {
        return None;
    }
    let worst = w
        .worlds
        .iter()
        .max_by_key(|x| (x.lost_median, std::cmp::Reverse(x.world)))?;
    let top = w.ranks.first();
    Some(WhatIfSummary {
        slowdown: worst.slowdown,
        lost_per_step_ns: worst.lost_median,
        error_pct: w.error_pct,
        worst_rank: top.map(|r| r.who.clone()),
        worst_rank_saved_per_step_ns: top.map(|r| r.saved),
    })
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PathCause {
    pub rank: String,
    /// `work`, `host`, `late start` or `transfer`.
    pub cause: String,
    pub per_step_ns: Ns,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PathRank {
    pub rank: String,
    /// What its late arrivals cost the step, all causes, ns.
    pub per_step_ns: Ns,
}

/// `threshold_pct`: the verdict's; a lead costing less of the step is no lead (jitter), as in
/// the verdict, so a balanced profile imposes 0 and `compare` sees no "new" wait.
fn path_summary(p: &CriticalPath, threshold_pct: f64) -> Option<PathSummary> {
    if p.steps == 0 {
        return None;
    }
    let lead = p
        .lead()
        .filter(|c| p.replayed_pct(c).unwrap_or(c.net_step_pct) >= threshold_pct);
    let mut ranks: BTreeMap<&str, f64> = BTreeMap::new();
    for c in p.causes.iter().filter(|c| c.kind != PathKind::Transfer) {
        *ranks.entry(c.who.as_str()).or_default() += c.per_step_ns;
    }
    // A pipeline stage that leads the verdict leads here too, at what the verdict says.
    let (who, cause, imposed) = match p.stage_lead(threshold_pct) {
        Some(g) => (
            Some(g.who.clone()),
            Some(crate::analyze::reduce::path::whatif::STAGE.to_string()),
            Some(g.saved.get() as f64),
        ),
        None => (
            lead.map(|c| c.who.clone()),
            lead.map(|c| c.kind.as_str().to_string()),
            lead.map(|c| match c.kind {
                PathKind::Transfer => c.per_step_ns,
                _ => p
                    .replayed_cost(c)
                    .unwrap_or_else(|| ranks.get(c.who.as_str()).copied().unwrap_or(0.0)),
            }),
        ),
    };
    Some(PathSummary {
        steps: p.steps,
        step_ns: Ns::new(p.step_ns.round() as i64),
        lead: who,
        cause,
        imposed_per_step_ns: Ns::new(imposed.map_or(0, |ns| ns.round() as i64)),
        causes: p
            .causes
            .iter()
            .map(|c| PathCause {
                rank: c.who.clone(),
                cause: c.kind.as_str().to_string(),
                per_step_ns: Ns::new(c.per_step_ns.round() as i64),
            })
            .collect(),
        bus_ns_per_gb: {
            let mut m: BTreeMap<String, i64> = BTreeMap::new();
            for t in &p.transfers {
                if let Some(bw) = t.busbw_gbps.filter(|&b| b > 0.0) {
                    let ns = (1e9 / bw).round() as i64;
                    let e = m.entry(t.name.clone()).or_insert(ns);
                    *e = (*e).max(ns);
                }
            }
            m
        },
        what_if: what_if_summary(&p.what_if),
        ranks: ranks
            .into_iter()
            .map(|(r, ns)| PathRank {
                rank: r.to_string(),
                per_step_ns: Ns::new(ns.round() as i64),
            })
            .collect(),
    })
}

/// Work against time, for `compare` to gate on the time per unit of work.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct WorkSummary {
    /// `token`, `sequence` or `launch`.
    pub unit: String,
    pub source: String,
    /// The subject of the largest gap and its cause (see the verdict).
    pub lead: Option<String>,
    pub cause: Option<String>,
    /// The largest time per unit over the ranks (the job runs at the slowest rank's pace).
    pub time_per_unit_ns_max: Option<Ns>,
    pub ranks: Vec<WorkRank>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct WorkRank {
    pub rank: String,
    pub time_ns: Ns,
    /// Tokens, sequences or launches (the unit).
    pub work: Option<u64>,
    pub launches: u64,
    pub time_per_unit_ns: Option<Ns>,
    pub time_per_launch_ns: Option<Ns>,
}

fn work_summary(a: &Attribution, v: &Verdict) -> WorkSummary {
    let ranks: Vec<WorkRank> = a
        .ranks
        .iter()
        .map(|r| {
            let (work, per) = match r.work {
                Some(w) => (Some(w), r.time_per_unit_ns),
                None => (Some(r.launches), r.time_per_launch_ns),
            };
            WorkRank {
                rank: r.rank.clone(),
                time_ns: r.time_ns,
                work,
                launches: r.launches,
                time_per_unit_ns: per.map(|x| Ns::new(x.round() as i64)),
                time_per_launch_ns: r.time_per_launch_ns.map(|x| Ns::new(x.round() as i64)),
            }
        })
        .collect();
    WorkSummary {
        unit: a.unit.clone(),
        source: a.source.clone(),
        lead: v.lead.clone(),
        cause: v.cause.clone(),
        time_per_unit_ns_max: ranks.iter().filter_map(|r| r.time_per_unit_ns).max(),
        ranks,
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ProfileMeta {
    pub id: String,
    pub stage: Option<String>,
    pub ranks: Vec<String>,
    pub source: String,
    pub step_source: String,
    pub devices: Vec<Option<String>>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct StepStats {
    pub count: usize,
    pub time_median_ns: Ns,
    pub time_p90_ns: Ns,
    pub busy_median_ns: Ns,
    pub busy_p90_ns: Ns,
    pub work_median_ns: Ns,
    pub work_p90_ns: Ns,
    /// Median over steps of the step's op time per class (overall: summed over ranks).
    #[serde(default)]
    pub class_median_ns: BTreeMap<String, i64>,
    /// The per-step figures the medians come from, for `compare`'s statistical gate (absent in
    /// older files: `compare` then falls back to its fixed threshold, and says so).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub samples: Option<StepSamples>,
}

/// At most this many steps' figures are kept per metric ([`StepSamples`]): evenly spaced over
/// the profile when it has more.
pub const MAX_SAMPLES: usize = 128;

/// Per-step figures, integer ns, in step order (at most [`MAX_SAMPLES`], evenly spaced): what
/// `compare` tests a change on. A class with no time in any step is left out.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct StepSamples {
    pub busy_ns: Vec<i64>,
    pub work_ns: Vec<i64>,
    #[serde(default)]
    pub class_ns: BTreeMap<String, Vec<i64>>,
}

/// `v` thinned to at most [`MAX_SAMPLES`] values, evenly spaced (all of them when fewer).
fn thin(v: &[i64]) -> Vec<i64> {
    if v.len() <= MAX_SAMPLES {
        return v.to_vec();
    }
    (0..MAX_SAMPLES)
        .filter_map(|i| v.get(i * v.len() / MAX_SAMPLES).copied())
        .collect()
}

impl StepStats {
    fn of(time: &[i64], busy: &[i64], work: &[i64]) -> StepStats {
        let (tm, tp) = median_p90(time);
        let (bm, bp) = median_p90(busy);
        let (wm, wp) = median_p90(work);
        StepStats {
            count: time.len(),
            time_median_ns: Ns::new(tm),
            time_p90_ns: Ns::new(tp),
            busy_median_ns: Ns::new(bm),
            busy_p90_ns: Ns::new(bp),
            work_median_ns: Ns::new(wm),
            work_p90_ns: Ns::new(wp),
            class_median_ns: BTreeMap::new(),
            samples: (!time.is_empty()).then(|| StepSamples {
                busy_ns: thin(busy),
                work_ns: thin(work),
                class_ns: BTreeMap::new(),
            }),
        }
    }

    /// Adds the per-class medians: `per_step[s][c]` = step s's time in class c.
    fn with_classes(mut self, class_names: &[String], per_step: &[Vec<i64>]) -> StepStats {
        if per_step.is_empty() {
            return self;
        }
        self.class_median_ns = class_names
            .iter()
            .enumerate()
            .map(|(c, name)| {
                let v: Vec<i64> = per_step
                    .iter()
                    .map(|s| s.get(c).copied().unwrap_or(0))
                    .collect();
                (name.clone(), v)
            })
            .map(|(name, v)| {
                let median = median_p90(&v).0;
                if let Some(s) = self.samples.as_mut().filter(|_| v.iter().any(|&x| x != 0)) {
                    s.class_ns.insert(name.clone(), thin(&v));
                }
                (name, median)
            })
            .collect();
        self
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Overall {
    pub ranks: usize,
    pub kernels: u64,
    pub kernel_sum_ns: Ns,
    pub busy_ns_mean: Ns,
    pub busy_ns_max: Ns,
    pub work_ns_mean: Ns,
    pub work_ns_max: Ns,
    pub class_ns: BTreeMap<String, i64>,
    pub steps: StepStats,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RankEntry {
    /// The figures of the rank's summary row ([`super::collect::busy::RankSummary`]), serialized in place.
    #[serde(flatten)]
    pub figures: RankFigures,
    pub class_ns: BTreeMap<String, i64>,
    pub steps: StepStats,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct KernelEntry {
    pub name: String,
    pub class: String,
    pub kind: String,
    pub total_ns: Vec<i64>,
    pub count: Vec<u64>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct OtherKernels {
    pub names: usize,
    pub total_ns: Vec<i64>,
    pub count: Vec<u64>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Imbalance {
    pub balanced: bool,
    pub threshold_pct: f64,
    pub metric: String,
    pub slowest: Option<String>,
    pub excess_pct: f64,
    pub work_max_over_mean: f64,
    pub work_cv: f64,
    pub classes: Vec<ClassShare>,
    pub onset: Option<Onset>,
    pub straggler: Option<String>,
    pub straggler_pct: f64,
}

/// `x` rounded to 4 decimals (0 when not finite).
fn r4(x: f64) -> f64 {
    if x.is_finite() {
        (x * 1e4).round() / 1e4
    } else {
        0.0
    }
}

/// Builds the summary of analyzed ranks: the analysis mapped onto the versioned schema, one
/// section at a time (each section's phase below).
#[allow(clippy::too_many_arguments)]
pub(crate) fn build(
    id: &str,
    stage: Option<&str>,
    results: &[RankResult],
    class_names: &[String],
    steps: &StepTable,
    verdict: &Verdict,
    attribution: &Attribution,
    path: &CriticalPath,
    max_kernels: usize,
) -> Summary {
    let ranks = rank_entries(results, class_names);
    let (kernels, other_kernels) = top_kernels(results, class_names, max_kernels);
    Summary {
        version: VERSION,
        kind: KIND.to_string(),
        profile: profile_meta(id, stage, results, steps),
        classes: class_names.to_vec(),
        overall: overall(results, class_names, steps),
        ranks,
        kernels,
        other_kernels,
        imbalance: imbalance(verdict, results),
        work: Some(work_summary(attribution, verdict)),
        path: path_summary(path, verdict.threshold_pct),
        memory: memory_peaks(results),
    }
}

/// `v` (one figure per class, in column order) keyed by class name.
fn class_map(class_names: &[String], v: &[i64]) -> BTreeMap<String, i64> {
    class_names.iter().cloned().zip(v.iter().copied()).collect()
}

/// One figure of every rank's summary row, in rank order, as integer ns.
fn per_rank(results: &[RankResult], figure: impl Fn(&RankFigures) -> Ns) -> Vec<i64> {
    results
        .iter()
        .map(|r| figure(&r.summary.figures).get())
        .collect()
}

/// The integer mean of `v` (0 when empty).
fn mean(v: &[i64]) -> i64 {
    if v.is_empty() {
        0
    } else {
        v.iter().sum::<i64>() / v.len() as i64
    }
}

/// The profile's identity: id, stage, rank labels, figure and step sources, devices.
fn profile_meta(
    id: &str,
    stage: Option<&str>,
    results: &[RankResult],
    steps: &StepTable,
) -> ProfileMeta {
    ProfileMeta {
        id: id.to_string(),
        stage: stage.map(String::from),
        ranks: results.iter().map(|r| r.label.clone()).collect(),
        source: RankResult::figure_source(results).to_string(),
        step_source: steps.source.clone(),
        devices: results
            .iter()
            .map(|r| r.summary.figures.device.clone())
            .collect(),
    }
}

/// Each rank's summary row (utilization rounded), class totals and step statistics.
fn rank_entries(results: &[RankResult], class_names: &[String]) -> Vec<RankEntry> {
    results
        .iter()
        .map(|r| {
            let s = &r.summary.figures;
            let t: Vec<i64> = r.steps.iter().map(|f| f.dur_ns.get()).collect();
            let b: Vec<i64> = r.steps.iter().map(|f| f.busy_ns.get()).collect();
            let w: Vec<i64> = r.steps.iter().map(|f| f.work_ns.get()).collect();
            let c: Vec<Vec<i64>> = r.steps.iter().map(|f| f.class_ns.clone()).collect();
            RankEntry {
                figures: RankFigures {
                    rank: r.label.clone(),
                    utilization_pct: r4(s.utilization_pct),
                    ..s.clone()
                },
                class_ns: class_map(class_names, &r.class_ns),
                steps: StepStats::of(&t, &b, &w).with_classes(class_names, &c),
            }
        })
        .collect()
}

/// Every op name over the ranks, in name order: its class, kind, and total and count per rank.
fn kernels_by_name(results: &[RankResult], class_names: &[String]) -> Vec<KernelEntry> {
    let n = results.len();
    let mut by_name: BTreeMap<&str, KernelEntry> = BTreeMap::new();
    for (i, r) in results.iter().enumerate() {
        for op in &r.ops {
            let e = by_name
                .entry(op.name.as_str())
                .or_insert_with(|| KernelEntry {
                    name: op.name.clone(),
                    class: class_names
                        .get(op.agg.class as usize)
                        .cloned()
                        .unwrap_or_default(),
                    kind: op.agg.kind.as_str().to_string(),
                    total_ns: vec![0; n],
                    count: vec![0; n],
                });
            e.total_ns[i] += op.agg.total;
            e.count[i] += op.agg.count;
        }
    }
    by_name.into_values().collect()
}

/// The kernels by total over ranks (largest first, then by name): the first `max_kernels`
/// kept by name, the rest folded into one entry.
fn top_kernels(
    results: &[RankResult],
    class_names: &[String],
    max_kernels: usize,
) -> (Vec<KernelEntry>, OtherKernels) {
    let n = results.len();
    let mut all = kernels_by_name(results, class_names);
    all.sort_by(|a, b| {
        let ta: i64 = a.total_ns.iter().sum();
        let tb: i64 = b.total_ns.iter().sum();
        tb.cmp(&ta).then(a.name.cmp(&b.name))
    });
    let mut other = OtherKernels {
        names: 0,
        total_ns: vec![0; n],
        count: vec![0; n],
    };
    let mut kernels = Vec::new();
    for (i, k) in all.into_iter().enumerate() {
        if i < max_kernels {
            kernels.push(k);
        } else {
            other.names += 1;
            for r in 0..n {
                other.total_ns[r] += k.total_ns[r];
                other.count[r] += k.count[r];
            }
        }
    }
    (kernels, other)
}

/// The whole profile: kernels, busy and work over ranks (mean, max), time per class summed
/// over ranks, and the job's step statistics.
fn overall(results: &[RankResult], class_names: &[String], steps: &StepTable) -> Overall {
    let mut class_total = vec![0i64; class_names.len()];
    for r in results {
        for (t, x) in class_total.iter_mut().zip(&r.class_ns) {
            *t += x;
        }
    }
    let busy = per_rank(results, |f| f.busy_ns);
    let work = per_rank(results, |f| f.compute_ns);
    Overall {
        ranks: results.len(),
        kernels: results.iter().map(|r| r.summary.figures.kernels).sum(),
        kernel_sum_ns: results
            .iter()
            .map(|r| r.summary.figures.kernel_sum_ns)
            .sum(),
        busy_ns_mean: Ns::new(mean(&busy)),
        busy_ns_max: Ns::new(busy.iter().copied().max().unwrap_or(0)),
        work_ns_mean: Ns::new(mean(&work)),
        work_ns_max: Ns::new(work.iter().copied().max().unwrap_or(0)),
        class_ns: class_map(class_names, &class_total),
        steps: job_steps(results, class_names, steps),
    }
}

/// The job's step statistics: per step row, the maximum over ranks of its time, busy and work,
/// and its time per class summed over ranks.
fn job_steps(results: &[RankResult], class_names: &[String], steps: &StepTable) -> StepStats {
    let raw = |v: &[Ns]| -> Vec<i64> { v.iter().map(|t| t.get()).collect() };
    let max_of = |v: &[Vec<i64>]| -> Vec<i64> {
        v.iter()
            .map(|x| x.iter().copied().max().unwrap_or(0))
            .collect()
    };
    let rows_t: Vec<Vec<i64>> = steps.rows.iter().map(|r| raw(&r.dur_ns)).collect();
    let rows_b: Vec<Vec<i64>> = steps.rows.iter().map(|r| raw(&r.busy_ns)).collect();
    let rows_w: Vec<Vec<i64>> = steps.rows.iter().map(|r| raw(&r.work_ns)).collect();
    let rows_c: Vec<Vec<i64>> = steps
        .rows
        .iter()
        .map(|row| {
            let mut sum = vec![0i64; class_names.len()];
            for (r, &i) in results.iter().zip(&row.idx) {
                if let Some(f) = r.steps.get(i) {
                    for (s, x) in sum.iter_mut().zip(&f.class_ns) {
                        *s += x;
                    }
                }
            }
            sum
        })
        .collect();
    StepStats::of(&max_of(&rows_t), &max_of(&rows_b), &max_of(&rows_w))
        .with_classes(class_names, &rows_c)
}

/// The verdict's imbalance, its percentages rounded, with the spread of work over ranks.
fn imbalance(verdict: &Verdict, results: &[RankResult]) -> Imbalance {
    let (mom, cv) = spread(&per_rank(results, |f| f.compute_ns));
    Imbalance {
        balanced: verdict.balanced,
        threshold_pct: r4(verdict.threshold_pct),
        metric: verdict.metric.clone(),
        slowest: verdict.slowest.clone(),
        excess_pct: r4(verdict.excess_pct),
        work_max_over_mean: r4(mom),
        work_cv: r4(cv),
        classes: verdict
            .classes
            .iter()
            .map(|c| ClassShare {
                class: c.class.clone(),
                gap_ns: c.gap_ns,
                share_pct: r4(c.share_pct),
            })
            .collect(),
        onset: verdict.onset.clone().map(|mut o| {
            o.t_ms = r4(o.t_ms);
            o.excess_pct = r4(o.excess_pct);
            o
        }),
        straggler: verdict.straggler.clone(),
        straggler_pct: r4(verdict.straggler_pct),
    }
}

/// Serializes a summary: pretty JSON with arrays of plain values on one line (per-rank
/// figures stay readable in a diff), trailing newline.
pub fn to_json(s: &Summary) -> Result<String> {
    static FLAT: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let re = FLAT.get_or_init(|| {
        regex::Regex::new(r"\[\n(?:[ ]+[^\[\]{}\n]*\n)+[ ]*\]").expect("static regex")
    });
    let pretty = serde_json::to_string_pretty(s)?;
    let flat = re.replace_all(&pretty, |c: &regex::Captures<'_>| {
        let inner: Vec<&str> = c[0]
            .lines()
            .skip(1)
            .map(str::trim)
            .filter(|l| !l.is_empty() && *l != "]")
            .collect();
        format!("[{}]", inner.join(" "))
    });
    Ok(flat.into_owned() + "\n")
}

/// Reads a summary written by `--save-summary`, checking its kind and version.
pub fn load_summary(path: &Path) -> Result<Summary> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read summary {}", path.display()))?;
    from_json_str(&text, path)
}

/// Parses the text of a saved summary (what [`load_summary`] reads), checking its kind and
/// version; `path` only names the source in error messages.
pub fn from_json_str(text: &str, path: &Path) -> Result<Summary> {
    let v: serde_json::Value =
        serde_json::from_str(text).with_context(|| format!("{}: not JSON", path.display()))?;
    if v.get("kind").and_then(|k| k.as_str()) != Some(KIND) {
        bail!(
            "{}: not a rankprof summary (no \"kind\": \"{KIND}\")",
            path.display()
        );
    }
    match v.get("version").and_then(|x| x.as_u64()) {
        Some(x) if (u64::from(OLDEST_VERSION)..=u64::from(VERSION)).contains(&x) => {}
        Some(x) => bail!(
            "{}: summary version {x}; this rankprof reads versions {OLDEST_VERSION}-{VERSION}",
            path.display()
        ),
        None => bail!("{}: summary without a version", path.display()),
    }
    serde_json::from_value(v).with_context(|| format!("{}: malformed summary", path.display()))
}
