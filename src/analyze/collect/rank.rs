//! One rank's results, computed from its collector right after its pass (in the same worker
//! thread): the rank summary (busy unions), op aggregates with decoded names, class totals,
//! per-step figures and the collectives on the common clock. Only these small results outlive
//! the pass; the intervals are dropped here. GPU intervals are folded in bounded memory by
//! [`super::sweep`]; CPU-only traces keep theirs in memory (their self times need the nesting).

use std::path::PathBuf;

use anyhow::Result;

use super::busy::{pct, Kind, RankFigures, RankSummary, Timeline};
use super::collector::{CollEv, Collector, CpuIv, GpuIv};
use super::collstore::RankColls;
use super::memory::MemoryRow;
use super::ops::{NameAgg, OpKind};
use super::segments;
use super::spill::Spool;
use super::steps::{self, StepFig};
use super::sweep::GpuTotals;
use super::work::{StepWork, WorkMark};
use crate::analyze::classes::Classifier;
use crate::trace::read::escape;
use crate::trace::{Header, Ns, RankId};

/// Per-stream totals (GPU).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, PartialEq)]
pub struct StreamRow {
    pub stream: i64,
    pub ops: u64,
    pub sum_ns: Ns,
}

/// Everything the cross-rank stages need from one rank (also what a partial carries per rank).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct RankResult {
    pub label: String,
    pub id: RankId,
    pub path: PathBuf,
    /// `true`: figures come from GPU ops; `false`: from CPU ops (no GPU events).
    pub gpu: bool,
    pub summary: RankSummary,
    /// Op aggregates, largest total first.
    pub ops: Vec<NameAgg>,
    /// Sum of op durations per class id.
    pub class_ns: Vec<i64>,
    pub step_source: String,
    #[serde(with = "figs_with_classes")]
    pub steps: Vec<StepFig>,
    pub colls: RankColls,
    pub streams: Vec<StreamRow>,
    pub world_size: Option<i64>,
    pub distributed_rank: Option<i64>,
    /// The file had no `baseTimeNanoseconds` but relative times (cut short before Kineto
    /// wrote the key): its clock still needs the common base, see [`RankResult::add_base`].
    pub lost_base: bool,
    /// The file's `baseTimeNanoseconds` (the common base once [`RankResult::add_base`] gave it
    /// one): what its times add to be on the common clock.
    pub base_ns: Option<i64>,
    /// Tokens routed to the experts (`record_shapes` of `…fused_moe…` CPU ops), see
    /// `explain::ep`.
    #[serde(default)]
    pub moe_rows: Option<u64>,
    /// Why the rank's data stops early, when it does (its file's
    /// [`crate::trace::ReadReport::stopped_early`], or for a rank of a merged trace, what the
    /// merge noted of its file): it is then left out of the comparison unless asked for.
    #[serde(default)]
    pub stopped_early: Option<String>,
    /// When the rank was active: its first op's start and last op's end on the common clock
    /// (the file's base added), when it had an op. Ranks of one run overlap in time.
    #[serde(default)]
    pub active: Option<(Ns, Ns)>,
    /// Memory per device, from `[memory]` events (`profile_memory=True`); empty without them.
    #[serde(default)]
    pub memory: Vec<MemoryRow>,
}

impl RankResult {
    /// Where the figures of `results` come from: `gpu` or `cpu` when every rank agrees, else
    /// `mixed`.
    pub(crate) fn figure_source(results: &[RankResult]) -> &'static str {
        if results.iter().all(|r| r.gpu) {
            "gpu"
        } else if results.iter().all(|r| !r.gpu) {
            "cpu"
        } else {
            "mixed"
        }
    }
}

impl RankResult {
    /// Moves every time of the rank by `ns` (steps and collectives).
    pub(crate) fn add_base(&mut self, ns: i64) {
        for s in &mut self.steps {
            s.start_ns += Ns::new(ns);
        }
        self.colls.add_base(ns);
        self.active = self
            .active
            .map(|(a, b)| (Ns::new(a.get() + ns), Ns::new(b.get() + ns)));
        for m in &mut self.memory {
            m.peak_ts_ns = Ns::new(m.peak_ts_ns.get() + ns);
        }
        self.lost_base = false;
        // The base the rank's clock carries now (what a second read of its file adds).
        self.base_ns = Some(self.base_ns.unwrap_or(0) + ns);
    }
}

