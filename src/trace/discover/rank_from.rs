//! `--rank-from name|distributed-info|order` applied to groups found by name
//! ([`apply`]): where each file's rank comes from when the user says so, instead of
//! discovery's own choice ([`RankFrom::Auto`]).

use super::group::{finish_group, shown_dir, Group};
use super::rankfile::{Naming, RankFrom};
use crate::trace::rankid::RankId;
use crate::trace::read::reader::read_head;

/// Re-ranks each group's files as `rank_from` says: `Order`: file-name order; `Name`: groups
/// whose names carry no rank (ranked by their heads) in file-name order; `DistributedInfo`:
/// each file's `distributedInfo.rank`, where every file of the group has one and they are
/// distinct (else the group is left as found, with a note). `Auto` changes nothing.
pub(super) fn apply(groups: &mut [Group], rank_from: RankFrom, notes: &mut Vec<String>) {
    for g in groups.iter_mut() {
        let ranks: Option<Vec<u32>> = match rank_from {
            RankFrom::Auto => None,
            RankFrom::Order => Some(order(g)),
            RankFrom::Name => g
                .files
                .iter()
                .any(|f| f.naming == Naming::DistributedInfo)
                .then(|| order(g)),
            RankFrom::DistributedInfo => head_ranks(g, notes),
        };
        let Some(ranks) = ranks else {
            continue;
        };
        let naming = match rank_from {
            RankFrom::DistributedInfo => Naming::DistributedInfo,
            _ => Naming::FileOrder,
        };
        let mut files = std::mem::take(&mut g.files);
        for (f, r) in files.iter_mut().zip(ranks) {
            f.id = RankId {
                rank: Some(r),
                ..Default::default()
            };
            f.naming = naming;
        }
        let dir = std::mem::take(&mut g.dir);
        *g = finish_group(
            dir,
            std::mem::take(&mut g.profile_id),
            g.stage.take(),
            files,
        );
    }
}

/// Each file's index in file-name order.
fn order(g: &Group) -> Vec<u32> {
    let mut by_path: Vec<usize> = (0..g.files.len()).collect();
    by_path.sort_by(|&a, &b| g.files[a].path.cmp(&g.files[b].path));
    let mut ranks = vec![0; g.files.len()];
    for (i, k) in by_path.into_iter().enumerate() {
        ranks[k] = i as u32;
    }
    ranks
}

/// Each file's `distributedInfo.rank`, when every file of `g` has one and they are distinct.
fn head_ranks(g: &Group, notes: &mut Vec<String>) -> Option<Vec<u32>> {
    let mut ranks = Vec::with_capacity(g.files.len());
    for f in &g.files {
        let head = read_head(&f.path).ok().flatten();
        match head
            .and_then(|h| h.distributed_rank())
            .and_then(|r| u32::try_from(r).ok())
        {
            Some(r) => ranks.push(r),
            None => {
                notes.push(format!(
                    "{}: --rank-from distributed-info: {} has no distributedInfo.rank in its \
                     head; profile {} keeps the ranks in its names (or use --rank-from order)",
                    shown_dir(&g.dir),
                    f.path.display(),
                    g.profile_id
                ));
                return None;
            }
        }
    }
    let mut seen = ranks.clone();
    seen.sort_unstable();
    seen.dedup();
    if seen.len() != ranks.len() {
        notes.push(format!(
            "{}: --rank-from distributed-info: the files of profile {} repeat a \
             distributedInfo.rank; it keeps the ranks in its names (or use --rank-from order)",
            shown_dir(&g.dir),
            g.profile_id
        ));
        return None;
    }
    Some(ranks)
}
