//! One rank's trace file ([`RankFile`]), how its rank was found ([`Naming`]) and where the
//! user asked it to come from ([`RankFrom`]): what every part of discovery hands on, at the
//! bottom of the folder.

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
    /// One GPU of an Nsight Systems report holding several, ranked in device order.
    Gpu,
}

/// Where ranks come from (`--rank-from`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RankFrom {
    /// The names, corroborated by `distributedInfo` in the heads where names alone are not
    /// enough (torch's handler names: the head wins where they disagree, with a note; files
    /// without a rank in their names: the head, else file order).
    #[default]
    Auto,
    /// The names only (files without a rank in their names: file order).
    Name,
    /// `distributedInfo.rank` in each file's head.
    DistributedInfo,
    /// File-name order within each profile.
    Order,
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
