//! One pipeline: merge a profile's rank files into one trace, then analyze — the hand-over
//! `capture run` and `demo` use, as plain function calls (no command line in between).
//!
//! ```
//! use rankprof::pipeline::{merge_and_analyze, PipelineOptions};
//! let dir = tempfile::tempdir().unwrap();
//! for f in std::fs::read_dir("fixtures/sglang-tp4").unwrap() {
//!     let f = f.unwrap().path();
//!     std::fs::copy(&f, dir.path().join(f.file_name().unwrap())).unwrap();
//! }
//! let done = merge_and_analyze(dir.path(), &[], &PipelineOptions::default()).unwrap();
//! let run = &done.runs[0];
//! let merged = run.merge.as_ref().unwrap();
//! assert_eq!(merged.ranks.len(), 4);
//! let analysis = run.analysis.as_ref().unwrap().as_ref().unwrap();
//! assert_eq!(analysis.ranks.len(), 4);
//! // The report names the merged trace to open in a viewer.
//! assert_eq!(analysis.merged_trace.as_deref(), merged.output.as_ref().and_then(|p| p.to_str()));
//! ```

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Result;

use crate::analyze::{analyze, Analysis, AnalyzeOptions};
use crate::merge::{gather, merge_group, MergeOptions, MergeResult};
use crate::trace::Group;

/// What the analysis after a merge reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AnalyzeInput {
    /// The merged trace just written (its ranks come back from the pid labels).
    #[default]
    Merged,
    /// The group's rank files (the same figures, without reading the merged file again).
    Ranks,
}

/// Settings of both stages.
#[derive(Debug, Clone, Default)]
pub struct PipelineOptions {
    pub merge: MergeOptions,
    /// Inputs (`profile_dir`, `files`, `profile_id`, `stage`) are set per group.
    pub analyze: AnalyzeOptions,
    pub analyze_input: AnalyzeInput,
    /// Do not analyze, only merge.
    pub no_analyze: bool,
}

/// One profile (group) through the pipeline.
#[derive(Debug)]
pub struct GroupRun {
    pub group: Group,
    /// Where the merged trace was to go.
    pub output: PathBuf,
    pub merge: Result<MergeResult>,
    /// Seconds the merge took.
    pub merge_secs: f64,
    /// `None` when not analyzed (`no_analyze`, or the merge wrote nothing to analyze).
    pub analysis: Option<Result<Analysis>>,
}

/// Everything the pipeline did.
#[derive(Debug, Default)]
pub struct PipelineResult {
    /// Notes of discovery (files skipped, …).
    pub notes: Vec<String>,
    pub runs: Vec<GroupRun>,
}

/// Analyzes what `input` names for group `g` (merged file `out`, or the rank files).
fn analyze_group(g: &Group, out: &Path, opts: &PipelineOptions) -> Result<Analysis> {
    let mut a = opts.analyze.clone();
    match opts.analyze_input {
        AnalyzeInput::Merged => {
            a.profile_dir = None;
            a.files = vec![out.to_path_buf()];
            a.profile_id = None;
            a.stage = None;
        }
        AnalyzeInput::Ranks => {
            a.profile_dir = Some(g.dir.clone());
            a.files = Vec::new();
            a.profile_id = Some(g.profile_id.clone());
            a.stage = g.stage.clone();
        }
    }
    analyze(&a)
}

/// Merges group `g` into `out` and analyzes the result.
pub fn run_group(g: &Group, out: &Path, opts: &PipelineOptions) -> GroupRun {
    let t = Instant::now();
    let merge = merge_group(g, out, &opts.merge);
    let merge_secs = t.elapsed().as_secs_f64();
    let written_to = merge.as_ref().ok().and_then(|r| r.output.clone());
    let written = written_to.is_some();
    let analysis = (!opts.no_analyze && (written || opts.analyze_input == AnalyzeInput::Ranks))
        .then(|| {
            let mut a = analyze_group(g, out, opts)?;
            // The report points at the merged trace also when it read the rank files.
            if let Some(p) = &written_to {
                a.merged_trace = Some(p.display().to_string());
            }
            Ok(a)
        });
    GroupRun {
        group: g.clone(),
        output: out.to_path_buf(),
        merge,
        merge_secs,
        analysis,
    }
}

/// Finds the profiles in `files` (or, when empty, in `dir`), merges each into
/// `DIR/merged-<id>[-<stage>].trace.json.gz` beside its rank files (another name when another
/// writer's merged trace holds that one: [`crate::trace::Group::merged_path`]) and analyzes it.
/// `Err`: no profile was found at all.
pub fn merge_and_analyze(
    dir: &Path,
    files: &[PathBuf],
    opts: &PipelineOptions,
) -> Result<PipelineResult> {
    let profile_dir = files.is_empty().then_some(dir);
    let mut d = gather(profile_dir, files, false, None, None)?;
    let runs = d
        .groups
        .iter()
        .map(|g| {
            let (out, note) = g.merged_path(&g.dir);
            d.notes.extend(note);
            run_group(g, &out, opts)
        })
        .collect();
    Ok(PipelineResult {
        notes: d.notes,
        runs,
    })
}
