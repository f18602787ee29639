//! Small statistics over per-rank (or per-step) figures, shared by the stages: smallest, mean
//! and largest ([`min_mean_max`]), max over mean and the coefficient of variation ([`spread`]),
//! the largest one ([`argmax`]), median and 90th percentile by nearest rank ([`median_p90`]), the
//! interpolated median of floats ([`median`]), a ratio that survives zeros ([`ratio`]) and
//! whether per-step samples are above zero beyond their own noise ([`above_zero`]).

/// Smallest, mean (integer division) and largest value; zeros when empty.
pub(crate) fn min_mean_max<T: Copy + Into<i64>>(v: &[T]) -> (i64, i64, i64) {
    let it = || v.iter().map(|&x| x.into());
    (
        it().min().unwrap_or(0),
        it().sum::<i64>() / v.len().max(1) as i64,
        it().max().unwrap_or(0),
    )
}

/// (max / mean, coefficient of variation) of per-rank values; (0, 0) when all are zero.
pub(crate) fn spread<T: Copy + Into<i64>>(v: &[T]) -> (f64, f64) {
    if v.is_empty() {
        return (0.0, 0.0);
    }
    let it = || v.iter().map(|&x| x.into());
    let n = v.len() as f64;
    let mean = it().map(|x| x as f64).sum::<f64>() / n;
    if mean <= 0.0 {
        return (0.0, 0.0);
    }
    let max = it().max().unwrap_or(0) as f64;
    let var = it().map(|x| (x as f64 - mean).powi(2)).sum::<f64>() / n;
    (max / mean, var.sqrt() / mean)
}

/// Index of the largest value (the first one on ties).
pub(crate) fn argmax<T: Copy + Ord>(v: &[T]) -> Option<usize> {
    let mut best: Option<usize> = None;
    for (i, &x) in v.iter().enumerate() {
        if best.is_none_or(|b| x > v[b]) {
            best = Some(i);
        }
    }
    best
}

/// The lower median (index `(n − 1) / 2` of the sorted values); 0 when empty.
pub(crate) fn lower_median(mut v: Vec<i64>) -> i64 {
    lower_median_in(&mut v)
}

/// [`lower_median`] of a slice, reordered in place (no allocation).
pub(crate) fn lower_median_in(v: &mut [i64]) -> i64 {
    if v.is_empty() {
        return 0;
    }
    let k = (v.len() - 1) / 2;
    *v.select_nth_unstable(k).1
}

/// Median and 90th percentile (nearest rank) of a list.
pub(crate) fn median_p90(v: &[i64]) -> (i64, i64) {
    if v.is_empty() {
        return (0, 0);
    }
    let mut s = v.to_vec();
    s.sort_unstable();
    let q = |p: f64| {
        let k = ((p * s.len() as f64).ceil() as usize).clamp(1, s.len());
        s[k - 1]
    };
    (q(0.5), q(0.9))
}

/// The median of a list (the mean of the two middle values for an even count); 0 when empty.
pub(crate) fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    match s.len() {
        0 => 0.0,
        n if n % 2 == 1 => s[n / 2],
        n => (s[n / 2 - 1] + s[n / 2]) / 2.0,
    }
}

/// `a / b`; ∞ for something over nothing, 1 for nothing over nothing.
pub(crate) fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        a / b
    } else if a > 0.0 {
        f64::INFINITY
    } else {
        1.0
    }
}

/// One-sided 95 % critical values of Student's t for 1 to 30 degrees of freedom; beyond,
/// the normal's 1.645.
const T95: [f64; 30] = [
    6.314, 2.920, 2.353, 2.132, 2.015, 1.943, 1.895, 1.860, 1.833, 1.812, 1.796, 1.782, 1.771,
    1.761, 1.753, 1.746, 1.740, 1.734, 1.729, 1.725, 1.721, 1.717, 1.714, 1.711, 1.708, 1.706,
    1.703, 1.701, 1.699, 1.697,
];

/// Whether the mean of per-step samples is above zero beyond their step-to-step spread: the
/// one-sided t-test at 95 % (mean > t · sd / √n). `None` for fewer than two samples: one step
/// cannot tell a cause from noise. Samples that never vary are above zero when positive.
pub(crate) fn above_zero(samples: &[f64]) -> Option<bool> {
    let n = samples.len();
    if n < 2 {
        return None;
    }
    let mean = samples.iter().sum::<f64>() / n as f64;
    let var = samples.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    let t = T95.get(n - 2).copied().unwrap_or(1.645);
    Some(mean > 0.0 && mean > t * var.sqrt() / (n as f64).sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn above_zero_by_hand() {
        // A planted 40 ms late start, three steps: 40.8, 44.1, 36.3 (t = 16.6 > 2.92).
        assert_eq!(above_zero(&[40.8, 44.1, 36.3]), Some(true));
        // A control's costliest rank: 0, 7.1, 18.4 (mean 8.5, sd 9.3: t = 1.58 < 2.92).
        assert_eq!(above_zero(&[0.0, 7.1, 18.4]), Some(false));
        assert_eq!(above_zero(&[5.0, 5.0]), Some(true));
        assert_eq!(above_zero(&[-1.0, -1.0, -1.0]), Some(false));
        assert_eq!(above_zero(&[3.0]), None);
        // 40 samples: the normal's 1.645 (mean 1, sd ≈ 1.01: t ≈ 6.3).
        let many: Vec<f64> = (0..40)
            .map(|i| if i % 2 == 0 { 0.0 } else { 2.0 })
            .collect();
        assert_eq!(above_zero(&many), Some(true));
    }

    #[test]
    fn spread_by_hand() {
        // totals 10, 20, 30: mean 20, max/mean 1.5, sd sqrt(200/3) = 8.165, cv 0.408
        let (m, cv) = spread(&[10, 20, 30]);
        assert!((m - 1.5).abs() < 1e-12);
        assert!((cv - (200.0f64 / 3.0).sqrt() / 20.0).abs() < 1e-12);
        assert_eq!(spread(&[0, 0]), (0.0, 0.0));
        assert_eq!(argmax(&[3, 7, 7, 1]), Some(1));
    }

    #[test]
    fn percentiles_by_nearest_rank() {
        assert_eq!(median_p90(&[5, 1, 4, 2, 3]), (3, 5));
        assert_eq!(median_p90(&(1..=10).collect::<Vec<_>>()), (5, 9));
        assert_eq!(median_p90(&[]), (0, 0));
    }
}
