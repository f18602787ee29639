//! Kineto's `[memory]` instant events of one step (`profile_memory=True`), on the CPU thread
//! that allocates, with the `args` torch writes: `Total Reserved`, `Total Allocated`, `Bytes`
//! (negative for a free), `Device Id`, `Device Type` (1 CUDA on the rank's device, 0 the CPU
//! with id -1 in a CPU-only run), `Addr`.
//!
//! Each step: the first op allocates the step's activations (plus the planted extra of a
//! heavier rank), the middle op takes a workspace and frees it (the step's peak), the last op
//! frees the activations and leaves a small output of a random size live into the next step
//! (noise at the step's end), and a leaking rank's last op keeps its planted bytes for good.

use super::*;
use crate::synth::model::Gpu;
use crate::synth::rng::Rng;

/// One rank's memory: what it holds before the window and what each step allocates.
#[derive(Clone, Debug)]
pub(crate) struct MemPlan {
    /// `Device Type`, `Device Id`.
    pub(crate) device: (i64, i64),
    /// Live before the window (the weights).
    pub(crate) weights: i64,
    pub(crate) activations: i64,
    pub(crate) workspace: i64,
    /// The most the output left live at a step's end takes (drawn in [0, this)).
    pub(crate) output_max: i64,
    /// A heavier rank's extra, live with the activations.
    pub(crate) extra: i64,
    /// A leaking rank's bytes kept per step.
    pub(crate) leak: i64,
    /// Draws the outputs' sizes: (seed, rank).
    pub(crate) key: (u64, u64),
}

impl MemPlan {
    /// The figures of a GPU rank (1 for `Device Type` CUDA) or of a CPU-only one.
    pub(crate) fn new(cpu_only: bool, device: u32, extra: i64, leak: i64, key: (u64, u64)) -> Self {
        const MIB: i64 = 1 << 20;
        let (device, scale) = if cpu_only {
            ((0, -1), 1)
        } else {
            ((1, i64::from(device)), 16)
        };
        MemPlan {
            device,
            weights: 256 * MIB * scale,
            activations: 64 * MIB * scale,
            workspace: 8 * MIB * scale,
            output_max: MIB,
            extra,
            leak,
            key,
        }
    }
}

/// The running totals of one rank's allocator.
#[derive(Debug, Default)]
pub(crate) struct MemState {
    allocated: i64,
    reserved: i64,
    /// Bytes and address of the previous step's output, freed by this step's first op.
    output: Option<(i64, u64)>,
    next_addr: u64,
}

impl TraceWriter {
    /// The step's `[memory]` events (none without a plan, or without an op that records).
    pub(super) fn memory_step(&mut self, s: &RankStep) {
        let Some(plan) = self.info.memory.clone() else {
            return;
        };
        let recorded: Vec<&Rec> = s
            .ops
            .iter()
            .zip(&s.recs)
            .filter(|(op, _)| !(self.info.cpu_only && matches!(op.gpu, Gpu::Host)))
            .map(|(_, r)| r)
            .collect();
        let (Some(first), Some(last)) = (recorded.first(), recorded.last()) else {
            return;
        };
        let mid = recorded[recorded.len() / 2];
        let at = |r: &Rec, q: i64| r.cpu_start + r.cpu_dur * q / 8;
        if self.mem.allocated == 0 {
            self.mem.allocated = plan.weights;
        }
        if let Some((bytes, addr)) = self.mem.output.take() {
            self.mem_event(&plan, at(first, 1), -bytes, addr);
        }
        let act = self.mem_alloc(&plan, at(first, 2), plan.activations + plan.extra);
        let ws = self.mem_alloc(&plan, at(mid, 3), plan.workspace);
        self.mem_event(&plan, at(mid, 5), -plan.workspace, ws);
        self.mem_event(&plan, at(last, 3), -(plan.activations + plan.extra), act);
        let mut rng = Rng::keyed(plan.key.0, &[0x3E30, plan.key.1, u64::from(s.index)]);
        let out = rng.range(0, plan.output_max as u64) as i64;
        let addr = self.mem_alloc(&plan, at(last, 5), out);
        self.mem.output = Some((out, addr));
        if plan.leak > 0 {
            self.mem_alloc(&plan, at(last, 6), plan.leak);
        }
    }

    /// Allocates `bytes` at a new address at `t`; returns the address.
    fn mem_alloc(&mut self, plan: &MemPlan, t: i64, bytes: i64) -> u64 {
        self.mem.next_addr += 1;
        let addr = 0x7f3a_0000_0000 + self.mem.next_addr * 0x100_0000;
        self.mem_event(plan, t, bytes, addr);
        addr
    }

    /// One `[memory]` event: `bytes` (negative: freed) at `addr`, at `t`.
    fn mem_event(&mut self, plan: &MemPlan, t: i64, bytes: i64, addr: u64) {
        const BLOCK: i64 = 20 << 20;
        self.mem.allocated += bytes;
        if plan.device.0 != 0 {
            // The caching allocator reserves in large blocks and gives nothing back.
            let need = (self.mem.allocated + BLOCK - 1) / BLOCK * BLOCK;
            self.mem.reserved = self.mem.reserved.max(need);
        }
        let pid = self.info.pid;
        self.open_event();
        self.bytes(b"\"ph\": \"i\", \"cat\": \"cpu_instant_event\", \"s\": \"t\", \"name\": \"[memory]\", \"pid\": ");
        self.n(pid);
        self.bytes(b", \"tid\": ");
        self.n(pid);
        self.bytes(b",\n    \"ts\": ");
        self.ts(t);
        self.args_open();
        let ev_idx = self.ev_idx;
        self.ev_idx += 1;
        let text = format!(
            "\"Total Reserved\": {}, \"Total Allocated\": {}, \"Bytes\": {bytes}, \"Device Id\": {}, \"Device Type\": {}, \"Addr\": {addr}, \"finished\": false, \"Ev Idx\": {ev_idx}",
            self.mem.reserved, self.mem.allocated, plan.device.1, plan.device.0
        );
        self.bytes(text.as_bytes());
        self.args_close();
    }
}
