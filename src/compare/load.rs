//! One side of a comparison → a [`Summary`]: a saved summary is read with [`load_summary`]; a
//! profile directory or a trace file (one rank's, or a merged trace) is analyzed in-process by
//! [`crate::analyze::analyze`], every kernel kept by name.

use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::Serialize;

use crate::analyze::summary::{load_summary, Summary, KIND};
use crate::cli::{AnalyzeArgs, CompareArgs};

/// One side, loaded.
#[derive(Debug, Clone)]
pub struct Side {
    pub info: SideInfo,
    pub summary: Summary,
    /// The analysis' notes (traces only), for stderr.
    pub notes: Vec<String>,
}

/// What a side was, for the report.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SideInfo {
    /// As given on the command line.
    pub path: String,
    /// `summary`, `directory` or `trace`.
    pub kind: String,
    pub profile_id: String,
    pub stage: Option<String>,
    pub ranks: Vec<String>,
    /// Steps of the job (0: none found).
    pub steps: usize,
    pub step_source: String,
}

/// Is `path` a saved summary? Only the first bytes are looked at: traces may be large.
fn is_summary(path: &Path) -> Result<bool> {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    if !name.ends_with(".json") {
        return Ok(false);
    }
    let mut head = Vec::with_capacity(512);
    std::fs::File::open(path)
        .with_context(|| format!("cannot open {}", path.display()))?
        .take(512)
        .read_to_end(&mut head)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let needle = format!("\"{KIND}\"");
    Ok(String::from_utf8_lossy(&head).contains(&needle))
}

/// Loads one side; `which` ("baseline" / "current") names it in errors.
pub fn load(path: &Path, which: &str, args: &CompareArgs) -> Result<Side> {
    if !path.exists() {
        bail!("{which} {}: no such file or directory", path.display());
    }
    let shown = path.display().to_string();
    if path.is_file() && is_summary(path)? {
        let s = load_summary(path).with_context(|| format!("{which} summary"))?;
        return Ok(Side {
            info: info(&shown, "summary", &s),
            summary: s,
            notes: Vec::new(),
        });
    }
    let mut a = AnalyzeArgs {
        summary_kernels: usize::MAX,
        jobs: args.jobs,
        ..AnalyzeArgs::default()
    };
    let kind = if path.is_dir() {
        a.profile_dir = Some(path.to_path_buf());
        a.profile_id = args.profile_id.clone();
        a.stage = args.stage.clone();
        "directory"
    } else {
        a.files = vec![PathBuf::from(path)];
        "trace"
    };
    let analysis = crate::analyze::analyze(&a).with_context(|| format!("{which} {shown}"))?;
    if analysis.damaged {
        let damaged: Vec<&str> = analysis
            .files
            .iter()
            .filter(|f| f.damaged)
            .map(|f| f.path.as_str())
            .collect();
        let mut msg = format!(
            "{which}: damaged trace {}; a gate on partly read data would be wrong",
            damaged.join(", ")
        );
        for n in analysis.notes.iter().take(5) {
            msg.push_str(&format!("\n  {n}"));
        }
        bail!(msg);
    }
    let s = analysis
        .summary
        .with_context(|| format!("{which} {shown}: the analysis built no summary"))?;
    Ok(Side {
        info: info(&shown, kind, &s),
        summary: s,
        notes: analysis
            .notes
            .iter()
            .map(|n| format!("{which}: {n}"))
            .collect(),
    })
}

fn info(path: &str, kind: &str, s: &Summary) -> SideInfo {
    SideInfo {
        path: path.to_string(),
        kind: kind.to_string(),
        profile_id: s.profile.id.clone(),
        stage: s.profile.stage.clone(),
        ranks: s.profile.ranks.clone(),
        steps: s.overall.steps.count,
        step_source: s.profile.step_source.clone(),
    }
}
