//! How uneven one metric is across the DP ranks of one poll: the aggregates the trigger grammar
//! names (`max/mean`, `spread`, `cv`, and the plain `max`, `min`, `mean`) and the imbalance
//! figures every poll line carries.

use serde::Serialize;

use super::loads::{Metric, RankLoad};

/// An aggregate over the ranks of one poll.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Agg {
    /// Largest over mean; 1 when every rank is at 0.
    MaxOverMean,
    /// Largest minus smallest.
    Spread,
    /// Coefficient of variation: population standard deviation over mean (0 when the mean is 0).
    Cv,
    Max,
    Min,
    Mean,
}

impl Agg {
    pub fn name(self) -> &'static str {
        match self {
            Agg::MaxOverMean => "max/mean",
            Agg::Spread => "spread",
            Agg::Cv => "cv",
            Agg::Max => "max",
            Agg::Min => "min",
            Agg::Mean => "mean",
        }
    }
}

/// One metric over the ranks that reported it.
#[derive(Copy, Clone, Debug, PartialEq, Serialize)]
pub struct Spread {
    /// Ranks with a value.
    pub n: usize,
    pub min: f64,
    pub max: f64,
    pub mean: f64,
    pub max_over_mean: f64,
    pub spread: f64,
    pub cv: f64,
}

impl Spread {
    /// The figures of `values`; `None` when there are none.
    pub fn of(values: &[f64]) -> Option<Spread> {
        if values.is_empty() {
            return None;
        }
        let n = values.len() as f64;
        let min = values.iter().copied().fold(f64::INFINITY, f64::min);
        let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let mean = values.iter().sum::<f64>() / n;
        let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
        let (max_over_mean, cv) = if mean > 0.0 {
            (max / mean, var.sqrt() / mean)
        } else {
            (1.0, 0.0)
        };
        Some(Spread {
            n: values.len(),
            min,
            max,
            mean,
            max_over_mean,
            spread: max - min,
            cv,
        })
    }

    /// One metric over `ranks` (ranks without it are left out).
    pub fn of_metric<'a>(ranks: impl Iterator<Item = &'a RankLoad>, m: Metric) -> Option<Spread> {
        let v: Vec<f64> = ranks.filter_map(|r| r.get(m)).collect();
        Spread::of(&v)
    }

    pub fn get(&self, a: Agg) -> f64 {
        match a {
            Agg::MaxOverMean => self.max_over_mean,
            Agg::Spread => self.spread,
            Agg::Cv => self.cv,
            Agg::Max => self.max,
            Agg::Min => self.min,
            Agg::Mean => self.mean,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures() {
        let s = Spread::of(&[2.0, 2.0, 2.0, 10.0]).unwrap();
        assert_eq!(s.mean, 4.0);
        assert_eq!(s.max_over_mean, 2.5);
        assert_eq!(s.spread, 8.0);
        assert!((s.cv - (12.0f64).sqrt() / 4.0).abs() < 1e-12);
        let z = Spread::of(&[0.0, 0.0]).unwrap();
        assert_eq!((z.max_over_mean, z.cv, z.spread), (1.0, 0.0, 0.0));
        assert!(Spread::of(&[]).is_none());
    }
}
