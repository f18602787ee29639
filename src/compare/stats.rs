//! The statistics of the gate, in plain Rust and deterministic (a fixed seed per metric, so the
//! same two inputs always give the same intervals and the same verdict):
//!
//! - [`mann_whitney_greater`]: the one-sided Mann–Whitney U test that CURRENT's steps are slower
//!   than BASELINE's (normal approximation with tie and continuity corrections). It makes no
//!   assumption on the shape of the step times (steps of a serving run are bimodal: prefill and
//!   decode) and one slow step cannot make it significant.
//! - [`hodges_lehmann`]: the shift the U test measures (the median of all pairwise
//!   differences) with the interval the test inverts to, distribution-free. (A percentile
//!   bootstrap of the ratio of medians was tried first: with prefill and decode steps mixed, a
//!   resampled median jumps from one kind to the other and the interval spans +300 %.)
//! - [`holm`]: Holm's step-down adjustment of a family of p-values (family-wise error rate).

/// splitmix64: `compare --power`'s generator (a fixed seed: the same table every run).
pub(crate) struct SplitMix(u64);

impl SplitMix {
    pub(crate) fn new(seed: u64) -> SplitMix {
        SplitMix(seed)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n` > 0; the modulo bias is below 2^-40 for the sizes used here).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}

/// The median by nearest rank (the lower median), as the summary's `*_median_ns`; 0 when empty.
pub(crate) fn median(v: &mut [i64]) -> i64 {
    if v.is_empty() {
        return 0;
    }
    let k = (v.len() - 1) / 2;
    *v.select_nth_unstable(k).1
}

/// Student's t quantile for a one-sided 95 % bound with `df` degrees of freedom (`df` ≥ 1;
/// the exact table to 30, then the normal's 1.645 plus its first correction term).
pub(crate) fn t95_one_sided(df: usize) -> f64 {
    const T: [f64; 30] = [
        6.314, 2.920, 2.353, 2.132, 2.015, 1.943, 1.895, 1.860, 1.833, 1.812, 1.796, 1.782, 1.771,
        1.761, 1.753, 1.746, 1.740, 1.734, 1.729, 1.725, 1.721, 1.717, 1.714, 1.711, 1.708, 1.706,
        1.703, 1.701, 1.699, 1.697,
    ];
    match df {
        0 => f64::NAN,
        1..=30 => T[df - 1],
        _ => 1.645 * (1.0 + (1.0 + 1.645 * 1.645) / (4.0 * df as f64)),
    }
}

/// How far above the mean of `runs` (each a baseline run's value) one more run of the same
/// load may land by chance, in % of that mean: the one-sided 95 % prediction bound
/// t(n−1) · s · √(1 + 1/n) of a normal sample of n runs. 0 with fewer than two runs (nothing
/// learned) or a mean ≤ 0. Two runs give a wide bound (t = 6.3): that is what two runs know.
pub(crate) fn run_to_run_bound_pct(runs: &[i64]) -> f64 {
    let n = runs.len();
    if n < 2 {
        return 0.0;
    }
    let mean = runs.iter().map(|&v| v as f64).sum::<f64>() / n as f64;
    if mean <= 0.0 {
        return 0.0;
    }
    let var = runs.iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    let bound = t95_one_sided(n - 1) * var.sqrt() * (1.0 + 1.0 / n as f64).sqrt();
    bound / mean * 100.0
}

/// How far one member's level may move between two runs by chance, in % of the levels' mean:
/// `levels` are the members' levels in one run (each rank's median ratio over its peers), taken
/// as draws of one spread. The difference of two draws has twice their variance, so the bound is
/// the one-sided 95 % t(n−1) · s · √2. 0 with fewer than 3 levels: two ranks' ratios over each
/// other mirror each other, and their spread is the one imbalance between them, not a sample.
pub(crate) fn shift_bound_pct(levels: &[i64]) -> f64 {
    let n = levels.len();
    if n < 3 {
        return 0.0;
    }
    let mean = levels.iter().map(|&v| v as f64).sum::<f64>() / n as f64;
    if mean <= 0.0 {
        return 0.0;
    }
    let var = levels
        .iter()
        .map(|&v| (v as f64 - mean).powi(2))
        .sum::<f64>()
        / (n - 1) as f64;
    t95_one_sided(n - 1) * var.sqrt() * std::f64::consts::SQRT_2 / mean * 100.0
}

/// The standard normal survival function P(Z > z) (Abramowitz & Stegun 7.1.26, |error| < 1.5e-7).
pub(crate) fn normal_sf(z: f64) -> f64 {
    let x = z.abs() / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.327_591_1 * x);
    let poly = t
        * (0.254_829_592
            + t * (-0.284_496_736
                + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    let erfc = poly * (-x * x).exp();
    if z >= 0.0 {
        0.5 * erfc
    } else {
        1.0 - 0.5 * erfc
    }
}

/// One-sided p-value of "CURRENT's values are larger than BASELINE's" (Mann–Whitney U, normal
/// approximation, mid-ranks for ties, continuity correction). 1 when a side is empty or all
/// values are equal.
pub(crate) fn mann_whitney_greater(base: &[i64], cur: &[i64]) -> f64 {
    let (nb, nc) = (base.len() as f64, cur.len() as f64);
    if base.is_empty() || cur.is_empty() {
        return 1.0;
    }
    let mut all: Vec<(i64, bool)> = base.iter().map(|&x| (x, false)).collect();
    all.extend(cur.iter().map(|&x| (x, true)));
    all.sort_unstable();
    let n = all.len() as f64;
    let (mut rank_sum_cur, mut ties) = (0.0, 0.0);
    let mut i = 0;
    while i < all.len() {
        let j = i + all[i..].iter().take_while(|x| x.0 == all[i].0).count();
        let mid = (i + j + 1) as f64 / 2.0; // mean of ranks i+1 ..= j
        rank_sum_cur += mid * all[i..j].iter().filter(|x| x.1).count() as f64;
        let t = (j - i) as f64;
        ties += t * t * t - t;
        i = j;
    }
    let u = rank_sum_cur - nc * (nc + 1.0) / 2.0;
    let var = nb * nc / 12.0 * ((n + 1.0) - ties / (n * (n - 1.0)));
    if var <= 0.0 {
        return 1.0;
    }
    normal_sf((u - nb * nc / 2.0 - 0.5) / var.sqrt())
}

/// The Hodges–Lehmann shift of CURRENT over BASELINE (the median of every pairwise difference
/// c − b, ns) with its distribution-free interval at `level` (e.g. 0.95): the K-th smallest and
/// largest pairwise differences, K from the Mann–Whitney U distribution (normal approximation,
/// tie-corrected) — the interval the U test inverts to, so the two agree. `None` when a side is
/// empty. Steps of different kinds (prefill and decode) make pairs far apart, but those fall in
/// the tails and leave the centre, and the interval, to the pairs of like steps.
pub(crate) fn hodges_lehmann(base: &[i64], cur: &[i64], level: f64) -> Option<(f64, f64, f64)> {
    if base.is_empty() || cur.is_empty() {
        return None;
    }
    let mut d: Vec<i64> = cur
        .iter()
        .flat_map(|c| base.iter().map(move |b| c - b))
        .collect();
    d.sort_unstable();
    let nm = d.len();
    let (n, m) = (base.len() as f64, cur.len() as f64);
    let z = z_of(level);
    let sd = (n * m * (n + m + 1.0) / 12.0).sqrt();
    // C = ⌊nm/2 − z·sd⌋, 1-indexed: the C-th smallest and the C-th largest difference (at
    // least the extremes).
    let c = (nm as f64 / 2.0 - z * sd).floor().max(1.0) as usize;
    let k = (c - 1).min(nm - 1);
    let mid = if nm % 2 == 1 {
        d[nm / 2] as f64
    } else {
        (d[nm / 2 - 1] + d[nm / 2]) as f64 / 2.0
    };
    Some((mid, d[k] as f64, d[nm - 1 - k] as f64))
}

/// The two-sided normal quantile of `level` (0.90, 0.95, 0.99; 0.95 otherwise).
fn z_of(level: f64) -> f64 {
    if (level - 0.90).abs() < 1e-9 {
        1.644_854
    } else if (level - 0.99).abs() < 1e-9 {
        2.575_829
    } else {
        1.959_964
    }
}

/// Holm's step-down adjusted p-values, in the input's order: the i-th smallest is multiplied by
/// (m − i), made monotone, capped at 1. Reject where adjusted < α: family-wise error ≤ α.
pub(crate) fn holm(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| p[a].total_cmp(&p[b]));
    let mut adj = vec![1.0; m];
    let mut running: f64 = 0.0;
    for (i, &k) in order.iter().enumerate() {
        running = running.max(((m - i) as f64 * p[k]).min(1.0));
        adj[k] = running;
    }
    adj
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_rank_may_move_by_t_times_the_ranks_spread_times_root_two() {
        // Levels 0.9, 1.0, 1.1 (ppm): mean 1, s = 0.1, t(2) = 2.920: 2.920 × 0.1 × √2 = 41.3 %.
        let b = shift_bound_pct(&[900_000, 1_000_000, 1_100_000]);
        assert!(
            (b - 2.920 * 10.0 * std::f64::consts::SQRT_2).abs() < 1e-6,
            "{b}"
        );
        assert_eq!(
            shift_bound_pct(&[900_000, 1_100_000]),
            0.0,
            "two ranks mirror"
        );
        assert_eq!(shift_bound_pct(&[1_000_000; 4]), 0.0);
    }

    use super::*;

    #[test]
    fn normal_tail_matches_tabulated_values() {
        // Φ(1.96) = 0.975, Φ(1.645) = 0.95, Φ(0) = 0.5 (standard tables).
        assert!((normal_sf(1.96) - 0.025).abs() < 1e-4);
        assert!((normal_sf(1.645) - 0.05).abs() < 1e-4);
        assert!((normal_sf(0.0) - 0.5).abs() < 1e-7);
        assert!((normal_sf(-1.96) - 0.975).abs() < 1e-4);
    }

    #[test]
    fn mann_whitney_follows_a_hand_computed_case() {
        // base 1..=5, cur 6..=10: U = 25 (every pair), mean 12.5, var = 25·11/12;
        // z = (25 − 12.5 − 0.5) / sqrt(22.9167) = 2.5067, p = 0.00609.
        let p = mann_whitney_greater(&[1, 2, 3, 4, 5], &[6, 7, 8, 9, 10]);
        assert!((p - 0.00609).abs() < 2e-4, "{p}");
        // The other way round: no evidence of slower.
        assert!(mann_whitney_greater(&[6, 7, 8, 9, 10], &[1, 2, 3, 4, 5]) > 0.99);
        // All tied: no evidence.
        assert_eq!(mann_whitney_greater(&[3, 3], &[3, 3]), 1.0);
    }

    #[test]
    fn holm_multiplies_by_the_remaining_count_and_stays_monotone() {
        let a = holm(&[0.01, 0.04, 0.03, 0.5]);
        // Sorted 0.01·4 = 0.04, 0.03·3 = 0.09, 0.04·2 = 0.08 → 0.09 (monotone), 0.5·1 = 0.5.
        let want = [0.04, 0.09, 0.09, 0.5];
        for (x, w) in a.iter().zip(want) {
            assert!((x - w).abs() < 1e-12, "{a:?}");
        }
    }

    #[test]
    fn hodges_lehmann_follows_a_hand_computed_case() {
        // base 0..5, cur 10..15: pairwise differences 6..=14 (25 of them), median 10; with
        // n = m = 5, sd_U = sqrt(25·11/12) = 4.787, C = floor(12.5 − 1.96·4.787) = 3: the 3rd
        // smallest (7) and 3rd largest (13) of 6, 7, 7, 8, 8, 8, …, 13, 13, 14 (the exact
        // table's C for n = m = 5 at 95 % is 3 too).
        let (mid, lo, hi) = hodges_lehmann(&[0, 1, 2, 3, 4], &[10, 11, 12, 13, 14], 0.95)
            .unwrap_or((0.0, 0.0, 0.0));
        assert_eq!((mid, lo, hi), (10.0, 7.0, 13.0));
        assert_eq!(hodges_lehmann(&[], &[1], 0.95), None);
    }

    #[test]
    fn the_run_to_run_bound_is_the_t_prediction_bound() {
        // Runs 98, 100, 102: mean 100, s = 2; t(2) = 2.920, √(1 + 1/3) = 1.1547.
        let b = run_to_run_bound_pct(&[98, 100, 102]);
        assert!(
            (b - 2.920 * 2.0 * (4.0f64 / 3.0).sqrt()).abs() < 1e-9,
            "{b}"
        );
        assert_eq!(run_to_run_bound_pct(&[100]), 0.0);
        assert_eq!(run_to_run_bound_pct(&[0, 0]), 0.0);
        // The table meets the large-df form near 30 (1.697 vs 1.645·(1 + 3.706/124)).
        assert!((t95_one_sided(31) - 1.697).abs() < 0.01);
        assert!((t95_one_sided(1000) - 1.645).abs() < 0.01);
    }
}
