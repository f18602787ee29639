//! A tiny deterministic random source (splitmix64). Every random choice of the generator is
//! drawn from an [`Rng`] keyed by the seed and by *what* is being drawn (rank, step, collective),
//! never by the order in which threads happen to run, so the same arguments give the same bytes.

/// splitmix64: 64 bits of state, full period, good enough for jitter and choices.
#[derive(Clone, Debug)]
pub(crate) struct Rng(u64);

const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

/// The splitmix64 output function: a good 64-bit mixer.
pub(crate) fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Rng {
    #[cfg(test)]
    pub(crate) fn new(seed: u64) -> Self {
        Rng(mix(seed ^ GOLDEN))
    }

    /// A stream for one purpose: the seed mixed with each key part in turn.
    pub(crate) fn keyed(seed: u64, parts: &[u64]) -> Self {
        let mut s = mix(seed ^ GOLDEN);
        for &p in parts {
            s = mix(s ^ mix(p.wrapping_add(GOLDEN)));
        }
        Rng(s)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(GOLDEN);
        mix(self.0)
    }

    /// Uniform in [0, 1).
    pub(crate) fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform integer in `lo..=hi`.
    pub(crate) fn range(&mut self, lo: u64, hi: u64) -> u64 {
        debug_assert!(lo <= hi);
        lo + self.next_u64() % (hi - lo + 1)
    }

    /// A factor uniform in `[1 - pct, 1 + pct]`.
    pub(crate) fn jitter(&mut self, pct: f64) -> f64 {
        1.0 + pct * (2.0 * self.unit() - 1.0)
    }

    /// `ns` scaled by a jitter factor, rounded to whole nanoseconds (at least 1).
    pub(crate) fn jittered(&mut self, ns: i64, pct: f64) -> i64 {
        ((ns as f64 * self.jitter(pct)).round() as i64).max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_key_same_stream_other_key_other_stream() {
        let a: Vec<u64> = (0..4).map(|_| Rng::keyed(7, &[1, 2]).next_u64()).collect();
        assert!(a.windows(2).all(|w| w[0] == w[1]));
        assert_ne!(
            Rng::keyed(7, &[1, 2]).next_u64(),
            Rng::keyed(7, &[2, 1]).next_u64()
        );
        assert_ne!(
            Rng::keyed(7, &[1]).next_u64(),
            Rng::keyed(8, &[1]).next_u64()
        );
    }

    #[test]
    fn jitter_stays_in_bounds_and_is_centred() {
        let mut r = Rng::new(3);
        let mut sum = 0.0;
        for _ in 0..10_000 {
            let j = r.jitter(0.015);
            assert!((0.985..=1.015).contains(&j));
            sum += j;
        }
        assert!((sum / 10_000.0 - 1.0).abs() < 0.001);
        for _ in 0..1000 {
            assert!((3..=9).contains(&r.range(3, 9)));
        }
    }
}
