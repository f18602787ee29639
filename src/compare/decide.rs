//! The statistical gate: every time row that has per-step samples on both sides is tested, the
//! family of tests is adjusted together, and each row is decided one of regression / no change
//! / inconclusive.
//!
//! The rule, for a row with baseline steps B (pooled over the baselines) and current steps C:
//!
//! - **change**: the Hodges–Lehmann shift of C over B (the median of every pairwise difference),
//!   over median(B), with its 95 % distribution-free interval (the one the U test inverts to;
//!   no random draws: the same inputs give the same interval);
//! - **p**: the one-sided Mann–Whitney U p-value of "C is slower than B", Holm-adjusted over
//!   every tested row of the comparison (ranks × classes × kernels classes is one family: the
//!   chance of any false alarm in the whole comparison stays below [`ALPHA`]);
//! - **band**: max(`--max-regression`, the row's noise floor); the noise floor is how far one
//!   more run may land above the baselines' run medians by chance, the one-sided 95 % t
//!   prediction bound over their mean (several baselines: their run-to-run spread); with one
//!   baseline, 0 for the rows in times (the step-to-step spread is then in the interval alone,
//!   and `super::drift` holds their regressions) and, for a rank's row over its peers, how far
//!   the ranks' levels spread in the baseline ([`rank_floors`]);
//! - **regression** when adjusted p < [`ALPHA`] *and* the interval's lower end is above the
//!   band; **no change** when its upper end is at or below the band; otherwise **inconclusive**,
//!   with the steps per side that would likely decide (the interval narrows as 1/√steps).

use super::diff::{Comparison, Decision, Row, RowStat};
use super::samples::{lookup_as, Samples};
use std::collections::BTreeMap;

use super::stats::{
    hodges_lehmann, holm, mann_whitney_greater, median, run_to_run_bound_pct, shift_bound_pct,
};
use crate::analyze::summary::Summary;

/// The family-wise error rate the Holm adjustment holds.
pub const ALPHA: f64 = 0.05;
/// The confidence of every interval.
pub const CONFIDENCE: f64 = 0.95;
/// The most steps an inconclusive row is told to capture (beyond: "more than this").
pub const MAX_STEPS_NEEDED: usize = 100_000;

/// The noise floor of a metric, in %: how far above the baselines' run medians one more run
/// of the same load may land by chance ([`run_to_run_bound_pct`] of the medians; 0 with one
/// baseline).
pub(crate) fn noise_floor(s: &Samples) -> f64 {
    let meds: Vec<i64> = s.base.iter().map(|b| median(&mut b.clone())).collect();
    run_to_run_bound_pct(&meds)
}

/// Tests one row's samples (p not yet adjusted, decision not yet made). `None` when the
/// baseline's median step has no time (a percentage means nothing): the fixed rule judges it.
pub(crate) fn test(s: &Samples, max_pct: f64) -> Option<RowStat> {
    let pooled = s.pooled();
    let mb = median(&mut pooled.clone());
    if mb <= 0 || s.cur.is_empty() {
        return None;
    }
    let (shift, lo, hi) = hodges_lehmann(&pooled, &s.cur, CONFIDENCE)?;
    let pct = |ns: f64| ns / mb as f64 * 100.0;
    let floor = noise_floor(s);
    let p = mann_whitney_greater(&pooled, &s.cur);
    Some(RowStat {
        change_pct: pct(shift),
        ci_low_pct: pct(lo),
        ci_high_pct: pct(hi),
        confidence_pct: CONFIDENCE * 100.0,
        p_value: p,
        p_adjusted: p,
        noise_floor_pct: floor,
        band_pct: max_pct.max(floor),
        floor_from_ranks: false,
        baseline_steps: pooled.len(),
        baseline_runs: s.base.len(),
        current_steps: s.cur.len(),
        vs_peers: s.vs_peers,
        decision: Decision::Inconclusive,
        steps_needed: None,
    })
}

/// Steps per side that would likely make the interval clear the band: the interval's
/// half-width shrinks as 1/√steps, so it must shrink by (half-width / margin).
fn steps_needed(st: &RowStat) -> usize {
    let half = (st.ci_high_pct - st.ci_low_pct) / 2.0;
    let margin = (st.band_pct - st.change_pct).abs();
    let have = st
        .current_steps
        .min(st.baseline_steps / st.baseline_runs.max(1))
        .max(1) as f64;
    if margin <= 1e-9 {
        return MAX_STEPS_NEEDED;
    }
    let n = (have * (half / margin).powi(2)).ceil();
    if n.is_finite() && n < MAX_STEPS_NEEDED as f64 {
        (n as usize).max(st.current_steps + 1)
    } else {
        MAX_STEPS_NEEDED
    }
}

