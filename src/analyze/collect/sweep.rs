//! The GPU figures of one rank (busy, compute, communication, exposed communication,
//! memcpy/memset, and per step busy, work, class sums and launches) from its spooled ops, in
//! bounded memory: the ops come back from the [`Spool`] sorted by start and are folded in one
//! sweep into running unions that keep one open interval each, whatever the number of ops.
//!
//! Each op counts for the step that launched it: when the steps are CPU-side marks, the ops are
//! first sorted by correlation and joined with the launches (also sorted by correlation) in one
//! merge pass, which writes each op's step index into a second spool. Exposed communication is
//! `|comm ∪ compute| − |compute|` (= `|comm| − |comm ∩ compute|`), so it too is a running union.
//!
//! The figures are exactly those of the in-memory unions of [`super::busy`]: the same intervals
//! in the same order, only not kept.

use anyhow::Result;

use super::collector::{CpuIv, GpuIv};
use super::ops::OpKind;
use super::segments::Cumulative;
use super::spill::{i64_at, Rec, Spool};
use super::steps::{Mark, StepFig, WindowCursor};
use crate::trace::Ns;

impl Rec for CpuIv {
    const SIZE: usize = 25;
    fn put(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.start.to_le_bytes());
        out.extend_from_slice(&self.end.to_le_bytes());
        out.extend_from_slice(&self.tid.to_le_bytes());
        out.push(self.class);
    }
    fn get(b: &[u8]) -> Self {
        CpuIv {
            start: i64_at(b, 0),
            end: i64_at(b, 8),
            tid: i64_at(b, 16),
            class: b.get(24).copied().unwrap_or(0),
        }
    }
}

impl Rec for GpuIv {
    const SIZE: usize = 30;
    fn put(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.start.to_le_bytes());
        out.extend_from_slice(&self.end.to_le_bytes());
        out.extend_from_slice(&self.corr.to_le_bytes());
        out.push(self.class);
        out.push(match self.kind {
            OpKind::Kernel => 0,
            OpKind::Memcpy => 1,
            OpKind::Memset => 2,
            OpKind::Cpu => 3,
        });
        out.extend_from_slice(&self.nelems.to_le_bytes());
    }
    fn get(b: &[u8]) -> Self {
        GpuIv {
            start: i64_at(b, 0),
            end: i64_at(b, 8),
            corr: i64_at(b, 16),
            class: b.get(24).copied().unwrap_or(0),
            kind: match b.get(25) {
                Some(1) => OpKind::Memcpy,
                Some(2) => OpKind::Memset,
                Some(3) => OpKind::Cpu,
                _ => OpKind::Kernel,
            },
            nelems: b
                .get(26..30)
                .and_then(|x| x.try_into().ok())
                .map_or(0, u32::from_le_bytes),
        }
    }
}

/// The length of a union of `[start, end)` intervals fed in ascending order of start.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct RunningUnion {
    open: Option<(i64, i64)>,
    closed: i64,
}

impl RunningUnion {
    /// Adds an interval (empty or negative ones are ignored, as [`super::busy::Union`] does).
    #[inline]
    pub(crate) fn add(&mut self, s: i64, e: i64) {
        if e <= s {
            return;
        }
        match &mut self.open {
            Some((_, oe)) if s <= *oe => {
                if e > *oe {
                    *oe = e;
                }
            }
            open => {
                if let Some((os, oe)) = *open {
                    self.closed += oe - os;
                }
                *open = Some((s, e));
            }
        }
    }

    /// Total covered length.
    pub(crate) fn len(&self) -> i64 {
        self.closed + self.open.map_or(0, |(s, e)| e - s)
    }
}

/// The rank-level GPU figures.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct GpuTotals {
    /// From the first op's start to the last end (non-empty ops).
    pub(crate) span: i64,
    /// That first start and last end, when there was an op.
    pub(crate) window: Option<(i64, i64)>,
    pub(crate) busy: i64,
    pub(crate) compute: i64,
    pub(crate) comm: i64,
    pub(crate) exposed_comm: i64,
    pub(crate) copy: i64,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Compute,
    Comm,
    Copy,
}

fn kind_of(g: &GpuIv, comm: u8) -> Kind {
    match g.kind {
        OpKind::Memcpy | OpKind::Memset => Kind::Copy,
        _ if g.class == comm => Kind::Comm,
        _ => Kind::Compute,
    }
}

