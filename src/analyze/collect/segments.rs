//! What one rank did before each of its collectives: the *segment* from the end of its
//! previous collective to its arrival at this one, and how that time was spent — its own
//! compute (GPU kernels, or CPU ops in CPU-only traces), the part before its step began (a late
//! step start) and the rest (the host did not launch: GPU idle). The reduce stage
//! (`reduce::path`) compares the last arriver's segment with its peers' to say why it was late.
//!
//! For a collective `c` of the rank, its collectives sorted by (start, end, order in the file):
//! - `prev_end` = the latest end among the collectives before `c`; for the rank's first
//!   collective, the start of the step it arrives in (`from_step`: the reduce stage puts the
//!   members of such a collective on the earliest member's step start, so a late step start
//!   before the first collective — all there is in a one-step profile — is charged), and none
//!   when it arrives outside any step;
//! - `busy` = the compute union's length within `[prev_end, start]`;
//! - `pre` = from `prev_end` to the first step mark starting in `(prev_end, start]` (0 when none).
//!
//! Bounded memory: three passes over spools (collectives by start; the query points by time,
//! answered in the sweep that folds the rank's ops, [`Cumulative`]; collectives and answers by
//! their order in the file), never the rank's collectives or ops in memory.

use anyhow::Result;

use super::collector::{CollEv, CpuIv};
use super::spill::Spool;
use super::steps::Mark;

/// A collective with no collective before it on its rank.
pub(crate) const NO_PREV: i64 = i64::MIN;

/// Collectives and the query points of their segments ([`prepare`]).
pub(crate) type Prepared = (Spool<CollEv>, Spool<(i64, i64)>);

/// The collectives with `prev_end` set, and the query points of the segments that are not
/// empty: (time, `2·seq` for the segment's start, `2·seq + 1` for its end). `marks`: the
/// rank's step marks, sorted by start.
pub(crate) fn prepare(colls: Spool<CollEv>, marks: &[Mark]) -> Result<Prepared> {
    with_prev(colls, marks, true)
}

/// The start of the step a rank's first collective arrives in: the step open at its arrival,
/// else the latest to start before it (a GPU kernel can start after its host step ended).
fn step_start(marks: &[Mark], start: i64) -> Option<i64> {
    super::steps::window_of(marks, start)
        .or_else(|| marks.partition_point(|m| m.start <= start).checked_sub(1))
        .and_then(|i| marks.get(i))
        .map(|m| m.start)
}

/// [`prepare`]; the query points only when `want` (an in-memory union needs none).
fn with_prev(colls: Spool<CollEv>, marks: &[Mark], want: bool) -> Result<Prepared> {
    let mut out = colls.like();
    let mut queries = colls.like();
    let mut prev: Option<i64> = None;
    let mut first = true;
    for c in colls.sorted_by(|c: &CollEv| (c.start, c.end, c.seq))? {
        let mut c = c?;
        let from_step = if first {
            step_start(marks, c.start)
        } else {
            None
        };
        c.from_step = from_step.is_some();
        c.prev_end = prev.or(from_step).unwrap_or(NO_PREV);
        c.busy = 0;
        c.pre = 0;
        first = false;
        if let Some(p) = prev.or(from_step).filter(|&p| want && p < c.start) {
            queries.push((p, 2 * i64::from(c.seq)));
            queries.push((c.start, 2 * i64::from(c.seq) + 1));
        }
        prev = Some(prev.map_or(c.end, |p| p.max(c.end)));
        out.push(c);
    }
    Ok((out, queries))
}

/// Answers "how much of the compute union lies before `t`" for query points in ascending
/// order, during a sweep that adds the union's intervals in ascending order of start: a query
/// is answered as soon as the sweep reaches an interval starting at or after it, when every
/// interval that could cover time before it is in.
pub(crate) struct Cumulative {
    queries: Box<dyn Iterator<Item = Result<(i64, i64)>>>,
    next: Option<(i64, i64)>,
    /// (id, answer), in the order answered.
    pub(crate) answers: Spool<(i64, i64)>,
    /// Closed length of the union so far, and its open interval.
    closed: i64,
    open: Option<(i64, i64)>,
}

