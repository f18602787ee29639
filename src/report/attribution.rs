//! The attribution as tables (work against time per rank; each comparison and its cause) and as
//! an SVG chart for the HTML report: per rank, per step, the step's time (bars) and its work
//! (dots), each scaled to its largest value over ranks and steps.

use super::table::{Cell, Table};
use crate::analyze::explain::attribution::Attribution;
use crate::analyze::Analysis;
use crate::trace::Ns;

fn opt_int(v: Option<u64>) -> Cell {
    v.map_or(Cell::Empty, |x| Cell::Int(x as i64))
}

fn opt_num(v: Option<f64>, d: usize) -> Cell {
    v.map_or(Cell::Empty, |x| Cell::Num(x, d))
}

fn ms(ns: f64) -> Cell {
    Cell::Num(ns / 1e6, 2)
}

fn us(ns: Option<f64>) -> Cell {
    ns.map_or(Cell::Empty, |x| Cell::Num(x / 1e3, 2))
}

/// Rows of the comparisons shown in the terminal at most (the files get all).
const TERMINAL_ROWS: usize = 16;

/// The attribution tables: `attribution` (each comparison, largest effect first) and
/// `work` (work and time per rank).
pub(crate) fn tables(a: &Analysis) -> Vec<Table> {
    let at = &a.attribution;
    let mut out = Vec::new();
    if !at.ranks.is_empty() {
        out.extend([comparisons(at), work(at)]);
    }
    if !a.ep.is_empty() {
        out.push(ep(a));
    }
    out
}

