//! Memory per rank and device, from the instant events Kineto writes with
//! `profile_memory=True` (#53): `[memory]` (one per allocation or free, `args`: `Total
//! Allocated`, `Total Reserved`, `Bytes` (negative for a free), `Device Type`, `Device Id`)
//! and `[OutOfMemory]`. The collector hands each instant event to [`MemoryTally::on_instant`];
//! only these two names are looked at, and each device keeps a few numbers, so the pass stays
//! one pass with nothing held per event. [`MemoryTally::finish`] places each peak in its step.
//!
//! Imports no sibling but `steps` (the step windows).

use std::sync::LazyLock;

use serde::{Deserialize, Serialize};

use super::steps::{window_of, Mark};
use crate::trace::read::args::ArgKey;
use crate::trace::read::memo::Memo;
use crate::trace::{Event, Ns, Val};

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
    /// What was live when the window opened: the first event's `Total Allocated` minus its
    /// `Bytes`.
    pub baseline_bytes: i64,
    /// `[OutOfMemory]` events.
    pub oom_events: u64,
    /// `[memory]` events.
    pub memory_events: u64,
}

/// One device's running figures (times as in the file).
#[derive(Debug, Clone, Copy)]
struct Device {
    kind: i64,
    id: i64,
    events: u64,
    oom: u64,
    peak: i64,
    peak_ts: i64,
    reserved: i64,
    first_ts: i64,
    baseline: i64,
}

impl Device {
    fn new(kind: i64, id: i64) -> Self {
        Device {
            kind,
            id,
            events: 0,
            oom: 0,
            peak: i64::MIN,
            peak_ts: i64::MAX,
            reserved: 0,
            first_ts: i64::MAX,
            baseline: 0,
        }
    }

    /// One `[memory]` event at `ts`: the peak (the earliest event holding the largest total),
    /// the largest reserve and the baseline of the earliest event.
    fn allocation(&mut self, ts: i64, a: &Args) {
        self.events += 1;
        if a.allocated > self.peak || (a.allocated == self.peak && ts < self.peak_ts) {
            (self.peak, self.peak_ts) = (a.allocated, ts);
        }
        self.reserved = self.reserved.max(a.reserved);
        if ts < self.first_ts {
            (self.first_ts, self.baseline) = (ts, a.allocated.saturating_sub(a.bytes));
        }
    }

    fn row(&self, marks: &[Mark], base: i64) -> MemoryRow {
        let seen = self.events > 0;
        MemoryRow {
            device: device_name(self.kind, self.id),
            peak_allocated_bytes: if seen { self.peak } else { 0 },
            peak_reserved_bytes: self.reserved,
            peak_ts_ns: Ns(if seen { self.peak_ts + base } else { 0 }),
            peak_step: seen
                .then(|| window_of(marks, self.peak_ts))
                .flatten()
                .and_then(|i| marks.get(i))
                .and_then(|m| m.number),
            baseline_bytes: self.baseline,
            oom_events: self.oom,
            memory_events: self.events,
        }
    }
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
        let d = self.device(a.kind, a.id);
        if oom {
            d.oom += 1;
        } else {
            d.allocation(ts.0, &a);
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
        self.devices.iter().map(|d| d.row(marks, base)).collect()
    }
}

/// The device as torch names it: `Device Type` 0 is the CPU, 1 CUDA; others by number.
fn device_name(kind: i64, id: i64) -> String {
    match kind {
        0 => "cpu".to_string(),
        1 => format!("cuda:{id}"),
        _ => format!("device{kind}:{id}"),
    }
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
        d.allocation(30, &args(300, 100));
        d.allocation(10, &args(150, 50));
        d.allocation(20, &args(300, 150));
        let r = d.row(&[], 1000);
        assert_eq!(r.device, "cuda:0");
        assert_eq!(r.peak_allocated_bytes, 300);
        assert_eq!(r.peak_ts_ns, Ns(1020));
        assert_eq!(r.peak_reserved_bytes, 600);
        assert_eq!(r.baseline_bytes, 100);
        assert_eq!(r.memory_events, 3);
        assert_eq!(r.peak_step, None);
    }
}