/// The decision of a tested row whose p-value is adjusted.
pub(crate) fn decision(st: &RowStat) -> Decision {
    if st.p_adjusted < ALPHA && st.ci_low_pct > st.band_pct {
        Decision::Regression
    } else if st.ci_high_pct <= st.band_pct {
        Decision::NoChange
    } else {
        Decision::Inconclusive
    }
}

/// Tests every row that has samples and is above `--min-time-us`, adjusts the family (Holm)
/// and decides each; returns how many rows were tested.
pub(crate) fn run(c: &mut Comparison) -> usize {
    let (max_pct, min_ns) = (c.thresholds.max_regression_pct, c.thresholds.min_time_ns);
    let floors = rank_floors(c);
    let mut tested: Vec<&mut Row> = Vec::new();
    for r in c.time_rows_mut() {
        r.stat = None;
        r.drift = false;
        if r.below_min(min_ns) {
            continue;
        }
        if let Some(mut st) = r.samples.as_ref().and_then(|s| test(s, max_pct)) {
            if st.vs_peers && st.baseline_runs == 1 {
                raise_floor(&mut st, floors.get(&r.class).copied().unwrap_or(0.0));
            }
            r.stat = Some(st);
            tested.push(r);
        }
    }
    let p: Vec<f64> = tested
        .iter()
        .filter_map(|r| r.stat.as_ref().map(|s| s.p_value))
        .collect();
    for (r, adj) in tested.iter_mut().zip(holm(&p)) {
        if let Some(st) = r.stat.as_mut() {
            st.p_adjusted = adj;
            st.decision = decision(st);
            if st.decision == Decision::Inconclusive {
                st.steps_needed = Some(steps_needed(st));
            }
        }
    }
    tested.len()
}

/// One baseline knows no run-to-run spread, but a rank's row over its peers has one stand-in:
/// the ranks themselves. Each rank's level over its peers in the baseline (its median ratio) is
/// one draw of how a run places that rank (a core it shares, a slower link): on the real A/A
/// captures the ranks' levels spread as far within one capture as one rank's level moves
/// between captures. So each metric's floor (a rank's work: key `None`; a class on the ranks:
/// `Some(class)`) is [`shift_bound_pct`] of the ranks' baseline levels (0 below 3 ranks).
fn rank_floors(c: &Comparison) -> BTreeMap<Option<String>, f64> {
    let mut levels: BTreeMap<Option<String>, Vec<i64>> = BTreeMap::new();
    for r in c.ranks.iter().chain(&c.rank_classes) {
        let Some(s) = r.samples.as_ref().filter(|s| s.vs_peers) else {
            continue;
        };
        if let [only] = s.base.as_slice() {
            let level = median(&mut only.clone());
            levels.entry(r.class.clone()).or_default().push(level);
        }
    }
    levels
        .into_iter()
        .map(|(k, v)| (k, shift_bound_pct(&v)))
        .collect()
}

/// Raises a tested row's noise floor to `floor` (the ranks' spread) when that is larger.
fn raise_floor(st: &mut RowStat, floor: f64) {
    if floor > st.noise_floor_pct {
        st.noise_floor_pct = floor;
        st.band_pct = st.band_pct.max(floor);
        st.floor_from_ranks = true;
    }
}

/// Pools the other baselines' steps into every row that has samples (by the first baseline's
/// rank labels); a row some baseline keeps no samples for loses its samples (fixed rule). The
/// row's baseline figure becomes the pooled median. Returns the rows that lost their samples.
pub(crate) fn pool(c: &mut Comparison, more: &[Summary]) -> usize {
    let mut lost = 0;
    for r in c.time_rows_mut() {
        let (Some(s), Some((kb, _))) = (r.samples.as_mut(), r.key.as_ref()) else {
            continue;
        };
        let found: Option<Vec<Vec<i64>>> =
            more.iter().map(|m| lookup_as(m, kb, s.vs_peers)).collect();
        match found {
            // Ratios over peers: the row's times stay the first baseline's.
            Some(v) if s.vs_peers => s.base.extend(v),
            Some(v) => {
                s.base.extend(v);
                let b = median(&mut s.pooled());
                *r = Row {
                    samples: r.samples.take(),
                    key: r.key.take(),
                    floor_ns: r.floor_ns,
                    ..Row::new(
                        r.name.clone(),
                        r.rank.as_deref(),
                        r.class.as_deref(),
                        b,
                        r.current_ns.get(),
                    )
                };
            }
            None => {
                r.samples = None;
                lost += 1;
            }
        }
    }
    lost
}

