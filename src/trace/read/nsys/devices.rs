//! One report holding several GPUs read as one rank per GPU: which rows belong to one GPU
//! ([`Select`]: its kernels, copies and sets by `deviceId`, the runtime calls and NVTX ranges of
//! the process that owns it by `globalTid`), as SQL conditions the readers of [`super::rows`]
//! and [`super::viewer`] add to their statements.

use super::rows::Rows;
use super::schema::ident;

/// One GPU of a report and the process that owns it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Select {
    /// The GPU's `deviceId`.
    pub device: i64,
    /// The owning process's `globalPid` (a `globalTid` with its thread bits clear).
    pub global_pid: i64,
}

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
