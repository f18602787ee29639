//! Interval arithmetic on one rank's timeline, and the rank summary built from it: GPU busy
//! (union of kernel + memcpy + memset intervals across all streams), compute (union of the
//! non-communication kernels), communication, *exposed* communication (communication not
//! overlapped by any compute kernel: comm minus the union of compute) and memcpy/memset.
//!
//! Intervals are half-open `[start, end)` in nanoseconds. Unions are built from intervals
//! sorted by start, in one sweep.

use serde::{Deserialize, Serialize};

use crate::trace::Ns;

/// A merged, sorted, non-overlapping list of `[start, end)` intervals.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Union(pub Vec<(i64, i64)>);

impl Union {
    /// Builds the union of intervals given in ascending order of start. Empty or negative
    /// intervals are ignored.
    pub(crate) fn from_sorted(ivs: impl IntoIterator<Item = (i64, i64)>) -> Union {
        let mut out: Vec<(i64, i64)> = Vec::new();
        for (s, e) in ivs {
            if e <= s {
                continue;
            }
            match out.last_mut() {
                Some(last) if s <= last.1 => {
                    if e > last.1 {
                        last.1 = e;
                    }
                }
                _ => out.push((s, e)),
            }
        }
        Union(out)
    }

    #[cfg(test)]
    /// Builds the union of intervals in any order.
    pub(crate) fn from_unsorted(mut ivs: Vec<(i64, i64)>) -> Union {
        ivs.sort_unstable();
        Union::from_sorted(ivs)
    }

    /// Total covered length.
    pub(crate) fn len(&self) -> i64 {
        self.0.iter().map(|(s, e)| e - s).sum()
    }

    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Length of the intersection with another union (two-pointer sweep).
    pub(crate) fn overlap(&self, other: &Union) -> i64 {
        let (a, b) = (&self.0, &other.0);
        let (mut i, mut j, mut total) = (0, 0, 0i64);
        while i < a.len() && j < b.len() {
            let s = a[i].0.max(b[j].0);
            let e = a[i].1.min(b[j].1);
            if e > s {
                total += e - s;
            }
            if a[i].1 < b[j].1 {
                i += 1;
            } else {
                j += 1;
            }
        }
        total
    }

    /// Covered length inside `[lo, hi)`.
    pub(crate) fn len_within(&self, lo: i64, hi: i64) -> i64 {
        // First interval that ends after lo.
        let k = self.0.partition_point(|&(_, e)| e <= lo);
        let mut total = 0;
        for &(s, e) in &self.0[k..] {
            if s >= hi {
                break;
            }
            total += e.min(hi) - s.max(lo);
        }
        total
    }

    pub(crate) fn first(&self) -> Option<i64> {
        self.0.first().map(|x| x.0)
    }

    pub(crate) fn last(&self) -> Option<i64> {
        self.0.last().map(|x| x.1)
    }
}

/// What a rank's summary row and its entry in the saved summary ([`crate::analyze::summary`])
/// both say of it. Times in nanoseconds.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct RankFigures {
    pub rank: String,
    pub device: Option<String>,
    /// `gpu`: figures from GPU kernels/memcpy/memset; `cpu`: from CPU ops (no GPU events).
    pub source: String,
    /// From the first to the last GPU event (CPU op in CPU-only traces).
    pub span_ns: Ns,
    /// Union of kernel + memcpy + memset intervals over all streams.
    pub busy_ns: Ns,
    pub idle_ns: Ns,
    /// busy / span, in percent.
    pub utilization_pct: f64,
    /// Union of the non-communication kernels.
    pub compute_ns: Ns,
    /// Union of the communication kernels.
    pub comm_ns: Ns,
    /// Communication not overlapped by any compute kernel.
    pub exposed_comm_ns: Ns,
    /// Union of memcpy + memset.
    pub memcpy_memset_ns: Ns,
    /// Kernel events (CPU ops in CPU-only traces).
    pub kernels: u64,
    /// Sum of kernel durations (may exceed busy when streams overlap).
    pub kernel_sum_ns: Ns,
}

/// One row of the rank summary: its [`RankFigures`] (serialized in place) and the events read.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct RankSummary {
    #[serde(flatten)]
    pub figures: RankFigures,
    pub events: u64,
}

/// The GPU (or CPU) intervals of one rank, split the way the summary needs them.
pub(crate) struct Timeline {
    pub(crate) all: Union,
    pub(crate) compute: Union,
    pub(crate) comm: Union,
    pub(crate) copy: Union,
}

impl Timeline {
    /// `items` sorted by start; `f` gives each one's (start, end, kind).
    pub(crate) fn build<T>(items: &[T], f: impl Fn(&T) -> (i64, i64, Kind)) -> Timeline {
        let pick = |k: Kind| {
            Union::from_sorted(
                items
                    .iter()
                    .map(&f)
                    .filter(|x| x.2 == k)
                    .map(|x| (x.0, x.1)),
            )
        };
        Timeline {
            all: Union::from_sorted(items.iter().map(&f).map(|x| (x.0, x.1))),
            compute: pick(Kind::Compute),
            comm: pick(Kind::Comm),
            copy: pick(Kind::Copy),
        }
    }

    /// Adds communication intervals (sorted by start) that no op covers: a CPU-only trace's
    /// waits inside its collectives.
    pub(crate) fn add_comm(&mut self, ivs: Vec<(i64, i64)>) {
        let merge = |u: &Union| {
            let mut v = u.0.clone();
            v.extend(ivs.iter().copied());
            v.sort_unstable();
            Union::from_sorted(v)
        };
        self.comm = merge(&self.comm);
        self.all = merge(&self.all);
    }

    /// Communication time not covered by compute.
    pub(crate) fn exposed_comm(&self) -> i64 {
        self.comm.len() - self.comm.overlap(&self.compute)
    }
}

/// What an interval counts as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Compute,
    Comm,
    /// memcpy / memset
    Copy,
}

/// `x / y` in percent, 0 when `y` is 0.
pub(crate) fn pct(x: i64, y: i64) -> f64 {
    if y > 0 {
        100.0 * x as f64 / y as f64
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn union_merges_overlaps_and_touching() {
        let u = Union::from_unsorted(vec![
            (10, 20),
            (0, 5),
            (15, 30),
            (30, 31),
            (40, 40),
            (50, 45),
        ]);
        assert_eq!(u.0, vec![(0, 5), (10, 31)]);
        assert_eq!(u.len(), 5 + 21);
    }

    #[test]
    fn overlap_and_window() {
        let a = Union(vec![(0, 10), (20, 30)]);
        let b = Union(vec![(5, 25)]);
        assert_eq!(a.overlap(&b), 5 + 5);
        assert_eq!(b.overlap(&a), 10);
        assert_eq!(a.len_within(5, 22), 5 + 2);
        assert_eq!(a.len_within(30, 40), 0);
        assert_eq!(a.len_within(-5, 100), 20);
    }

    #[test]
    fn exposed_comm_by_hand() {
        // compute 0-10 and 20-30 on one stream; comm 5-25 on another:
        // comm 20, overlapped 5 + 5, exposed 10; busy = 0-30 = 30.
        let ivs = [
            (0, 10, Kind::Compute),
            (5, 25, Kind::Comm),
            (20, 30, Kind::Compute),
            (28, 40, Kind::Copy),
        ];
        let t = Timeline::build(&ivs, |x| *x);
        assert_eq!(t.all.len(), 40);
        assert_eq!(t.compute.len(), 20);
        assert_eq!(t.comm.len(), 20);
        assert_eq!(t.exposed_comm(), 10);
        assert_eq!(t.copy.len(), 12);
    }
}
