//! The analysis as plain tables — built once here and rendered by every format (terminal,
//! CSV, markdown, HTML, Parquet). One short function per table; the collective tables are in
//! [`super::collective_tables`], the critical path's in [`super::critical_path`]; the terminal draws them ([`super::terminal`]). The table model
//! is [`super::table`].

use super::collective_tables;
use super::table::{ms, text, us, Cell, Table};
use crate::analyze::collect::busy::RankSummary;
use crate::analyze::Analysis;

/// Per-rank columns are shown one per rank up to this many ranks, else summarized.
const WIDE_RANKS: usize = 16;

/// Every table of the analysis, in report order, with all columns (for files).
pub(crate) fn sections(a: &Analysis) -> Vec<Table> {
    sections_for(a, None)
}

/// Every table; with a terminal `width`, per-rank columns are summarized (min / mean / max)
/// when they would not fit, and columns equal on every rank (device, source) move into the
/// title.
pub(crate) fn sections_for(a: &Analysis, width: Option<usize>) -> Vec<Table> {
    let ranks: Vec<&str> = a.ranks.iter().map(|r| r.figures.rank.as_str()).collect();
    let wide = ranks.len() <= WIDE_RANKS && width.is_none_or(|w| w >= 70 + 9 * ranks.len() + 30);
    let mut out = vec![verdict(a), rank_summary(a, width), classes(a)];
    out.extend(super::attribution::tables(a));
    if a.path.collectives > 0 {
        out.push(super::critical_path::causes(a));
        if !a.path.host_ops.is_empty() {
            out.push(super::critical_path::host(a));
        }
        out.push(super::critical_path::worst(a));
        out.push(super::critical_path::transfers(a));
        out.push(super::critical_path::steps(a));
        if !a.path.what_if.worlds.is_empty() {
            out.push(super::critical_path::what_if(a));
        }
        if !a.path.what_if.stages.is_empty() {
            out.push(super::critical_path::stages(a));
        }
    }
    if !a.kernels.is_empty() {
        out.push(kernels(a, &ranks, wide));
        out.push(kernels_by_rank(a, &ranks));
    }
    if !a.steps.rows.is_empty() {
        out.push(steps(a, &ranks, wide));
        out.push(steps_by_rank(a, &ranks));
    }
    if !a.memory.is_empty() {
        out.push(memory_ranks(a));
    }
    if !a.snapshots.is_empty() {
        out.push(snapshot_ranks(a));
        out.push(snapshot_frames(a));
    }
    if a.collectives.matched > 0 {
        out.push(collective_tables::ranks(a));
        out.push(collective_tables::groups(a));
        out.push(collective_tables::worst(a));
    }
    if let Some(d) = &a.drill {
        out.extend(super::drill::tables(d));
    }
    if let Some(d) = &a.depth {
        out.extend(depth(d));
    }
    out
}

fn columns(names: &[&str]) -> Vec<String> {
    names.iter().map(|s| s.to_string()).collect()
}

/// Per-rank columns, or min / mean / max when the ranks do not fit.
fn per_rank_columns(cols: &mut Vec<String>, ranks: &[&str], wide: bool) {
    if wide {
        cols.extend(ranks.iter().map(|r| r.to_string()));
    } else {
        cols.extend(["min".to_string(), "mean".into(), "max".into()]);
    }
}

/// `v` per rank, or its min / mean / max.
fn per_rank_cells<T: Copy + Into<i64>>(
    row: &mut Vec<Cell>,
    v: &[T],
    (min, mean, max): (i64, i64, i64),
    wide: bool,
) {
    if wide {
        row.extend(v.iter().map(|&x| ms(x)));
    } else {
        row.extend([ms(min), ms(mean), ms(max)]);
    }
}