/// Folds the rank's ops into its totals and fills `figs` (one per mark, in mark order: busy,
/// work, class sums, launches). `launches`: (correlation, launch ts). `cum` answers, from the
/// same sweep, how much compute lies before each collective segment's ends
/// ([`super::segments`]). `kernels`, when given, receives (start, end) of every compute
/// kernel (not communication, not a copy), in order of start: what [`super::overlap`] reads,
/// asked for only of a rank whose trace records `cudaStreamWaitEvent`.
pub(crate) fn fold(
    ops: Spool<GpuIv>,
    launches: Spool<(i64, i64)>,
    marks: &[Mark],
    comm: u8,
    figs: &mut [StepFig],
    cum: &mut Cumulative,
    mut kernels: Option<&mut Spool<(i64, i64)>>,
) -> Result<GpuTotals> {
    let by_launch = !marks.is_empty() && !marks.iter().all(|m| m.on_gpu);
    // How each op finds its step: by its own start, by its launch's time in a table indexed
    // by correlation, or (`Joined`) its `corr` now holds its step index (-1: none).
    let (ops, by) = if !by_launch {
        drop(launches);
        (ops, StepBy::Start)
    } else if let Some(table) = LaunchTable::of(&launches) {
        drop(launches);
        (ops, StepBy::Table(table))
    } else {
        (assign_steps(ops, launches, marks)?, StepBy::Joined)
    };
    let [mut all, mut compute, mut comm_u, mut copy, mut either] = [RunningUnion::default(); 5];
    let mut first: Option<i64> = None;
    let mut last: Option<i64> = None;
    let mut per: Vec<(RunningUnion, RunningUnion)> = vec![Default::default(); figs.len()];
    let mut windows = WindowCursor::default();
    for g in ops.sorted_by(|g: &GpuIv| (g.start, g.end))? {
        let g = g?;
        let k = kind_of(&g, comm);
        if g.end > g.start {
            first.get_or_insert(g.start);
            last = Some(last.map_or(g.end, |l| l.max(g.end)));
        }
        all.add(g.start, g.end);
        match k {
            Kind::Compute => {
                compute.add(g.start, g.end);
                cum.reach(g.start)?;
                cum.add(g.start, g.end);
                if g.kind == OpKind::Kernel {
                    if let Some(k) = kernels.as_deref_mut() {
                        k.push((g.start, g.end));
                    }
                }
            }
            Kind::Comm => comm_u.add(g.start, g.end),
            Kind::Copy => copy.add(g.start, g.end),
        }
        if k != Kind::Copy {
            either.add(g.start, g.end);
        }
        let step = match &by {
            StepBy::Start => windows.window_of(marks, g.start).map_or(-1, |i| i as i64),
            StepBy::Table(t) => windows
                .window_of(marks, t.launch_of(&g))
                .map_or(-1, |i| i as i64),
            StepBy::Joined => g.corr,
        };
        if step < 0 {
            continue;
        }
        let (Some(f), Some(acc)) = (figs.get_mut(step as usize), per.get_mut(step as usize)) else {
            continue;
        };
        acc.0.add(g.start, g.end);
        if k != Kind::Comm {
            acc.1.add(g.start, g.end);
        }
        if let Some(x) = f.class_ns.get_mut(g.class as usize) {
            *x += g.end - g.start;
        }
        if g.kind == OpKind::Kernel {
            f.work.launches += 1;
        }
        if g.nelems > 0 {
            f.work.nelems = Some(f.work.nelems.unwrap_or(0) + u64::from(g.nelems));
        }
    }
    for (f, (busy, work)) in figs.iter_mut().zip(per) {
        f.busy_ns = Ns::new(busy.len());
        f.work_ns = Ns::new(work.len());
    }
    Ok(GpuTotals {
        span: match (first, last) {
            (Some(a), Some(b)) => b - a,
            _ => 0,
        },
        window: first.zip(last),
        busy: all.len(),
        compute: compute.len(),
        comm: comm_u.len(),
        exposed_comm: either.len() - compute.len(),
        copy: copy.len(),
    })
}

/// How [`fold`] finds each op's step.
enum StepBy {
    /// The window holding the op's start (GPU-side marks).
    Start,
    /// The window holding its launch's time, looked up by correlation.
    Table(LaunchTable),
    /// Its `corr` holds its step index ([`assign_steps`]).
    Joined,
}

