//! Small statistics over per-rank (or per-step) figures, shared by the stages: smallest, mean
//! and largest ([`min_mean_max`]), max over mean and the coefficient of variation ([`spread`]),
//! the largest one ([`argmax`]), median and 90th percentile by nearest rank ([`median_p90`]), the
//! interpolated median of floats ([`median`]) and a ratio that survives zeros ([`ratio`]).

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
    v.sort_unstable();
    v.get(v.len().saturating_sub(1) / 2).copied().unwrap_or(0)
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

#[cfg(test)]
mod tests {
    use super::*;

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