/// Memory per rank and device (`profile_memory`): sizes in MiB.
fn memory_ranks(a: &Analysis) -> Table {
    let mib = |b: i64| Cell::Num(b as f64 / (1024.0 * 1024.0), 1);
    Table {
        name: "memory_ranks",
        title: "Memory per rank (MiB; [memory] events)".into(),
        columns: columns(&[
            "rank",
            "device",
            "peak allocated",
            "peak reserved",
            "peak step",
            "op at peak",
            "baseline",
            "growth/step",
            "steps",
            "OOM",
        ]),
        rows: a
            .memory
            .iter()
            .map(|m| {
                let r = &m.row;
                vec![
                    text(m.rank.clone()),
                    text(r.device.clone()),
                    mib(r.peak_allocated_bytes),
                    mib(r.peak_reserved_bytes),
                    r.peak_step.map_or(Cell::Empty, Cell::Int),
                    r.peak_op.clone().map_or(Cell::Empty, text),
                    mib(r.baseline_bytes),
                    r.growth_bytes_per_step.map_or(Cell::Empty, mib),
                    Cell::Int(r.growth_steps as i64),
                    Cell::Int(r.oom_events as i64),
                ]
            })
            .collect(),
        terminal: true,
    }
}

/// Per rank and device, its memory snapshot: sizes in MiB.
fn snapshot_ranks(a: &Analysis) -> Table {
    let mib = |b: i64| Cell::Num(b as f64 / (1024.0 * 1024.0), 1);
    Table {
        name: "memory_snapshots",
        title: "Memory snapshots per rank (MiB; *.pickle)".into(),
        columns: columns(&[
            "rank",
            "device",
            "allocated",
            "reserved",
            "trace peak",
            "peak entry",
            "before trace",
            "entries",
            "OOM",
        ]),
        rows: a
            .snapshots
            .iter()
            .map(|s| {
                let d = &s.device;
                vec![
                    text(s.rank.clone()),
                    text(d.device.clone()),
                    mib(d.allocated_bytes),
                    mib(d.reserved_bytes),
                    d.peak_allocated_bytes.map_or(Cell::Empty, mib),
                    d.peak_entry.map_or(Cell::Empty, |e| Cell::Int(e as i64)),
                    d.before_trace_bytes.map_or(Cell::Empty, mib),
                    Cell::Int(d.trace_entries as i64),
                    Cell::Int(d.oom_entries as i64),
                ]
            })
            .collect(),
        terminal: true,
    }
}

/// Per rank and device, the top user frames of what was live at the peak (or the snapshot).
fn snapshot_frames(a: &Analysis) -> Table {
    let mib = |b: i64| Cell::Num(b as f64 / (1024.0 * 1024.0), 1);
    Table {
        name: "memory_snapshot_frames",
        title: "Memory snapshots: top user frames (MiB)".into(),
        columns: columns(&["rank", "device", "at", "frame", "live", "allocations"]),
        rows: a
            .snapshots
            .iter()
            .flat_map(|s| {
                s.device.top_frames.iter().map(move |f| {
                    vec![
                        text(s.rank.clone()),
                        text(s.device.device.clone()),
                        text(s.device.top_frames_at.clone()),
                        text(f.frame.clone()),
                        mib(f.bytes),
                        Cell::Int(f.count as i64),
                    ]
                })
            })
            .collect(),
        terminal: true,
    }
}

fn verdict(a: &Analysis) -> Table {
    Table {
        name: "verdict",
        title: "Verdict".into(),
        columns: vec!["verdict".into()],
        rows: a
            .verdict
            .lines
            .iter()
            .map(|l| vec![text(l.clone())])
            .collect(),
        terminal: false,
    }
}