/// Each correlation's earliest launch time, in a table indexed by correlation: what
/// [`assign_steps`] finds by sorting the ops by correlation and joining them with the sorted
/// launches, without either sort or the copy of the ops (~3 % of analyze's CPU time on the
/// bench's synthetic set). Only when the launches are held in memory (never spilled) and
/// their correlations are dense (Kineto numbers them in order, one per launch): the table
/// then holds no more than twice the launches, so memory stays that of the spool.
struct LaunchTable {
    lo: i64,
    /// Launch time by `correlation - lo`; `i64::MAX`: no launch.
    ts: Vec<i64>,
}

impl LaunchTable {
    fn of(launches: &Spool<(i64, i64)>) -> Option<LaunchTable> {
        let held = launches.held()?;
        let corrs = held.iter().map(|l| l.0).filter(|&c| c >= 0);
        let (lo, hi) = (corrs.clone().min()?, corrs.max()?);
        let span = usize::try_from(hi - lo).ok()?.checked_add(1)?;
        if span > 2 * held.len() + 1024 {
            return None;
        }
        let mut ts = vec![i64::MAX; span];
        for &(c, t) in held {
            if let Some(slot) = usize::try_from(c - lo).ok().and_then(|i| ts.get_mut(i)) {
                *slot = (*slot).min(t);
            }
        }
        Some(LaunchTable { lo, ts })
    }

    /// The op's launch time, else its own start (no correlation, or no launch of it).
    fn launch_of(&self, g: &GpuIv) -> i64 {
        if g.corr < 0 {
            return g.start;
        }
        usize::try_from(g.corr - self.lo)
            .ok()
            .and_then(|i| self.ts.get(i))
            .copied()
            .filter(|&t| t != i64::MAX)
            .unwrap_or(g.start)
    }
}

