//! Files named on the command line are one profile ([`join_given`]: per stage, unless a rank
//! repeats: then the profiles discovery found stay apart, with a note naming the files); and the sign of one run split into profiles
//! of one rank each ([`split_run`]), which `merge` refuses to write as so many one-rank traces.

use std::collections::BTreeMap;

use super::group::{finish_group, shown_dir, Group};
use super::rankfile::RankFile;
use crate::trace::rankid::RankId;

/// Joins the groups of files named on the command line into one profile per stage, named
/// after the first group, with a note. When a rank repeats among them (several runs named
/// together) the groups stay as discovery found them, with a note naming the files that share
/// it (unless `renumber`: the caller numbers them anew).
pub(super) fn join_given(
    groups: &mut Vec<Group>,
    renumber: bool,
    notes: &mut Vec<String>,
) -> Result<(), String> {
    let mut by_stage: BTreeMap<Option<String>, Vec<Group>> = BTreeMap::new();
    for g in groups.drain(..) {
        by_stage.entry(g.stage.clone()).or_default().push(g);
    }
    for (stage, gs) in by_stage {
        if gs.len() == 1 {
            groups.extend(gs);
            continue;
        }
        let (dir, id) = (gs[0].dir.clone(), gs[0].profile_id.clone());
        let ids: Vec<String> = gs.iter().map(|g| g.profile_id.clone()).collect();
        let mut by_rank: BTreeMap<&RankId, Vec<&RankFile>> = BTreeMap::new();
        for f in gs.iter().flat_map(|g| &g.files) {
            by_rank.entry(&f.id).or_default().push(f);
        }
        let dups: Vec<String> = by_rank
            .values()
            .filter(|fs| fs.len() > 1)
            .map(|fs| {
                let shown: Vec<String> = fs.iter().map(|f| f.path.display().to_string()).collect();
                format!("{} in {}", fs[0].id_label(), shown.join(", "))
            })
            .collect();
        if !dups.is_empty() && !renumber {
            // Several runs named together (two servers of one `capture run`, each with its
            // own profile id): each stays its own profile, as discovery found it.
            notes.push(format!(
                "{}: the files named on the command line hold {} profiles ({}) that repeat {} \
                 rank(s) ({}): kept apart; to take them as one, number them with --rank-from \
                 order|distributed-info",
                shown_dir(&dir),
                ids.len(),
                ids.join(", "),
                dups.len(),
                dups.join("; ")
            ));
            groups.extend(gs);
            continue;
        }
        let files: Vec<RankFile> = gs.into_iter().flat_map(|g| g.files).collect();
        notes.push(format!(
            "{}: {} files named on the command line (profiles {}) taken as one profile, {id}",
            shown_dir(&dir),
            files.len(),
            ids.join(", ")
        ));
        groups.push(finish_group(dir, id, stage, files));
    }
    Ok(())
}

/// When every group found is one rank, several share a directory and their ranks are distinct:
/// one run whose ranks' files were named or stamped apart (a worker name per rank that
/// discovery could not join, stamps over [`super::handler::SPREAD_NS`] apart). What to say,
/// with the ways out; `None` otherwise.
pub fn split_run(groups: &[Group]) -> Option<String> {
    if groups.len() < 2 || groups.iter().any(|g| g.files.len() != 1) {
        return None;
    }
    let mut by_dir: BTreeMap<&std::path::Path, Vec<&Group>> = BTreeMap::new();
    for g in groups {
        by_dir.entry(g.dir.as_path()).or_default().push(g);
    }
    let (dir, gs) = by_dir.into_iter().max_by_key(|(_, gs)| gs.len())?;
    if gs.len() < 2 {
        return None;
    }
    let mut ids: Vec<&RankId> = gs.iter().map(|g| &g.files[0].id).collect();
    ids.sort_unstable();
    let n = ids.len();
    ids.dedup();
    if ids.len() != n {
        return None;
    }
    let labels: Vec<String> = gs.iter().map(|g| g.files[0].id_label()).collect();
    let shown = shown_dir(dir);
    Some(format!(
        "{shown}: {n} profiles of one rank each, ranks {} distinct: this looks like one run \
         whose files were named or stamped apart (stamps over 10 minutes apart, or worker \
         names that differ by more than the rank); to take them as one profile, name the files \
         on the command line, e.g. {shown}/*.json* (files named are one profile); to take one \
         alone: --profile-id ID",
        labels.join(", ")
    ))
}