impl Cumulative {
    pub(crate) fn new(queries: Spool<(i64, i64)>) -> Result<Cumulative> {
        let answers = queries.like();
        let mut queries = queries.sorted_by(|q: &(i64, i64)| *q)?;
        let next = queries.next().transpose()?;
        Ok(Cumulative {
            queries,
            next,
            answers,
            closed: 0,
            open: None,
        })
    }

    fn before(&self, t: i64) -> i64 {
        self.closed
            + self
                .open
                .map_or(0, |(s, e)| if t <= s { 0 } else { e.min(t) - s })
    }

    /// Answers every pending query at or before `t` (the start of the next op of the sweep).
    #[inline]
    pub(crate) fn reach(&mut self, t: i64) -> Result<()> {
        while let Some((q, id)) = self.next {
            if q > t {
                break;
            }
            self.answers.push((id, self.before(q)));
            self.next = self.queries.next().transpose()?;
        }
        Ok(())
    }

    /// Adds a compute interval (after [`Cumulative::reach`] of its start).
    #[inline]
    pub(crate) fn add(&mut self, s: i64, e: i64) {
        if e <= s {
            return;
        }
        match &mut self.open {
            Some((_, oe)) if s <= *oe => *oe = (*oe).max(e),
            open => {
                if let Some((os, oe)) = *open {
                    self.closed += oe - os;
                }
                *open = Some((s, e));
            }
        }
    }

    /// Answers what is left (no op starts after them) and returns the answers.
    pub(crate) fn finish(mut self) -> Result<Spool<(i64, i64)>> {
        self.reach(i64::MAX)?;
        Ok(self.answers)
    }
}

/// Fills `busy` and `pre` of each collective from the sweep's answers (`answers`: (id, compute
/// before the point)) and the step marks (sorted by start).
pub(crate) fn finish(
    colls: Spool<CollEv>,
    answers: Spool<(i64, i64)>,
    marks: &[Mark],
) -> Result<Spool<CollEv>> {
    let mut out = colls.like();
    let mut ans = answers.sorted_by(|a: &(i64, i64)| *a)?;
    let mut cur = ans.next().transpose()?;
    for c in colls.sorted_by(|c: &CollEv| c.seq)? {
        let mut c = c?;
        if c.prev_end != NO_PREV && c.prev_end < c.start {
            let id = 2 * i64::from(c.seq);
            let mut at = [None, None];
            while let Some((i, v)) = cur {
                if i > id + 1 {
                    break;
                }
                if i >= id {
                    at[(i - id) as usize] = Some(v);
                }
                cur = ans.next().transpose()?;
            }
            if let [Some(a), Some(b)] = at {
                c.busy = (b - a).clamp(0, c.start - c.prev_end);
            }
            c.pre = pre_for(&c, marks);
        }
        out.push(c);
    }
    Ok(out)
}

/// From `prev_end` to the host's start of the first mark starting in `(prev_end, start]`
/// ([`Mark::host_start`], at most `start`); 0 when none does.
pub(crate) fn pre_of(marks: &[Mark], prev_end: i64, start: i64) -> i64 {
    let k = marks.partition_point(|m| m.start <= prev_end);
    match marks.get(k) {
        Some(m) if m.start <= start => m.host_start().min(start) - prev_end,
        _ => 0,
    }
}

/// The late part of a step's first segment ([`CollEv::from_step`], starting at the mark's
/// start `step_start`): from the mark's start to the host's start of its work.
fn late_in_step(marks: &[Mark], step_start: i64, start: i64) -> i64 {
    let k = marks.partition_point(|m| m.start < step_start);
    match marks.get(k) {
        Some(m) if m.start == step_start => (m.host_start().min(start) - step_start).max(0),
        _ => 0,
    }
}

