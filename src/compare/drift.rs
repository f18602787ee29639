//! One baseline cannot tell a change the machine made from one the code made, on the rows
//! measured in times.
//!
//! A capture's conditions (the machine's speed, clocks, thread placement, other load) move every
//! rank together, and they drift from run to run: on 16 real A/A captures of one TP4 workload
//! (fixtures/real-gloo/tp4-aa-*) the ranks' mean step went from 25 to 53 ms, while each rank's
//! time over its peers' in the same step stayed put. A rank's own rows are tested on that ratio
//! ([`super::samples`]), where the drift cancels; every other row is measured **in times** and
//! carries it: the job's rows (work, busy, each class over all ranks), a rank's communication
//! (mostly waiting for the others), and rows without per-step samples (time per launch).
//!
//! One baseline knows only its own step-to-step spread, which holds no run-to-run drift. So,
//! with one baseline, a row in times that the statistical gate (or the fixed threshold, for a
//! row without samples) would call a regression is **held inconclusive** ([`hold`]) — unless a
//! rank's own row regressed against its peers in the same comparison: then the change has a
//! rank to blame (the job's rows grow with that rank, the others wait for it), and the
//! regressions stand. Several baselines learn the drift (the noise floor of
//! [`super::decide`]), and decide as before. Time that appears where the baseline had none is
//! no drift: it still fails.

use super::diff::{Comparison, Decision, Row};

/// How a held row is worded: why one baseline cannot decide it, and what would.
pub(crate) const WHY: &str = "no rank moved against its peers: with one baseline that cannot \
     be told from the machine's drift between runs; give ≥ 3 baselines (--baseline a b c) to decide";

/// With one baseline and no rank's own row regressing, holds every row in times that would
/// regress as inconclusive (`drift` set; a tested row's decision becomes inconclusive). Returns
/// how many rows were held.
pub(crate) fn hold(c: &mut Comparison) -> usize {
    if !c.more_baselines.is_empty() || own_regressed(c) {
        return 0;
    }
    let (max_pct, min_ns) = (c.thresholds.max_regression_pct, c.thresholds.min_time_ns);
    let mut held = 0;
    for r in c.time_rows_mut() {
        if r.below_min(min_ns) || !regresses_in_times(r, max_pct) {
            continue;
        }
        r.drift = true;
        if let Some(st) = r.stat.as_mut() {
            st.decision = Decision::Inconclusive;
            st.steps_needed = None;
        }
        held += 1;
    }
    held
}

/// Some rank's own row (tested over its peers) is a regression.
fn own_regressed(c: &Comparison) -> bool {
    c.time_rows()
        .filter_map(|r| r.stat.as_ref())
        .any(|st| st.vs_peers && st.decision == Decision::Regression)
}

/// A row measured in times that would be a regression: tested and decided so, or without
/// samples and grown beyond its fixed band (time where the baseline had none is not drift).
fn regresses_in_times(r: &Row, max_pct: f64) -> bool {
    match &r.stat {
        Some(st) => !st.vs_peers && st.decision == Decision::Regression,
        None => r.delta_pct.is_some_and(|p| p > r.fixed_band_pct(max_pct)),
    }
}

#[cfg(test)]
mod tests {
    use super::super::diff::{RowStat, Status};
    use super::*;

    fn stat(vs_peers: bool, decision: Decision) -> RowStat {
        RowStat {
            change_pct: 20.0,
            ci_low_pct: 15.0,
            ci_high_pct: 25.0,
            confidence_pct: 95.0,
            p_value: 1e-4,
            p_adjusted: 1e-4,
            noise_floor_pct: 0.0,
            band_pct: 5.0,
            floor_from_ranks: false,
            baseline_steps: 12,
            baseline_runs: 1,
            current_steps: 12,
            vs_peers,
            decision,
            steps_needed: None,
        }
    }

    fn row(b: i64, c: i64, st: Option<RowStat>) -> Row {
        Row {
            stat: st,
            ..Row::new("x".into(), None, None, b, c)
        }
    }

    #[test]
    fn rows_in_times_that_would_regress_are_the_ones_drift_explains() {
        let job = row(100, 120, Some(stat(false, Decision::Regression)));
        assert!(regresses_in_times(&job, 5.0));
        let own = row(100, 120, Some(stat(true, Decision::Regression)));
        assert!(!regresses_in_times(&own, 5.0), "a rank over its peers");
        let unsure = row(100, 120, Some(stat(false, Decision::Inconclusive)));
        assert!(!regresses_in_times(&unsure, 5.0));
        assert!(regresses_in_times(&row(1000, 1060, None), 5.0));
        assert!(!regresses_in_times(&row(1000, 1050, None), 5.0), "at 5 %");
        assert!(!regresses_in_times(&row(0, 10, None), 5.0), "new time");
        assert_eq!(row(0, 10, None).status, Status::Ok);
    }
}
