//! Clock alignment across ranks.
//!
//! Kineto writes each event's `ts` in µs relative to the file's `baseTimeNanoseconds` (when the
//! key is present; older traces hold absolute epoch µs instead). For rank `r` with base `b_r`,
//! the absolute time of an event is `b_r + ts` (in ns). The merged trace uses one common base
//! `B = min_r b_r`, so each rank's events move by `shift_r = b_r - B` ns:
//!
//! ```text
//! ts_out = ts_in + (b_r - B) / 1000   [µs]        baseTimeNanoseconds_out = B
//! ```
//!
//! If some ranks have a base and others do not, the ones without hold absolute times: `B = 0`
//! and every rank with a base moves by its whole base (`shift_r = b_r`), so all are absolute.
//! `first-step` then adds, per rank, the amount that makes its first step start when the
//! earliest rank's first step starts (after the base shift): `shift_r += T - (f_r + shift_r)`
//! with `T = min_r (f_r + shift_r)`. `collectives` subtracts, after the base shift, each rank's
//! clock offset as the analysis estimates it from the collectives' ends. `none` leaves every
//! `ts` as written.

use crate::trace::Ns;

/// Clock alignment across ranks.
#[derive(Copy, Clone, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Align {
    /// Leave every `ts` as written.
    None,
    /// Put all ranks on one common base from each file's `baseTimeNanoseconds`.
    Base,
    /// As `base`, then shift each rank so its first step starts when the earliest rank's does.
    FirstStep,
    /// As `base`, then move each rank whose collectives all end a constant time off its
    /// world's (another host's clock; GPU traces): the offsets `analyze` finds, at the cost
    /// of analyzing the ranks first.
    Collectives,
}

/// What the merge knows of one rank's clock.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct RankClock {
    pub(crate) base_ns: Option<i64>,
    /// Start of the rank's first step, in its own `ts` units.
    pub(crate) first_step: Option<Ns>,
    /// The earliest `ts` of the rank, in its own units.
    pub(crate) min_ts: Option<Ns>,
}

impl RankClock {
    fn lost_base(&self) -> bool {
        crate::trace::time::lost_base(self.base_ns, self.min_ts)
    }
}

/// The common base and each rank's shift.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Alignment {
    /// `baseTimeNanoseconds` of the merged trace (none when its `ts` are absolute).
    pub(crate) base_ns: Option<i64>,
    pub(crate) shifts: Vec<Ns>,
    /// Ranks without a base whose `ts` are plainly relative: given the common base (the
    /// earliest of the others), since Kineto's bases are usually equal across ranks.
    pub(crate) assumed_base: Vec<usize>,
}

pub(crate) fn plan(mode: Align, clocks: &[RankClock]) -> Alignment {
    let known = clocks.iter().filter_map(|c| c.base_ns).min();
    let mut assumed_base = Vec::new();
    let clocks: Vec<RankClock> = clocks
        .iter()
        .enumerate()
        .map(|(i, c)| match known {
            // No `ts` at all (no events, or a file cut in its header): nothing to shift, and
            // no reason to put every other rank on absolute time.
            Some(b) if c.base_ns.is_none() && c.min_ts.is_none() => RankClock {
                base_ns: Some(b),
                ..*c
            },
            Some(b) if c.lost_base() => {
                assumed_base.push(i);
                RankClock {
                    base_ns: Some(b),
                    ..*c
                }
            }
            _ => *c,
        })
        .collect();
    let mut a = plan_known(mode, &clocks);
    a.assumed_base = assumed_base;
    a
}

