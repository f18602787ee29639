//! What a read of an export takes besides its rows, shared by the readers of [`super::rows`]
//! and the passes that find it ([`super::devices`], [`super::nccl`]; kept here, below them
//! all, so no two of those files import each other): the GPU of a report read one rank per GPU
//! ([`Select`], [`Shared`]) and what NCCL's NVTX ranges say of the NCCL kernels ([`Nccl`]).

use std::collections::HashMap;

/// One GPU of a report and the process that owns it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Select {
    /// The GPU's `deviceId`.
    pub(crate) device: i64,
    /// The owning process's `globalPid` (a `globalTid` with its thread bits clear).
    pub(crate) global_pid: i64,
    /// When that process drives other GPUs too: which of its rows are this GPU's.
    pub(crate) shared: Option<Shared>,
}

/// A process driving several GPUs (a single controller, DataParallel, one process per node):
/// which of its host rows go to the selected GPU. Its runtime calls go by what they launched;
/// its threads by where they launched ([`super::devices`] gives them out): a thread goes to
/// the GPU it launched most onto, and to any other that got at least half as many of its
/// launches (a thread launching evenly onto several GPUs goes to each); a thread that
/// launched nothing (a controller's main thread holding the step ranges) is shared by every
/// GPU of the process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Shared {
    /// The process's GPUs (ascending).
    pub(crate) devices: Vec<i64>,
    /// The `globalTid`s of the threads given to the selected GPU by their launches.
    pub(crate) mine: Vec<i64>,
    /// The `globalTid`s of every thread of the process that launched anything.
    pub(crate) launchers: Vec<i64>,
    /// Of the threads given to the selected GPU, how many also go to another.
    pub(crate) split: usize,
}

/// What an NCCL kernel got from its call's range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Found {
    /// `NCCL communicator ID`.
    pub comm: Option<u64>,
    /// `Message size [bytes]`, for the calls whose size is the whole message.
    pub bytes: Option<u64>,
}

/// The NCCL kernels' sizes and communicators, by (`globalPid`, `correlationId`), as
/// [`super::nccl`] reads them from NCCL's NVTX ranges (here, below both: no import cycle).
#[derive(Debug, Default)]
pub(super) struct Nccl {
    pub by_kernel: HashMap<(i64, i64), Found>,
    /// What the notes say (per file).
    pub said: Vec<String>,
}
