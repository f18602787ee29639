//! The explaining tables in tidy form, for `--csv-dir` and `--parquet`: the attribution, the
//! work per rank, the MoE EP split and the critical path's tables. Same names as the report's
//! tables ([`super::tidy::files`] writes these instead of them), snake_case columns with the
//! unit in the name, bare numbers at full precision, times as integer nanoseconds.

use super::table::{f, i, s, Cell, Table};
use crate::analyze::reduce::path::Kind;
use crate::analyze::Analysis;
use crate::trace::Ns;

/// A critical-path cause as the JSON names it (`late_start`, …).
fn kind(k: Kind) -> &'static str {
    match k {
        Kind::Work => "work",
        Kind::Host => "host",
        Kind::LateStart => "late_start",
        Kind::Transfer => "transfer",
    }
}

fn opt_f(v: Option<f64>) -> Cell {
    v.map_or(Cell::Empty, f)
}

fn opt_i(v: Option<u64>) -> Cell {
    v.map_or(Cell::Empty, i)
}

/// A float nanosecond figure as integer nanoseconds.
fn ns(v: f64) -> Cell {
    if v.is_finite() {
        Cell::Int(v.round() as i64)
    } else {
        Cell::Empty
    }
}

/// Every explaining table; the critical path's only when it matched collectives (as the
/// report shows them).
pub(crate) fn tables(a: &Analysis) -> Vec<Table> {
    let mut out = Vec::new();
    if !a.attribution.ranks.is_empty() {
        out.extend([attribution(a), work(a)]);
    }
    if !a.ep.is_empty() {
        out.push(ep(a));
    }
    if a.path.collectives > 0 {
        out.extend([
            critical_path(a),
            critical_path_host(a),
            critical_path_worst(a),
            critical_path_transfers(a),
            critical_path_steps(a),
            what_if(a),
            what_if_worst(a),
            what_if_worlds(a),
        ]);
        if !a.path.what_if.stages.is_empty() {
            out.push(what_if_stages(a));
        }
    }
    out
}

/// Each pipeline stage's bubble per step: recorded, and with every rank typical.
fn what_if_stages(a: &Analysis) -> Table {
    let mut t = Table::data(
        "what_if_stages",
        &[
            "world",
            "stage",
            "bubble_ns_per_step",
            "step_pct",
            "ideal_bubble_ns_per_step",
        ],
    );
    for s in &a.path.what_if.stages {
        t.rows.push(vec![
            i(s.world as i64),
            super::table::s(&s.who),
            i(s.bubble.get()),
            f(s.step_pct),
            i(s.ideal_bubble.get()),
        ]);
    }
    t
}

/// The what-if, one row per rank made typical, per pipeline stage made typical and per cause
/// removed.
fn what_if(a: &Analysis) -> Table {
    let mut t = Table::data(
        "what_if",
        &["subject", "who", "cause", "saved_ns_per_step", "step_pct"],
    );
    let w = &a.path.what_if;
    for r in &w.ranks {
        t.rows.push(vec![
            s("rank"),
            s(&r.who),
            Cell::Empty,
            i(r.saved.get()),
            f(r.step_pct),
        ]);
    }
    // Each pipeline stage of two or more ranks made typical together (its `who` as the verdict
    // names it; a stage of one rank is that rank's row).
    for g in w.stage_groups.iter().filter(|g| g.ranks.len() >= 2) {
        t.rows.push(vec![
            s("stage"),
            s(&g.who),
            Cell::Empty,
            i(g.saved.get()),
            f(g.step_pct),
        ]);
    }
    for k in &w.kinds {
        t.rows.push(vec![
            s("cause"),
            Cell::Empty,
            s(kind(k.kind)),
            i(k.saved.get()),
            f(k.step_pct),
        ]);
    }
    t
}

