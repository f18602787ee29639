//! A slowdown that moves between ranks from step to step: in each step one rank arrives last
//! at the collectives and the others wait for it, but a different rank from step to step (the
//! sequence lengths or the batch a rank draws, a data-loader hiccup, a GC pause). No rank's own
//! cost holds over the steps, so no rank is the culprit — while the steps' cost does hold, so
//! the profile is not balanced either. The verdict says so instead of naming one rank or
//! calling it noise.
//!
//! The rule, on the critical path's per-step table ([`crate::analyze::reduce::path::PathStep`]):
//! - a step is *costly* when its late arrivals cost at least the threshold of the step;
//! - at least three steps, and at least half of them, are costly;
//! - the costly steps' costliest ranks take turns: at least two of them, none costliest in
//!   more than half of the costly steps;
//! - the costliest rank of a costly step costs it at least twice the threshold, on the mean
//!   over the costly steps: one rank holds each step up, the step-to-step jitter of every rank
//!   does not (a control recording's costliest ranks cost it 6–11 %).
//!
//! What it costs: the late arrivals' local charge per step, or, when the what-if's replay is
//! trusted, what the replay loses to imbalance (replayed less ideal, every world): in a
//! pipeline the local charge counts each fill and drain bubble as a late arrival (the
//! receiver did nothing before the transfer), the replay does not.

use crate::analyze::reduce::path::{CriticalPath, Kind, PathStep};

/// A slowdown that moves between ranks.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Moving {
    /// The costly steps: (step, costliest rank), in step order.
    pub(super) turns: Vec<(String, String)>,
    /// The ranks that take turns.
    pub(super) ranks: usize,
    /// What the late arrivals cost, per step (the mean over every measured step), ns: the
    /// replay's loss to imbalance when `replayed`, else their local charge.
    pub(super) cost_ns: f64,
    /// The cost is the trusted what-if's.
    pub(super) replayed: bool,
    /// The mean step, ns.
    pub(super) step_ns: f64,
    /// The costliest ranks' common kind, when they share one.
    pub(super) kind: Option<Kind>,
    /// Steps measured.
    pub(super) steps: usize,
}

/// The slowdown that moves between ranks, when the critical path's steps show one
/// (`threshold`: a fraction of the step).
pub(super) fn moving(p: &CriticalPath, threshold: f64) -> Option<Moving> {
    let steps = &p.per_step;
    let costly: Vec<&PathStep> = steps.iter().filter(|s| costly(s, threshold)).collect();
    if costly.len() < 3 || 2 * costly.len() < steps.len() {
        return None;
    }
    let tops: Vec<&str> = costly.iter().filter_map(|s| s.top_who.as_deref()).collect();
    if !takes_turns(&tops, costly.len()) || mean_top_share(&costly) < 2.0 * threshold {
        return None;
    }
    let mut ranks = tops.clone();
    ranks.sort_unstable();
    ranks.dedup();
    let first_kind = costly.first().and_then(|s| s.top_kind);
    let w = &p.what_if;
    let (cost_ns, replayed) = if w.trusted() {
        // The worlds (DP replicas) step side by side: a step loses their mean, not their sum.
        let lost: i64 = w
            .worlds
            .iter()
            .map(|x| x.replayed.get() - x.ideal.get())
            .sum();
        let cost = lost.max(0) as f64 / w.worlds.len().max(1) as f64;
        // What the replay says every rank typical gives back must reach the threshold too:
        // the local charges that made the steps costly count waits a pipeline's bubbles hold.
        if cost < threshold * p.step_ns {
            return None;
        }
        (cost, true)
    } else {
        let local = steps.iter().map(|s| s.cost_ns.get() as f64).sum::<f64>();
        (local / steps.len() as f64, false)
    };
    Some(Moving {
        turns: costly
            .iter()
            .filter_map(|s| Some((s.step.clone(), s.top_who.clone()?)))
            .collect(),
        ranks: ranks.len(),
        cost_ns,
        replayed,
        step_ns: p.step_ns,
        kind: first_kind.filter(|k| costly.iter().all(|s| s.top_kind == Some(*k))),
        steps: steps.len(),
    })
}

