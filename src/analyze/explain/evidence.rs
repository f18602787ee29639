//! Whether a candidate for the verdict holds from step to step, or is step-to-step noise.
//!
//! A cause is a rank's, not chance's, when its per-step figure (what it cost the step at the
//! collectives, or its work over its peers') is above zero beyond its own spread over the
//! steps: the one-sided t-test at 95 % ([`crate::analyze::stats::above_zero`]). A planted 40 ms
//! late start costs 40.8, 44.1 and 36.3 ms in three steps and holds; a control recording's
//! costliest rank costs 0, 7.1 and 18.4 ms and does not: with three steps that is noise, and
//! the verdict says it cannot tell instead of naming the rank. One step cannot tell either way;
//! the candidate then stands (a training profile often holds one step).

use crate::analyze::stats::above_zero;

/// What the steps say about a candidate's per-step figure, ns.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Steps {
    /// Above zero beyond its spread, or fewer than two steps to tell.
    Holds,
    /// Within its own step-to-step spread of zero.
    Varies {
        n: usize,
        lo: f64,
        hi: f64,
        mean: f64,
    },
}

impl Steps {
    /// Judges per-step samples (ns).
    pub(crate) fn of(samples: &[f64]) -> Steps {
        if above_zero(samples) != Some(false) {
            return Steps::Holds;
        }
        let n = samples.len();
        let (lo, hi) = samples
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| {
                (lo.min(x), hi.max(x))
            });
        Steps::Varies {
            n,
            lo,
            hi,
            mean: samples.iter().sum::<f64>() / n as f64,
        }
    }

    pub(crate) fn varies(&self) -> bool {
        matches!(self, Steps::Varies { .. })
    }

    /// "from −1.20 to 18.45 ms a step over 3 steps, mean 5.52 ms"; empty when it holds.
    pub(crate) fn range(&self) -> String {
        match *self {
            Steps::Holds => String::new(),
            Steps::Varies { n, lo, hi, mean } => format!(
                "from {:.2} to {:.2} ms a step over {n} steps, mean {:.2} ms",
                lo / 1e6,
                hi / 1e6,
                mean / 1e6
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_steady_cost_holds_and_a_rotating_one_varies() {
        let ms = |v: &[f64]| v.iter().map(|x| x * 1e6).collect::<Vec<f64>>();
        assert_eq!(Steps::of(&ms(&[40.8, 44.1, 36.3])), Steps::Holds);
        assert_eq!(Steps::of(&ms(&[12.0])), Steps::Holds);
        let v = Steps::of(&ms(&[0.0, 7.1, 18.4]));
        assert!(v.varies());
        assert_eq!(
            v.range(),
            "from 0.00 to 18.40 ms a step over 3 steps, mean 8.50 ms"
        );
    }
}
