//! Merged traces: their names (`merged-<id>[-<stage>].trace.json.gz`, never taken as a rank
//! file), the mark rankprof writes at their head, and where a profile's merged trace goes by
//! default without replacing another writer's merged trace of the same name.
//!
//! SGLang's own merger (`merge_profiles`, `utils/profile_merger.py`) writes
//! `merged-{profile_id}.trace.json.gz` beside the ranks: rankprof's default name. So rankprof
//! marks its merged traces at their head, before `traceEvents` ([`head`]), where reading only
//! a file's head finds it ([`read_head`]), and replaces a merged trace at its
//! default path only when the mark is there; another writer's file is kept, and the merged
//! trace goes to `merged-<id>[-<stage>].rankprof.trace.json.gz` instead ([`merged_path`]).
//!
//! The mark is a member of `otherData` (`{"otherData":{"rankprof":"<version>"},...`), not a
//! top-level key of its own: Perfetto's JSON tokenizer skips `otherData` (Catapult shows it as
//! the trace's metadata), but an unknown key before `traceEvents` made older Perfetto stop
//! reading the trace (`json_trace_tokenizer.cc`: "If we don't recognize the key, just ignore
//! the rest of the trace").

use std::path::{Path, PathBuf};

use crate::trace::read::reader::read_head;

/// The prefix of every merged trace's file name.
pub(crate) const MERGED_PREFIX: &str = "merged-";

/// The top-level key that holds the mark, and the mark's key in it (its value: the version
/// of rankprof that wrote the trace).
const MARK_IN: &str = "otherData";
const MARK: &str = "rankprof";

/// The text a merged trace written by rankprof starts with, up to its first event.
pub(crate) fn head() -> String {
    format!(
        "{{\"{MARK_IN}\":{{\"{MARK}\":\"{}\"}},\"traceEvents\":[\n",
        env!("CARGO_PKG_VERSION")
    )
}

/// The suffix before `.trace.json.gz` of a merged trace written beside another writer's.
const BESIDE: &str = ".rankprof";

/// `merged-<id>[-<stage>].trace.json.gz`: the name of a profile's merged trace.
pub fn merged_name(profile_id: &str, stage: Option<&str>) -> String {
    match stage {
        Some(s) => format!("{MERGED_PREFIX}{profile_id}-{s}.trace.json.gz"),
        None => format!("{MERGED_PREFIX}{profile_id}.trace.json.gz"),
    }
}

/// Is this file a merged trace (by its name, `merged-*`)? Rank discovery never picks one up.
pub fn is_merged_trace(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with(MERGED_PREFIX))
}

/// The profile id (and stage, if any) a merged trace's name carries: `merged-1234-EXTEND` for
/// `merged-1234-EXTEND.trace.json.gz` (or `merged-1234-EXTEND.rankprof.trace.json.gz`),
/// without the prefix: `1234-EXTEND`.
pub(crate) fn merged_profile_id(path: &Path) -> String {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("merged");
    name.trim_start_matches(MERGED_PREFIX)
        .trim_end_matches(".gz")
        .trim_end_matches(".json")
        .trim_end_matches(".trace")
        .trim_end_matches(BESIDE)
        .to_string()
}

/// Whether the trace at `path` carries rankprof's mark before its events ([`head`]). A file
/// that cannot be read or is not a trace does not.
pub(crate) fn written_by_rankprof(path: &Path) -> bool {
    let Ok(Some(h)) = read_head(path) else {
        return false;
    };
    h.other.iter().any(|(k, raw)| {
        k == MARK_IN
            && serde_json::from_str::<serde_json::Value>(raw).is_ok_and(|v| v.get(MARK).is_some())
    })
}

/// Where a profile's merged trace goes in `dir` by default: `merged-<id>[-<stage>].trace.json.gz`
/// unless a file of that name is there that rankprof did not write (SGLang's own merged
/// trace, say); then that file is kept, the merged trace goes to
/// `merged-<id>[-<stage>].rankprof.trace.json.gz`, and the note says so.
pub(crate) fn merged_path(
    dir: &Path,
    profile_id: &str,
    stage: Option<&str>,
) -> (PathBuf, Option<String>) {
    let name = merged_name(profile_id, stage);
    let path = dir.join(&name);
    if !path.exists() || written_by_rankprof(&path) {
        return (path, None);
    }
    let beside = dir.join(name.replace(".trace.json.gz", &format!("{BESIDE}.trace.json.gz")));
    let note = format!(
        "{} was not written by rankprof (SGLang's own merged trace, from merge_profiles?): kept; \
         the merged trace goes to {}",
        path.display(),
        beside.display()
    );
    (beside, Some(note))
}
