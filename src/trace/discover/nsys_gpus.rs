//! An Nsight Systems export of a single-node run under one `nsys` (every rank's process in one
//! report) read as one rank per GPU: the report is a profile of its own (named after the file),
//! its GPUs its ranks in the order of their `deviceId`s (`RANK00` the lowest), each rank's
//! path the file with its GPU marked (`node.sqlite#gpu3`,
//! [`crate::trace::read::nsys::devices::device_path`]); the reader takes that GPU's rows and
//! its process's. Which reports split so is the reader's call
//! ([`crate::trace::read::nsys::devices::gpus_of`]: two GPUs or more, each used by one
//! process; a process may drive several, its host rows then shared out by the reader). A
//! report (`node.nsys-rep`) is exported to learn this (`node.nsys-rep#gpu3` then reads GPU 3
//! of its export; discovery reads every report's head through its export anyway).
//!
//! Several such reports in one folder whose kernels ran at the same time on the wall clock (a
//! multi-node run, one `nsys` per node; the servers of one `capture run`) are one profile: its
//! ranks the reports' GPUs, report after report in file-name order
//! ([`crate::trace::read::nsys::devices::span_of`] tells when each ran; reports without a
//! session start cannot say, and stay profiles of their own).

use std::path::{Path, PathBuf};

use super::group::{finish_group, Group};
use super::rankfile::{rank_file, Naming, RankFile};
use crate::trace::rankid::RankId;
use crate::trace::read::nsys::devices::{device_path, gpu_words, gpus_of, span_of, Gpus};
use crate::trace::read::nsys::export::{export, is_rep_name, REP_SUFFIX};

/// A report of several GPUs, to be read one rank per GPU.
pub(super) struct Split {
    path: PathBuf,
    devices: Vec<i64>,
    /// When its kernels ran (ns since the epoch), when the export says.
    span: Option<(i64, i64)>,
}

/// The GPUs of the export at `path`, when it holds several (with a note saying how they are
/// read); `None` otherwise (one rank, as any file).
pub(super) fn split(path: &Path, notes: &mut Vec<String>) -> Option<Split> {
    let name = path.file_name()?.to_str()?;
    let db = if is_rep_name(name) {
        // A report: its export says (made now, and read again from the run's cache).
        match export(path) {
            Ok(e) => e.db,
            Err(_) => return None, // said when the rank is read
        }
    } else {
        path.to_path_buf()
    };
    let gpus = gpus_of(&db).ok().flatten()?;
    notes.push(said(path, &gpus));
    Some(Split {
        path: path.to_path_buf(),
        devices: gpus.devices,
        span: span_of(&db).ok().flatten(),
    })
}

