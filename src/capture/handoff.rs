//! The one place `capture run` hands its traces to the rest of rankprof: [`merge_and_analyze`]
//! calls [`crate::pipeline`] (merge with the default settings, then analyze each merged trace)
//! and keeps, per stage, what the capture report needs — target, outcome, note — next to the
//! full results for printing.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::analyze::{analyze, Analysis, AnalyzeOptions};
use crate::exit::Outcome;
use crate::pipeline::{self, GroupRun, PipelineOptions};

/// One merge or analyze hand-over.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Step {
    /// What it was run on.
    pub target: Option<PathBuf>,
    /// How it ended, when it ran (serialized as its exit code).
    pub code: Option<Outcome>,
    pub note: String,
}

impl Step {
    /// Ok (also when it did not run), partial or failed.
    fn outcome(&self) -> Outcome {
        self.code.unwrap_or_default()
    }

    fn failed(target: &Path, what: &str, e: &anyhow::Error) -> Step {
        Step {
            target: Some(target.to_path_buf()),
            code: Some(Outcome::Failed),
            note: format!("{what} failed: {e:#}"),
        }
    }
}

/// What [`merge_and_analyze`] did.
#[derive(Debug, Default, Serialize)]
pub struct PostProcess {
    pub merge: Step,
    /// One analysis per merged file (or one of the directory when nothing was merged).
    pub analyze: Vec<Step>,
    /// The merged files written.
    pub merged: Vec<PathBuf>,
    /// Every profile's merge and analysis, for printing.
    #[serde(skip)]
    pub runs: Vec<GroupRun>,
    /// The analysis of the directory when nothing was merged.
    #[serde(skip)]
    pub fallback: Option<Analysis>,
    /// Discovery notes.
    #[serde(skip)]
    pub discovery_notes: Vec<String>,
}

impl PostProcess {
    /// Ok; partial when merge/analyze read damaged input; failed when any failed.
    pub fn outcome(&self) -> Outcome {
        self.analyze
            .iter()
            .fold(self.merge.outcome(), |c, s| c.worst(s.outcome()))
    }

    /// Every analysis made, in the order `analyze` would print them: each merged trace's,
    /// then the directory's when nothing was merged.
    pub fn analyses(&self) -> impl Iterator<Item = &Analysis> {
        self.runs
            .iter()
            .filter_map(|r| r.analysis.as_ref().and_then(|a| a.as_ref().ok()))
            .chain(self.fallback.as_ref())
    }

    /// Every step's note that says something.
    pub fn notes(&self) -> Vec<String> {
        std::iter::once(&self.merge)
            .chain(&self.analyze)
            .filter(|s| !s.note.is_empty())
            .map(|s| s.note.clone())
            .collect()
    }
}

fn analysis_step(target: &Path, a: &anyhow::Result<Analysis>) -> Step {
    match a {
        Ok(a) => Step {
            target: Some(target.to_path_buf()),
            code: Some(if a.damaged {
                Outcome::Partial
            } else {
                Outcome::Ok
            }),
            note: String::new(),
        },
        Err(e) => Step::failed(target, "analyze", e),
    }
}

/// Merges `files` (this capture's rank files; every profile in `dir` when empty) with the
/// default settings, then analyzes each merged trace (the directory when nothing was merged).
pub(crate) fn merge_and_analyze(dir: &Path, files: &[PathBuf]) -> PostProcess {
    let mut pp = PostProcess::default();
    match pipeline::merge_and_analyze(dir, files, &PipelineOptions::default()) {
        Ok(done) => {
            pp.discovery_notes = done.notes;
            let mut code = Outcome::Ok;
            let mut first_error = None;
            for run in &done.runs {
                match &run.merge {
                    Ok(r) => {
                        code = code.worst(r.outcome());
                        pp.merged.extend(r.output.clone());
                    }
                    Err(e) => {
                        first_error.get_or_insert_with(|| Step::failed(dir, "merge", e));
                    }
                }
                if let (Ok(r), Some(a)) = (&run.merge, &run.analysis) {
                    if let Some(out) = &r.output {
                        pp.analyze.push(analysis_step(out, a));
                    }
                }
            }
            pp.merge = first_error.unwrap_or(Step {
                target: Some(dir.to_path_buf()),
                code: Some(code),
                note: String::new(),
            });
            pp.runs = done.runs;
        }
        Err(e) => pp.merge = Step::failed(dir, "merge", &e),
    }
    if pp.merged.is_empty() {
        let a = analyze(&AnalyzeOptions {
            profile_dir: Some(dir.to_path_buf()),
            ..AnalyzeOptions::default()
        });
        pp.analyze.push(analysis_step(dir, &a));
        pp.fallback = a.ok();
    }
    pp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn post_process_codes() {
        let step = |code: Option<Outcome>| Step {
            target: None,
            code,
            note: String::new(),
        };
        let pp = |m, a| PostProcess {
            merge: step(m),
            analyze: vec![step(a)],
            ..Default::default()
        };
        use Outcome::{Failed, Ok, Partial};
        assert_eq!(pp(None, None).outcome(), Ok);
        assert_eq!(pp(Some(Ok), None).outcome(), Ok);
        assert_eq!(pp(Some(Partial), Some(Ok)).outcome(), Partial);
        assert_eq!(pp(Some(Failed), Some(Ok)).outcome(), Failed);
        assert_eq!(pp(Some(Partial), Some(Failed)).outcome(), Failed);
        assert_eq!(pp(Some(Failed), Some(Partial)).outcome(), Failed);
    }
}