/// Rows without per-step samples, with several baselines: each row's baseline becomes the
/// mean of the baselines' values (`others`: the same comparison built from each further
/// baseline) and its noise floor their [`run_to_run_bound_pct`], so the fixed threshold
/// judges it against max(`--max-regression`, that floor). A row some baseline lacks is left
/// as it is. Returns how many rows got a floor.
pub(crate) fn floor_unsampled(c: &mut Comparison, others: &[Comparison]) -> usize {
    if others.is_empty() {
        return 0;
    }
    let mut floored = 0;
    for r in c.time_rows_mut().filter(|r| r.samples.is_none()) {
        let same = |o: &Comparison| {
            o.time_rows()
                .find(|x| x.name == r.name && x.rank == r.rank && x.class == r.class)
                .map(|x| x.baseline_ns.get())
        };
        let Some(mut runs) = others.iter().map(same).collect::<Option<Vec<i64>>>() else {
            continue;
        };
        runs.push(r.baseline_ns.get());
        let mean = runs.iter().map(|&v| v as f64).sum::<f64>() / runs.len() as f64;
        *r = Row {
            floor_ns: r.floor_ns,
            key: r.key.take(),
            noise_floor_pct: Some(run_to_run_bound_pct(&runs)),
            ..Row::new(
                r.name.clone(),
                r.rank.as_deref(),
                r.class.as_deref(),
                mean.round() as i64,
                r.current_ns.get(),
            )
        };
        floored += 1;
    }
    floored
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stat(change: f64, lo: f64, hi: f64, p: f64, band: f64) -> RowStat {
        RowStat {
            change_pct: change,
            ci_low_pct: lo,
            ci_high_pct: hi,
            confidence_pct: 95.0,
            p_value: p,
            p_adjusted: p,
            noise_floor_pct: 0.0,
            band_pct: band,
            floor_from_ranks: false,
            baseline_steps: 16,
            baseline_runs: 1,
            current_steps: 16,
            vs_peers: false,
            decision: Decision::Inconclusive,
            steps_needed: None,
        }
    }

    #[test]
    fn the_three_answers_follow_the_interval_and_the_band() {
        assert_eq!(
            decision(&stat(10.0, 8.0, 12.0, 0.001, 5.0)),
            Decision::Regression
        );
        // Significant but not above the band: an interval across it is inconclusive.
        assert_eq!(
            decision(&stat(5.5, 4.0, 7.0, 0.001, 5.0)),
            Decision::Inconclusive
        );
        // Above the band but not significant after the family's adjustment.
        assert_eq!(
            decision(&stat(10.0, 6.0, 14.0, 0.2, 5.0)),
            Decision::Inconclusive
        );
        assert_eq!(
            decision(&stat(1.0, -2.0, 4.0, 0.3, 5.0)),
            Decision::NoChange
        );
        assert_eq!(
            decision(&stat(-9.0, -12.0, -6.0, 1.0, 5.0)),
            Decision::NoChange
        );
    }

    #[test]
    fn steps_needed_scale_with_the_square_of_the_interval_over_the_margin() {
        // Half-width 4 %, 2 % from the band: the interval must halve, so 4 × 16 steps.
        assert_eq!(steps_needed(&stat(3.0, -1.0, 7.0, 0.1, 5.0)), 64);
        assert_eq!(
            steps_needed(&stat(5.0, 1.0, 9.0, 0.1, 5.0)),
            MAX_STEPS_NEEDED
        );
    }

    #[test]
    fn the_noise_floor_is_the_prediction_bound_of_the_baselines_medians() {
        let s = Samples {
            base: vec![vec![100, 100, 100], vec![104, 104, 104], vec![96, 96, 96]],
            cur: vec![100],
            vs_peers: false,
        };
        // Medians 100, 104, 96: mean 100, s = 4, t(2) = 2.920, √(4/3): 13.49 %.
        let want = 2.920 * 4.0 * (4.0f64 / 3.0).sqrt();
        assert!((noise_floor(&s) - want).abs() < 1e-9, "{}", noise_floor(&s));
        let one = Samples {
            base: vec![vec![100, 150]],
            cur: vec![100],
            vs_peers: false,
        };
        assert_eq!(noise_floor(&one), 0.0);
    }
}