/// `pre` of a collective whose segment is set.
fn pre_for(c: &CollEv, marks: &[Mark]) -> i64 {
    if c.from_step {
        late_in_step(marks, c.prev_end, c.start)
    } else {
        pre_of(marks, c.prev_end, c.start)
    }
}

/// The same figures from a compute union held in memory (CPU-only traces keep theirs):
/// `busy_within(lo, hi)` is the union's length within `[lo, hi]`.
pub(crate) fn fill_in_memory(
    colls: Spool<CollEv>,
    busy_within: impl Fn(i64, i64) -> i64,
    marks: &[Mark],
) -> Result<Spool<CollEv>> {
    let (ordered, _) = with_prev(colls, marks, false)?;
    let mut out = ordered.like();
    for c in ordered.sorted_by(|c: &CollEv| c.seq)? {
        let mut c = c?;
        if c.prev_end != NO_PREV && c.prev_end < c.start {
            c.busy = busy_within(c.prev_end, c.start).clamp(0, c.start - c.prev_end);
            c.pre = pre_for(&c, marks);
        }
        out.push(c);
    }
    Ok(out)
}

/// Longest gap between a `c10d::` op's end and the start of the `work.wait()` that belongs to
/// it when the calling thread did something in between, ns.
pub(crate) const WAIT_SLACK_NS: i64 = 1_000_000;

/// A CPU-only (gloo) trace's collectives end where the thread stops waiting for them: each
/// `c10d::` op returns once its collective is queued, and the waits that follow it last until
/// every member has arrived: gloo's own `gloo:<op>` range (on a gloo worker thread for
/// all-reduce and the like, on the calling thread for send/recv) and, with stacks, Python's
/// `work.wait()`. A wait belongs to the collective before it when it starts at or after the
/// op and before the next collective, and either no compute op started between the op's
/// return and the wait (the thread sat idle in `Work.wait()`, however late the gloo worker was
/// scheduled), or it starts within [`WAIT_SLACK_NS`] of the return. It extends that
/// collective, so that an early rank's wait is part of the collective it waited in — as an
/// NCCL kernel's spinning is — and not of the work before its next collective; up to where its
/// thread runs compute again, if that is before its end ([`ComputeStarts::waited_until`]).
/// `waits` sorted by start.
pub(crate) fn extend_by_waits(
    colls: Spool<CollEv>,
    mut waits: impl Iterator<Item = Result<CpuIv>>,
    compute: &ComputeStarts,
) -> Result<Spool<CollEv>> {
    let mut out = colls.like();
    let mut sorted = colls.sorted_by(|c: &CollEv| (c.start, c.seq))?.peekable();
    let mut next_wait = waits.next().transpose()?;
    while let Some(c) = sorted.next() {
        let mut c = c?;
        let next_start = match sorted.peek() {
            Some(Ok(n)) => n.start,
            _ => i64::MAX,
        };
        // Waits that start before this collective belong to none.
        while next_wait.is_some_and(|w| w.start < c.start) {
            next_wait = waits.next().transpose()?;
        }
        let queued = c.end;
        // The first compute op after the return: a wait before it found the thread idle.
        let next_compute = compute.first_after(queued);
        while let Some(w) = next_wait {
            let idle_until_wait = next_compute.is_none_or(|s| s >= w.start);
            let soon = w.start <= queued.saturating_add(WAIT_SLACK_NS);
            if w.start >= next_start || !(soon || idle_until_wait) {
                break;
            }
            c.end = c.end.max(compute.waited_until(&w, queued));
            next_wait = waits.next().transpose()?;
        }
        out.push(c);
    }
    Ok(out)
}

/// The starts of a CPU rank's compute ops (those not of the communication class), on every
/// thread and by thread.
pub(crate) struct ComputeStarts {
    /// Sorted.
    all: Vec<i64>,
    /// (thread, start), sorted.
    by_thread: Vec<(i64, i64)>,
}