fn said(path: &Path, gpus: &Gpus) -> String {
    let owned = if gpus.drivers.is_empty() {
        "each with its own process".to_string()
    } else {
        gpus.drivers
            .iter()
            .map(|(pid, d)| {
                format!(
                    "process {pid} drives GPUs {}: each is given the runtime calls that \
                     launched its work and the NVTX ranges of the threads that launched onto it \
                     most, and the ranges of threads that launched nothing are shared by every \
                     GPU of the process",
                    gpu_words(d)
                )
            })
            .collect::<Vec<_>>()
            .join("; ")
    };
    format!(
        "{}: an Nsight Systems report holding {} GPUs (devices {}), {owned}: read as one rank \
         per GPU, in device order",
        path.display(),
        gpus.devices.len(),
        gpus.devices
            .iter()
            .map(i64::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// The profiles of the reports split one rank per GPU: those of one folder whose kernels ran
/// at overlapping times together (report after report in file-name order), every other one a
/// profile of its own (named after its file).
pub(super) fn groups(mut splits: Vec<Split>, notes: &mut Vec<String>) -> Vec<Group> {
    splits.sort_by(|a, b| a.path.cmp(&b.path));
    let mut out = Vec::new();
    let mut by_dir: std::collections::BTreeMap<PathBuf, Vec<Split>> = Default::default();
    for s in splits {
        let dir = s.path.parent().map(Path::to_path_buf).unwrap_or_default();
        by_dir.entry(dir).or_default().push(s);
    }
    for (dir, splits) in by_dir {
        for run in together(splits) {
            out.push(profile(&dir, run, notes));
        }
    }
    out
}

/// The reports of one folder in runs: those whose spans overlap (a chain) together, in
/// file-name order within each; a report without a span alone.
fn together(splits: Vec<Split>) -> Vec<Vec<Split>> {
    let (timed, alone): (Vec<Split>, Vec<Split>) =
        splits.into_iter().partition(|s| s.span.is_some());
    let mut timed: Vec<(i64, i64, Split)> = timed
        .into_iter()
        .filter_map(|s| s.span.map(|(lo, hi)| (lo, hi, s)))
        .collect();
    timed.sort_by_key(|t| (t.0, t.1));
    let mut runs: Vec<(i64, Vec<Split>)> = Vec::new();
    for (lo, hi, s) in timed {
        match runs.last_mut() {
            Some((end, run)) if lo <= *end => {
                *end = (*end).max(hi);
                run.push(s);
            }
            _ => runs.push((hi, vec![s])),
        }
    }
    let mut out: Vec<Vec<Split>> = runs
        .into_iter()
        .map(|(_, mut run)| {
            run.sort_by(|a, b| a.path.cmp(&b.path));
            run
        })
        .collect();
    out.extend(alone.into_iter().map(|s| vec![s]));
    out.sort_by(|a, b| a[0].path.cmp(&b[0].path));
    out
}

/// A report's name without its suffix.
fn stem(path: &Path) -> String {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    name.strip_suffix(".sqlite")
        .or_else(|| name.strip_suffix(REP_SUFFIX))
        .unwrap_or(name)
        .to_string()
}

/// One profile of the reports of `run`, their GPUs its ranks in order; named after the
/// report, or after what the reports' names share (`node` for `node_a`, `node_b`).
fn profile(dir: &Path, run: Vec<Split>, notes: &mut Vec<String>) -> Group {
    let stems: Vec<String> = run.iter().map(|s| stem(&s.path)).collect();
    let profile_id = match &stems[..] {
        [one] => one.clone(),
        [first, rest @ ..] => {
            let common: String = first
                .char_indices()
                .take_while(|&(i, c)| {
                    rest.iter()
                        .all(|s| s.get(i..).is_some_and(|t| t.starts_with(c)))
                })
                .map(|(_, c)| c)
                .collect();
            let common = common.trim_end_matches(['_', '-', '.']);
            if common.is_empty() {
                format!("{first}+{}", rest.len())
            } else {
                common.to_string()
            }
        }
        [] => String::new(),
    };
    let mut files: Vec<RankFile> = Vec::new();
    let mut parts = Vec::new();
    let several = run.len() > 1;
    for (i, s) in run.iter().enumerate() {
        let size = std::fs::metadata(&s.path).map(|m| m.len()).unwrap_or(0);
        let first = files.len();
        for (k, &d) in s.devices.iter().enumerate() {
            // Several reports: each a replica (DP) of its GPUs (TP), so each is matched
            // within itself (its GPUs are its world: the reader's `distributedInfo`).
            let id = if several {
                RankId {
                    tp: Some(k as u32),
                    dp: Some(i as u32),
                    ..Default::default()
                }
            } else {
                RankId {
                    rank: Some(files.len() as u32),
                    ..Default::default()
                }
            };
            let mut f = rank_file(device_path(&s.path, d), id, Naming::Gpu);
            f.size = size / s.devices.len().max(1) as u64;
            files.push(f);
        }
        parts.push(format!(
            "DP{i:02} is {}'s GPUs {} (ranks {}–{})",
            stem(&s.path),
            gpu_words(&s.devices),
            first,
            files.len().saturating_sub(1),
        ));
    }
    if run.len() > 1 {
        notes.push(format!(
            "{}: {} Nsight Systems reports of several GPUs each whose kernels ran at the same \
             time: one profile {profile_id:?}, each report a replica whose collectives are \
             matched within it ({})",
            super::group::shown_dir(dir),
            run.len(),
            parts.join("; ")
        ));
    }
    finish_group(dir.to_path_buf(), profile_id, None, files)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(name: &str, span: Option<(i64, i64)>) -> Split {
        Split {
            path: PathBuf::from(format!("/run/{name}")),
            devices: vec![0, 1],
            span,
        }
    }

    fn names(runs: &[Vec<Split>]) -> Vec<Vec<String>> {
        runs.iter()
            .map(|r| r.iter().map(|s| stem(&s.path)).collect())
            .collect()
    }

    #[test]
    fn reports_that_ran_together_are_one_run() {
        let runs = together(vec![
            s("node_b.nsys-rep", Some((105, 200))),
            s("node_a.nsys-rep", Some((100, 190))),
            s("later.sqlite", Some((500, 600))),
            s("untimed.sqlite", None),
            s("node_c.nsys-rep", Some((195, 260))),
        ]);
        assert_eq!(
            names(&runs),
            [
                vec!["later"],
                vec!["node_a", "node_b", "node_c"],
                vec!["untimed"]
            ]
        );
        let mut notes = Vec::new();
        let g = profile(
            Path::new("/run"),
            runs.into_iter().nth(1).unwrap(),
            &mut notes,
        );
        assert_eq!(g.profile_id, "node");
        assert_eq!(g.files.len(), 6);
        assert!(g.files[5].path.ends_with("node_c.nsys-rep#gpu1"));
        assert!(
            notes[0].contains("DP01 is node_b's GPUs 0, 1 (ranks 2–3)"),
            "{notes:?}"
        );
        assert_eq!((g.files[2].id.dp, g.files[2].id.tp), (Some(1), Some(0)));
    }
}