fn plan_known(mode: Align, clocks: &[RankClock]) -> Alignment {
    let n = clocks.len();
    if mode == Align::None {
        return Alignment {
            base_ns: clocks.iter().find_map(|c| c.base_ns),
            shifts: vec![Ns::ZERO; n],
            assumed_base: Vec::new(),
        };
    }
    let with_base = clocks.iter().filter(|c| c.base_ns.is_some()).count();
    let (base_ns, mut shifts): (Option<i64>, Vec<Ns>) = if with_base == 0 {
        (None, vec![Ns::ZERO; n])
    } else if with_base == n {
        let b = clocks.iter().filter_map(|c| c.base_ns).min().unwrap_or(0);
        (
            Some(b),
            clocks
                .iter()
                .map(|c| Ns::new(c.base_ns.unwrap_or(b) - b))
                .collect(),
        )
    } else {
        (
            None,
            clocks
                .iter()
                .map(|c| Ns::new(c.base_ns.unwrap_or(0)))
                .collect(),
        )
    };
    if mode == Align::FirstStep {
        let starts: Vec<Option<Ns>> = clocks
            .iter()
            .zip(&shifts)
            .map(|(c, s)| c.first_step.map(|f| f + *s))
            .collect();
        if let Some(t) = starts.iter().flatten().min().copied() {
            for (s, start) in shifts.iter_mut().zip(&starts) {
                if let Some(f) = start {
                    *s += t - *f;
                }
            }
        }
    }
    Alignment {
        base_ns,
        shifts,
        assumed_base: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clock(base: Option<i64>, first: Option<i64>) -> RankClock {
        RankClock {
            base_ns: base,
            first_step: first.map(Ns::new),
            min_ts: None,
        }
    }

    #[test]
    fn a_truncated_rank_keeps_the_common_base() {
        // Rank 1 lost its base (cut before the key); its ts are small, so relative.
        let lost = RankClock {
            base_ns: None,
            first_step: None,
            min_ts: Some(Ns::new(5_000)),
        };
        let a = plan(Align::Base, &[clock(Some(1_000_000), None), lost]);
        assert_eq!(a.base_ns, Some(1_000_000));
        assert_eq!(a.shifts, [Ns::new(0), Ns::new(0)]);
        assert_eq!(a.assumed_base, [1]);
        // Absolute epoch µs without a base stay absolute.
        let abs = RankClock {
            base_ns: None,
            first_step: None,
            min_ts: Some(Ns::new(1_700_000_000_000_000_000)),
        };
        let a = plan(Align::Base, &[clock(Some(1_000_000), None), abs]);
        assert_eq!(a.base_ns, None);
        assert!(a.assumed_base.is_empty());
    }

    #[test]
    fn common_base_is_the_earliest() {
        // Rank 1's clock starts 2.5 ms later: its events move 2.5 ms later on the common base.
        let a = plan(
            Align::Base,
            &[
                clock(Some(1_000_000_000), None),
                clock(Some(1_002_500_000), None),
            ],
        );
        assert_eq!(a.base_ns, Some(1_000_000_000));
        assert_eq!(a.shifts, [Ns::new(0), Ns::new(2_500_000)]);
    }

    #[test]
    fn mixed_bases_become_absolute() {
        let abs = RankClock {
            min_ts: Some(Ns::new(1_700_000_000_000_000_000)),
            ..clock(None, None)
        };
        let a = plan(Align::Base, &[abs, clock(Some(7_000), None)]);
        assert_eq!(a.base_ns, None);
        assert_eq!(a.shifts, [Ns::new(0), Ns::new(7_000)]);
    }

    #[test]
    fn a_rank_without_events_leaves_the_base_alone() {
        // Rank 1 has no `ts` at all (an empty file): the others keep their common base.
        let a = plan(
            Align::Base,
            &[
                clock(Some(1_000_000), None),
                clock(None, None),
                clock(Some(3_000_000), None),
            ],
        );
        assert_eq!(a.base_ns, Some(1_000_000));
        assert_eq!(a.shifts, [Ns::new(0), Ns::new(0), Ns::new(2_000_000)]);
        assert!(a.assumed_base.is_empty());
        // Alone with ranks that have no base either, nothing changes.
        let a = plan(Align::Base, &[clock(None, None), clock(None, None)]);
        assert_eq!((a.base_ns, a.shifts), (None, vec![Ns::new(0), Ns::new(0)]));
    }

    #[test]
    fn first_step_lines_up_step_starts() {
        // Bases 0 and 1000 ns; first steps at 5000 and 3000 (own units) -> 5000 and 4000 on the
        // common base; T = 4000: rank 0 moves -1000, rank 1 keeps its base shift of 1000.
        let a = plan(
            Align::FirstStep,
            &[clock(Some(0), Some(5_000)), clock(Some(1_000), Some(3_000))],
        );
        assert_eq!(a.shifts, [Ns::new(-1_000), Ns::new(1_000)]);
        assert_eq!(Ns::new(5_000) + a.shifts[0], Ns::new(3_000) + a.shifts[1]);
    }

    #[test]
    fn none_leaves_ts_alone() {
        let a = plan(Align::None, &[clock(Some(5), None), clock(Some(9), None)]);
        assert_eq!(a.shifts, [Ns::new(0), Ns::new(0)]);
    }
}
