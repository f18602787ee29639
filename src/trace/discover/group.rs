//! The rank files of one profile and stage ([`Group`]): put in rank order and labelled
//! (`finish_group`), the ranks missing from their grid, where their merged trace goes; and how
//! notes show a group's directory (`shown_dir`).

use std::path::{Path, PathBuf};

use super::merged::merged_name;
use super::rankfile::RankFile;
use crate::trace::rankid::{label_of, RankId};

/// The rank files of one profile (and stage) in one directory, in rank order.
#[derive(Clone, Debug)]
pub struct Group {
    pub dir: PathBuf,
    pub profile_id: String,
    pub stage: Option<String>,
    pub files: Vec<RankFile>,
}

impl Group {
    /// `merged-<id>[-<stage>].trace.json.gz`.
    pub fn merged_name(&self) -> String {
        merged_name(&self.profile_id, self.stage.as_deref())
    }

    /// Where this profile's merged trace goes in `dir` by default, and a note when that is
    /// not [`Group::merged_name`] (another writer's merged trace holds that name; see
    /// [`super::merged::merged_path`]).
    pub fn merged_path(&self, dir: &Path) -> (PathBuf, Option<String>) {
        super::merged::merged_path(dir, &self.profile_id, self.stage.as_deref())
    }

    /// Ranks absent from the full TP × DP × PP grid, as labels (see
    /// [`missing_in`](super::grid::missing_in)).
    pub fn missing(&self) -> Vec<String> {
        let ids: Vec<RankId> = self.files.iter().map(|f| f.id.clone()).collect();
        super::grid::missing_shown(&ids, super::grid::shown_of(&self.files))
    }
}

pub(super) fn finish_group(
    dir: PathBuf,
    profile_id: String,
    stage: Option<String>,
    mut files: Vec<RankFile>,
) -> Group {
    files.sort_by(|a, b| {
        a.id.sort_key()
            .cmp(&b.id.sort_key())
            .then(a.path.cmp(&b.path))
    });
    let shown = super::grid::shown_of(&files);
    for f in &mut files {
        f.label = label_of(&f.id, shown);
    }
    Group {
        dir,
        profile_id,
        stage,
        files,
    }
}

/// A directory as notes show it: `.` for the current one (a bare file name's parent).
pub(super) fn shown_dir(dir: &Path) -> std::path::Display<'_> {
    if dir.as_os_str().is_empty() {
        Path::new(".").display()
    } else {
        dir.display()
    }
}
