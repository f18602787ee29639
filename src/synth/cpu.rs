//! `--cpu-only`: the timing of a CPU-only (gloo) run, as SGLang writes it on a machine with no
//! GPU. What were kernels are the CPU ops themselves: an op's duration is the work its kernel
//! would have taken (plus a few µs of dispatch), on the one thread that runs the model. A
//! collective is its `c10d::` op on that thread, and gloo blocks the thread inside it until
//! every member has arrived: each member's op starts at its own arrival and ends at the latest
//! arrival plus the transfer, so early members' ops are long (they wait), as NCCL kernels are.
//! A planted host stall is time in which the thread records no op at all (Python, a sync or
//! data loading outside the profiled ops): there is no GPU to sit idle.
//!
//! The timing of each op is [`super::sim`]'s (`cpu_only_side`); this module holds what only
//! the CPU-only mode has: gloo's transfer time and its worker thread.

use super::model::{Coll, CollKind};

/// Thread id offset of gloo's worker (`pt_gloo_runloop`) from the main thread's.
pub(crate) const RUNLOOP_TID: u64 = 45;

/// Nominal time gloo moves a collective's data once every member has arrived: a fixed
/// round-trip cost and about 20 GB/s (shared memory / loopback TCP).
pub(crate) fn transfer_ns(c: &Coll) -> i64 {
    let bytes = (c.nelems * 2) as i64;
    match c.kind {
        CollKind::AllReduce | CollKind::AllGather => 30_000 + bytes / 20,
        CollKind::Send | CollKind::Recv => 20_000 + bytes / 40,
    }
}
