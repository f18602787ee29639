//! One report holding several GPUs read as one rank per GPU: which rows belong to one GPU
//! ([`Select`]: its kernels, copies and sets by `deviceId`, the runtime calls and NVTX ranges of
//! the process that owns it by `globalTid`), as SQL conditions the readers of [`super::rows`]
//! and [`super::viewer`] add to their statements; which reports split so ([`gpus_of`], for
//! discovery), and how a rank's path names its GPU ([`device_path`], [`split_path`]).

use std::collections::BTreeSet;
use std::io;
use std::path::{Path, PathBuf};

use rusqlite::Connection;

use super::rows::Select;
use super::rows::{int, Rows};
use super::schema::{ident, Schema, GPUS, KERNEL};

impl Rows<'_> {
    /// ` AND …`: the rows of GPU table `t` (alias `alias`) on the selected device; `""` when
    /// the whole report is read.
    pub(super) fn gpu_filter(&self, t: &str, alias: &str) -> String {
        match self.select {
            Some(s) if self.schema.column(t, "deviceId").is_some() => {
                format!(" AND {alias}.{} = {}", ident("deviceId"), s.device)
            }
            _ => String::new(),
        }
    }

    /// ` AND …`: the rows of host table `t` (alias `alias`) of the selected device's process;
    /// `""` when the whole report is read.
    pub(super) fn host_filter(&self, t: &str, alias: &str) -> String {
        match self.select {
            Some(s) if self.schema.column(t, "globalTid").is_some() => format!(
                " AND ({alias}.{} >> 24) = {}",
                ident("globalTid"),
                s.global_pid >> 24
            ),
            _ => String::new(),
        }
    }
}

/// What marks one GPU of a report in a rank's path: `node.sqlite#gpu3` is GPU 3 of
/// `node.sqlite` (`node.nsys-rep#gpu3` of the report, read through its export). Only discovery writes such paths (no file has that name): the readers take
/// the file and the GPU apart ([`split_path`]).
pub(crate) const GPU_MARK: &str = "#gpu";

/// The path that stands for GPU `device` of the report at `path`.
pub(crate) fn device_path(path: &Path, device: i64) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(format!("{GPU_MARK}{device}"));
    PathBuf::from(s)
}

/// A name's GPU mark taken off: (the export's name, the GPU), when it has one.
pub(crate) fn split_name(name: &str) -> Option<(&str, i64)> {
    let (file, dev) = name.rsplit_once(GPU_MARK)?;
    // An export, or a report (`*.nsys-rep`, read through its export).
    let ok = (file.ends_with(".sqlite") || file.ends_with(".nsys-rep"))
        && !dev.is_empty()
        && dev.bytes().all(|b| b.is_ascii_digit());
    Some((file, dev.parse().ok().filter(|_| ok)?))
}

/// The export a rank's path names, and its GPU when it names one ([`device_path`]).
pub(crate) fn split_path(path: &Path) -> (PathBuf, Option<i64>) {
    let split = path
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(split_name);
    match split {
        Some((file, dev)) => (path.with_file_name(file), Some(dev)),
        None => (path.to_path_buf(), None),
    }
}

/// The GPUs of a report to read as one rank each: `Some` (the `deviceId`s, ascending) when its
/// kernels ran on two GPUs or more and each GPU's kernels come from one process that owns no
/// other GPU (each rank's runtime calls and NVTX ranges are then its process's); `None` when
/// the report is one rank (one GPU, or GPUs shared by processes: read whole, noted by the
/// reader). One `GROUP BY` over the kernels, skipped when `TARGET_INFO_GPU` lists one GPU.
pub(crate) fn gpus_of(path: &Path) -> io::Result<Option<Vec<i64>>> {
    let (conn, schema, _) = super::open_export(path)?;
    if schema.column(KERNEL, "deviceId").is_none() || schema.column(KERNEL, "globalPid").is_none() {
        return Ok(None);
    }
    if schema.has_table(GPUS) {
        let n: i64 = conn
            .query_row(&format!("SELECT COUNT(*) FROM {}", ident(GPUS)), [], |r| {
                r.get(0)
            })
            .unwrap_or(2);
        if n == 1 {
            return Ok(None);
        }
    }
    let sql = format!(
        "SELECT deviceId, globalPid FROM {} GROUP BY deviceId, globalPid ORDER BY 1",
        ident(KERNEL)
    );
    let err = super::sql_err(path, "the kernels' GPUs");
    let mut st = conn.prepare(&sql).map_err(&err)?;
    let mut rows = st.query([]).map_err(&err)?;
    let mut pairs: Vec<(i64, i64)> = Vec::new();
    while let Some(r) = rows.next().map_err(&err)? {
        match (int(r, 0), int(r, 1)) {
            (Some(d), Some(p)) => pairs.push((d, p)),
            _ => return Ok(None),
        }
    }
    let devices: BTreeSet<i64> = pairs.iter().map(|p| p.0).collect();
    let procs: BTreeSet<i64> = pairs.iter().map(|p| p.1 >> 24).collect();
    let one_to_one = devices.len() == pairs.len() && procs.len() == pairs.len();
    Ok((devices.len() > 1 && one_to_one).then(|| devices.into_iter().collect()))
}

/// GPU `device` of the export and the process that owns it (the first kernel's).
pub(super) fn select(conn: &Connection, schema: &Schema, device: i64) -> Option<Select> {
    schema.column(KERNEL, "deviceId")?;
    schema.column(KERNEL, "globalPid")?;
    let sql = format!(
        "SELECT globalPid FROM {} WHERE deviceId = ?1 AND globalPid IS NOT NULL LIMIT 1",
        ident(KERNEL)
    );
    let global_pid = conn.query_row(&sql, [device], |r| Ok(int(r, 0))).ok()??;
    Some(Select { device, global_pid })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gpu_path_names_its_export_and_gpu() {
        let p = device_path(Path::new("/run/node.sqlite"), 3);
        assert_eq!(p, Path::new("/run/node.sqlite#gpu3"));
        assert_eq!(split_path(&p), (PathBuf::from("/run/node.sqlite"), Some(3)));
        assert_eq!(
            split_path(Path::new("/run/rank1.sqlite")),
            (PathBuf::from("/run/rank1.sqlite"), None)
        );
        for name in [
            "a.json#gpu1",
            "a.sqlite#gpu",
            "a.sqlite#gpux",
            "a.sqlite#gpu-1",
        ] {
            assert_eq!(split_name(name), None, "{name}");
        }
        assert_eq!(
            split_name("a#gpu1.sqlite#gpu12"),
            Some(("a#gpu1.sqlite", 12))
        );
    }
}