impl ComputeStarts {
    pub(crate) fn new(ops: impl Iterator<Item = (i64, i64)>) -> ComputeStarts {
        let mut by_thread: Vec<(i64, i64)> = ops.collect();
        by_thread.sort_unstable();
        let mut all: Vec<i64> = by_thread.iter().map(|&(_, s)| s).collect();
        all.sort_unstable();
        ComputeStarts { all, by_thread }
    }

    /// The first start after `t`, on any thread.
    fn first_after(&self, t: i64) -> Option<i64> {
        self.all.get(self.all.partition_point(|&s| s <= t)).copied()
    }

    /// Where the wait `w` after a collective that returned at `queued` ends as waiting: at its
    /// end, or where its own thread starts a compute op inside it, whichever is first. A thread
    /// that runs compute is not waiting: an asynchronous send's `gloo:send` lasts on the calling
    /// thread until the transfer is done while the thread goes on to its next batch (SGLang's
    /// pipeline stages), where Python's `Work.wait()` blocks it (the ops inside it are gloo's,
    /// on its worker thread).
    fn waited_until(&self, w: &CpuIv, queued: i64) -> i64 {
        let from = w.start.max(queued);
        let i = self.by_thread.partition_point(|&p| p <= (w.tid, from));
        match self.by_thread.get(i) {
            Some(&(tid, s)) if tid == w.tid => s.min(w.end),
            _ => w.end,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ends of collectives `(start, end)` once [`extend_by_waits`] has run, in order; the
    /// waits and the compute ops on one thread.
    fn extended_ends(colls: &[(i64, i64)], waits: &[(i64, i64)], compute: &[i64]) -> Vec<i64> {
        let on = |tid| waits.iter().map(move |&(start, end)| (tid, start, end));
        extended_ends_on(colls, &on(0).collect::<Vec<_>>(), compute)
    }

    /// [`extended_ends`] with each wait's thread given (`(tid, start, end)`); the compute ops
    /// on thread 0.
    fn extended_ends_on(
        colls: &[(i64, i64)],
        waits: &[(i64, i64, i64)],
        compute: &[i64],
    ) -> Vec<i64> {
        let mut spool = Spool::default();
        for (seq, &(start, end)) in colls.iter().enumerate() {
            spool.push(coll(seq as u32, start, end));
        }
        let waits = waits.iter().map(|&(tid, start, end)| {
            Ok(CpuIv {
                start,
                end,
                tid,
                class: 0,
            })
        });
        let compute = ComputeStarts::new(compute.iter().map(|&s| (0, s)));
        extend_by_waits(spool, waits, &compute)
            .unwrap()
            .sorted_by(|c: &CollEv| c.seq)
            .unwrap()
            .map(|c| c.unwrap().end)
            .collect()
    }

    #[test]
    fn waits_extend_the_collective_before_them() {
        let colls = [(100, 110), (500, 505), (3_000_000, 3_000_010)];
        // The first waits until 400; one wait before any collective and one too late.
        let waits = [(50, 60), (112, 400), (506, 900), (2_000_000, 2_500_000)];
        // Compute at 1_500_000 separates the last collective from the late wait after it.
        assert_eq!(
            extended_ends(&colls, &waits, &[1_500_000]),
            vec![400, 900, 3_000_010]
        );
    }

    #[test]
    fn a_late_wait_with_nothing_before_it_is_the_collective_s() {
        // A gloo worker scheduled 3 ms after the op returned, the thread idle meanwhile (real
        // torch 2.4.1 on 2 busy cores): still that collective's wait.
        let colls = [(100, 110), (10_000_000, 10_000_010)];
        assert_eq!(
            extended_ends(&colls, &[(3_000_110, 5_000_000)], &[5_100_000]),
            vec![5_000_000, 10_000_010]
        );
    }

    #[test]
    fn a_wait_ends_where_its_thread_computes_again() {
        // An asynchronous send (real SGLang, pipeline parallel): `c10d::send` 100-110, its
        // `gloo:send` on the calling thread 105-9_000 while the thread runs its next batch from
        // 400: the send ends there. A `Work.wait()` 120-900 on thread 0 while gloo's worker
        // (thread 7) copies at 500: the wait is the thread's to its end.
        let colls = [(100, 110), (10_000, 10_010)];
        assert_eq!(
            extended_ends_on(&colls, &[(0, 105, 9_000)], &[400, 9_500]),
            vec![400, 10_010]
        );
        assert_eq!(
            extended_ends_on(&colls, &[(0, 120, 900)], &[9_500]),
            vec![900, 10_010]
        );
        let mut spool = Spool::default();
        spool.push(coll(0, 100, 110));
        let wait = CpuIv {
            start: 120,
            end: 900,
            tid: 0,
            class: 0,
        };
        let compute = ComputeStarts::new([(7, 500), (0, 9_500)].into_iter());
        let end = extend_by_waits(spool, std::iter::once(Ok(wait)), &compute)
            .unwrap()
            .sorted_by(|c: &CollEv| c.seq)
            .unwrap()
            .map(|c| c.unwrap().end)
            .next();
        assert_eq!(end, Some(900));
    }

    fn coll(seq: u32, start: i64, end: i64) -> CollEv {
        CollEv::recorded(0, 0, seq, start, end, 0)
    }

    fn mark(start: i64) -> Mark {
        Mark {
            start,
            dur: 10,
            name: String::new(),
            number: None,
            on_gpu: false,
            begin: None,
        }
    }

    /// The sweep's answers equal a direct computation on an explicit union, whatever the
    /// spool capacity.
    #[test]
    fn segments_match_a_direct_computation() {
        // Compute intervals (sorted by start) and collectives written out of order.
        let compute = [(0, 40), (30, 60), (100, 130), (140, 150), (210, 260)];
        let colls = [
            coll(0, 200, 230),
            coll(1, 60, 90),
            coll(2, 170, 180),
            coll(3, 95, 99),
        ];
        let marks = [mark(65), mark(160)];
        let union_within = |lo: i64, hi: i64| -> i64 {
            // (0,60), (100,130), (140,150), (210,260)
            [(0, 60), (100, 130), (140, 150), (210, 260)]
                .iter()
                .map(|&(s, e): &(i64, i64)| (e.min(hi) - s.max(lo)).max(0))
                .sum()
        };
        for cap in [1, 2, 1 << 10] {
            let mut sp = Spool::with_cap(cap);
            colls.iter().for_each(|c| sp.push(*c));
            let (with_prev, queries) = prepare(sp, &marks).unwrap();
            let mut cum = Cumulative::new(queries).unwrap();
            for &(s, e) in &compute {
                cum.reach(s).unwrap();
                cum.add(s, e);
            }
            let out: Vec<CollEv> = finish(with_prev, cum.finish().unwrap(), &marks)
                .unwrap()
                .sorted_by(|c: &CollEv| c.seq)
                .unwrap()
                .map(|c| c.unwrap())
                .collect();
            // By start: 60-90 (first), 95-99, 170-180, 200-230.
            assert_eq!(out[1].prev_end, NO_PREV);
            assert_eq!((out[3].prev_end, out[3].busy), (90, union_within(90, 95)));
            assert_eq!((out[2].prev_end, out[2].busy), (99, union_within(99, 170)));
            assert_eq!(out[2].busy, 40, "cap {cap}");
            assert_eq!((out[0].prev_end, out[0].busy), (180, 0));
            // Marks: 65 is not after 60-90's start... 160 is in (99, 170].
            assert_eq!(out[2].pre, 61);
            assert_eq!(out[3].pre, 0);
            let mut sp = Spool::with_cap(cap);
            colls.iter().for_each(|c| sp.push(*c));
            let mem: Vec<CollEv> = fill_in_memory(sp, union_within, &marks)
                .unwrap()
                .sorted_by(|c: &CollEv| c.seq)
                .unwrap()
                .map(|c| c.unwrap())
                .collect();
            assert_eq!(mem, out);
        }
    }
}