fn rank_summary(a: &Analysis, width: Option<usize>) -> Table {
    let same = |f: fn(&RankSummary) -> Option<String>| -> Option<String> {
        let first = a.ranks.first().map(f)?;
        (width.is_some() && a.ranks.iter().all(|r| f(r) == first))
            .then(|| first.unwrap_or_else(|| "-".into()))
    };
    let same_device = same(|r| r.figures.device.clone());
    let same_source = same(|r| Some(r.figures.source.clone()));
    let mut cols = vec!["rank"];
    if same_device.is_none() {
        cols.push("device");
    }
    if same_source.is_none() {
        cols.push("source");
    }
    cols.extend([
        "span",
        "busy",
        "idle",
        "util %",
        "compute",
        "comm",
        "exposed comm",
        "memcpy/set",
        "kernels",
    ]);
    let mut title = "Rank summary (ms".to_string();
    if let Some(d) = &same_device {
        title.push_str(&format!("; device {d}"));
    }
    if let Some(s) = &same_source {
        title.push_str(&format!("; from {s} events"));
    }
    title.push(')');
    Table {
        name: "ranks",
        title,
        columns: cols.iter().map(|s| s.to_string()).collect(),
        rows: a
            .ranks
            .iter()
            .map(|r| {
                let mut row = vec![text(r.figures.rank.clone())];
                if same_device.is_none() {
                    row.push(r.figures.device.clone().map_or(Cell::Empty, Cell::Text));
                }
                if same_source.is_none() {
                    row.push(text(r.figures.source.clone()));
                }
                row.extend([
                    ms(r.figures.span_ns.get()),
                    ms(r.figures.busy_ns.get()),
                    ms(r.figures.idle_ns.get()),
                    Cell::Num(r.figures.utilization_pct, 1),
                    ms(r.figures.compute_ns.get()),
                    ms(r.figures.comm_ns.get()),
                    ms(r.figures.exposed_comm_ns.get()),
                    ms(r.figures.memcpy_memset_ns.get()),
                    Cell::Int(r.figures.kernels as i64),
                ]);
                row
            })
            .collect(),
        terminal: true,
    }
}

fn classes(a: &Analysis) -> Table {
    let c = &a.classes;
    let mut cols = vec!["rank".to_string()];
    cols.extend(c.classes.iter().cloned());
    let (what, basis) = if a.source == "cpu" {
        ("CPU op", "self time")
    } else {
        ("Kernel", "summed op time")
    };
    Table {
        name: "classes",
        title: format!(
            "{what} classes × rank (ms, {basis}; unclassified \"other\": {:.1} %)",
            c.unclassified_pct
        ),
        columns: cols,
        rows: c
            .ranks
            .iter()
            .zip(&c.ns)
            .map(|(r, v)| {
                let mut row = vec![text(r.clone())];
                row.extend(v.iter().map(|&x| ms(x)));
                row
            })
            .collect(),
        terminal: true,
    }
}

fn kernels(a: &Analysis, ranks: &[&str], wide: bool) -> Table {
    let mut cols = vec!["kernel".to_string(), "class".into(), "total".into()];
    per_rank_columns(&mut cols, ranks, wide);
    cols.extend(["max/mean".to_string(), "cv".into(), "slowest".into()]);
    Table {
        name: "kernels",
        title: if a.source == "cpu" {
            format!(
                "Top {} × rank (ms, inclusive)",
                crate::analyze::explain::measure::count(a.kernels.len(), "CPU op")
            )
        } else {
            format!(
                "Top {} × rank (ms)",
                crate::analyze::explain::measure::count(a.kernels.len(), "kernel")
            )
        },
        columns: cols,
        rows: a
            .kernels
            .iter()
            .map(|k| {
                let mut row = vec![text(k.short.clone()), text(k.class.clone()), ms(k.total_ns)];
                let t: Vec<i64> = k.per_rank.iter().map(|s| s.total_ns.get()).collect();
                per_rank_cells(&mut row, &t, k.rank_min_mean_max(), wide);
                row.extend([
                    Cell::Num(k.max_over_mean, 3),
                    Cell::Num(k.cv, 3),
                    text(k.slowest.clone()),
                ]);
                row
            })
            .collect(),
        terminal: true,
    }
}

fn kernels_by_rank(a: &Analysis, ranks: &[&str]) -> Table {
    let mut rows = Vec::new();
    for k in &a.kernels {
        for (r, s) in ranks.iter().zip(&k.per_rank) {
            rows.push(vec![
                text(k.name.clone()),
                text(k.class.clone()),
                text(r.to_string()),
                ms(s.total_ns),
                Cell::Int(s.count as i64),
                us(s.mean_ns),
                us(s.max_ns.get() as f64),
            ]);
        }
    }
    Table {
        name: "kernels_by_rank",
        title: "Top kernels by rank".into(),
        columns: columns(&[
            "kernel", "class", "rank", "total ms", "count", "mean µs", "max µs",
        ]),
        rows,
        terminal: false,
    }
}

