//! Memory per rank and device, from the instant events Kineto writes with
//! `profile_memory=True` (#53): `[memory]` (one per allocation or free, `args`: `Total
//! Allocated`, `Total Reserved`, `Bytes` (negative for a free), `Device Type`, `Device Id`)
//! and `[OutOfMemory]`. The collector hands each instant event to [`MemoryTally::on_instant`];
//! only these two names are looked at. Each device keeps a few numbers and, per `[memory]`
//! event, its time and `Total Allocated` (16 bytes: these events are few next to the ops), so
//! that [`MemoryTally::finish`] can place the peak in its step and read the allocated memory at
//! each step's end: a least-squares slope over the steps is the growth per step a leak shows.
//!
//! The op at the peak (the innermost CPU op around it on the peak's thread) is found by
//! [`MemoryTally::on_op`] in a second read of the file's CPU ops, made only for files that have
//! memory events (see `plan.rs`): Kineto writes the `[memory]` events after the ops, and the
//! first pass keeps no op, so a trace without memory events pays nothing for it.
//!
//! Imports no sibling but `steps` (the step windows) and `names` (the CPU-op category).

use std::path::Path;
use std::sync::LazyLock;

use anyhow::{Context, Result};

use serde::{Deserialize, Serialize};

use super::names::CPU_OP;
use super::steps::{window_of, Mark};
use crate::trace::read::args::ArgKey;
use crate::trace::read::event::torch_device_name;
use crate::trace::read::memo::Memo;
use crate::trace::{Event, Nested, Ns, Val, Want};

/// The name of an allocation or free.
const MEMORY: &str = "[memory]";
/// The name of a failed allocation.
const OUT_OF_MEMORY: &str = "[OutOfMemory]";

/// The `args` keys read, in the order of [`Args`]' fields.
const KEYS: [&str; 5] = [
    "Total Allocated",
    "Total Reserved",
    "Bytes",
    "Device Type",
    "Device Id",
];
static ARG_KEYS: LazyLock<[ArgKey; 5]> = LazyLock::new(|| KEYS.map(ArgKey::new));

/// One memory row of one rank: a device's figures over the trace.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct MemoryRow {
    /// `cpu`, `cuda:0`, … (from `Device Type` and `Device Id`).
    pub device: String,
    /// The largest `Total Allocated`.
    pub peak_allocated_bytes: i64,
    /// The largest `Total Reserved` (0 for the CPU allocator, which reserves nothing).
    pub peak_reserved_bytes: i64,
    /// When `Total Allocated` first reached its peak, on the common clock.
    pub peak_ts_ns: Ns,
    /// The number of the step (`ProfilerStep#N`, …) whose window holds the peak.
    pub peak_step: Option<i64>,
    /// The innermost CPU op (complete event of the peak's process, on its thread where one
    /// holds it) whose span holds the peak.
    #[serde(default)]
    pub peak_op: Option<String>,
    /// What was live when the window opened: the first event's `Total Allocated` minus its
    /// `Bytes`.
    pub baseline_bytes: i64,
    /// The least-squares slope of the allocated memory at the steps' ends over the steps
    /// (bytes per step, rounded); `None` with fewer than [`GROWTH_MIN_STEPS`] steps.
    #[serde(default)]
    pub growth_bytes_per_step: Option<i64>,
    /// The slope's standard error (bytes per step, rounded): the noise it is judged against.
    #[serde(default)]
    pub growth_stderr_bytes_per_step: Option<i64>,
    /// The steps with memory events, whose ends the slope is fitted to.
    #[serde(default)]
    pub growth_steps: u64,
    /// `[OutOfMemory]` events.
    pub oom_events: u64,
    /// `[memory]` events.
    pub memory_events: u64,
}

/// The fewest steps a growth (leak) slope is fitted to.
pub(crate) const GROWTH_MIN_STEPS: usize = 3;

/// One device's running figures (times as in the file).
#[derive(Debug, Clone)]
struct Device {
    kind: i64,
    id: i64,
    oom: u64,
    peak: i64,
    peak_ts: i64,
    /// The peak event's process and thread (`-1`: not an integer).
    peak_at: (i64, i64),
    reserved: i64,
    first_ts: i64,
    baseline: i64,
    /// (ts, `Total Allocated`) of every `[memory]` event, in file order.
    samples: Vec<(i64, i64)>,
    op: Option<OpAt>,
}