/// Puts each op's step index (by the CPU launch found through its correlation, else its own
/// start; -1 when no window holds it) in its `corr`: a merge join of the ops sorted by
/// correlation with the launches sorted by (correlation, ts); the earliest launch of a
/// correlation wins.
fn assign_steps(
    ops: Spool<GpuIv>,
    launches: Spool<(i64, i64)>,
    marks: &[Mark],
) -> Result<Spool<GpuIv>> {
    let mut out = ops.like();
    let mut ls = launches.sorted_by(|l: &(i64, i64)| *l)?;
    let mut cur = ls.next().transpose()?;
    let mut windows = WindowCursor::default();
    for g in ops.sorted_by(|g: &GpuIv| g.corr)? {
        let mut g = g?;
        let mut t = g.start;
        if g.corr >= 0 {
            while cur.is_some_and(|(c, _)| c < g.corr) {
                cur = ls.next().transpose()?;
            }
            if let Some((c, ts)) = cur {
                if c == g.corr {
                    t = ts;
                }
            }
        }
        g.corr = windows.window_of(marks, t).map_or(-1, |i| i as i64);
        out.push(g);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::collect::busy::Union;
    use crate::analyze::collect::steps::window_of;

    fn mark(start: i64, dur: i64, on_gpu: bool) -> Mark {
        Mark {
            start,
            dur,
            name: String::new(),
            number: None,
            on_gpu,
            begin: None,
        }
    }

    fn fig() -> StepFig {
        StepFig {
            name: String::new(),
            number: None,
            start_ns: Ns::ZERO,
            dur_ns: Ns::ZERO,
            busy_ns: Ns::ZERO,
            work_ns: Ns::ZERO,
            class_ns: vec![0; 3],
            work: Default::default(),
        }
    }

    /// Pseudo-random ops (class 2 = comm), launched 0-30 ns before they start, written in a
    /// shuffled order; launches reversed. Correlations `i * stride`; every 13th launched twice
    /// (the earlier launch counts).
    fn data(n: i64, stride: i64) -> (Vec<GpuIv>, Vec<(i64, i64)>) {
        let mut x: u64 = 88_172_645_463_325_252;
        let mut rnd = |m: u64| {
            crate::testrng::xorshift(&mut x);
            (x % m) as i64
        };
        let mut ops = Vec::new();
        let mut launches = Vec::new();
        for i in 0..n {
            let start = i * 7 + rnd(40);
            let kind = [OpKind::Kernel, OpKind::Kernel, OpKind::Memcpy][rnd(3) as usize];
            ops.push(GpuIv {
                start,
                end: start + rnd(60) - 5,
                corr: if i % 11 == 0 { -1 } else { i * stride },
                class: rnd(3) as u8,
                kind,
                nelems: (i % 5) as u32,
            });
            launches.push((i * stride, start - rnd(30)));
            if i % 13 == 0 {
                launches.push((i * stride, start - rnd(3_000)));
            }
        }
        for i in (1..ops.len()).rev() {
            ops.swap(i, rnd(i as u64 + 1) as usize);
        }
        launches.reverse();
        (ops, launches)
    }

    /// Dense correlations (the table, when held in memory) and sparse ones (the join).
    #[test]
    fn spilled_fold_equals_in_memory_unions() {
        spilled_fold_equals_in_memory_unions_at(1);
        spilled_fold_equals_in_memory_unions_at(1_000);
    }

    fn spilled_fold_equals_in_memory_unions_at(stride: i64) {
        let (ops, launches) = data(5_000, stride);
        let comm = 2u8;
        let marks = vec![
            mark(0, 9_000, false),
            mark(9_000, 12_000, false),
            mark(25_000, 5_000, false),
        ];
        // Reference: the in-memory unions of busy.rs.
        let kind = |g: &GpuIv| kind_of(g, comm);
        let u = |f: &dyn Fn(&GpuIv) -> bool| {
            Union::from_unsorted(
                ops.iter()
                    .filter(|g| f(g))
                    .map(|g| (g.start, g.end))
                    .collect(),
            )
        };
        let all = u(&|_| true);
        let compute = u(&|g| kind(g) == Kind::Compute);
        let comm_u = u(&|g| kind(g) == Kind::Comm);
        let launch_of = |g: &GpuIv| {
            launches
                .iter()
                .filter(|l| g.corr >= 0 && l.0 == g.corr)
                .map(|l| l.1)
                .min()
                .unwrap_or(g.start)
        };
        let step = |g: &GpuIv| window_of(&marks, launch_of(g));
        for cap in [3, 100, 1 << 20] {
            let mut so = Spool::with_cap(cap);
            ops.iter().for_each(|g| so.push(*g));
            let mut sl = Spool::with_cap(cap);
            launches.iter().for_each(|l| sl.push(*l));
            let mut figs = vec![fig(), fig(), fig()];
            let mut cum = Cumulative::new(Spool::default()).unwrap();
            let t = fold(so, sl, &marks, comm, &mut figs, &mut cum, None).unwrap();
            assert_eq!(t.busy, all.len(), "cap {cap}");
            assert_eq!(t.compute, compute.len());
            assert_eq!(t.comm, comm_u.len());
            assert_eq!(t.exposed_comm, comm_u.len() - comm_u.overlap(&compute));
            assert_eq!(t.copy, u(&|g| kind(g) == Kind::Copy).len());
            assert_eq!(t.span, all.last().unwrap() - all.first().unwrap());
            for (i, f) in figs.iter().enumerate() {
                let busy = u(&|g| step(g) == Some(i));
                let work = u(&|g| step(g) == Some(i) && kind(g) != Kind::Comm);
                let kernels = ops
                    .iter()
                    .filter(|g| step(g) == Some(i) && g.kind == OpKind::Kernel)
                    .count() as u64;
                assert!(!busy.is_empty(), "step {i}");
                assert_eq!(
                    (f.busy_ns.get(), f.work_ns.get()),
                    (busy.len(), work.len()),
                    "step {i}"
                );
                assert_eq!(f.work.launches, kernels, "step {i}");
                let c1: i64 = ops
                    .iter()
                    .filter(|g| step(g) == Some(i) && g.class == 1)
                    .map(|g| g.end - g.start)
                    .sum();
                assert_eq!(f.class_ns[1], c1, "step {i}");
            }
        }
    }

    #[test]
    fn gpu_marks_put_ops_in_steps_by_their_own_start() {
        let (ops, launches) = data(500, 1);
        let marks = vec![mark(0, 1_000, true), mark(1_000, 2_000, true)];
        let mut so = Spool::with_cap(5);
        ops.iter().for_each(|g| so.push(*g));
        let mut sl = Spool::with_cap(5);
        launches.iter().for_each(|l| sl.push(*l));
        let mut figs = vec![fig(), fig()];
        let mut cum = Cumulative::new(Spool::default()).unwrap();
        fold(so, sl, &marks, 2, &mut figs, &mut cum, None).unwrap();
        let busy0 = Union::from_unsorted(
            ops.iter()
                .filter(|g| window_of(&marks, g.start) == Some(0))
                .map(|g| (g.start, g.end))
                .collect(),
        );
        assert_eq!(figs[0].busy_ns.get(), busy0.len());
    }
}