fn steps(a: &Analysis, ranks: &[&str], wide: bool) -> Table {
    let st = &a.steps;
    let what = if st.basis == "cpu" {
        "CPU work"
    } else {
        "GPU work (busy excl. comm)"
    };
    let mut cols = vec!["step".to_string(), "t ms".into()];
    per_rank_columns(&mut cols, ranks, wide);
    cols.extend(["max/mean".to_string(), "slowest".into(), "excess %".into()]);
    Table {
        name: "steps",
        title: format!("Per-step {what} × rank (ms; steps from {})", st.source),
        columns: cols,
        rows: st
            .rows
            .iter()
            .map(|s| {
                let mut row = vec![text(s.step.clone()), Cell::Num(s.t_ms, 1)];
                per_rank_cells(&mut row, &s.work_ns, s.work_min_mean_max(), wide);
                let name = s
                    .slowest()
                    .and_then(|i| ranks.get(i).copied())
                    .unwrap_or("-");
                row.extend([
                    Cell::Num(s.max_over_mean(), 3),
                    text(name.to_string()),
                    Cell::Num(s.slowest_excess_pct(), 1),
                ]);
                row
            })
            .collect(),
        terminal: true,
    }
}

fn steps_by_rank(a: &Analysis, ranks: &[&str]) -> Table {
    let mut rows = Vec::new();
    for s in &a.steps.rows {
        for (i, r) in ranks.iter().enumerate() {
            rows.push(vec![
                text(s.step.clone()),
                text(r.to_string()),
                text(s.name.clone()),
                ms(s.dur_ns[i]),
                ms(s.busy_ns[i]),
                ms(s.work_ns[i]),
                Cell::Num(s.excess_pct[i], 2),
            ]);
        }
    }
    Table {
        name: "steps_by_rank",
        title: "Steps by rank".into(),
        columns: columns(&[
            "step", "rank", "name", "time ms", "busy ms", "work ms", "excess %",
        ]),
        rows,
        terminal: false,
    }
}

fn depth(d: &crate::analyze::RankDepth) -> Vec<Table> {
    vec![
        Table {
            name: "rank_kernels",
            title: format!("Rank {}: top {} ops", d.rank, d.kernels.len()),
            columns: [
                "kernel", "class", "kind", "total ms", "%", "count", "mean µs", "min µs", "max µs",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect(),
            rows: d
                .kernels
                .iter()
                .map(|k| {
                    vec![
                        text(k.short.clone()),
                        text(k.class.clone()),
                        text(k.kind.clone()),
                        ms(k.total_ns),
                        Cell::Num(k.pct, 1),
                        Cell::Int(k.count as i64),
                        us(k.mean_ns),
                        us(k.min_ns.get() as f64),
                        us(k.max_ns.get() as f64),
                    ]
                })
                .collect(),
            terminal: true,
        },
        Table {
            name: "rank_streams",
            title: format!("Rank {}: streams", d.rank),
            columns: ["stream", "ops", "sum ms"]
                .iter()
                .map(|s| s.to_string())
                .collect(),
            rows: d
                .streams
                .iter()
                .map(|s| vec![Cell::Int(s.stream), Cell::Int(s.ops as i64), ms(s.sum_ns)])
                .collect(),
            terminal: true,
        },
        Table {
            name: "rank_steps",
            title: format!("Rank {}: steps (from {})", d.rank, d.step_source),
            columns: ["#", "name", "time ms", "busy ms", "work ms"]
                .iter()
                .map(|s| s.to_string())
                .collect(),
            rows: d
                .steps
                .iter()
                .enumerate()
                .map(|(i, s)| {
                    vec![
                        text(s.number.map_or(i.to_string(), |n| n.to_string())),
                        text(s.name.clone()),
                        ms(s.dur_ns),
                        ms(s.busy_ns),
                        ms(s.work_ns),
                    ]
                })
                .collect(),
            terminal: true,
        },
    ]
}