/// A rank's steps with their per-class sums, which reports leave out of [`StepFig`] but a
/// partial must carry (the verdict reads them at the reduce).
mod figs_with_classes {
    use super::StepFig;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub(super) fn serialize<S: Serializer>(steps: &[StepFig], s: S) -> Result<S::Ok, S::Error> {
        let v: Vec<(&StepFig, &Vec<i64>)> = steps.iter().map(|f| (f, &f.class_ns)).collect();
        v.serialize(s)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<StepFig>, D::Error> {
        let v: Vec<(StepFig, Vec<i64>)> = Deserialize::deserialize(d)?;
        Ok(v.into_iter()
            .map(|(mut f, c)| {
                f.class_ns = c;
                f
            })
            .collect())
    }
}

/// An op name as the trace wrote it, JSON escapes undone.
fn decode(raw: &str) -> String {
    if raw.contains('\\') {
        escape::unescape(raw)
    } else {
        raw.to_string()
    }
}

/// Turns one rank's collector into its results. `label` without brackets. Each phase takes
/// what it needs from the collector, so that the intervals are dropped as soon as each figure
/// is taken from them.
pub(crate) fn finish(
    c: Collector<'_>,
    header: &Header,
    label: String,
    id: RankId,
    path: PathBuf,
    classes: &Classifier,
    custom_marker: bool,
) -> Result<RankResult> {
    let base = header.base_time_ns.unwrap_or(0);
    let gpu = !c.gpu.is_empty();
    let device = header_device(header, c.gpu_pid);
    let (ops, mut class_ns) = op_rows(if gpu { c.gpu_ops } else { c.cpu_ops }, gpu, classes);
    let comm = classes.comm();

    let (source, mut marks) = steps::choose(
        c.custom_steps,
        c.profiler_steps,
        c.sglang_steps,
        c.graph_launches,
        custom_marker,
    );
    let memory = c.memory.finish(&marks, base);
    let mut figs = step_figs(&marks, base, classes.names().len());
    assign_work(&mut figs, &c.work_marks, c.shapes, &marks)?;

    let (totals, coll_evs) = if gpu {
        drop(c.cpu);
        fold_gpu(
            c.gpu,
            c.launches,
            c.gpu_colls,
            c.stream_waits,
            &marks,
            comm,
            &mut figs,
        )?
    } else {
        let cpu = CpuRank {
            ops: c.cpu,
            colls: c.cpu_colls,
            waits: c.cpu_waits,
            comm,
        };
        cpu.fold(&mut marks, &mut figs, &mut class_ns)?
    };
    assign_nelems(&mut figs, c.cpu_nelems, &marks)?;

    let summary = rank_summary(label.clone(), device, gpu, &totals, &ops, c.events);
    let dist = header.distributed();
    let labels = super::collstore::labels(&c.coll_keys, gpu, dist.rank);
    let colls = RankColls::build(coll_evs, &labels, c.coll_names, base)?;
    let lost_base = lost_base(header, &figs, &colls);
    Ok(RankResult {
        label,
        id,
        path,
        gpu,
        summary,
        ops,
        class_ns,
        step_source: source,
        steps: figs,
        colls,
        streams: stream_rows(c.streams),
        world_size: dist.world_size,
        distributed_rank: dist.rank,
        lost_base,
        base_ns: header.base_time_ns,
        moe_rows: c.moe_rows,
        stopped_early: None,
        active: totals
            .window
            .map(|(a, b)| (Ns::new(a + base), Ns::new(b + base))),
        memory,
    })
}

/// Each step's work: the work marks in it, and the input shapes of its ops.
fn assign_work(
    figs: &mut [StepFig],
    work_marks: &[WorkMark],
    shapes: Spool<(i64, i64)>,
    marks: &[steps::Mark],
) -> Result<()> {
    let mut step_work = vec![StepWork::default(); figs.len()];
    steps::assign(work_marks, marks, &mut step_work);
    steps::assign_shapes(
        shapes.sorted_by(|s: &(i64, i64)| s.0)?,
        marks,
        &mut step_work,
    )?;
    for (f, w) in figs.iter_mut().zip(step_work) {
        f.work = w;
    }
    Ok(())
}

/// A GPU rank's ops swept in bounded memory ([`super::sweep::fold`]) into its totals and
/// steps, and its collectives given the compute before and within them ([`segments`]) and,
/// when its trace records `cudaStreamWaitEvent` (`stream_waits` > 0), what compute waited
/// for ([`super::overlap`]: its compute kernels are kept by the same sweep, else none are).
fn fold_gpu(
    ivs: Spool<GpuIv>,
    launches: Spool<(i64, i64)>,
    colls: Spool<CollEv>,
    stream_waits: u64,
    marks: &[steps::Mark],
    comm: u8,
    figs: &mut [StepFig],
) -> Result<(GpuTotals, Spool<CollEv>)> {
    let (with_prev, queries) = segments::prepare(colls, marks)?;
    let mut cum = segments::Cumulative::new(queries)?;
    let mut kernels = (stream_waits > 0).then(|| ivs.like());
    let totals = super::sweep::fold(ivs, launches, marks, comm, figs, &mut cum, kernels.as_mut())?;
    let colls = segments::finish(with_prev, cum.finish()?, marks)?;
    let colls = match kernels {
        Some(k) => super::overlap::mark_waited(colls, k, stream_waits)?,
        None => colls,
    };
    Ok((totals, colls))
}

/// Whether the file lost its base: it has none but relative times, judged by its earliest
/// time (its first step or collective).
fn lost_base(header: &Header, figs: &[StepFig], colls: &RankColls) -> bool {
    let earliest = figs
        .iter()
        .map(|f| f.start_ns.get())
        .chain(colls.earliest())
        .min();
    crate::trace::time::lost_base(header.base_time_ns, earliest.map(Ns::new))
}

/// The rank's summary row: span, busy, idle and utilization, time by kind, and its kernels
/// (GPU kernels, or a CPU-only rank's ops) counted and summed; `events`: the events read.
fn rank_summary(
    rank: String,
    device: Option<String>,
    gpu: bool,
    totals: &GpuTotals,
    ops: &[NameAgg],
    events: u64,
) -> RankSummary {
    let kernels: u64 = ops
        .iter()
        .filter(|o| matches!(o.agg.kind, OpKind::Kernel | OpKind::Cpu))
        .map(|o| o.agg.count)
        .sum();
    let kernel_sum_ns: i64 = ops
        .iter()
        .filter(|o| matches!(o.agg.kind, OpKind::Kernel | OpKind::Cpu))
        .map(|o| o.agg.total)
        .sum();
    let (span, busy) = (totals.span, totals.busy);
    let figures = RankFigures {
        rank,
        device,
        source: if gpu { "gpu" } else { "cpu" }.to_string(),
        span_ns: Ns::new(span),
        busy_ns: Ns::new(busy),
        idle_ns: Ns::new(span - busy),
        utilization_pct: pct(busy, span),
        compute_ns: Ns::new(totals.compute),
        comm_ns: Ns::new(totals.comm),
        exposed_comm_ns: Ns::new(totals.exposed_comm),
        memcpy_memset_ns: Ns::new(totals.copy),
        kernels,
        kernel_sum_ns: Ns::new(kernel_sum_ns),
    };
    RankSummary { figures, events }
}

/// The rank's ops by name, the longest first, and (GPU ranks) its time per class; a CPU-only
/// rank's classes take self time later ([`CpuRank::fold`]).
fn op_rows(
    ops_map: impl IntoIterator<Item = (Box<str>, super::ops::Agg)>,
    gpu: bool,
    classes: &Classifier,
) -> (Vec<NameAgg>, Vec<i64>) {
    let mut class_ns = vec![0i64; classes.names().len()];
    let mut ops: Vec<NameAgg> = ops_map
        .into_iter()
        .map(|(k, agg)| {
            if gpu {
                if let Some(x) = class_ns.get_mut(agg.class as usize) {
                    *x += agg.total;
                }
            }
            NameAgg {
                name: decode(&k),
                agg,
            }
        })
        .collect();
    ops.sort_by(|a, b| b.agg.total.cmp(&a.agg.total).then(a.name.cmp(&b.name)));
    (ops, class_ns)
}

/// One figure per step mark, its times absolute (`base` added); the rest filled in later.
fn step_figs(marks: &[steps::Mark], base: i64, classes: usize) -> Vec<StepFig> {
    marks
        .iter()
        .map(|m| StepFig {
            name: m.name.clone(),
            number: m.number,
            start_ns: Ns::new(m.start + base),
            dur_ns: Ns::new(m.dur),
            busy_ns: Ns::ZERO,
            work_ns: Ns::ZERO,
            class_ns: vec![0; classes],
            work: Default::default(),
        })
        .collect()
}

/// Message sizes per step: CPU-side `record_param_comms` win over the kernels' copies; a step
/// without a collective moved 0 elements once any step moved some.
fn assign_nelems(
    figs: &mut [StepFig],
    cpu_nelems: Spool<(i64, i64)>,
    marks: &[steps::Mark],
) -> Result<()> {
    let mut step_work: Vec<_> = figs.iter().map(|f| f.work).collect();
    steps::assign_nelems(
        cpu_nelems.sorted_by(|n: &(i64, i64)| *n)?,
        marks,
        &mut step_work,
    )?;
    let any_nelems = step_work.iter().any(|w| w.nelems.is_some());
    for (f, w) in figs.iter_mut().zip(step_work) {
        f.work.nelems = if any_nelems {
            Some(w.nelems.unwrap_or(0))
        } else {
            None
        };
    }
    Ok(())
}

/// The streams' rows, by stream.
fn stream_rows(streams: impl IntoIterator<Item = (i64, (i64, u64))>) -> Vec<StreamRow> {
    let mut rows: Vec<StreamRow> = streams
        .into_iter()
        .map(|(stream, (sum_ns, ops))| StreamRow {
            stream,
            ops,
            sum_ns: Ns::new(sum_ns),
        })
        .collect();
    rows.sort_by_key(|s| s.stream);
    rows
}

/// A CPU-only rank's ops, collectives and waits, to fold into its totals and steps.
struct CpuRank {
    ops: Spool<CpuIv>,
    colls: Spool<CollEv>,
    waits: Spool<CpuIv>,
    /// The communication class.
    comm: u8,
}

impl CpuRank {
    /// CPU ops nest: classes get *self* time (own time minus the children's), so they add up
    /// to the time the threads were busy instead of counting nested ops twice; the ops are
    /// held here, once, since their nesting needs them together. A collective lasts until its
    /// waits end (gloo's range, `work.wait()`): that time is communication, in the step's work
    /// and the rank's totals as in the segments. Returns the totals and the collectives.
    fn fold(
        self,
        marks: &mut [steps::Mark],
        figs: &mut [StepFig],
        class_ns: &mut [i64],
    ) -> Result<(GpuTotals, Spool<CollEv>)> {
        let comm = self.comm;
        let mut cpu_ivs = self
            .ops
            .sorted_by(|c: &CpuIv| (c.tid, c.start, std::cmp::Reverse(c.end)))?
            .collect::<Result<Vec<CpuIv>>>()?;
        add_self_times(&mut cpu_ivs, marks, figs, class_ns);
        cpu_ivs.sort_unstable_by_key(|c| (c.start, c.end));
        let mut timeline = Timeline::build(&cpu_ivs, |c| {
            let kind = if c.class == comm {
                Kind::Comm
            } else {
                Kind::Compute
            };
            (c.start, c.end, kind)
        });
        let ops: Vec<(i64, i64)> = cpu_ivs.iter().map(|c| (c.start, c.end)).collect();
        let compute = segments::ComputeStarts::new(
            cpu_ivs
                .iter()
                .filter(|c| c.class != comm)
                .map(|c| (c.tid, c.start)),
        );
        drop(cpu_ivs);
        steps::host_begins(marks, &ops);
        drop(ops);
        let (extended, waited) = waited(segments::extend_by_waits(
            self.colls,
            self.waits.sorted_by(|w: &CpuIv| (w.start, w.end))?,
            &compute,
        )?)?;
        drop(compute);
        timeline.add_comm(waited);
        for (f, m) in figs.iter_mut().zip(marks.iter()) {
            f.busy_ns = Ns::new(m.dur);
            f.work_ns = Ns::new(m.dur - timeline.comm.len_within(m.start, m.start + m.dur));
        }
        let colls = segments::fill_in_memory(
            extended,
            |lo, hi| timeline.compute.len_within(lo, hi),
            marks,
        )?;
        let totals = GpuTotals {
            span: match (timeline.all.first(), timeline.all.last()) {
                (Some(a), Some(b)) => b - a,
                _ => 0,
            },
            window: timeline.all.first().zip(timeline.all.last()),
            busy: timeline.all.len(),
            compute: timeline.compute.len(),
            comm: timeline.comm.len(),
            exposed_comm: timeline.exposed_comm(),
            copy: timeline.copy.len(),
        };
        Ok((totals, colls))
    }
}

/// Each CPU op's self time, added to its class on the rank and in its step (which counts it
/// as a launch).
fn add_self_times(
    cpu_ivs: &mut [CpuIv],
    marks: &[steps::Mark],
    figs: &mut [StepFig],
    class_ns: &mut [i64],
) {
    let selfs = self_times(cpu_ivs);
    for (c, s) in cpu_ivs.iter().zip(&selfs) {
        if let Some(x) = class_ns.get_mut(c.class as usize) {
            *x += s;
        }
        if let Some(i) = steps::window_of(marks, c.start) {
            if let Some(x) = figs[i].class_ns.get_mut(c.class as usize) {
                *x += s;
            }
            figs[i].work.launches += 1;
        }
    }
}

/// Intervals (start, end) on a rank's timeline.
type Intervals = Vec<(i64, i64)>;

/// The collectives again, and their intervals (start to the end of their waits) sorted by
/// start: a CPU-only trace's communication.
fn waited(colls: Spool<CollEv>) -> Result<(Spool<CollEv>, Intervals)> {
    let mut out = colls.like();
    let mut ivs = Vec::new();
    for c in colls.sorted_by(|c: &CollEv| (c.start, c.seq))? {
        let c = c?;
        ivs.push((c.start, c.end));
        out.push(c);
    }
    Ok((out, ivs))
}

/// Sorts CPU ops by thread and start (outer ops first) and returns each op's self time: its
/// duration minus the parts covered by its direct children.
pub(crate) fn self_times(ivs: &mut [CpuIv]) -> Vec<i64> {
    ivs.sort_unstable_by_key(|c| (c.tid, c.start, std::cmp::Reverse(c.end)));
    let mut selfs: Vec<i64> = ivs.iter().map(|c| c.end - c.start).collect();
    // (end, index) of the open ops on the current thread.
    let mut stack: Vec<(i64, usize)> = Vec::new();
    let mut tid = None;
    for (i, c) in ivs.iter().enumerate() {
        if tid != Some(c.tid) {
            stack.clear();
            tid = Some(c.tid);
        }
        while stack.last().is_some_and(|&(end, _)| end <= c.start) {
            stack.pop();
        }
        if let Some(&(pend, p)) = stack.last() {
            selfs[p] -= c.end.min(pend) - c.start;
        }
        stack.push((c.end, i));
    }
    selfs
}

/// The name of the device the rank's GPU ops ran on (by `deviceProperties[].id`), else the
/// first listed device.
fn header_device(header: &Header, pid: Option<i64>) -> Option<String> {
    let devices = header.devices();
    let by_id = pid.and_then(|p| devices.iter().find(|d| d.id == Some(p))?.name.clone());
    by_id.or_else(|| devices.into_iter().find_map(|d| d.name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn self_times_subtract_direct_children() {
        let iv = |tid, start, end| CpuIv {
            start,
            end,
            tid,
            class: 0,
        };
        // Thread 1: A 0-100 holds B 10-40 (which holds C 20-30) and D 50-60.
        // Thread 2: E 0-100 alone (same times as A, another thread).
        let mut v = vec![
            iv(1, 50, 60),
            iv(1, 20, 30),
            iv(2, 0, 100),
            iv(1, 0, 100),
            iv(1, 10, 40),
        ];
        let s = self_times(&mut v);
        let got: Vec<(i64, i64, i64)> = v
            .iter()
            .zip(&s)
            .map(|(c, &x)| (c.tid, c.start, x))
            .collect();
        assert_eq!(
            got,
            vec![
                (1, 0, 100 - 30 - 10),
                (1, 10, 30 - 10),
                (1, 20, 10),
                (1, 50, 10),
                (2, 0, 100)
            ]
        );
        assert_eq!(s.iter().sum::<i64>(), 100 + 100);
    }
}
