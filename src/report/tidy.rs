//! The analysis as tidy (long-form) tables for pandas, polars, R and SQL: one row per
//! observation (rank × class, kernel × rank, step × rank, …), one column per variable, a unit
//! in every time column name (`_ns`, `_ms`, `_pct`), no spaces or symbols in headers. Written
//! by `analyze --csv-dir DIR` as one CSV per table ([`write_csv_dir`]), and used by the JSON
//! format so that every list there is a list of flat records ([`super::json`]).
//!
//! Times are integer nanoseconds as the analysis holds them (no rounding); nothing here
//! computes a figure beyond reading the analysis' own accessors.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde_json::Value;

use super::table::{f, i, s, Cell, Table};
use crate::analyze::explain::attribution::StepWorkRow;
use crate::analyze::reduce::steps::{StepRow, StepTable};
use crate::analyze::Analysis;
use crate::trace::Ns;

/// The tables written as files, one file each, by `--csv-dir` and `--parquet` alike: every tidy
/// table, then every other table of the report (the verdict, the attribution, …) that has no
/// tidy form, as the report shows it. The two directories hold the same tables by construction.
pub(crate) fn files(a: &Analysis) -> Vec<Table> {
    let mut out = tables(a);
    let rest: Vec<Table> = super::tables::sections(a)
        .into_iter()
        .filter(|t| !out.iter().any(|o| o.name == t.name))
        .collect();
    out.extend(rest);
    out
}

/// Every tidy table of the analysis (empty ones too, so a script always finds its file).
pub(crate) fn tables(a: &Analysis) -> Vec<Table> {
    let mut out = vec![ranks(a), classes(a), kernels(a), kernels_by_rank(a)];
    out.extend([steps(a), steps_by_rank(a)]);
    out.extend(collectives(a));
    // Only with memory events (`profile_memory`): a trace without them has no such table.
    if !a.memory.is_empty() {
        out.push(memory_ranks(a));
    }
    // Only with memory snapshots (`*.pickle` beside the traces).
    if !a.snapshots.is_empty() {
        out.push(memory_snapshots(a));
        out.push(memory_snapshot_frames(a));
    }
    out.push(super::groups::tidy(a));
    out.extend(super::tidy_explain::tables(a));
    if let Some(d) = &a.depth {
        out.extend(depth(d));
    }
    out
}

fn ranks(a: &Analysis) -> Table {
    let mut t = Table::data(
        "ranks",
        &[
            "rank",
            "device",
            "source",
            "span_ns",
            "busy_ns",
            "idle_ns",
            "utilization_pct",
            "compute_ns",
            "comm_ns",
            "exposed_comm_ns",
            "memcpy_memset_ns",
            "kernel_count",
            "kernel_sum_ns",
            "event_count",
        ],
    );
    for r in &a.ranks {
        t.rows.push(vec![
            s(&r.figures.rank),
            r.figures.device.as_ref().map_or(Cell::Empty, s),
            s(&r.figures.source),
            i(r.figures.span_ns.get()),
            i(r.figures.busy_ns.get()),
            i(r.figures.idle_ns.get()),
            f(r.figures.utilization_pct),
            i(r.figures.compute_ns.get()),
            i(r.figures.comm_ns.get()),
            i(r.figures.exposed_comm_ns.get()),
            i(r.figures.memcpy_memset_ns.get()),
            i(r.figures.kernels),
            i(r.figures.kernel_sum_ns.get()),
            i(r.events),
        ]);
    }
    t
}

/// Memory per rank and device: sizes in bytes, the peak's time on the common clock.
pub(super) fn memory_ranks(a: &Analysis) -> Table {
    let mut t = Table::data(
        "memory_ranks",
        &[
            "rank",
            "device",
            "peak_allocated_bytes",
            "peak_reserved_bytes",
            "peak_ts_ns",
            "peak_step",
            "peak_op",
            "baseline_bytes",
            "growth_bytes_per_step",
            "growth_stderr_bytes_per_step",
            "growth_steps",
            "oom_events",
            "memory_events",
        ],
    );
    for m in &a.memory {
        let r = &m.row;
        t.rows.push(vec![
            s(&m.rank),
            s(&r.device),
            i(r.peak_allocated_bytes),
            i(r.peak_reserved_bytes),
            i(r.peak_ts_ns.get()),
            r.peak_step.map_or(Cell::Empty, i),
            r.peak_op.as_deref().map_or(Cell::Empty, s),
            i(r.baseline_bytes),
            r.growth_bytes_per_step.map_or(Cell::Empty, i),
            r.growth_stderr_bytes_per_step.map_or(Cell::Empty, i),
            i(r.growth_steps),
            i(r.oom_events),
            i(r.memory_events),
        ]);
    }
    t
}

