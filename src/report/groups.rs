//! The grouped terminal form, for many ranks: the distribution of each rank figure (min / p50 /
//! p90 / max), the top outlier ranks (against their peers, as the verdict measures a rank) with
//! the rest summarized, the groups of one dimension
//! (DP replicas by default, `--group-by`) with the largest deviations first, and the class
//! totals as distributions; plus the `groups` tidy table. Renders
//! [`crate::analyze::reduce::groups::Groups`]; computes nothing.

use super::table::{f, i, s};
use super::table::{ms, text, Cell, Table};
use crate::analyze::reduce::groups::{Dim, DimGroups, Dist};
use crate::analyze::Analysis;

/// Which form the terminal report takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum View {
    /// Grouped above [`GROUPED_ABOVE`] ranks, one row per rank up to it.
    #[default]
    Auto,
    Ranks,
    Grouped,
}

/// Above this many ranks the terminal shows the grouped form. A rank table with one row per
/// rank fits a 40-line screen (header, borders and title take about 6 lines) up to 32 ranks —
/// also the usual 4 × 8-GPU node deployment; above it, the tables scroll past a screen each and
/// the verdict's subject is lost among them.
pub(crate) const GROUPED_ABOVE: usize = 32;

/// Rows of outliers and groups shown in the terminal; the rest are summarized in one line.
pub(crate) const SHOWN: usize = 10;

/// Does the report take the grouped form?
pub(crate) fn grouped(a: &Analysis, view: View) -> bool {
    match view {
        View::Auto => a.ranks.len() > GROUPED_ABOVE,
        View::Ranks => false,
        View::Grouped => true,
    }
}

/// The dimension shown: `want` when the ranks have it, else DP, TP, PP, EP, node, in that
/// order of preference.
pub(crate) fn chosen(a: &Analysis, want: Option<Dim>) -> Option<&DimGroups> {
    want.and_then(|d| a.groups.dim(d))
        .or_else(|| Dim::ALL.iter().find_map(|&d| a.groups.dim(d)))
}

fn dist_cells(d: &Dist, conv: fn(f64) -> Cell) -> Vec<Cell> {
    vec![
        conv(d.min),
        conv(d.p50),
        conv(d.p90),
        conv(d.max),
        conv(d.mean),
    ]
}

fn msf(ns: f64) -> Cell {
    Cell::Num(ns / 1e6, 2)
}

fn num1(x: f64) -> Cell {
    Cell::Num(x, 1)
}

fn dist_line(what: &str, d: &Dist) -> String {
    format!(
        "{what}: min {:.2} / p50 {:.2} / p90 {:.2} / max {:.2} ms",
        d.min / 1e6,
        d.p50 / 1e6,
        d.p90 / 1e6,
        d.max / 1e6
    )
}