/// Whether a step's late arrivals cost it at least `threshold` of it.
fn costly(s: &PathStep, threshold: f64) -> bool {
    s.top_who.is_some()
        && s.step_ns.get() > 0
        && s.cost_ns.get() as f64 >= threshold * s.step_ns.get() as f64
}

/// Whether the costliest ranks of `n` steps take turns: two or more, none in more than half.
fn takes_turns(tops: &[&str], n: usize) -> bool {
    if tops.len() < n {
        return false;
    }
    let most = tops
        .iter()
        .map(|t| tops.iter().filter(|u| *u == t).count())
        .max()
        .unwrap_or(0);
    most >= 1 && 2 * most <= n
}

/// The costliest rank's cost over its step, the mean over `steps`.
fn mean_top_share(steps: &[&PathStep]) -> f64 {
    let shares: Vec<f64> = steps
        .iter()
        .map(|s| s.top_ns.get() as f64 / s.step_ns.get() as f64)
        .collect();
    shares.iter().sum::<f64>() / shares.len().max(1) as f64
}

/// The first line: "Imbalanced, the slowdown moves between ranks: …".
pub(super) fn line(m: &Moving, metric: &str) -> String {
    const SHOWN: usize = 4;
    let mut turns: Vec<String> = m
        .turns
        .iter()
        .take(SHOWN)
        .map(|(step, who)| format!("step {step} {who}"))
        .collect();
    if m.turns.len() > SHOWN {
        turns.push(format!("… {} steps in all", m.turns.len()));
    }
    let after = match m.kind {
        Some(Kind::Work) => format!(", each time after more {metric} than the median rank"),
        Some(Kind::Host) => ", each time after a gap on its host".to_string(),
        Some(Kind::LateStart) => ", each time starting the step late".to_string(),
        Some(Kind::Transfer) | None => String::new(),
    };
    let pct = if m.step_ns > 0.0 {
        100.0 * m.cost_ns / m.step_ns
    } else {
        0.0
    };
    let cost = if m.replayed {
        "The imbalance costs"
    } else {
        "Late arrivals cost"
    };
    let how = if m.replayed {
        "; re-simulated with every rank typical"
    } else {
        ""
    };
    format!(
        "Imbalanced, the slowdown moves between ranks: in {} of {} steps one rank arrives last at the collectives and the others wait for it, a different one from step to step ({}; {} ranks take turns){after}. {cost} {:.2} ms a step ({pct:.1} % of the {:.2} ms step{how}), and no one rank most of it: look at what changes from step to step (the batch or sequence lengths a rank draws, data loading, pauses).",
        m.turns.len(),
        m.steps,
        turns.join(", "),
        m.ranks,
        m.cost_ns / 1e6,
        m.step_ns / 1e6
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::Ns;

    fn step(n: usize, who: &str, step_ms: f64, cost_ms: f64, top_ms: f64) -> PathStep {
        PathStep {
            step: n.to_string(),
            step_ns: Ns::new((step_ms * 1e6) as i64),
            cost_ns: Ns::new((cost_ms * 1e6) as i64),
            top_who: Some(who.to_string()),
            top_kind: Some(Kind::Work),
            top_ns: Ns::new((top_ms * 1e6) as i64),
        }
    }

    fn path(per_step: Vec<PathStep>) -> CriticalPath {
        let n = per_step.len() as f64;
        CriticalPath {
            steps: per_step.len(),
            step_ns: per_step.iter().map(|s| s.step_ns.get() as f64).sum::<f64>() / n,
            per_step,
            ..Default::default()
        }
    }

    #[test]
    fn ranks_that_take_turns_holding_each_step_up_move() {
        let p = path(vec![
            step(2, "R2", 100.0, 50.0, 40.0),
            step(3, "R3", 100.0, 40.0, 30.0),
            step(4, "R0", 100.0, 40.0, 30.0),
            step(5, "R1", 100.0, 50.0, 40.0),
        ]);
        let m = moving(&p, 0.05).expect("moves");
        assert_eq!((m.turns.len(), m.ranks, m.steps), (4, 4, 4));
        assert!((m.cost_ns - 45e6).abs() < 1.0);
        assert_eq!(m.kind, Some(Kind::Work));
    }

    #[test]
    fn a_trusted_replay_gives_the_cost_not_the_local_charge() {
        use crate::analyze::reduce::path::whatif::{WhatIf, WorldIf};
        let mut p = path(vec![
            step(2, "R2", 100.0, 50.0, 40.0),
            step(3, "R3", 100.0, 40.0, 30.0),
            step(4, "R0", 100.0, 40.0, 30.0),
        ]);
        let world = |error_pct: f64| WorldIf {
            world: 0,
            who: "R0–R3".to_string(),
            collectives: 12,
            recorded: Ns::new(100_000_000),
            replayed: Ns::new(100_000_000),
            ideal: Ns::new(88_000_000),
            slowdown: 100.0 / 88.0,
            lost_median: Ns::new(12_000_000),
            error_pct,
            pipeline: false,
        };
        p.what_if = WhatIf {
            worlds: vec![world(0.5)],
            error_pct: 0.5,
            ..Default::default()
        };
        let m = moving(&p, 0.05).expect("moves");
        assert!(m.replayed && (m.cost_ns - 12e6).abs() < 1.0, "{m:?}");
        assert!(line(&m, "cpu work").contains("The imbalance costs 12.00 ms a step"));
        // Not trusted: the local charge, (50 + 40 + 40) / 3.
        p.what_if = WhatIf {
            worlds: vec![world(9.0)],
            error_pct: 9.0,
            ..Default::default()
        };
        let m = moving(&p, 0.05).expect("moves");
        assert!(
            !m.replayed && (m.cost_ns - 130e6 / 3.0).abs() < 1.0,
            "{m:?}"
        );
        // Two replicas side by side, each losing 12 ms a step: the step loses 12, not 24.
        p.what_if = WhatIf {
            worlds: vec![
                world(0.5),
                WorldIf {
                    world: 1,
                    ..world(0.5)
                },
            ],
            error_pct: 0.5,
            ..Default::default()
        };
        let m = moving(&p, 0.05).expect("moves");
        assert!((m.cost_ns - 12e6).abs() < 1.0, "{m:?}");
        // Trusted, and every rank typical gives back 2 % of the 100 ms step: under the 5 %
        // threshold, whatever the local charges (a pipeline's bubbles): no verdict.
        p.what_if = WhatIf {
            worlds: vec![WorldIf {
                ideal: Ns::new(98_000_000),
                ..world(0.5)
            }],
            error_pct: 0.5,
            ..Default::default()
        };
        assert_eq!(moving(&p, 0.05), None);
    }

    #[test]
    fn one_rank_in_most_steps_small_costs_or_few_steps_do_not_move() {
        // R0 costliest in 3 of 4 steps: its own cause, not a moving one.
        let p = path(vec![
            step(2, "R0", 100.0, 50.0, 40.0),
            step(3, "R0", 100.0, 40.0, 30.0),
            step(4, "R1", 100.0, 40.0, 30.0),
            step(5, "R0", 100.0, 50.0, 40.0),
        ]);
        assert_eq!(moving(&p, 0.05), None);
        // Each step's costliest rank holds it up 6 %: jitter, not a straggler.
        let p = path(vec![
            step(2, "R0", 100.0, 10.0, 6.0),
            step(3, "R1", 100.0, 10.0, 6.0),
            step(4, "R2", 100.0, 10.0, 6.0),
        ]);
        assert_eq!(moving(&p, 0.05), None);
        // Two steps cannot show turns.
        let p = path(vec![
            step(2, "R0", 100.0, 50.0, 40.0),
            step(3, "R1", 100.0, 50.0, 40.0),
        ]);
        assert_eq!(moving(&p, 0.05), None);
    }
}
