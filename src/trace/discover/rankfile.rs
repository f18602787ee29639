//! One rank's trace file ([`RankFile`]) and how its rank was found ([`Naming`]): what every
//! part of discovery hands on, at the bottom of the folder.

use std::fs;
use std::path::PathBuf;

use crate::trace::rankid::{strip_brackets, RankId};

/// How a file's rank was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Naming {
    Sglang,
    Vllm,
    Generic,
    DistributedInfo,
    FileOrder,
}

/// One rank's trace file.
#[derive(Clone, Debug)]
pub struct RankFile {
    pub path: PathBuf,
    pub id: RankId,
    /// The rank label used in merged pids, e.g. `[TP01-DP01]`.
    pub label: String,
    pub size: u64,
    pub naming: Naming,
}

impl RankFile {
    /// [`RankFile::label`] without its brackets: `TP01-DP01`.
    pub fn id_label(&self) -> String {
        strip_brackets(&self.label).to_string()
    }
}

pub(super) fn rank_file(path: PathBuf, id: RankId, naming: Naming) -> RankFile {
    let size = fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    RankFile {
        path,
        id,
        label: String::new(),
        size,
        naming,
    }
}
