//! The collective tables of the analysis: per rank (matched, last arrivals, waits), per
//! collective key (skew, ties, who arrived last most), and the worst single skews. Built from
//! `analyze`'s collective report; rendered by [`super::tables`] like every other table.

use super::table::{ms, text, us, Cell, Table};
use crate::analyze::Analysis;

pub(super) fn ranks(a: &Analysis) -> Table {
    let co = &a.collectives;
    Table {
        name: "collectives_ranks",
        title: format!(
            "Collectives × rank ({} matched, from {} events; ties: {} of {}, arrivals less than {:.0} µs apart)",
            co.matched,
            co.source,
            co.ties,
            co.matched,
            co.tie_tolerance_ns.get() as f64 / 1e3
        ),
        columns: [
            "rank",
            "world",
            "collectives",
            "matched",
            "wait ms",
            "arrived last",
            "last %",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
        rows: co
            .ranks
            .iter()
            .map(|r| {
                vec![
                    text(r.rank.clone()),
                    Cell::Int(r.world as i64),
                    Cell::Int(r.collectives as i64),
                    Cell::Int(r.matched as i64),
                    ms(r.wait_ns),
                    Cell::Int(r.arrived_last as i64),
                    Cell::Num(r.last_pct(), 1),
                ]
            })
            .collect(),
        terminal: true,
    }
}

pub(super) fn groups(a: &Analysis) -> Table {
    let co = &a.collectives;
    Table {
        name: "collectives",
        title: "Collectives by process group and stream".into(),
        columns: [
            "world",
            "key",
            "name",
            "matched",
            "mean skew µs",
            "max skew µs",
            "last most",
            "ties",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
        rows: co
            .groups
            .iter()
            .map(|g| {
                vec![
                    Cell::Int(g.world as i64),
                    text(g.key.clone()),
                    text(g.name.clone()),
                    Cell::Int(g.matched as i64),
                    us(g.mean_skew_ns),
                    us(g.max_skew_ns.get() as f64),
                    text(if g.last_most.is_empty() {
                        "— (all ties)".to_string()
                    } else {
                        format!("{} ({})", g.last_most, g.last_most_count)
                    }),
                    Cell::Int(g.ties as i64),
                ]
            })
            .collect(),
        terminal: true,
    }
}

pub(super) fn worst(a: &Analysis) -> Table {
    let co = &a.collectives;
    Table {
        name: "collectives_worst",
        title: "Largest arrival skews".into(),
        columns: ["world", "key", "#", "name", "skew µs", "last", "t ms"]
            .iter()
            .map(|s| s.to_string())
            .collect(),
        rows: co
            .worst
            .iter()
            .map(|w| {
                vec![
                    Cell::Int(w.world as i64),
                    text(w.key.clone()),
                    Cell::Int(w.index as i64),
                    text(w.name.clone()),
                    us(w.skew_ns.get() as f64),
                    text(w.last.clone()),
                    Cell::Num(w.t_ms, 3),
                ]
            })
            .collect(),
        terminal: false,
    }
}