/// The best op around a device's peak so far.
#[derive(Debug, Clone)]
struct OpAt {
    same_thread: bool,
    dur: i64,
    start: i64,
    name: String,
}

impl OpAt {
    /// Whether `self` is a better answer than `other`: on the peak's thread, then innermost
    /// (shortest), then the later start.
    fn beats(&self, other: &OpAt) -> bool {
        (self.same_thread, std::cmp::Reverse(self.dur), self.start)
            > (other.same_thread, std::cmp::Reverse(other.dur), other.start)
    }
}

impl Device {
    fn new(kind: i64, id: i64) -> Self {
        Device {
            kind,
            id,
            oom: 0,
            peak: i64::MIN,
            peak_ts: i64::MAX,
            peak_at: (-1, -1),
            reserved: 0,
            first_ts: i64::MAX,
            baseline: 0,
            samples: Vec::new(),
            op: None,
        }
    }

    /// One `[memory]` event at `ts` on (process, thread) `at`: the peak (the earliest event
    /// holding the largest total), the largest reserve, the baseline of the earliest event.
    fn allocation(&mut self, ts: i64, at: (i64, i64), a: &Args) {
        self.samples.push((ts, a.allocated));
        if a.allocated > self.peak || (a.allocated == self.peak && ts < self.peak_ts) {
            (self.peak, self.peak_ts, self.peak_at) = (a.allocated, ts, at);
        }
        self.reserved = self.reserved.max(a.reserved);
        if ts < self.first_ts {
            (self.first_ts, self.baseline) = (ts, a.allocated.saturating_sub(a.bytes));
        }
    }

    /// A CPU op of process `pid`, thread `tid`, over `[start, start + dur)`: kept when it holds
    /// the peak and beats the op kept so far.
    fn op(&mut self, pid: i64, tid: i64, start: i64, dur: i64, name: &str) {
        if !self.holds(pid, start, dur) {
            return;
        }
        let cand = OpAt {
            same_thread: tid == self.peak_at.1,
            dur,
            start,
            name: String::new(),
        };
        if self.op.as_ref().is_none_or(|o| cand.beats(o)) {
            self.op = Some(OpAt {
                name: name.to_string(),
                ..cand
            });
        }
    }

    /// Whether an op of process `pid` over `[start, start + dur)` holds the peak.
    fn holds(&self, pid: i64, start: i64, dur: i64) -> bool {
        !self.samples.is_empty()
            && pid == self.peak_at.0
            && start <= self.peak_ts
            && self.peak_ts < start.saturating_add(dur.max(1))
    }

    fn row(&mut self, marks: &[Mark], base: i64) -> MemoryRow {
        let seen = !self.samples.is_empty();
        let ends = step_ends(&mut self.samples, marks);
        let fit = growth(&ends);
        MemoryRow {
            device: torch_device_name(self.kind, self.id),
            peak_allocated_bytes: if seen { self.peak } else { 0 },
            peak_reserved_bytes: self.reserved,
            peak_ts_ns: Ns::new(if seen { self.peak_ts + base } else { 0 }),
            peak_step: seen
                .then(|| window_of(marks, self.peak_ts))
                .flatten()
                .and_then(|i| marks.get(i))
                .and_then(|m| m.number),
            peak_op: self.op.take().map(|o| o.name),
            baseline_bytes: self.baseline,
            growth_bytes_per_step: fit.map(|f| f.0),
            growth_stderr_bytes_per_step: fit.map(|f| f.1),
            growth_steps: ends.len() as u64,
            oom_events: self.oom,
            memory_events: self.samples.len() as u64,
        }
    }
}

