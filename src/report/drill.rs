//! The drill-down of one rank (`analyze --rank LABEL|INDEX`) as tables: its summary and the
//! verdict's lines about it, then kernel classes, kernels, steps and collectives, each row the
//! rank's figure, its peers' median, the ratio and the difference. Renders
//! [`crate::analyze::explain::drill::Drill`]; computes nothing. Every format (terminal,
//! markdown, CSV, HTML) draws these tables; JSON carries the drill-down as it is.

use super::table::{text, Cell, Table};
use crate::analyze::explain::drill::{Drill, DrillRow};
use crate::analyze::explain::measure::count;

fn columns(names: &[&str]) -> Vec<String> {
    names.iter().map(|s| s.to_string()).collect()
}

/// A figure in its unit: ms with three decimals, or a count.
fn value(x: f64, unit: &str) -> Cell {
    if unit == "count" {
        Cell::Num(x, 1)
    } else {
        Cell::Num(x / 1e6, 3)
    }
}

fn ratio(d: &DrillRow) -> Cell {
    d.ratio.map_or(Cell::Empty, |r| Cell::Num(r, 2))
}

/// rank, peers' median, ratio, difference.
fn figures(d: &DrillRow) -> Vec<Cell> {
    vec![
        value(d.rank, &d.unit),
        value(d.peers_median, &d.unit),
        ratio(d),
        value(d.gap(), &d.unit),
    ]
}

/// The drill-down's lines: the summary, then the verdict's lines about the rank.
pub(crate) fn lines(d: &Drill) -> Vec<String> {
    let mut v = vec![d.summary.clone()];
    v.extend(d.verdict.iter().map(|l| format!("Verdict: {l}")));
    v
}

/// The drill-down's tables, in report order.
pub(crate) fn tables(d: &Drill) -> Vec<Table> {
    let who = format!(
        "Rank {} vs the median of its {}",
        d.rank,
        count(d.peer_count, "peer")
    );
    let mut out = vec![Table {
        name: "drill",
        title: format!("{who} ({})", d.peers),
        columns: columns(&["drill-down"]),
        rows: lines(d).into_iter().map(|l| vec![text(l)]).collect(),
        terminal: false,
    }];
    let mut classes = vec![{
        let mut r = vec![text("work (all but comm)")];
        r.extend(figures(&d.work));
        r
    }];
    classes.extend(d.classes.iter().map(|c| {
        let mut r = vec![text(c.short.clone())];
        r.extend(figures(c));
        r
    }));
    out.push(Table {
        name: "drill_classes",
        title: format!("{who}: kernel classes (ms), furthest first"),
        columns: columns(&["class", "rank", "peers' median", "ratio", "Δ"]),
        rows: classes,
        terminal: true,
    });
    let named = |v: &[DrillRow]| -> Vec<Vec<Cell>> {
        v.iter()
            .map(|k| {
                let mut r = vec![
                    text(k.short.clone()),
                    text(k.class.clone().unwrap_or_default()),
                ];
                r.extend(figures(k));
                r
            })
            .collect()
    };
    if !d.kernels.is_empty() {
        out.push(Table {
            name: "drill_kernels",
            title: format!(
                "{who}: the {} furthest off (ms)",
                count(d.kernels.len(), "kernel")
            ),
            columns: columns(&["kernel", "class", "rank", "peers' median", "ratio", "Δ"]),
            rows: named(&d.kernels),
            terminal: true,
        });
    }
    if !d.steps.is_empty() {
        out.push(Table {
            name: "drill_steps",
            title: format!(
                "{who}: the {} furthest off (work, ms)",
                count(d.steps.len(), "step")
            ),
            columns: columns(&["step", "rank", "peers' median", "ratio", "Δ"]),
            rows: d
                .steps
                .iter()
                .map(|s| {
                    let mut r = vec![text(s.short.clone())];
                    r.extend(figures(s));
                    r
                })
                .collect(),
            terminal: true,
        });
    }
    if !d.collectives.is_empty() {
        out.push(Table {
            name: "drill_collectives",
            title: format!("{who}: collectives (ms; arrivals: a count)"),
            columns: columns(&["collective", "class", "rank", "peers' median", "ratio", "Δ"]),
            rows: named(&d.collectives),
            terminal: true,
        });
    }
    out
}
