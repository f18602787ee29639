//! The critical-path tables of the analysis: what each (rank, cause) cost the step at the
//! collectives where that rank arrived last, the costliest single late arrivals, and the cost
//! per step. Built from
//! `analyze`'s critical path (`analyze::reduce::path`); rendered by [`super::tables`] like every
//! other table.

use super::table::{ms, text, us, Cell, Table};
use crate::analyze::reduce::path::Kind;
use crate::analyze::Analysis;
use crate::trace::Ns;

/// Rows of the causes table: the largest net costs, those of at least 0.1 % of the step (the
/// rest are jitter; the JSON keeps every one).
const CAUSE_ROWS: usize = 12;

/// A cause as the table says it.
fn cause(k: Kind, cpu: bool) -> &'static str {
    match k {
        Kind::Work if cpu => "more cpu work",
        Kind::Work => "more gpu work",
        Kind::Host if cpu => "no op recorded",
        Kind::Host => "host gap (GPU idle)",
        Kind::LateStart => "late step start",
        Kind::Transfer => "slow transfer",
    }
}

pub(super) fn causes(a: &Analysis) -> Table {
    let p = &a.path;
    let cpu = a.source == "cpu";
    let per = if p.steps > 0 {
        format!(
            "{} of {:.2} ms",
            crate::analyze::explain::measure::count(p.steps, "step"),
            p.step_ns / 1e6
        )
    } else {
        "the whole profile: no steps".to_string()
    };
    Table {
        name: "critical_path",
        title: format!(
            "Critical path: cost of late arrivals ({per}; {} of {} late)",
            p.late,
            crate::analyze::explain::measure::count(p.collectives, "collective")
        ),
        columns: [
            "rank",
            "cause",
            "ms / step",
            "% of step",
            "over typical ms",
            "collectives",
            "total ms",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
        rows: p
            .causes
            .iter()
            .filter(|c| p.steps == 0 || c.step_pct >= 0.1)
            .take(CAUSE_ROWS)
            .map(|c| {
                vec![
                    text(c.who.clone()),
                    text(cause(c.kind, cpu).to_string()),
                    Cell::Num(c.per_step_ns / 1e6, 3),
                    Cell::Num(c.step_pct, 1),
                    Cell::Num(c.net_per_step_ns / 1e6, 3),
                    Cell::Int(c.collectives as i64),
                    ms(c.cost_ns),
                ]
            })
            .collect(),
        terminal: true,
    }
}

/// What the host-bound ranks' launching threads did while their GPU sat idle before the
/// collectives they arrived last at: the ops with the most self time, and what no op covers.
pub(super) fn host(a: &Analysis) -> Table {
    let mut rows = Vec::new();
    for h in &a.path.host_ops {
        let share = |ns: Ns| {
            if h.idle_ns > Ns::ZERO {
                Cell::Num(100.0 * ns.get() as f64 / h.idle_ns.get() as f64, 1)
            } else {
                Cell::Empty
            }
        };
        for o in &h.ops {
            rows.push(vec![
                text(h.who.clone()),
                text(o.name.clone()),
                ms(o.ns),
                share(o.ns),
                Cell::Int(h.segments as i64),
            ]);
        }
        rows.push(vec![
            text(h.who.clone()),
            text("(nothing recorded)".to_string()),
            ms(h.unrecorded_ns),
            share(h.unrecorded_ns),
            Cell::Int(h.segments as i64),
        ]);
    }
    Table {
        name: "critical_path_host",
        title:
            "Host gaps: what the launching thread ran while the GPU idled before its late arrivals"
                .into(),
        columns: ["rank", "op (self time)", "ms", "% of idle", "segments"]
            .iter()
            .map(|s| s.to_string())
            .collect(),
        rows,
        terminal: true,
    }
}

/// The transfers per world and collective: the median on the last arriver (who waited for no
/// one), against the same collective in the other worlds, with the data moved and the bus
/// bandwidth.
pub(super) fn transfers(a: &Analysis) -> Table {
    let opt = |x: Option<f64>, d: usize| x.map_or(Cell::Empty, |v| Cell::Num(v, d));
    Table {
        name: "critical_path_transfers",
        title: "Transfers: each collective's duration on its last arriver (median), against the other groups', with its size and bus bandwidth".into(),
        columns: [
            "world",
            "collective",
            "collectives",
            "median µs",
            "others' µs",
            "MB",
            "bus GB/s",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
        rows: a
            .path
            .transfers
            .iter()
            .map(|t| {
                vec![
                    Cell::Int(t.world as i64),
                    text(t.name.clone()),
                    Cell::Int(t.collectives as i64),
                    us(t.median_ns),
                    t.others_ns.map_or(Cell::Empty, us),
                    opt(t.bytes.map(|b| b / 1e6), 3),
                    opt(t.busbw_gbps, 1),
                ]
            })
            .collect(),
        terminal: false,
    }
}

pub(super) fn worst(a: &Analysis) -> Table {
    let p = &a.path;
    Table {
        name: "critical_path_worst",
        title: "Costliest late arrivals (the last arriver's segment over the median member's)"
            .into(),
        columns: [
            "world",
            "key",
            "#",
            "name",
            "rank",
            "cost µs",
            "work µs",
            "host µs",
            "late µs",
            "transfer µs",
            "t ms",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
        rows: p
            .worst
            .iter()
            .map(|w| {
                vec![
                    Cell::Int(w.world as i64),
                    text(w.key.clone()),
                    Cell::Int(w.index as i64),
                    text(w.name.clone()),
                    text(w.rank.clone()),
                    us(w.cost_ns.get() as f64),
                    us(w.work_ns.get() as f64),
                    us(w.host_ns.get() as f64),
                    us(w.late_ns.get() as f64),
                    us(w.transfer_ns.get() as f64),
                    Cell::Num(w.t_ms, 3),
                ]
            })
            .collect(),
        terminal: false,
    }
}

pub(super) fn steps(a: &Analysis) -> Table {
    let p = &a.path;
    let cpu = a.source == "cpu";
    Table {
        name: "critical_path_steps",
        title: "Critical path per step: what late arrivals cost each step, and the largest".into(),
        columns: [
            "step",
            "step ms",
            "cost ms",
            "cost %",
            "top rank",
            "top cause",
            "top ms",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
        rows: p
            .per_step
            .iter()
            .map(|r| {
                vec![
                    text(r.step.clone()),
                    ms(r.step_ns),
                    ms(r.cost_ns),
                    if r.step_ns > Ns::ZERO {
                        Cell::Num(100.0 * r.cost_ns.get() as f64 / r.step_ns.get() as f64, 1)
                    } else {
                        Cell::Empty
                    },
                    r.top_who.clone().map_or(Cell::Empty, text),
                    r.top_kind
                        .map_or(Cell::Empty, |k| text(cause(k, cpu).to_string())),
                    ms(r.top_ns),
                ]
            })
            .collect(),
        // On the terminal while the steps fit a screen; the files always hold them.
        terminal: p.per_step.len() <= TERMINAL_STEPS,
    }
}

/// Most steps the per-step table shows on the terminal.
const TERMINAL_STEPS: usize = 24;

/// A cause removed, as the what-if table says it.
fn without(k: Kind, cpu: bool) -> &'static str {
    match k {
        Kind::Work => "no extra work",
        Kind::Host if cpu => "no unrecorded host time",
        Kind::Host => "no host gaps",
        Kind::LateStart => "no late starts",
        Kind::Transfer => "no slow transfers",
    }
}

/// Rows of the what-if table: the ranks that give back the most, then every cause.
const WHAT_IF_RANKS: usize = 8;

/// A pipeline's stages: each one's bubble per step (its wait at the transfers for its
/// neighbours), as recorded and re-simulated with every rank typical.
pub(super) fn stages(a: &Analysis) -> Table {
    let w = &a.path.what_if;
    let rows = w
        .stages
        .iter()
        .map(|s| {
            vec![
                text(s.who.clone()),
                ms(s.bubble),
                Cell::Num(s.step_pct, 1),
                ms(s.ideal_bubble),
            ]
        })
        .collect();
    Table {
        name: "what_if_stages",
        title: "Pipeline stages: each stage's bubble (its wait at the transfers for its neighbours), per step, as recorded and re-simulated with every rank typical".to_string(),
        columns: ["stage", "bubble ms / step", "% of step", "every rank typical ms"]
            .iter()
            .map(|s| s.to_string())
            .collect(),
        rows,
        terminal: true,
    }
}

/// What if: the step time each rank would give back if it were typical, and each cause if it
/// were removed, re-simulated on the matched collectives, beside the local charge of the
/// causes table; the title carries the slowdown and the model error.
pub(super) fn what_if(a: &Analysis) -> Table {
    let p = &a.path;
    let w = &p.what_if;
    let cpu = a.source == "cpu";
    let trust = if w.trusted() {
        String::new()
    } else {
        "; the replay misses the recording by more than 5 %: do not trust these figures".into()
    };
    let mut rows: Vec<Vec<Cell>> = w
        .ranks
        .iter()
        .filter(|r| r.step_pct >= 0.1)
        .take(WHAT_IF_RANKS)
        .map(|r| {
            vec![
                text(format!("{} typical", r.who)),
                ms(r.saved),
                Cell::Num(r.step_pct, 1),
                Cell::Num(p.rank_per_step(&r.who) / 1e6, 3),
            ]
        })
        .collect();
    // The worst ranks together, where that gives back more than the worst alone.
    let alone = w.worst.first().map_or(Ns::ZERO, |x| x.saved);
    rows.extend(
        w.worst
            .iter()
            .filter(|x| x.k > 1 && x.saved > alone && x.step_pct >= 0.1)
            .map(|x| {
                let charge: f64 = x.ranks().map(|r| p.rank_per_step(r)).sum();
                vec![
                    text(format!("worst {} typical ({})", x.k, x.who)),
                    ms(x.saved),
                    Cell::Num(x.step_pct, 1),
                    Cell::Num(charge / 1e6, 3),
                ]
            }),
    );
    // Each pipeline stage's ranks together, where that gives back more than any one alone.
    rows.extend(
        w.stage_groups
            .iter()
            .filter(|g| g.ranks.len() >= 2 && g.saved > g.alone && g.step_pct >= 0.1)
            .map(|g| {
                let charge: f64 = g.ranks.iter().map(|r| p.rank_per_step(r)).sum();
                vec![
                    text(format!("stage PP{:02} typical ({})", g.stage, g.who)),
                    ms(g.saved),
                    Cell::Num(g.step_pct, 1),
                    Cell::Num(charge / 1e6, 3),
                ]
            }),
    );
    rows.extend(w.kinds.iter().filter(|k| k.saved > Ns::ZERO).map(|k| {
        vec![
            text(without(k.kind, cpu).to_string()),
            ms(k.saved),
            Cell::Num(k.step_pct, 1),
            Cell::Num(
                p.causes
                    .iter()
                    .filter(|c| c.kind == k.kind)
                    .fold(0.0, |t, c| t + c.per_step_ns)
                    / 1e6,
                3,
            ),
        ]
    }));
    Table {
        name: "what_if",
        title: format!(
            "What if: step time given back, re-simulated at the collectives (slowdown {:.2}×, model error {:.1} %{trust})",
            w.slowdown, w.error_pct
        ),
        columns: ["if", "ms / step", "% of step", "local charge ms"]
            .iter()
            .map(|s| s.to_string())
            .collect(),
        rows,
        terminal: true,
    }
}
