//! One side of a comparison → a [`Summary`]: a saved summary is read with [`load_summary`]; a
//! profile directory or a trace file (one rank's, or a merged trace) is analyzed in-process by
//! [`crate::analyze::analyze`], every kernel kept by name.

use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::Serialize;

use super::CompareOptions;
use crate::analyze::summary::{load_summary, Summary, KIND};
use crate::analyze::AnalyzeOptions;
use crate::trace::read::json;

/// One side, loaded.
#[derive(Debug, Clone)]
pub(crate) struct Side {
    pub(crate) info: SideInfo,
    pub(crate) summary: Summary,
    /// The analysis' notes (traces only), for stderr.
    pub(crate) notes: Vec<String>,
    /// Every file read (so that `-o` never replaces one).
    pub(crate) inputs: Vec<PathBuf>,
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

/// How much of a file is looked at to tell a summary from a trace.
const HEAD: u64 = 4 << 20;

/// Is `path` a saved summary? Walks the top-level keys of the file's first [`HEAD`] bytes
/// (gzip: never): `"kind": "rankprof-summary"` says yes, `"traceEvents"` (a trace, which may
/// be large) or anything else says no. Bounded memory whatever the file.
fn is_summary(path: &Path) -> Result<bool> {
    let mut head = Vec::new();
    std::fs::File::open(path)
        .with_context(|| format!("cannot open {}", path.display()))?
        .take(HEAD)
        .read_to_end(&mut head)
        .with_context(|| format!("cannot read {}", path.display()))?;
    Ok(top_level_kind(&head).as_deref() == Some(KIND))
}

/// The string value of the top-level `"kind"` key, if it comes before `"traceEvents"` and
/// within `b`.
fn top_level_kind(b: &[u8]) -> Option<String> {
    let mut i = json::skip_ws(b, 0);
    if b.get(i) != Some(&b'{') {
        return None;
    }
    i = json::skip_ws(b, i + 1);
    loop {
        if b.get(i) != Some(&b'"') {
            return None;
        }
        let (kend, _) = json::scan_string(b, i).ok()?;
        let key = &b[i + 1..kend - 1];
        i = json::skip_ws(b, kend);
        if b.get(i) != Some(&b':') {
            return None;
        }
        i = json::skip_ws(b, i + 1);
        if key == b"traceEvents" {
            return None;
        }
        let (vend, kind) = json::skip_value(b, i).ok()?;
        if key == b"kind" {
            return match kind {
                json::Kind::Str { .. } => Some(String::from_utf8_lossy(&b[i + 1..vend - 1]).into()),
                _ => None,
            };
        }
        i = json::skip_ws(b, vend);
        match b.get(i) {
            Some(b',') => i = json::skip_ws(b, i + 1),
            _ => return None,
        }
    }
}

/// Loads one side; `which` ("baseline" / "current") names it in errors.
pub(crate) fn load(path: &Path, which: &str, args: &CompareOptions) -> Result<Side> {
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
            inputs: vec![path.to_path_buf()],
        });
    }
    let mut a = AnalyzeOptions {
        summary_kernels: usize::MAX,
        jobs: args.jobs,
        ..AnalyzeOptions::default()
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
        // No file damaged: ranks of a merged trace stopped early when it was merged.
        let what = match (damaged.is_empty(), &analysis.stopped_early) {
            (true, Some(ranks)) => format!("{shown}: data stops early for {ranks}"),
            _ => format!("damaged trace {}", damaged.join(", ")),
        };
        let mut msg = format!("{which}: {what}; a gate on partly read data would be wrong");
        for n in analysis.notes.iter().take(5) {
            msg.push_str(&format!("\n  {n}"));
        }
        bail!(msg);
    }
    let inputs = analysis
        .files
        .iter()
        .map(|f| PathBuf::from(&f.path))
        .collect();
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
        inputs,
    })
}

/// Loads the other baselines (`--baseline a b c`); a folder holding saved summaries (and no
/// traces) stands for those summaries, in name order.
pub(crate) fn load_more(paths: &[PathBuf], args: &CompareOptions) -> Result<Vec<Side>> {
    let mut out = Vec::new();
    for p in paths {
        for f in expand(p)? {
            out.push(load(&f, "baseline", args)?);
        }
    }
    Ok(out)
}

/// A folder of saved summaries → its summaries; anything else → itself.
fn expand(path: &Path) -> Result<Vec<PathBuf>> {
    if !path.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(path)
        .with_context(|| format!("cannot list {}", path.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|f| f.is_file())
        .collect();
    files.sort();
    let mut summaries = Vec::new();
    for f in &files {
        if f.extension().is_some_and(|e| e == "json") && is_summary(f)? {
            summaries.push(f.clone());
        }
    }
    Ok(if summaries.is_empty() {
        vec![path.to_path_buf()]
    } else {
        summaries
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

#[cfg(test)]
mod tests {
    use super::top_level_kind;

    #[test]
    fn summaries_are_told_from_traces_by_their_top_level_keys() {
        let k = |s: &str| top_level_kind(s.as_bytes());
        assert_eq!(
            k(r#"{"version": 1, "kind": "rankprof-summary", "x": 1}"#).as_deref(),
            Some("rankprof-summary")
        );
        // Keys sorted (a summary rewritten by another tool): "kind" after big values.
        assert_eq!(
            k(r#"{"classes": ["a"], "imbalance": {"kind": "no"}, "kind": "rankprof-summary"}"#)
                .as_deref(),
            Some("rankprof-summary")
        );
        // A trace: traceEvents first, or a "kind" nested deeper, or an array.
        assert_eq!(
            k(r#"{"schemaVersion": 1, "traceEvents": [{"kind": "rankprof-summary"}]"#),
            None
        );
        assert_eq!(k(r#"[{"ph": "X"}]"#), None);
        // Cut short before the key: not a summary.
        assert_eq!(k(r#"{"a": [1, 2"#), None);
    }
}
