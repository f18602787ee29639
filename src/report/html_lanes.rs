//! The critical path as a lane chart in the HTML report: ranks as lanes, each late arrival
//! drawn on its rank's lane from the end of its previous collective to its arrival (faint), the
//! part the others waited for solid, coloured by what filled it most (more work, a host gap, a
//! late step start), and — for arrivals costing at least 1 % of the step — a line across its
//! world's lanes at the arrival, where the others were waiting for it. Three steps' worth of
//! time from the first late arrival: enough to see the pattern, small enough to read.

use std::collections::BTreeMap;
use std::fmt::Write;

use crate::analyze::reduce::path::Late;
use crate::analyze::Analysis;
use crate::trace::Ns;

/// Lanes drawn at most (the ranks with the costliest late arrivals).
const MAX_LANES: usize = 32;
const WIDTH: f64 = 960.0;
const LABEL: f64 = 110.0;
const LANE: f64 = 18.0;

/// (colour, legend) of a late arrival by what filled its segment most.
fn kind(l: &Late) -> (&'static str, &'static str) {
    let parts = [
        (l.work_ns, ("#e8912d", "more work")),
        (l.host_ns, ("#d1352b", "host gap")),
        (l.late_ns, ("#7e57c2", "late step start")),
    ];
    parts
        .iter()
        .max_by_key(|p| p.0)
        .map_or(("#999", ""), |p| p.1)
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The chart, or an empty string when the analysis has no late arrival to draw.
pub(crate) fn chart(a: &Analysis) -> String {
    let p = &a.path;
    let Some(first) = p.marks.first() else {
        return String::new();
    };
    let t0 = first.seg_start_ns.get() as f64;
    // Three steps, or less when the late arrivals end sooner (a one-step profile): the chart
    // spans what there is to draw, never empty lanes.
    let extent = p
        .marks
        .iter()
        .map(|l| l.start_ns.get() as f64 - t0)
        .fold(0.0, f64::max)
        * 1.05;
    let span = match (p.step_ns > 0.0, extent > 0.0) {
        (true, true) => (3.0 * p.step_ns).min(extent),
        (true, false) => 3.0 * p.step_ns,
        (false, true) => extent,
        (false, false) => 1e6,
    };
    let t1 = t0 + span;
    let shown: Vec<&Late> = p
        .marks
        .iter()
        .filter(|l| (l.seg_start_ns.get() as f64) < t1 && (l.start_ns.get() as f64) > t0)
        .collect();
    // Lanes: every rank of the worlds shown, the costliest first when there are too many.
    let mut cost: BTreeMap<&str, Ns> = BTreeMap::new();
    for l in &shown {
        *cost.entry(l.rank.as_str()).or_default() += l.cost_ns;
    }
    let mut lanes: Vec<&str> = a.ranks.iter().map(|r| r.figures.rank.as_str()).collect();
    if lanes.len() > MAX_LANES {
        lanes.sort_by_key(|r| std::cmp::Reverse(cost.get(r).copied().unwrap_or(Ns::ZERO)));
        lanes.truncate(MAX_LANES);
        let order: Vec<&str> = a.ranks.iter().map(|r| r.figures.rank.as_str()).collect();
        lanes.sort_by_key(|r| order.iter().position(|o| o == r));
    }
    let lane_of = |r: &str| lanes.iter().position(|x| *x == r);
    let h = 24.0 + LANE * lanes.len() as f64 + 30.0;
    let x = |t: f64| LABEL + (WIDTH - LABEL - 10.0) * ((t - t0) / span).clamp(0.0, 1.0);
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg id="critical-path" width="{WIDTH}" height="{h}" viewBox="0 0 {WIDTH} {h}">"#
    );
    for (i, r) in lanes.iter().enumerate() {
        let y = 20.0 + LANE * i as f64;
        let _ = write!(
            s,
            r##"<text x="4" y="{}">{}</text><line x1="{LABEL}" y1="{}" x2="{}" y2="{}" stroke="#e1e4e8"/>"##,
            y + 12.0,
            esc(r),
            y + LANE / 2.0,
            WIDTH - 10.0,
            y + LANE / 2.0
        );
    }
    for l in &shown {
        let Some(i) = lane_of(&l.rank) else { continue };
        let y = 20.0 + LANE * i as f64;
        let (fill, what) = kind(l);
        let (a0, a1) = (x(l.seg_start_ns.get() as f64), x(l.start_ns.get() as f64));
        // The segment faint, what it cost the others (its last `cost` ns) solid.
        let c0 = x((l.start_ns.get() - l.cost_ns.get()).max(l.seg_start_ns.get()) as f64);
        let _ = write!(
            s,
            r#"<rect x="{a0:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{fill}" fill-opacity="0.18"/><rect class="late" x="{c0:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{fill}"><title>{}: last at {} #{}, +{:.1} µs for the others ({what})</title></rect>"#,
            y + 3.0,
            (a1 - a0).max(1.0),
            LANE - 6.0,
            y + 3.0,
            (a1 - c0).max(1.0),
            LANE - 6.0,
            esc(&l.rank),
            esc(&l.name),
            l.index,
            l.cost_ns.as_us()
        );
        if (l.cost_ns.get() as f64) < 0.01 * p.step_ns {
            continue;
        }
        // Across the lanes of its world: the others wait here.
        let members = a.collectives.worlds.get(l.world);
        let ys: Vec<f64> = lanes
            .iter()
            .enumerate()
            .filter(|(_, r)| members.is_none_or(|m| m.iter().any(|x| x == *r)))
            .map(|(k, _)| 20.0 + LANE * k as f64)
            .collect();
        if let (Some(lo), Some(hi)) = (ys.first(), ys.last()) {
            let _ = write!(
                s,
                r#"<line class="wait" x1="{a1:.1}" y1="{lo:.1}" x2="{a1:.1}" y2="{:.1}" stroke="{fill}" stroke-width="1.5"/>"#,
                hi + LANE
            );
        }
    }
    let ly = h - 10.0;
    let mut lx = LABEL;
    for (fill, what) in [
        ("#e8912d", "more work"),
        ("#d1352b", "host gap (GPU idle)"),
        ("#7e57c2", "late step start"),
    ] {
        let _ = write!(
            s,
            r#"<rect x="{lx}" y="{}" width="10" height="10" fill="{fill}"/><text x="{}" y="{ly}">{what}</text>"#,
            ly - 9.0,
            lx + 14.0
        );
        lx += 160.0;
    }
    let _ = write!(
        s,
        r#"<text x="{lx}" y="{ly}">{:.2} ms shown</text></svg>"#,
        span / 1e6
    );
    s
}
