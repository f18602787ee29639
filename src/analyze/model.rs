//! The result model of an analysis: [`Analysis`] (the whole report of one profile), which
//! holds every stage's result (how each input file was read, [`FileInfo`]; the rank summaries
//! and steps of the read; the tables of the reduce; the attribution and verdict of the
//! explanation; the saved summary), and one rank in depth ([`RankDepth`], built by `depth`).
//! Computed by [`super::analyze`]; rendered by `crate::report`; serialized as
//! `analyze --format json`.

use serde::{Deserialize, Serialize};

use super::collect::busy::{self, RankSummary};
use super::collect::ops::short_name;
use super::collect::plan::FileInfo;
use super::collect::rank::{RankResult, StreamRow};
use super::collect::steps::StepFig;
use super::explain::attribution::Attribution;
use super::explain::drill::Drill;
use super::explain::ep::EpRecord;
use super::explain::memory::MemoryRank;
use super::explain::snapshot::SnapshotRank;
use super::explain::verdict::Verdict;
use super::reduce::collectives::CollectiveReport;
use super::reduce::groups::Groups;
use super::reduce::kernels::{ClassTable, KernelRow};
use super::reduce::path::CriticalPath;
use super::reduce::steps::StepTable;
use super::summary::Summary;
use crate::trace::Ns;

/// One rank in depth (`--rank N`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RankDepth {
    pub rank: String,
    pub summary: RankSummary,
    pub classes: Vec<DepthClass>,
    pub kernels: Vec<DepthKernel>,
    pub streams: Vec<StreamRow>,
    pub step_source: String,
    pub steps: Vec<StepFig>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DepthClass {
    pub class: String,
    pub total_ns: Ns,
    /// Share of the rank's summed op time, percent.
    pub pct: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DepthKernel {
    pub name: String,
    pub short: String,
    pub class: String,
    pub kind: String,
    pub total_ns: Ns,
    pub count: u64,
    pub mean_ns: f64,
    pub min_ns: Ns,
    pub max_ns: Ns,
    /// Share of the rank's summed op time, percent.
    pub pct: f64,
}

/// The whole report of one profile.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Analysis {
    pub profile_id: String,
    pub stage: Option<String>,
    pub files: Vec<FileInfo>,
    /// `gpu` (every rank has GPU ops), `cpu` (none has: CPU-only traces) or `mixed`.
    pub source: String,
    pub threshold_pct: f64,
    pub verdict: Verdict,
    pub ranks: Vec<RankSummary>,
    pub classes: ClassTable,
    pub kernels: Vec<KernelRow>,
    pub steps: StepTable,
    pub collectives: CollectiveReport,
    /// The critical path across ranks: what each late arrival cost the step, and why.
    #[serde(default)]
    pub path: CriticalPath,
    /// Work against time per rank and replica: the cause of each gap.
    #[serde(default)]
    pub attribution: Attribution,
    /// MoE (EP > 1): each EP rank's dispatch/combine, expert GEMMs and the rest against its EP
    /// peers.
    #[serde(default)]
    pub ep: Vec<EpRecord>,
    /// Memory per rank and device (Kineto's `[memory]` events, `profile_memory=True`); empty,
    /// and left out of the JSON, when no trace has one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub memory: Vec<MemoryRank>,
    /// Per rank and device, what its CUDA memory snapshot (`*.pickle` beside the traces) says:
    /// allocated and reserved at the snapshot, the peak of its allocator trace, the top user
    /// frames there; empty, and left out of the JSON, without snapshots.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub snapshots: Vec<SnapshotRank>,
    pub depth: Option<RankDepth>,
    /// `--rank`: that rank against its peers' median (by class, kernel, step, collective).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drill: Option<Drill>,
    /// The ranks in groups (per DP replica, TP rank, …), distributions and outliers: the views
    /// that stay readable at 1,024 ranks.
    #[serde(default)]
    pub groups: Groups,
    pub notes: Vec<String>,
    /// Ranks whose clock was off their world's by a constant, aligned from the collectives
    /// ([`crate::analyze::reduce::clocks`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clocks: Vec<crate::analyze::reduce::clocks::ClockOffset>,
    /// Some input was damaged: figures cover what could be read.
    pub damaged: bool,
    /// The ranks whose data stops early, each with its file, damage and byte offset
    /// (`TP02 (x.trace.json.gz: truncated at byte 1222172, 4811 events read before)`): left
    /// out of the comparison unless kept (`--keep-partial`); the verdict's first line says which.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_early: Option<String>,
    /// The merged trace of these ranks, when the analysis read one or the pipeline wrote one
    /// (`capture run`, `demo`): the file to open in a trace viewer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merged_trace: Option<String>,
    #[serde(skip)]
    pub summary: Option<Summary>,
}

impl Analysis {
    /// Every note of the report: inputs, steps, collectives.
    pub fn all_notes(&self) -> Vec<&String> {
        self.notes
            .iter()
            .chain(&self.steps.notes)
            .chain(&self.collectives.notes)
            .collect()
    }
}

/// One rank in depth (`--rank`): its summary, class totals, top ops, streams and steps.
pub(super) fn depth(r: &RankResult, class_names: &[String], top_n: usize) -> RankDepth {
    let sum: i64 = r.ops.iter().map(|o| o.agg.total).sum();
    let pct = |x: i64| busy::pct(x, sum);
    RankDepth {
        rank: r.label.clone(),
        summary: r.summary.clone(),
        classes: class_names
            .iter()
            .zip(&r.class_ns)
            .map(|(c, &t)| DepthClass {
                class: c.clone(),
                total_ns: Ns::new(t),
                pct: pct(t),
            })
            .collect(),
        kernels: r
            .ops
            .iter()
            .take(top_n)
            .map(|o| DepthKernel {
                name: o.name.clone(),
                short: short_name(&o.name),
                class: class_names
                    .get(o.agg.class as usize)
                    .cloned()
                    .unwrap_or_default(),
                kind: o.agg.kind.as_str().to_string(),
                total_ns: Ns::new(o.agg.total),
                count: o.agg.count,
                mean_ns: if o.agg.count > 0 {
                    o.agg.total as f64 / o.agg.count as f64
                } else {
                    0.0
                },
                min_ns: Ns::new(if o.agg.count > 0 { o.agg.min } else { 0 }),
                max_ns: Ns::new(o.agg.max),
                pct: pct(o.agg.total),
            })
            .collect(),
        streams: r.streams.clone(),
        step_source: r.step_source.clone(),
        steps: r.steps.clone(),
    }
}
