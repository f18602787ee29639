//! Trace files whose names carry no rank (`anything.json.gz`): their ranks come from
//! `distributedInfo.rank` in each file's header when those are distinct, else from file-name
//! order (noted when there is an order to give); their profile is named after the file when it
//! is the only one, else after the directory. One group per directory ([`group`]); files named
//! by `torch.profiler.tensorboard_trace_handler` are [`super::handler`]'s.

use std::path::{Path, PathBuf};

use super::group::{finish_group, shown_dir, Group};
use super::rankfile::{rank_file, Naming, RankFile};
use crate::trace::rankid::RankId;
use crate::trace::read::reader::read_head;

/// The group of the unnamed trace files `paths` of `dir` (`None` when none holds a trace);
/// files that cannot be read are skipped with a note in `notes`.
pub(super) fn group(dir: PathBuf, paths: Vec<PathBuf>, notes: &mut Vec<String>) -> Option<Group> {
    let files = ranked(paths, notes);
    if files.is_empty() {
        return None;
    }
    let id = profile_id(&dir, &files);
    Some(finish(dir, id, files, notes))
}

/// Each readable trace of `paths` with its rank from `distributedInfo.rank` (or none yet).
fn ranked(paths: Vec<PathBuf>, notes: &mut Vec<String>) -> Vec<RankFile> {
    let mut files = Vec::new();
    for path in paths {
        match read_head(&path) {
            Ok(Some(h)) => {
                let rank = h.distributed_rank().and_then(|r| u32::try_from(r).ok());
                let naming = if rank.is_some() {
                    Naming::DistributedInfo
                } else {
                    Naming::FileOrder
                };
                files.push(rank_file(
                    path,
                    RankId {
                        rank,
                        ..Default::default()
                    },
                    naming,
                ));
            }
            Ok(None) => {}
            Err(e) => notes.push(format!("{}: cannot read: {e}; skipped", path.display())),
        }
    }
    files
}

/// The group of `files`: their `distributedInfo` ranks when distinct, else file-name order
/// (noted when there is an order to give).
fn finish(dir: PathBuf, id: String, mut files: Vec<RankFile>, notes: &mut Vec<String>) -> Group {
    // Ranks from distributedInfo must be distinct to be trusted.
    let mut ranks: Vec<_> = files.iter().filter_map(|f| f.id.rank).collect();
    ranks.sort_unstable();
    ranks.dedup();
    if ranks.len() != files.len() {
        // One file has no order to give (it is rank 0; a merged trace renamed is one).
        if files.len() > 1 {
            notes.push(format!(
                "{}: {} trace files without a rank in their names and without distinct \
                 distributedInfo.rank; ranks given in file-name order",
                shown_dir(&dir),
                files.len()
            ));
        }
        files.sort_by(|a, b| a.path.cmp(&b.path));
        for (i, f) in files.iter_mut().enumerate() {
            f.id.rank = Some(i as u32);
            f.naming = Naming::FileOrder;
        }
    }
    finish_group(dir, id, None, files)
}

/// The profile id of files whose names carry no rank: one file's own name without its
/// extensions (`run42` for `run42.trace.json.gz`, `report1` for `report1.sqlite`), else their directory's name (the current
/// directory's for bare file names), else `trace`.
fn profile_id(dir: &Path, files: &[RankFile]) -> String {
    if let [one] = files {
        let name = one.path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let stem = ["gz", "json", "trace", "pt"].iter().fold(name, |n, ext| {
            n.strip_suffix(&format!(".{ext}")[..]).unwrap_or(n)
        });
        // An Nsight Systems export or report: `report1` for `report1.sqlite`.
        let stem = [".sqlite", ".nsys-rep"]
            .iter()
            .find_map(|ext| stem.strip_suffix(ext))
            .unwrap_or(stem);
        if !stem.is_empty() {
            return stem.to_string();
        }
    }
    let here;
    let dir = if dir.as_os_str().is_empty() {
        here = std::env::current_dir().unwrap_or_default();
        &here
    } else {
        dir
    };
    dir.file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("trace")
        .to_string()
}
