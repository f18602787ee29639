//! Trace files whose names carry no rank (`anything.json.gz`): their ranks come from
//! `distributedInfo.rank` in each file's header when those are distinct, else from file-name
//! order (noted when there is an order to give); their profile is named after the file when it
//! is the only one, else after the directory. One group per directory, or one per run when the
//! heads show files of different runs ([`groups`]); files named
//! by `torch.profiler.tensorboard_trace_handler` are [`super::handler`]'s.

use std::path::{Path, PathBuf};

use super::group::{finish_group, shown_dir, Group};
use super::rankfile::{rank_file, Naming, RankFile};
use crate::trace::rankid::RankId;
use crate::trace::read::reader::read_head;
use crate::trace::Header;

/// The groups of the unnamed trace files `paths` of `dir`: one, unless their heads show
/// files of different runs ([`Run`]), then one per run (with a note). Files that cannot be
/// read, and files that hold no trace event, are skipped with a note in `notes`.
pub(super) fn groups(dir: PathBuf, paths: Vec<PathBuf>, notes: &mut Vec<String>) -> Vec<Group> {
    let files = ranked(paths, notes);
    let parts = split_runs(files);
    if parts.len() > 1 {
        notes.push(runs_note(&dir, &parts));
    }
    let several = parts.len() > 1;
    parts
        .into_iter()
        .enumerate()
        .map(|(i, part)| {
            let files: Vec<RankFile> = part.into_iter().map(|(f, _)| f).collect();
            let id = match (several, files.len()) {
                (true, n) if n > 1 => format!("{}-{}", profile_id(&dir, &[]), i + 1),
                _ => profile_id(&dir, &files),
            };
            finish(dir.clone(), id, files, notes)
        })
        .collect()
}

/// What a file's head says of the run that wrote it: its GPU models (`deviceProperties`,
/// each model once) and its world size (`distributedInfo.world_size`). Files of one run agree
/// on whatever both say.
#[derive(Clone, Debug, Default, PartialEq)]
struct Run {
    gpus: Vec<String>,
    world: Option<i64>,
}

impl Run {
    fn of(h: &Header) -> Run {
        let mut gpus = h.device_names();
        gpus.sort();
        gpus.dedup();
        Run {
            gpus,
            world: h.world_size(),
        }
    }

    /// Why `self` and `other` are not one run, if what both say differs.
    fn differs(&self, other: &Run) -> Option<String> {
        if !self.gpus.is_empty() && !other.gpus.is_empty() && self.gpus != other.gpus {
            return Some(format!(
                "GPUs {} vs {}",
                self.gpus.join(", "),
                other.gpus.join(", ")
            ));
        }
        match (self.world, other.world) {
            (Some(a), Some(b)) if a != b => Some(format!("a world of {a} vs {b}")),
            _ => None,
        }
    }

    /// In words, for the note: `NVIDIA H100, world 8`.
    fn words(&self) -> String {
        let mut w: Vec<String> = self.gpus.clone();
        if let Some(n) = self.world {
            w.push(format!("world {n}"));
        }
        if w.is_empty() {
            "no GPU or world named".into()
        } else {
            w.join(", ")
        }
    }
}

/// The files in parts that are each one run: a file joins the first part whose every file
/// agrees with it, else starts a part (file-name order).
fn split_runs(mut files: Vec<(RankFile, Run)>) -> Vec<Vec<(RankFile, Run)>> {
    files.sort_by(|a, b| a.0.path.cmp(&b.0.path));
    let mut parts: Vec<Vec<(RankFile, Run)>> = Vec::new();
    for f in files {
        let fits = |p: &Vec<(RankFile, Run)>| p.iter().all(|g| g.1.differs(&f.1).is_none());
        match parts.iter().position(fits) {
            Some(k) => parts[k].push(f),
            None => parts.push(vec![f]),
        }
    }
    parts
}

/// The note for files of several runs in one folder: which, and why.
fn runs_note(dir: &Path, parts: &[Vec<(RankFile, Run)>]) -> String {
    let name = |f: &RankFile| {
        f.path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("")
            .to_string()
    };
    let shown: Vec<String> = parts
        .iter()
        .map(|p| {
            let files: Vec<String> = p.iter().take(3).map(|(f, _)| name(f)).collect();
            let more = if p.len() > 3 {
                format!(" and {} more", p.len() - 3)
            } else {
                String::new()
            };
            format!("{}{more} ({})", files.join(", "), p[0].1.words())
        })
        .collect();
    let why = parts[1][0].1.differs(&parts[0][0].1).unwrap_or_default();
    format!(
        "{}: the trace files without a rank in their names are not one run ({why}): listed as \
         {} profiles: {}",
        shown_dir(dir),
        parts.len(),
        shown.join("; ")
    )
}

/// Each readable trace of `paths` with its rank from `distributedInfo.rank` (or none yet) and
/// what its head says of its run; files that hold no trace event are skipped with a note.
fn ranked(paths: Vec<PathBuf>, notes: &mut Vec<String>) -> Vec<(RankFile, Run)> {
    let mut files = Vec::new();
    for path in paths {
        match read_head(&path) {
            Ok(Some(h)) if h.no_events => notes.push(format!(
                "{}: {} holds no trace event; skipped",
                path.display(),
                if h.object_form {
                    "its traceEvents array"
                } else {
                    "a JSON array that"
                }
            )),
            Ok(Some(h)) => {
                let rank = h.distributed_rank().and_then(|r| u32::try_from(r).ok());
                let naming = if rank.is_some() {
                    Naming::DistributedInfo
                } else {
                    Naming::FileOrder
                };
                let id = RankId {
                    rank,
                    ..Default::default()
                };
                files.push((rank_file(path, id, naming), Run::of(&h)));
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