/// Per step with a memory event in its window: (step number, else its index; the allocated
/// memory after the last event before the step's end). Sorts `samples` by time (ties in file
/// order).
fn step_ends(samples: &mut [(i64, i64)], marks: &[Mark]) -> Vec<(f64, f64)> {
    samples.sort_by_key(|s| s.0);
    marks
        .iter()
        .enumerate()
        .filter_map(|(i, m)| {
            let end = m.start.saturating_add(m.dur.max(1));
            let k = samples.partition_point(|s| s.0 < end);
            let last = samples.get(k.checked_sub(1)?)?;
            (last.0 >= m.start).then(|| (m.number.unwrap_or(i as i64) as f64, last.1 as f64))
        })
        .collect()
}

/// The least-squares slope of `y` over `x` and its standard error, rounded to bytes; `None`
/// below [`GROWTH_MIN_STEPS`] points or when every `x` is the same.
fn growth(pts: &[(f64, f64)]) -> Option<(i64, i64)> {
    if pts.len() < GROWTH_MIN_STEPS {
        return None;
    }
    let n = pts.len() as f64;
    let mx = pts.iter().map(|p| p.0).sum::<f64>() / n;
    let my = pts.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = pts.iter().map(|p| (p.0 - mx).powi(2)).sum();
    if sxx <= 0.0 {
        return None;
    }
    let slope = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum::<f64>() / sxx;
    let sse: f64 = pts
        .iter()
        .map(|p| (p.1 - my - slope * (p.0 - mx)).powi(2))
        .sum();
    let se = (sse / (n - 2.0) / sxx).sqrt();
    Some((slope.round() as i64, se.round() as i64))
}

/// The `args` of one memory event (0 where a key is missing or not an integer).
struct Args {
    allocated: i64,
    reserved: i64,
    bytes: i64,
    kind: i64,
    id: i64,
}

impl Args {
    fn read(ev: &Event<'_>, memo: &mut Memo) -> Self {
        let mut v: [Option<Val<'_>>; 5] = [None; 5];
        ev.arg_found_all(&*ARG_KEYS, memo, &mut v);
        let int = |k: usize| v[k].and_then(|x| x.as_i64());
        Args {
            allocated: int(0).unwrap_or(0),
            reserved: int(1).unwrap_or(0),
            bytes: int(2).unwrap_or(0),
            kind: int(3).unwrap_or(0),
            id: int(4).unwrap_or(-1),
        }
    }
}

/// A rank's memory figures, per device, as the pass goes.
#[derive(Debug, Default)]
pub(crate) struct MemoryTally {
    devices: Vec<Device>,
}

impl MemoryTally {
    /// Takes one instant event (`ph` `i`): a `[memory]` or `[OutOfMemory]` one changes the
    /// figures of its device, any other nothing.
    #[inline]
    pub(crate) fn on_instant(&mut self, ev: &Event<'_>, memo: &mut Memo) {
        let name = ev.name.raw();
        let oom = name == OUT_OF_MEMORY;
        if !oom && name != MEMORY {
            return;
        }
        let Some(ts) = ev.ts else {
            return;
        };
        let a = Args::read(ev, memo);
        let at = (ev.pid.as_int().unwrap_or(-1), ev.tid.as_int().unwrap_or(-1));
        let d = self.device(a.kind, a.id);
        if oom {
            d.oom += 1;
        } else {
            d.allocation(ts.get(), at, &a);
        }
    }

    /// Whether a peak was seen, whose op [`Self::on_op`] can find.
    pub(crate) fn has_peaks(&self) -> bool {
        self.devices.iter().any(|d| !d.samples.is_empty())
    }

    /// Takes one CPU op (`ph` `X`) of the second read: it may be the op at a device's peak.
    pub(crate) fn on_op(&mut self, ev: &Event<'_>) {
        let (Some(ts), Some(dur)) = (ev.ts, ev.dur) else {
            return;
        };
        let (Some(pid), tid) = (ev.pid.as_int(), ev.tid.as_int().unwrap_or(-1)) else {
            return;
        };
        for d in &mut self.devices {
            if d.holds(pid, ts.get(), dur.get()) {
                d.op(pid, tid, ts.get(), dur.get(), &ev.name.get());
            }
        }
    }

    fn device(&mut self, kind: i64, id: i64) -> &mut Device {
        let k = match self
            .devices
            .iter()
            .position(|d| d.kind == kind && d.id == id)
        {
            Some(k) => k,
            None => {
                self.devices.push(Device::new(kind, id));
                self.devices.len() - 1
            }
        };
        &mut self.devices[k]
    }

