//! One device's allocator trace (`device_traces[i]`) replayed entry by entry, in file order:
//! `alloc` adds its size, `free_completed` takes it away (`free_requested` only marks the
//! block as awaiting its stream; segment entries change the reserve, not what is allocated).
//! The running sum is relative to what was live before the trace's first entry, which the
//! trace does not say (the allocator keeps the last `max_entries` only); the snapshot's own
//! blocks do, so the caller adds it ([`Replayed::before_trace`]).
//!
//! The allocations live at the peak, grouped by their top user frame
//! ([`super::frames`]), are what a peak is made of. They are kept as the replay goes: a
//! per-group sum of the live allocations, copied when the sum first falls after a new
//! maximum (so a run of allocations that climbs to the peak costs one copy, not one each).
//! Memory: the live allocations (address → size, group) and the groups; not the entries.

use rustc_hash::FxHashMap;

/// What a trace entry does, from its `action`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Action {
    Alloc,
    FreeCompleted,
    Oom,
    /// `free_requested`, `segment_*`, `snapshot`, `annotate`, anything newer.
    Other,
}

/// One trace entry, as far as the replay needs it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Entry {
    pub action: Action,
    pub addr: i64,
    pub size: i64,
    pub time_us: Option<i64>,
    /// The allocation's group (its top user frame, or a `NO_…` group).
    pub group: u32,
}

/// Bytes and allocations per group.
pub(crate) type Groups = FxHashMap<u32, (i64, u64)>;

/// Adds (`sign` 1) or removes (−1) one allocation of `size` bytes from `g`'s group `group`.
pub(crate) fn tally(g: &mut Groups, group: u32, size: i64, sign: i64) {
    let e = g.entry(group).or_insert((0, 0));
    e.0 += sign * size;
    if sign > 0 {
        e.1 += 1;
    } else {
        e.1 = e.1.saturating_sub(1);
        if e.1 == 0 {
            g.remove(&group);
        }
    }
}

/// The replay of one device's trace, as it goes.
#[derive(Debug, Default)]
pub(crate) struct Replay {
    entries: u64,
    sum: i64,
    max: i64,
    peak_entry: Option<u64>,
    peak_time_us: Option<i64>,
    live: FxHashMap<i64, (i64, u32)>,
    groups: Groups,
    at_peak: Vec<(u32, i64, u64)>,
    /// A new maximum was reached and `at_peak` not yet copied.
    dirty: bool,
    oom: u64,
}

/// A finished replay.
#[derive(Debug, Clone, Default)]
pub(crate) struct Replayed {
    pub entries: u64,
    /// The running sum at the end (relative to before the first entry).
    pub end: i64,
    /// The largest running sum (0: the peak is before the first entry).
    pub max: i64,
    pub peak_entry: Option<u64>,
    pub peak_time_us: Option<i64>,
    /// The groups of the trace's allocations live at the peak: (group, bytes, count).
    pub at_peak: Vec<(u32, i64, u64)>,
    pub oom: u64,
}

impl Replayed {
    /// What was live before the trace's first entry, given what is live at the snapshot
    /// (`active`, the blocks that are allocated or awaiting their free): the difference from
    /// the end of the replay, and at least what the trace freed beyond what it allocated.
    pub(crate) fn before_trace(&self, active: i64) -> i64 {
        (active - self.end).max(0)
    }
}

impl Replay {
    /// Takes the next entry.
    pub(crate) fn apply(&mut self, e: &Entry) {
        let idx = self.entries;
        self.entries += 1;
        match e.action {
            Action::Alloc => {
                self.sum += e.size;
                if let Some((size, group)) = self.live.insert(e.addr, (e.size, e.group)) {
                    tally(&mut self.groups, group, size, -1);
                }
                tally(&mut self.groups, e.group, e.size, 1);
                if self.sum > self.max {
                    (self.max, self.peak_entry, self.peak_time_us) =
                        (self.sum, Some(idx), e.time_us);
                    self.dirty = true;
                }
            }
            Action::FreeCompleted => {
                if self.dirty {
                    self.copy_peak();
                }
                self.sum -= e.size;
                if let Some((size, group)) = self.live.remove(&e.addr) {
                    tally(&mut self.groups, group, size, -1);
                }
            }
            Action::Oom => self.oom += 1,
            Action::Other => {}
        }
    }

    fn copy_peak(&mut self) {
        self.at_peak.clear();
        self.at_peak
            .extend(self.groups.iter().map(|(&g, &(b, n))| (g, b, n)));
        self.dirty = false;
    }

    pub(crate) fn finish(mut self) -> Replayed {
        if self.dirty {
            self.copy_peak();
        }
        Replayed {
            entries: self.entries,
            end: self.sum,
            max: self.max,
            peak_entry: self.peak_entry,
            peak_time_us: self.peak_time_us,
            at_peak: self.at_peak,
            oom: self.oom,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(action: Action, addr: i64, size: i64, group: u32) -> Entry {
        Entry {
            action,
            addr,
            size,
            time_us: Some(addr),
            group,
        }
    }

    #[test]
    fn the_peak_and_what_is_live_there() {
        let mut r = Replay::default();
        r.apply(&e(Action::FreeCompleted, 99, 10, 0)); // live before the trace
        r.apply(&e(Action::Alloc, 1, 100, 7));
        r.apply(&e(Action::Alloc, 2, 50, 8));
        r.apply(&e(Action::FreeCompleted, 1, 100, 7));
        r.apply(&e(Action::Alloc, 3, 30, 8));
        let done = r.finish();
        assert_eq!((done.max, done.peak_entry, done.end), (140, Some(2), 70));
        let mut g = done.at_peak.clone();
        g.sort();
        assert_eq!(g, [(7, 100, 1), (8, 50, 1)]);
        // 80 live at the snapshot: 10 of them from before the trace.
        assert_eq!(done.before_trace(80), 10);
    }
}
