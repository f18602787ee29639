//! What a rank's host was doing while its GPU sat idle before the collectives it arrived last
//! at: the second, targeted read of one rank's file that names the host-bound cause of the
//! critical path ([`crate::analyze::reduce::path`]).
//!
//! The first pass keeps no CPU op of a GPU trace (they are dropped for speed and memory, see
//! [`super::names::names_read`]); so when the critical path charges a rank for host gaps, that
//! rank's file alone is read again, keeping only the events inside the charged segments
//! (the `windows`, on the common clock). Inside them:
//!
//! - the GPU's busy time is the union of kernels, copies and sets; the rest is **idle**;
//! - the **launching thread** is the thread with the most launch calls inside the windows (the
//!   one that should have been launching); without launches in them, every thread;
//! - each CPU op, runtime call or Python function of that thread is given its *self* time
//!   inside the idle parts (its overlap less its direct children's), summed by name, as HTA's
//!   idle-time breakdown names the ops that fill a gap;
//! - what no op of the thread covers is **unrecorded** (Python outside the profiled ops, or a
//!   thread the profiler did not see).
//!
//! Bounded: only events inside the windows are kept, at most [`MAX_OPS`] CPU events (beyond
//! that the figure covers the first ones, and says so).

use std::collections::HashMap;
use std::io;
use std::path::Path;

use super::names::{is_launch, CPU_OP, CUDA_DRIVER, CUDA_RUNTIME, GPU_MEMCPY, GPU_MEMSET, KERNEL};
use crate::trace::{read_trace_with, Event, Nested};

/// The most CPU events kept from the windows.
pub(crate) const MAX_OPS: usize = 2_000_000;

/// Named ops kept in [`GapOps::ops`].
const TOP: usize = 5;

/// What filled the GPU's idle time inside the windows.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct GapOps {
    /// GPU idle time inside the windows, ns.
    pub(crate) idle_ns: i64,
    /// Of it, what no op of the launching thread covers, ns.
    pub(crate) unrecorded_ns: i64,
    /// The ops with the most self time inside the idle parts (name, ns), largest first.
    pub(crate) ops: Vec<(String, i64)>,
    /// More than [`MAX_OPS`] CPU events fell inside the windows: the figures cover the first.
    pub(crate) capped: bool,
}

struct Op {
    tid: String,
    start: i64,
    end: i64,
    name: String,
}

/// The measure of a sorted, disjoint interval set inside `[a, b]`, by prefix sums.
struct Measure {
    ivs: Vec<(i64, i64)>,
    prefix: Vec<i64>,
}

impl Measure {
    fn new(ivs: Vec<(i64, i64)>) -> Self {
        let mut prefix = Vec::with_capacity(ivs.len() + 1);
        prefix.push(0);
        for &(s, e) in &ivs {
            prefix.push(prefix.last().copied().unwrap_or(0) + (e - s));
        }
        Measure { ivs, prefix }
    }

    fn total(&self) -> i64 {
        self.prefix.last().copied().unwrap_or(0)
    }

    /// The measure of the set up to `t`.
    fn upto(&self, t: i64) -> i64 {
        let i = self.ivs.partition_point(|&(_, e)| e <= t);
        let whole = self.prefix[i];
        match self.ivs.get(i) {
            Some(&(s, _)) if s < t => whole + (t - s),
            _ => whole,
        }
    }

    fn within(&self, a: i64, b: i64) -> i64 {
        if b <= a {
            return 0;
        }
        self.upto(b) - self.upto(a)
    }
}