/// The worst k ranks made typical together: one row per rank of each set, in the set's
/// order (`position` 1 = the one that gives back the most alone).
fn what_if_worst(a: &Analysis) -> Table {
    let mut t = Table::data(
        "what_if_worst",
        &[
            "k",
            "position",
            "who",
            "saved_ns_per_step",
            "step_pct",
            "lost_pct",
        ],
    );
    for x in &a.path.what_if.worst {
        for (n, who) in x.ranks().enumerate() {
            t.rows.push(vec![
                i(x.k as i64),
                i(n as i64 + 1),
                s(who),
                i(x.saved.get()),
                f(x.step_pct),
                f(x.lost_pct),
            ]);
        }
    }
    t
}

/// Each world replayed: recorded, replayed and ideal time per step, the slowdown and the
/// model error.
fn what_if_worlds(a: &Analysis) -> Table {
    let mut t = Table::data(
        "what_if_worlds",
        &[
            "world",
            "ranks",
            "collectives",
            "recorded_ns_per_step",
            "replayed_ns_per_step",
            "ideal_ns_per_step",
            "slowdown_ratio",
            "model_error_pct",
        ],
    );
    for w in &a.path.what_if.worlds {
        t.rows.push(vec![
            i(w.world as i64),
            s(&w.who),
            i(w.collectives as i64),
            i(w.recorded.get()),
            i(w.replayed.get()),
            i(w.ideal.get()),
            f(w.slowdown),
            f(w.error_pct),
        ]);
    }
    t
}

fn attribution(a: &Analysis) -> Table {
    let mut t = Table::data(
        "attribution",
        &[
            "scope",
            "who",
            "peers",
            "cause",
            "from_step",
            "steps",
            "unit",
            "time_ns",
            "peers_time_ns",
            "work",
            "peers_work",
            "launches",
            "peers_launches",
            "time_ratio",
            "work_ratio",
            "launch_ratio",
            "time_per_unit_ratio",
            "time_share_pct",
            "work_share_pct",
            "effect",
        ],
    );
    let at = &a.attribution;
    for r in &at.records {
        t.rows.push(vec![
            s(&r.scope),
            s(&r.who),
            s(r.peers.join(",")),
            s(r.cause.as_str()),
            r.from_step.as_ref().map_or(Cell::Empty, s),
            i(r.steps as i64),
            s(&at.unit),
            ns(r.time_ns),
            ns(r.peers_time_ns),
            opt_f(r.work),
            opt_f(r.peers_work),
            f(r.launches),
            f(r.peers_launches),
            f(r.time_ratio),
            opt_f(r.work_ratio),
            f(r.launch_ratio),
            opt_f(r.unit_time_ratio),
            f(r.time_share_pct),
            opt_f(r.work_share_pct),
            f(r.effect),
        ]);
    }
    t
}

fn work(a: &Analysis) -> Table {
    let mut t = Table::data(
        "work",
        &[
            "rank",
            "dp",
            "steps",
            "time_ns",
            "tokens",
            "sequences",
            "launches",
            "ns_per_token",
            "ns_per_sequence",
            "ns_per_launch",
        ],
    );
    for r in &a.attribution.ranks {
        t.rows.push(vec![
            s(&r.rank),
            r.dp.map_or(Cell::Empty, i),
            i(r.steps as i64),
            i(r.time_ns),
            opt_i(r.tokens),
            opt_i(r.seqs),
            i(r.launches as i64),
            opt_f(r.time_per_token_ns),
            opt_f(r.time_per_seq_ns),
            opt_f(r.time_per_launch_ns),
        ]);
    }
    t
}

fn ep(a: &Analysis) -> Table {
    let mut t = Table::data(
        "ep",
        &[
            "rank",
            "ep",
            "cause",
            "time_ratio",
            "dispatch_combine_ns",
            "dispatch_combine_ratio",
            "expert_gemm_ns",
            "expert_gemm_ratio",
            "rest_ns",
            "rest_ratio",
            "routed_tokens_ratio",
        ],
    );
    for e in &a.ep {
        t.rows.push(vec![
            s(&e.rank),
            i(i64::from(e.ep)),
            s(&e.cause),
            f(e.total_ratio),
            ns(e.parts.dispatch_ns),
            f(e.dispatch_ratio),
            ns(e.parts.expert_ns),
            f(e.expert_ratio),
            ns(e.parts.rest_ns),
            f(e.rest_ratio),
            opt_f(e.routed_ratio),
        ]);
    }
    t
}