/// Per rank and device, its memory snapshot: sizes in bytes.
fn memory_snapshots(a: &Analysis) -> Table {
    let mut t = Table::data(
        "memory_snapshots",
        &[
            "rank",
            "file",
            "device",
            "segment_count",
            "allocated_bytes",
            "reserved_bytes",
            "trace_entry_count",
            "peak_allocated_bytes",
            "peak_entry",
            "peak_time_us",
            "before_trace_bytes",
            "oom_entry_count",
            "top_frames_at",
        ],
    );
    for r in &a.snapshots {
        let d = &r.device;
        t.rows.push(vec![
            s(&r.rank),
            s(&r.file),
            s(&d.device),
            i(d.segments),
            i(d.allocated_bytes),
            i(d.reserved_bytes),
            i(d.trace_entries),
            d.peak_allocated_bytes.map_or(Cell::Empty, i),
            d.peak_entry.map_or(Cell::Empty, i),
            d.peak_time_us.map_or(Cell::Empty, i),
            d.before_trace_bytes.map_or(Cell::Empty, i),
            i(d.oom_entries),
            s(&d.top_frames_at),
        ]);
    }
    t
}

/// Per rank and device, the top user frames at the peak (or the snapshot), largest first.
fn memory_snapshot_frames(a: &Analysis) -> Table {
    let mut t = Table::data(
        "memory_snapshot_frames",
        &[
            "rank", "device", "at", "position", "frame", "bytes", "count",
        ],
    );
    for r in &a.snapshots {
        for (k, f) in r.device.top_frames.iter().enumerate() {
            t.rows.push(vec![
                s(&r.rank),
                s(&r.device.device),
                s(&r.device.top_frames_at),
                i(k as i64 + 1),
                s(&f.frame),
                i(f.bytes),
                i(f.count),
            ]);
        }
    }
    t
}

pub(super) fn classes(a: &Analysis) -> Table {
    let c = &a.classes;
    let mut t = Table::data("classes", &["rank", "class", "total_ns"]);
    for (r, v) in c.ranks.iter().zip(&c.ns) {
        for (class, ns) in c.classes.iter().zip(v) {
            t.rows.push(vec![s(r), s(class), i(*ns)]);
        }
    }
    t
}

pub(super) fn kernels(a: &Analysis) -> Table {
    let mut t = Table::data(
        "kernels",
        &[
            "kernel",
            "short_name",
            "class",
            "kind",
            "total_ns",
            "max_over_mean",
            "cv",
            "slowest_rank",
        ],
    );
    for k in &a.kernels {
        t.rows.push(vec![
            s(&k.name),
            s(&k.short),
            s(&k.class),
            s(&k.kind),
            i(k.total_ns),
            f(k.max_over_mean),
            f(k.cv),
            s(&k.slowest),
        ]);
    }
    t
}

pub(super) fn kernels_by_rank(a: &Analysis) -> Table {
    let mut t = Table::data("kernels_by_rank", KERNELS_BY_RANK);
    t.rows.extend(kernels_by_rank_rows(a));
    t
}

/// Columns of the `kernels_by_rank` table.
pub(crate) const KERNELS_BY_RANK: &[&str] = &[
    "kernel", "class", "rank", "total_ns", "count", "mean_ns", "max_ns",
];

/// The `kernels_by_rank` rows one at a time (a row per kernel and rank: the JSON report streams
/// them, [`kernels_by_rank`] collects them).
pub(crate) fn kernels_by_rank_rows(a: &Analysis) -> impl Iterator<Item = Vec<Cell>> + '_ {
    a.kernels.iter().flat_map(move |k| {
        a.ranks.iter().zip(&k.per_rank).map(move |(r, st)| {
            vec![
                s(&k.name),
                s(&k.class),
                s(&r.figures.rank),
                i(st.total_ns),
                i(st.count),
                f(st.mean_ns),
                i(st.max_ns),
            ]
        })
    })
}

/// Columns of the `steps` table.
pub(crate) const STEPS: &[&str] = &[
    "step",
    "name",
    "start_ms",
    "max_over_mean",
    "slowest_rank",
    "slowest_excess_pct",
];

/// One row of the `steps` table.
pub(crate) fn steps_row(st: &StepTable, r: &StepRow) -> Vec<Cell> {
    let slowest = r.slowest().and_then(|x| st.ranks.get(x));
    vec![
        s(&r.step),
        s(&r.name),
        f(r.t_ms),
        f(r.max_over_mean()),
        slowest.map_or(Cell::Empty, s),
        f(r.slowest_excess_pct()),
    ]
}

fn steps(a: &Analysis) -> Table {
    let mut t = Table::data("steps", STEPS);
    for r in &a.steps.rows {
        t.rows.push(steps_row(&a.steps, r));
    }
    t
}

/// Columns of the `steps_by_rank` table.
pub(crate) const STEPS_BY_RANK: &[&str] = &[
    "step",
    "rank",
    "name",
    "dur_ns",
    "busy_ns",
    "work_ns",
    "excess_pct",
];

/// The `steps_by_rank` row of step `r` and the rank at index `x`.
pub(crate) fn steps_by_rank_row(st: &StepTable, r: &StepRow, x: usize) -> Vec<Cell> {
    let ns = |v: &[Ns]| v.get(x).map_or(Cell::Empty, |n| i(n.get()));
    vec![
        s(&r.step),
        st.ranks.get(x).map_or(Cell::Empty, s),
        s(&r.name),
        ns(&r.dur_ns),
        ns(&r.busy_ns),
        ns(&r.work_ns),
        r.excess_pct.get(x).map_or(Cell::Empty, |p| f(*p)),
    ]
}