/// MoE: each EP rank's dispatch/combine, expert GEMMs and the rest against its EP peers.
fn ep(a: &Analysis) -> Table {
    Table {
        name: "ep",
        title:
            "MoE per EP rank: dispatch/combine, expert GEMMs and the rest vs its EP peers' median"
                .into(),
        columns: [
            "rank",
            "EP",
            "cause",
            "time ratio",
            "dispatch/combine ms",
            "ratio",
            "expert GEMMs ms",
            "ratio",
            "rest ms",
            "ratio",
            "routed tokens ratio",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
        rows: a
            .ep
            .iter()
            .map(|e| {
                vec![
                    Cell::Text(e.rank.clone()),
                    Cell::Int(i64::from(e.ep)),
                    Cell::Text(e.cause.clone()),
                    Cell::Num(e.total_ratio, 2),
                    ms(e.parts.dispatch_ns),
                    Cell::Num(e.dispatch_ratio, 2),
                    ms(e.parts.expert_ns),
                    Cell::Num(e.expert_ratio, 2),
                    ms(e.parts.rest_ns),
                    Cell::Num(e.rest_ratio, 2),
                    opt_num(e.routed_ratio, 2),
                ]
            })
            .collect(),
        terminal: a.ep.len() <= TERMINAL_ROWS,
    }
}

fn comparisons(at: &Attribution) -> Table {
    let unit = &at.unit;
    Table {
        name: "attribution",
        title: format!(
            "Attribution: work ({}) vs time, each against its peers' mean; largest effect first",
            at.source
        ),
        columns: [
            "scope",
            "who",
            "cause",
            "from step",
            "time ratio",
            &format!("{} ratio", crate::analyze::explain::measure::plural(unit)),
            "launch ratio",
            &format!("time/{unit} ratio"),
            "time share %",
            "work share %",
            "time ms",
            "peers' time ms",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
        rows: at
            .records
            .iter()
            .map(|r| {
                vec![
                    Cell::Text(r.scope.clone()),
                    Cell::Text(r.who.clone()),
                    Cell::Text(r.cause.as_str().to_string()),
                    r.from_step.clone().map_or(Cell::Empty, Cell::Text),
                    Cell::Num(r.time_ratio, 2),
                    opt_num(r.work_ratio, 2),
                    Cell::Num(r.launch_ratio, 2),
                    opt_num(r.unit_time_ratio, 2),
                    Cell::Num(r.time_share_pct, 1),
                    opt_num(r.work_share_pct, 1),
                    ms(r.time_ns),
                    ms(r.peers_time_ns),
                ]
            })
            .collect(),
        // None (one rank, or no peer differs): the verdict says so; files keep the header.
        terminal: !at.records.is_empty() && at.records.len() <= TERMINAL_ROWS,
    }
}

fn work(at: &Attribution) -> Table {
    Table {
        name: "work",
        title: format!("Work per rank over the steps ({})", at.source),
        columns: [
            "rank",
            "steps",
            "time ms",
            "tokens",
            "sequences",
            "launches",
            "µs/token",
            "µs/sequence",
            "µs/launch",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
        rows: at
            .ranks
            .iter()
            .map(|r| {
                vec![
                    Cell::Text(r.rank.clone()),
                    Cell::Int(r.steps as i64),
                    ms(r.time_ns.get() as f64),
                    opt_int(r.tokens),
                    opt_int(r.seqs),
                    Cell::Int(r.launches as i64),
                    us(r.time_per_token_ns),
                    us(r.time_per_seq_ns),
                    us(r.time_per_launch_ns),
                ]
            })
            .collect(),
        terminal: false,
    }
}

/// Wraps a line at word boundaries to `width` columns for the terminal; continuation lines get
/// `indent` ([`super::text::wrap`], which breaks a word longer than a line).
pub(crate) fn wrap(line: &str, width: usize, indent: &str) -> String {
    super::text::wrap(line, width, indent)
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The chart: one strip per rank, one slot per step; a grey bar is the step's time, a dot its
/// work (tokens, sequences, or launches without a batch annotation). Empty without steps.
pub(crate) fn chart(a: &Analysis) -> String {
    let at = &a.attribution;
    let rows = &a.steps.rows;
    let n = a.ranks.len();
    if rows.is_empty() || n == 0 || at.per_step.len() != rows.len() {
        return String::new();
    }
    let work = |s: usize, r: usize| -> f64 {
        let w = &at.per_step[s];
        match w.work.get(r).copied().flatten() {
            Some(x) => x as f64,
            None => w.launches.get(r).copied().unwrap_or(0) as f64,
        }
    };
    let tmax = rows
        .iter()
        .flat_map(|row| row.work_ns.iter())
        .copied()
        .max()
        .unwrap_or(Ns::ZERO)
        .max(Ns::new(1))
        .get() as f64;
    let wmax = (0..rows.len())
        .flat_map(|s| (0..n).map(move |r| (s, r)))
        .map(|(s, r)| work(s, r))
        .fold(0.0, f64::max)
        .max(1.0);
    let (label_w, strip_h, gap) = (130.0, 36.0, 6.0);
    let slot = (720.0 / rows.len() as f64).clamp(2.0, 24.0);
    // Never narrower than its legend (one step is one 24 px slot).
    let width = (label_w + slot * rows.len() as f64 + 10.0).max(640.0);
    let height = (strip_h + gap) * n as f64 + 24.0;
    let mut s = format!(
        r##"<svg id="work-chart" class="chart" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}"><title>work ({}) vs time per rank per step</title>"##,
        esc(&at.unit)
    );
    for r in 0..n {
        let y0 = r as f64 * (strip_h + gap);
        let base = y0 + strip_h;
        s.push_str(&format!(
            r##"<text x="0" y="{:.1}">{}</text><line x1="{label_w}" y1="{base:.1}" x2="{:.1}" y2="{base:.1}" stroke="#d0d7de"/>"##,
            y0 + strip_h / 2.0 + 4.0,
            esc(&a.ranks[r].figures.rank),
            width - 10.0
        ));
        for (i, row) in rows.iter().enumerate() {
            let x = label_w + slot * i as f64;
            let t = row.work_ns.get(r).copied().unwrap_or(Ns::ZERO).get() as f64;
            let h = strip_h * t / tmax;
            s.push_str(&format!(
                r##"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{h:.1}" fill="#8c959f"><title>{} step {}: {:.3} ms</title></rect>"##,
                x + 0.5,
                base - h,
                (slot - 1.0).max(1.0),
                esc(&a.ranks[r].figures.rank),
                esc(&row.step),
                t / 1e6
            ));
            let w = work(i, r);
            s.push_str(&format!(
                r##"<circle cx="{:.1}" cy="{:.1}" r="2.5" fill="#cf222e"><title>{} step {}: {w} {}s</title></circle>"##,
                x + slot / 2.0,
                base - strip_h * w / wmax,
                esc(&a.ranks[r].figures.rank),
                esc(&row.step),
                esc(&at.unit)
            ));
        }
    }
    s.push_str(&format!(
        r##"<text x="{label_w}" y="{:.1}">bars: step time (max {:.2} ms) · red dots: {} (max {wmax:.0})</text></svg>"##,
        height - 6.0,
        tmax / 1e6,
        esc(&crate::analyze::explain::measure::plural(&at.unit))
    ));
    s
}
