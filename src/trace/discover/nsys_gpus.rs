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

use std::path::Path;

use super::group::{finish_group, Group};
use super::rankfile::{rank_file, Naming};
use crate::trace::rankid::RankId;
use crate::trace::read::nsys::devices::{device_path, gpu_words, gpus_of};
use crate::trace::read::nsys::export::{export, is_rep_name, REP_SUFFIX};

/// The group of one GPU per rank of the export at `path`, when it holds several GPUs so
/// owned (with a note); `None` otherwise (one rank, as any file).
pub(super) fn group(path: &Path, notes: &mut Vec<String>) -> Option<Group> {
    let name = path.file_name()?.to_str()?;
    let gpus = if is_rep_name(name) {
        // A report: its export says (made now, and read again from the run's cache).
        match export(path) {
            Ok(e) => gpus_of(&e.db).ok().flatten()?,
            Err(_) => return None, // said when the rank is read
        }
    } else {
        gpus_of(path).ok().flatten()?
    };
    let devices = gpus.devices;
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let profile_id = name
        .strip_suffix(".sqlite")
        .or_else(|| name.strip_suffix(REP_SUFFIX))
        .unwrap_or(name)
        .to_string();
    let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    let files = devices
        .iter()
        .enumerate()
        .map(|(r, &d)| {
            let mut f = rank_file(
                device_path(path, d),
                RankId {
                    rank: Some(r as u32),
                    ..Default::default()
                },
                Naming::Gpu,
            );
            f.size = size / devices.len() as u64;
            f
        })
        .collect::<Vec<_>>();
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
    notes.push(format!(
        "{}: an Nsight Systems report holding {} GPUs (devices {}), {owned}: read as one rank \
         per GPU, in device order",
        path.display(),
        devices.len(),
        devices
            .iter()
            .map(i64::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    ));
    Some(finish_group(dir, profile_id, None, files))
}