fn steps_by_rank(a: &Analysis) -> Table {
    let st = &a.steps;
    let mut t = Table::data("steps_by_rank", STEPS_BY_RANK);
    for r in &st.rows {
        for x in 0..st.ranks.len() {
            t.rows.push(steps_by_rank_row(st, r, x));
        }
    }
    t
}

pub(super) fn collectives(a: &Analysis) -> Vec<Table> {
    let co = &a.collectives;
    let mut ranks = Table::data(
        "collectives_ranks",
        &[
            "rank",
            "world",
            "collectives",
            "matched",
            "wait_ns",
            "arrived_last",
            "arrived_last_pct",
        ],
    );
    for r in &co.ranks {
        ranks.rows.push(vec![
            s(&r.rank),
            i(r.world as i64),
            i(r.collectives as i64),
            i(r.matched as i64),
            i(r.wait_ns),
            i(r.arrived_last as i64),
            f(r.last_pct()),
        ]);
    }
    let mut groups = Table::data(
        "collectives",
        &[
            "world",
            "key",
            "name",
            "matched",
            "mean_skew_ns",
            "max_skew_ns",
            "last_most_rank",
            "last_most_count",
            "name_mismatches",
        ],
    );
    for g in &co.groups {
        groups.rows.push(vec![
            i(g.world as i64),
            s(&g.key),
            s(&g.name),
            i(g.matched as i64),
            f(g.mean_skew_ns),
            i(g.max_skew_ns),
            s(&g.last_most),
            i(g.last_most_count as i64),
            i(g.name_mismatches as i64),
        ]);
    }
    let mut worst = Table::data(
        "collectives_worst",
        &[
            "world",
            "key",
            "index",
            "name",
            "skew_ns",
            "last_rank",
            "start_ms",
        ],
    );
    for w in &co.worst {
        worst.rows.push(vec![
            i(w.world as i64),
            s(&w.key),
            i(w.index as i64),
            s(&w.name),
            i(w.skew_ns),
            s(&w.last),
            f(w.t_ms),
        ]);
    }
    let mut worlds = Table::data("collectives_worlds", &["world", "rank"]);
    for (n, w) in co.worlds.iter().enumerate() {
        for r in w {
            worlds.rows.push(vec![i(n as i64), s(r)]);
        }
    }
    vec![ranks, groups, worst, worlds]
}

fn depth(d: &crate::analyze::RankDepth) -> Vec<Table> {
    let mut k = Table::data(
        "rank_kernels",
        &[
            "rank",
            "kernel",
            "short_name",
            "class",
            "kind",
            "total_ns",
            "share_pct",
            "count",
            "mean_ns",
            "min_ns",
            "max_ns",
        ],
    );
    for x in &d.kernels {
        k.rows.push(vec![
            s(&d.rank),
            s(&x.name),
            s(&x.short),
            s(&x.class),
            s(&x.kind),
            i(x.total_ns),
            f(x.pct),
            i(x.count),
            f(x.mean_ns),
            i(x.min_ns),
            i(x.max_ns),
        ]);
    }
    let mut st = Table::data("rank_streams", &["rank", "stream", "ops", "sum_ns"]);
    for x in &d.streams {
        st.rows
            .push(vec![s(&d.rank), i(x.stream), i(x.ops), i(x.sum_ns)]);
    }
    let mut steps = Table::data(
        "rank_steps",
        &[
            "rank", "step", "name", "start_ns", "dur_ns", "busy_ns", "work_ns",
        ],
    );
    for (n, x) in d.steps.iter().enumerate() {
        steps.rows.push(vec![
            s(&d.rank),
            x.number.map_or(i(n as i64), i),
            s(&x.name),
            i(x.start_ns),
            i(x.dur_ns),
            i(x.busy_ns),
            i(x.work_ns),
        ]);
    }
    vec![k, st, steps]
}

/// `--csv-dir DIR`: one CSV per table of [`files`] (the tables `--parquet` writes), each written
/// atomically; returns the files.
pub(crate) fn write_csv_dir(a: &Analysis, dir: &Path) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut written = Vec::new();
    for t in files(a) {
        let path = dir.join(format!("{}.csv", t.name));
        crate::trace::write::writer::write_atomic_bytes(&path, t.csv().as_bytes())
            .with_context(|| format!("cannot write {}", path.display()))?;
        written.push(path);
    }
    Ok(written)
}

/// The JSON record of one step's work on the rank at index `i` (labelled `rank`).
pub(crate) fn work_record(s: &StepWorkRow, i: usize, rank: &str) -> Value {
    serde_json::json!({
        "step": s.step,
        "rank": rank,
        "tokens": s.tokens.get(i).copied().flatten(),
        "seqs": s.seqs.get(i).copied().flatten(),
        "launches": s.launches.get(i).copied(),
    })
}