/// The grouped terminal tables, in report order; each with the line under it.
pub(crate) fn tables(a: &Analysis, want: Option<Dim>) -> Vec<(Table, Option<String>)> {
    let g = &a.groups;
    let cols = |first: &str| -> Vec<String> {
        [first, "min", "p50", "p90", "max", "mean"]
            .iter()
            .map(|s| s.to_string())
            .collect()
    };
    let row = |name: &str, d: &Dist, conv: fn(f64) -> Cell| {
        let mut r = vec![text(name)];
        r.extend(dist_cells(d, conv));
        r
    };
    let what = if a.source == "cpu" {
        "CPU work"
    } else {
        "work"
    };
    let mut out = vec![(
        Table {
            name: "rank_distribution",
            title: format!("{} ranks: distribution over ranks (ms)", a.ranks.len()),
            columns: cols("figure"),
            rows: vec![
                row(what, &g.work, msf),
                row("busy", &g.busy, msf),
                row("exposed comm", &g.exposed_comm, msf),
                row("util %", &g.util_pct, num1),
                row("kernels", &g.kernels, |x| Cell::Num(x, 0)),
            ],
            terminal: true,
        },
        None,
    )];
    let shown: Vec<_> = g.outliers.iter().take(SHOWN).collect();
    let rest = a.ranks.len().saturating_sub(shown.len());
    let rest_line = (rest > 0).then(|| {
        let idx: std::collections::HashSet<usize> = shown.iter().map(|o| o.index).collect();
        let others = Dist::of(
            g.work_ns
                .iter()
                .enumerate()
                .filter(|(r, _)| !idx.contains(r))
                .map(|(_, &w)| w as f64),
        );
        dist_line(&format!("The other {rest} ranks' {what}"), &others)
    });
    out.push((
        Table {
            name: "outliers",
            title: format!(
                "Top {} outlier ranks ({what} furthest from the mean of {})",
                shown.len(),
                g.peers
            ),
            columns: [
                "rank",
                what,
                "vs peers %",
                "vs median %",
                "busy",
                "exposed comm",
                "util %",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect(),
            rows: shown
                .iter()
                .map(|o| {
                    vec![
                        text(o.rank.clone()),
                        ms(o.work_ns),
                        Cell::Num(o.vs_peers_pct, 1),
                        Cell::Num(o.vs_median_pct, 1),
                        ms(o.busy_ns),
                        ms(o.exposed_comm_ns),
                        Cell::Num(o.util_pct, 1),
                    ]
                })
                .collect(),
            terminal: true,
        },
        rest_line,
    ));
    if let Some(d) = chosen(a, want) {
        out.push(group_table(d, what));
    }
    out.push((
        Table {
            name: "class_distribution",
            title: format!(
                "{} classes: distribution over ranks (ms; unclassified \"other\": {:.1} %)",
                if a.source == "cpu" {
                    "CPU op"
                } else {
                    "Kernel"
                },
                a.classes.unclassified_pct
            ),
            columns: cols("class"),
            rows: a
                .classes
                .classes
                .iter()
                .zip(&g.classes)
                .map(|(c, d)| row(c, d, msf))
                .collect(),
            terminal: true,
        },
        None,
    ));
    out
}

fn group_table(d: &DimGroups, what: &str) -> (Table, Option<String>) {
    let mut order: Vec<usize> = (0..d.groups.len()).collect();
    if d.groups.len() > SHOWN {
        order.sort_by(|&x, &y| {
            let v = |i: usize| d.groups[i].vs_median_pct.abs();
            v(y).total_cmp(&v(x)).then(x.cmp(&y))
        });
        order.truncate(SHOWN);
    }
    let noun = d.dim.noun();
    let title = if order.len() < d.groups.len() {
        format!(
            "By {noun} (the {} of {} furthest from the median {noun}; ms, {what} over its ranks)",
            order.len(),
            d.groups.len()
        )
    } else {
        format!(
            "By {noun} ({} groups; ms, {what} over its ranks)",
            d.groups.len()
        )
    };
    let title = match &d.node_from {
        Some(from) => format!("{title}; a node is a {from}"),
        None => title,
    };
    let rest = d.groups.len() - order.len();
    let line = (rest > 0).then(|| {
        let others = Dist::of(
            (0..d.groups.len())
                .filter(|i| !order.contains(i))
                .map(|i| d.groups[i].work.mean),
        );
        dist_line(&format!("The other {rest} {noun}s' mean {what}"), &others)
    });
    let table = Table {
        name: "groups",
        title,
        columns: [
            noun,
            "ranks",
            "members",
            "mean",
            "min",
            "max",
            "vs median %",
            "busiest rank",
            "exposed comm",
            "util %",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
        rows: order
            .iter()
            .map(|&i| {
                let g = &d.groups[i];
                vec![
                    text(g.name.clone()),
                    Cell::Int(g.ranks as i64),
                    text(g.members.clone()),
                    msf(g.work.mean),
                    msf(g.work.min),
                    msf(g.work.max),
                    Cell::Num(g.vs_median_pct, 1),
                    text(g.slowest.clone()),
                    msf(g.exposed_comm_mean_ns),
                    Cell::Num(g.util_mean_pct, 1),
                ]
            })
            .collect(),
        terminal: true,
    };
    (table, line)
}

/// `groups.csv`: one row per group of every dimension, times in ns.
pub(crate) fn tidy(a: &Analysis) -> Table {
    let mut t = Table::data(
        "groups",
        &[
            "dim",
            "group",
            "ranks",
            "members",
            "work_min_ns",
            "work_p50_ns",
            "work_p90_ns",
            "work_max_ns",
            "work_mean_ns",
            "vs_median_pct",
            "busy_mean_ns",
            "exposed_comm_mean_ns",
            "util_mean_pct",
            "kernels_mean",
            "busiest_rank",
        ],
    );
    for d in &a.groups.dims {
        for g in &d.groups {
            t.rows.push(vec![
                s(d.dim.as_str()),
                s(&g.name),
                i(g.ranks),
                s(&g.members),
                f(g.work.min),
                f(g.work.p50),
                f(g.work.p90),
                f(g.work.max),
                f(g.work.mean),
                f(g.vs_median_pct),
                f(g.busy_mean_ns),
                f(g.exposed_comm_mean_ns),
                f(g.util_mean_pct),
                f(g.kernels_mean),
                s(&g.slowest),
            ]);
        }
    }
    t
}
