//! `--cpu-only`: the timing of a CPU-only (gloo) run, as SGLang writes it on a machine with no
//! GPU. What were kernels are the CPU ops themselves: an op's duration is the work its kernel
//! would have taken (plus a few µs of dispatch), on the one thread that runs the model. A
//! collective is its `c10d::` op on that thread, and gloo blocks the thread inside it until
//! every member has arrived: each member's op starts at its own arrival and ends at the latest
//! arrival plus the transfer, so early members' ops are long (they wait), as NCCL kernels are.
//! A planted host stall is time in which the thread records no op at all (Python, a sync or
//! data loading outside the profiled ops): there is no GPU to sit idle.

use super::model::{Coll, CollKind, Gpu, Op};
use super::rng::Rng;
use super::sim::{RankState, Rec};

/// Thread id offset of gloo's worker (`pt_gloo_runloop`) from the main thread's.
pub const RUNLOOP_TID: u64 = 45;

/// Nominal time gloo moves a collective's data once every member has arrived: a fixed
/// round-trip cost and about 20 GB/s (shared memory / loopback TCP).
pub fn transfer_ns(c: &Coll) -> i64 {
    let bytes = (c.nelems * 2) as i64;
    match c.kind {
        CollKind::AllReduce => 30_000 + bytes / 20,
        CollKind::Send | CollKind::Recv => 20_000 + bytes / 40,
    }
}

/// The CPU time one op of the program takes in a CPU-only run: its kernel's work × `mult` (the
/// planted slowness of its class) with ±1.5 % jitter, plus the op's dispatch. A host stall
/// ([`Gpu::Host`]) is `cpu_ns` exactly with no op recorded; a collective's end is set when every
/// member has arrived (here only its start). Advances the thread's clock.
///
/// `rt_start`/`rt_dur` bound the nested op (e.g. `aten::mm` inside `aten::linear`) for the
/// emitter: the work itself, inside the outer op.
pub fn run_op(op: &Op, st: &mut RankState, rng: &mut Rng, mult: f64) -> Rec {
    let cpu_start = st.cpu_t;
    let ext = st.next_ext(if op.inner.is_some() { 2 } else { 1 });
    let rec = |cpu_dur: i64, work: i64, lead: i64| Rec {
        cpu_start,
        cpu_dur,
        rt_start: cpu_start + lead,
        rt_dur: work,
        ext,
        ..Rec::default()
    };
    match op.gpu {
        Gpu::Host => {
            let d = op.cpu_ns.max(1);
            st.cpu_t = cpu_start + d + rng.range(300, 1_500) as i64;
            rec(d, 0, 0)
        }
        Gpu::Coll(_) => rec(0, 0, 0),
        _ => {
            let work = match op.gpu {
                Gpu::Sync => rng.range(1_000, 3_000) as i64,
                _ => ((op.gpu_ns as f64 * rng.jitter(0.015) * mult).round() as i64).max(1),
            };
            let lead = rng.range(1_000, 3_000) as i64;
            let dur = lead + work + rng.range(800, 2_000) as i64;
            st.cpu_t = cpu_start + dur + rng.range(300, 1_500) as i64;
            rec(dur, work, lead)
        }
    }
}