    /// The rows, one per device (CPU first, then by index), each peak placed in the step
    /// `marks` (file times) say holds it; `base` puts the times on the common clock.
    pub(crate) fn finish(mut self, marks: &[Mark], base: i64) -> Vec<MemoryRow> {
        self.devices.sort_by_key(|d| (d.kind, d.id));
        self.devices
            .iter_mut()
            .map(|d| d.row(marks, base))
            .collect()
    }
}

/// The second read's events: CPU ops, every name.
const OPS: Want = Want {
    ph: b"X",
    complete_cats: &[CPU_OP],
    named_cats: &[],
    every_cat_named: false,
    names: |_, _, _| true,
    trust_devices: false,
    name_prefixes: &[],
    needs: crate::trace::read::want::no_needs,
};

/// Reads the CPU ops of the file at `path` again to find the op at each of `tally`'s peaks
/// (only worth it when [`MemoryTally::has_peaks`]).
pub(crate) fn find_peak_ops(path: &Path, tally: &mut MemoryTally) -> Result<()> {
    crate::trace::read_trace_with(path, Nested::SkimOnly(OPS), |ev| {
        if ev.ph == b'X' && ev.cat.raw() == CPU_OP {
            tally.on_op(ev);
        }
    })
    .with_context(|| {
        format!(
            "cannot read {} for the ops at its memory peaks",
            path.display()
        )
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(allocated: i64, bytes: i64) -> Args {
        Args {
            allocated,
            reserved: allocated * 2,
            bytes,
            kind: 1,
            id: 0,
        }
    }

    #[test]
    fn peak_is_the_earliest_largest_and_baseline_the_earliest_event() {
        let mut d = Device::new(1, 0);
        d.allocation(30, (1, 1), &args(300, 100));
        d.allocation(10, (1, 1), &args(150, 50));
        d.allocation(20, (1, 1), &args(300, 150));
        d.op(1, 1, 0, 100, "outer");
        d.op(1, 1, 15, 10, "inner");
        d.op(1, 2, 19, 2, "other thread");
        d.op(2, 1, 19, 2, "other process");
        d.op(1, 1, 21, 2, "after");
        let r = d.row(&[], 1000);
        assert_eq!(r.peak_op.as_deref(), Some("inner"));
        assert_eq!(r.device, "cuda:0");
        assert_eq!(r.peak_allocated_bytes, 300);
        assert_eq!(r.peak_ts_ns, Ns::new(1020));
        assert_eq!(r.peak_reserved_bytes, 600);
        assert_eq!(r.baseline_bytes, 100);
        assert_eq!(r.memory_events, 3);
        assert_eq!(r.peak_step, None);
        assert_eq!((r.growth_bytes_per_step, r.growth_steps), (None, 0));
    }

    #[test]
    fn growth_is_the_least_squares_slope_with_its_standard_error() {
        assert_eq!(growth(&[(1.0, 10.0), (2.0, 20.0)]), None);
        assert_eq!(
            growth(&[(1.0, 10.0), (2.0, 20.0), (3.0, 30.0)]),
            Some((10, 0))
        );
        // y = 0, 2, 1, 3: slope 0.8, SSE 1.8, se sqrt(1.8 / 2 / 5) = 0.42.
        let (b, se) = growth(&[(0.0, 0.0), (1.0, 2e6), (2.0, 1e6), (3.0, 3e6)]).unwrap();
        assert_eq!((b, se), (800_000, 424_264));
    }

    #[test]
    fn step_ends_take_the_last_event_before_each_end() {
        let mark = |start, number| Mark {
            start,
            dur: 10,
            name: String::new(),
            number: Some(number),
            on_gpu: false,
            begin: None,
        };
        let marks = [mark(0, 5), mark(10, 6), mark(20, 7), mark(30, 8)];
        let mut s = vec![(12, 7), (3, 1), (8, 2), (15, 3), (35, 9)];
        assert_eq!(
            step_ends(&mut s, &marks),
            [(5.0, 2.0), (6.0, 3.0), (8.0, 9.0)]
        );
    }
}
