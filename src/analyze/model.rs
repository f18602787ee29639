//! The result model of an analysis: [`Analysis`] (the whole report of one profile), how each
//! input file was read ([`FileInfo`]) and one rank in depth ([`RankDepth`]). Computed by
//! [`super::analyze`]; rendered by `crate::report`; serialized as `analyze --format json`.

use serde::{Deserialize, Serialize};

use super::busy::RankSummary;
use super::collectives::CollectiveReport;
use super::kernels::{ClassTable, KernelRow};
use super::rank::StreamRow;
use super::steps::{StepFig, StepTable};
use super::summary::Summary;
use super::verdict::Verdict;

/// How one input file was read.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FileInfo {
    pub path: String,
    pub events: u64,
    /// Decompressed bytes.
    pub bytes: u64,
    pub gzip: bool,
    pub damaged: bool,
    /// Ranks this file gave (one, or several for a merged trace).
    pub ranks: Vec<String>,
    /// Why the file could not be read at all (`reading <path>: <OS error>`); its rank is left
    /// out of the analysis (and `damaged` is set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unreadable: Option<String>,
    /// Why reading stopped before the end of the document (`truncated at byte N`, …), when
    /// it did: the rank's figures cover only what came before, and it is left out of the
    /// comparison unless asked for ([`super::AnalyzeOptions::keep_partial`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_early: Option<String>,
}

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
    pub total_ns: i64,
    /// Share of the rank's summed op time, percent.
    pub pct: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DepthKernel {
    pub name: String,
    pub short: String,
    pub class: String,
    pub kind: String,
    pub total_ns: i64,
    pub count: u64,
    pub mean_ns: f64,
    pub min_ns: i64,
    pub max_ns: i64,
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
    /// Work against time per rank and replica: the cause of each gap.
    #[serde(default)]
    pub attribution: super::attribution::Attribution,
    /// MoE (EP > 1): each EP rank's dispatch/combine, expert GEMMs and the rest against its EP
    /// peers.
    #[serde(default)]
    pub ep: Vec<super::ep::EpRecord>,
    pub depth: Option<RankDepth>,
    /// The ranks in groups (per DP replica, TP rank, …), distributions and outliers: the views
    /// that stay readable at 1,024 ranks.
    #[serde(default)]
    pub groups: super::groups::Groups,
    pub notes: Vec<String>,
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