/// Sorted, merged copy of `ivs`.
fn union(mut ivs: Vec<(i64, i64)>) -> Vec<(i64, i64)> {
    ivs.sort_unstable();
    let mut out: Vec<(i64, i64)> = Vec::with_capacity(ivs.len());
    for (s, e) in ivs {
        match out.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

/// `a` less `b` (both sorted and disjoint).
fn minus(a: &[(i64, i64)], b: &[(i64, i64)]) -> Vec<(i64, i64)> {
    let mut out = Vec::new();
    let mut j = 0;
    for &(s, e) in a {
        let mut cur = s;
        while j < b.len() && b[j].1 <= cur {
            j += 1;
        }
        let mut k = j;
        while k < b.len() && b[k].0 < e {
            if b[k].0 > cur {
                out.push((cur, b[k].0));
            }
            cur = cur.max(b[k].1);
            k += 1;
        }
        if cur < e {
            out.push((cur, e));
        }
    }
    out
}

fn tid_key(ev: &Event<'_>) -> String {
    match ev.tid.as_int() {
        Some(t) => t.to_string(),
        None => format!("{:?}", ev.tid),
    }
}

/// Reads `path` (one rank's trace; its times plus `offset_ns` are the common clock) and says
/// what its host did while its GPU was idle inside `windows` (`[start, end)` ns on the
/// common clock).
pub(crate) fn host_in_gaps(
    path: &Path,
    offset_ns: i64,
    windows: &[(i64, i64)],
) -> io::Result<GapOps> {
    let wins = union(windows.iter().copied().filter(|w| w.1 > w.0).collect());
    let mut gpu: Vec<(i64, i64)> = Vec::new();
    let mut ops: Vec<Op> = Vec::new();
    let mut launches: HashMap<String, usize> = HashMap::new();
    let mut capped = false;
    let inside = |a: i64, b: i64| -> Option<(i64, i64)> {
        let i = wins.partition_point(|&(_, e)| e <= a);
        let &(s, e) = wins.get(i)?;
        (s < b).then_some((a.max(s), b.min(e)))
    };
    read_trace_with(path, Nested::Skim, |ev| {
        if ev.ph != b'X' {
            return;
        }
        let (Some(ts), Some(dur)) = (ev.ts, ev.dur) else {
            return;
        };
        let a = ts.get().saturating_add(offset_ns);
        let b = a.saturating_add(dur.get().max(0));
        if inside(a, b.max(a + 1)).is_none() {
            return;
        }
        let cat = ev.cat.raw();
        if cat == KERNEL || cat == GPU_MEMCPY || cat == GPU_MEMSET {
            // A GPU interval may span several windows: only its clipped parts matter, and
            // the subtraction below clips them.
            gpu.push((a, b));
        } else if cat == CPU_OP
            || cat == CUDA_RUNTIME
            || cat == CUDA_DRIVER
            || cat == "python_function"
        {
            let tid = tid_key(ev);
            if cat != CPU_OP && is_launch(ev.name.raw().as_bytes()) {
                *launches.entry(tid.clone()).or_default() += 1;
            }
            if ops.len() >= MAX_OPS {
                capped = true;
                return;
            }
            ops.push(Op {
                tid,
                start: a,
                end: b,
                name: ev.name.get().into_owned(),
            });
        }
    })?;
    let idle = Measure::new(minus(&wins, &union(gpu)));
    let thread = launches
        .iter()
        .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
        .map(|(t, _)| t.clone());
    if let Some(t) = &thread {
        ops.retain(|o| &o.tid == t);
    }
    ops.sort_unstable_by(|a, b| {
        (a.tid.as_str(), a.start, std::cmp::Reverse(a.end)).cmp(&(
            b.tid.as_str(),
            b.start,
            std::cmp::Reverse(b.end),
        ))
    });
    // Self time inside the idle parts: each op's overlap less its direct children's.
    let mut selfs: Vec<i64> = ops.iter().map(|o| idle.within(o.start, o.end)).collect();
    let mut covered = 0i64;
    let mut stack: Vec<(i64, usize)> = Vec::new();
    let mut tid: Option<&str> = None;
    for (i, o) in ops.iter().enumerate() {
        if tid != Some(o.tid.as_str()) {
            stack.clear();
            tid = Some(o.tid.as_str());
        }
        while stack.last().is_some_and(|&(end, _)| end <= o.start) {
            stack.pop();
        }
        let mine = idle.within(o.start, o.end);
        match stack.last() {
            Some(&(end, parent)) => {
                // A child sticking out of its parent counts only inside it.
                let inner = idle.within(o.start, o.end.min(end));
                selfs[parent] -= inner;
                if o.end > end {
                    selfs[i] = inner;
                }
            }
            None => covered += mine,
        }
        stack.push((o.end, i));
    }
    let mut by: HashMap<&str, i64> = HashMap::new();
    for (o, s) in ops.iter().zip(&selfs) {
        if *s > 0 {
            *by.entry(o.name.as_str()).or_default() += s;
        }
    }
    let mut named: Vec<(String, i64)> = by.into_iter().map(|(n, s)| (n.to_string(), s)).collect();
    named.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    named.truncate(TOP);
    let total = idle.total();
    Ok(GapOps {
        idle_ns: total,
        unrecorded_ns: (total - covered).max(0),
        ops: named,
        capped,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measure_and_minus() {
        let m = Measure::new(vec![(10, 20), (30, 40)]);
        assert_eq!(m.total(), 20);
        assert_eq!(m.within(0, 100), 20);
        assert_eq!(m.within(15, 35), 10);
        assert_eq!(m.within(20, 30), 0);
        assert_eq!(
            minus(&[(0, 100)], &[(10, 20), (15, 30), (90, 120)]),
            vec![(0, 10), (30, 90)]
        );
        assert_eq!(union(vec![(5, 8), (0, 3), (2, 4)]), vec![(0, 4), (5, 8)]);
    }
}