/// Every (rank, cause) the critical path charged (the report shows the costliest).
fn critical_path(a: &Analysis) -> Table {
    let mut t = Table::data(
        "critical_path",
        &[
            "rank",
            "world",
            "cause",
            "cost_ns_per_step",
            "step_pct",
            "net_cost_ns_per_step",
            "net_step_pct",
            "collectives",
            "cost_ns",
        ],
    );
    for c in &a.path.causes {
        t.rows.push(vec![
            s(&c.who),
            i(c.world as i64),
            s(kind(c.kind)),
            ns(c.per_step_ns),
            f(c.step_pct),
            ns(c.net_per_step_ns),
            f(c.net_step_pct),
            i(c.collectives as i64),
            i(c.cost_ns.get()),
        ]);
    }
    t
}

fn critical_path_host(a: &Analysis) -> Table {
    let mut t = Table::data(
        "critical_path_host",
        &["rank", "op", "self_ns", "idle_pct", "idle_ns", "segments"],
    );
    for h in &a.path.host_ops {
        let share = |x: Ns| {
            if h.idle_ns > Ns::ZERO {
                f(100.0 * x.get() as f64 / h.idle_ns.get() as f64)
            } else {
                Cell::Empty
            }
        };
        let ops = h.ops.iter().map(|o| (s(&o.name), o.ns));
        let none = std::iter::once((Cell::Empty, h.unrecorded_ns));
        for (op, x) in ops.chain(none) {
            t.rows.push(vec![
                s(&h.who),
                op,
                i(x.get()),
                share(x),
                i(h.idle_ns.get()),
                i(h.segments as i64),
            ]);
        }
    }
    t
}

fn critical_path_worst(a: &Analysis) -> Table {
    let mut t = Table::data(
        "critical_path_worst",
        &[
            "world",
            "key",
            "index",
            "name",
            "rank",
            "cost_ns",
            "work_ns",
            "host_ns",
            "late_start_ns",
            "transfer_ns",
            "t_ms",
        ],
    );
    for w in &a.path.worst {
        t.rows.push(vec![
            i(w.world as i64),
            s(&w.key),
            i(w.index as i64),
            s(&w.name),
            s(&w.rank),
            i(w.cost_ns.get()),
            i(w.work_ns.get()),
            i(w.host_ns.get()),
            i(w.late_ns.get()),
            i(w.transfer_ns.get()),
            f(w.t_ms),
        ]);
    }
    t
}

fn critical_path_transfers(a: &Analysis) -> Table {
    let mut t = Table::data(
        "critical_path_transfers",
        &[
            "world",
            "collective",
            "collectives",
            "median_ns",
            "others_median_ns",
            "bytes",
            "busbw_gb_per_s",
        ],
    );
    for x in &a.path.transfers {
        t.rows.push(vec![
            i(x.world as i64),
            s(&x.name),
            i(x.collectives as i64),
            ns(x.median_ns),
            x.others_ns.map_or(Cell::Empty, ns),
            x.bytes.map_or(Cell::Empty, ns),
            opt_f(x.busbw_gbps),
        ]);
    }
    t
}

fn critical_path_steps(a: &Analysis) -> Table {
    let mut t = Table::data(
        "critical_path_steps",
        &[
            "step",
            "step_ns",
            "cost_ns",
            "cost_pct",
            "top_rank",
            "top_cause",
            "top_cost_ns",
        ],
    );
    for r in &a.path.per_step {
        t.rows.push(vec![
            s(&r.step),
            i(r.step_ns.get()),
            i(r.cost_ns.get()),
            if r.step_ns > Ns::ZERO {
                f(100.0 * r.cost_ns.get() as f64 / r.step_ns.get() as f64)
            } else {
                Cell::Empty
            },
            r.top_who.as_ref().map_or(Cell::Empty, s),
            r.top_kind.map_or(Cell::Empty, |k| s(kind(k))),
            i(r.top_ns.get()),
        ]);
    }
    t
}
