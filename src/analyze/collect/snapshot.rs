//! Memory snapshots beside a profile's rank traces (#53): the `*.pickle[.gz]` files of the
//! profile directory or the files given, each read by [`crate::trace::snapshot`] in the read
//! phase (in parallel, like the traces), with what its name says about its rank. Which rank
//! a snapshot belongs to is decided across files, in [`crate::analyze::explain::snapshot`].

use std::path::{Path, PathBuf};

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::analyze::options::AnalyzeOptions;
use crate::trace::discover::names::parse_name;
use crate::trace::snapshot::{is_snapshot_name, read_snapshot, snapshot_stem, SnapshotRead};
use crate::trace::RankId;

/// One snapshot file after the read phase.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SnapshotFile {
    pub path: String,
    /// The name's stem (`…-TP-0` of SGLang's `…-TP-0-memory.pickle`).
    pub stem: String,
    /// The rank its name gives, read as a trace of the same stem would be.
    pub id: Option<RankId>,
    /// Its figures; `None` when it could not be opened ([`Self::error`]).
    pub read: Option<SnapshotRead>,
    pub error: Option<String>,
}

/// The snapshot files among `args`' inputs: the profile directory's (not below it) and the
/// files given, by name; regular files only (after following symlinks).
pub(crate) fn snapshot_paths(args: &AnalyzeOptions) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = args.files.clone();
    if let Some(dir) = &args.profile_dir {
        if let Ok(rd) = std::fs::read_dir(dir) {
            found.extend(rd.filter_map(Result::ok).map(|e| e.path()));
        }
    }
    found.retain(|p| name_of(p).is_some_and(is_snapshot_name) && p.is_file());
    found.sort();
    found.dedup();
    found
}

fn name_of(p: &Path) -> Option<&str> {
    p.file_name().and_then(|n| n.to_str())
}

/// Reads every snapshot (in the current rayon pool).
pub(crate) fn read_snapshots(paths: &[PathBuf]) -> Vec<SnapshotFile> {
    paths.par_iter().map(|p| read_one(p)).collect()
}

fn read_one(p: &Path) -> SnapshotFile {
    let stem = snapshot_stem(name_of(p).unwrap_or_default()).to_string();
    let id = parse_name(&format!("{stem}.trace.json.gz")).map(|x| x.id);
    let (read, error) = match read_snapshot(p) {
        Ok(r) => (Some(r), None),
        Err(e) => (None, Some(e.to_string())),
    };
    SnapshotFile {
        path: p.display().to_string(),
        stem,
        id,
        read,
        error,
    }
}
