//! `compare --power`: how often the gate would find a planted regression, for a baseline's own
//! step-to-step spread. For one metric — the largest non-communication class on one rank, the
//! place a kernel regression shows first — each trial draws N steps with replacement from the
//! baseline's samples for each side, multiplies the current side's by (1 + effect), and runs the
//! gate's decision on them ([`super::decide`]) with the family adjustment the first Holm step
//! makes for the summary's number of tested rows (p < α / m). The detection rate is the share of
//! trials declared a regression. Run-to-run drift is not in the simulation (only the noise floor
//! learned from several baselines is): the figures are an upper bound on real captures.

use anyhow::{bail, Result};
use serde::Serialize;

use super::decide;
use super::diff::Decision;
use super::samples::{lookup, lookup_vs_peers, Key, Samples};
use super::stats::{median, SplitMix};
use crate::analyze::classes::COMM;
use crate::analyze::summary::Summary;

/// Effects planted, in %.
pub const EFFECTS: [f64; 3] = [2.0, 5.0, 10.0];
/// Steps per side.
pub const STEPS: [usize; 3] = [8, 16, 32];
/// Trials per cell.
pub const TRIALS: usize = 200;

/// The detection table of one metric.
#[derive(Debug, Clone, Serialize)]
pub struct Power {
    /// The metric simulated: `gemm on TP00`.
    pub metric: String,
    /// Its baseline steps, and their spread (median absolute deviation over the median, %).
    pub baseline_steps: usize,
    pub spread_pct: f64,
    /// The band a change must clear: max(`--max-regression`, noise floor), %.
    pub band_pct: f64,
    /// Rows a comparison with this baseline tests (the family).
    pub family: usize,
    pub trials: usize,
    pub effects_pct: Vec<f64>,
    pub steps: Vec<usize>,
    /// `detected[i][j]`: share of trials with `steps[i]` steps and `effects_pct[j]` declared a
    /// regression.
    pub detected: Vec<Vec<f64>>,
}

/// Every (key, name, samples) of `s` a comparison would test: each rank's classes.
fn rank_classes(s: &Summary) -> Vec<(String, Vec<i64>)> {
    let mut out = Vec::new();
    for r in &s.ranks {
        for c in s.classes.iter().filter(|c| c.as_str() != COMM) {
            let key = Key::RankClass(r.figures.rank.clone(), c.clone());
            if let Some(v) = lookup_vs_peers(s, &key).or_else(|| lookup(s, &key)) {
                out.push((format!("{c} on {}", r.figures.rank), v));
            }
        }
    }
    out
}

/// Median absolute deviation over the median, in %.
fn spread(v: &[i64]) -> f64 {
    let m = median(&mut v.to_vec());
    let mut dev: Vec<i64> = v.iter().map(|x| (x - m).abs()).collect();
    if m <= 0 {
        return 0.0;
    }
    median(&mut dev) as f64 / m as f64 * 100.0
}

/// One trial: N steps per side drawn from `pool`, the current side's scaled by `1 + e`, judged
/// against `band` with the first Holm step over a family of `m`.
fn trial(pool: &[i64], n: usize, e: f64, rng: &mut SplitMix, band: f64, m: usize) -> bool {
    let mut draw = |k: usize| -> Vec<i64> { (0..k).map(|_| pool[rng.below(pool.len())]).collect() };
    let base = vec![draw(n)];
    let cur: Vec<i64> = draw(n)
        .into_iter()
        .map(|x| (x as f64 * (1.0 + e / 100.0)).round() as i64)
        .collect();
    let s = Samples {
        base,
        cur,
        vs_peers: true,
    };
    let Some(mut st) = decide::test(&s, band) else {
        return false;
    };
    st.p_adjusted = (st.p_value * m as f64).min(1.0);
    decide::decision(&st) == Decision::Regression
}

/// The detection table for the baselines' largest non-communication class on a rank.
pub fn power(baselines: &[Summary], max_pct: f64) -> Result<Power> {
    let Some(first) = baselines.first() else {
        bail!("--power needs a baseline");
    };
    let Some((metric, _)) = rank_classes(first)
        .into_iter()
        .max_by_key(|(n, v)| (median(&mut v.clone()), std::cmp::Reverse(n.clone())))
    else {
        bail!("--power: the baseline keeps no per-step samples (no steps, or a summary saved by an older rankprof)");
    };
    let pool: Vec<Vec<i64>> = baselines
        .iter()
        .filter_map(|b| rank_classes(b).into_iter().find(|(n, _)| *n == metric))
        .map(|(_, v)| v)
        .collect();
    let family = rank_classes(first).len() + first.ranks.len() + first.classes.len() + 2;
    let floor = decide::noise_floor(&Samples {
        base: pool.clone(),
        cur: Vec::new(),
        vs_peers: true,
    });
    let all = pool.concat();
    let band = max_pct.max(floor);
    let mut rng = SplitMix::new(0x9E37_79B9);
    let detected = STEPS
        .iter()
        .map(|&n| {
            EFFECTS
                .iter()
                .map(|&e| {
                    let hits = (0..TRIALS)
                        .filter(|_| trial(&all, n, e, &mut rng, band, family))
                        .count();
                    hits as f64 / TRIALS as f64
                })
                .collect()
        })
        .collect();
    Ok(Power {
        baseline_steps: pool.iter().map(Vec::len).sum(),
        spread_pct: spread(&all),
        band_pct: band,
        metric,
        family,
        trials: TRIALS,
        effects_pct: EFFECTS.to_vec(),
        steps: STEPS.to_vec(),
        detected,
    })
}
