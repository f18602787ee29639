//! Side-stream overlap: whether a rank's compute waited for a collective, and for how long.
//!
//! A collective runs on its own CUDA stream (NCCL's). Where the compute stream waits for it
//! right after the launch (torch's synchronous collectives, `work.wait()` at once), no compute
//! kernel of the rank starts while it runs: compute waited for all of it, and a late member
//! holds everyone up — the critical path's rule. Where compute goes on while it runs (FSDP
//! prefetch, two-batch overlap, DeepEP), compute waits for it only where a kernel needs its
//! result: the stream that needs it waits on the event recorded after the collective
//! (`cudaEventRecord`, then `cudaStreamWaitEvent`). A late member then delays the
//! collective's end, which costs the step only as far as a kernel had to wait for it.
//!
//! The rule, per collective of a GPU rank:
//! - **overlapped** ([`CollEv::overlapped`]): a compute kernel (not communication) of the rank
//!   ran during it (started before its end and ended after its start);
//! - its **wait** ([`CollEv::waited`]): if compute sat idle at its end and the first compute
//!   kernel to start at or after its end starts within [`WAIT_TOL_NS`] of it, that kernel
//!   waited for it, from the end of the compute before it (or the collective's start, if
//!   later) to its own start; otherwise 0 (the collective was over before compute needed it:
//!   hidden by the overlap);
//! - **the stream's queue** ([`drained`]): where compute sat idle waiting for a collective,
//!   it waited for every earlier collective of the same stream and group that ended during
//!   that idle wait, each from the wait's start (or its own start, if later) to its own end.
//!   A late member of the first bucket of a DDP backward delays it, and through the NCCL
//!   stream the last bucket, which the optimizer waits for. (Real NCCL on one shared H200:
//!   the next bucket's kernel started 3 to 342 µs after the previous one's end, so "starts
//!   right at its end" cannot tell queued from not; the idle wait can.)
//!
//! The reduce stage (`reduce::path`) takes a matched collective as overlapped when compute ran
//! during it on any member (a blocking collective holds every member's compute stream; the
//! last arriver of a side-stream one may have had nothing left to run), and then charges a
//! late arrival only up to the longest of its members' waits; otherwise as blocking (today's
//! rule: compute waited for all of it).
//!
//! What the trace cannot tell: Kineto's `cudaStreamWaitEvent` records carry no event handle,
//! so which wait belongs to which collective is read from the timeline as above; and a rank
//! whose trace records no `cudaStreamWaitEvent` at all says nothing about what waited for
//! what: its collectives keep [`BLOCKING`](super::collector::BLOCKING) (as a CPU-only trace's do).
//!
//! Bounded memory as [`super::segments`]: the query points of the collectives (their start and
//! end) are answered in one sweep of the compute kernels by start, both from spools.

use anyhow::Result;

use super::collector::CollEv;
use super::spill::{i64_at, Rec, Spool};

/// How soon after a collective's end the next compute kernel must start to have waited for it
/// (a wait through the host — a sync, then the launch — takes tens of µs).
pub(crate) const WAIT_TOL_NS: i64 = 50_000;

/// The sweep's answer to a query point `t`: the first compute kernel starting at or after
/// `t`, and the latest end of the compute kernels that started before `t`.
#[derive(Debug, Clone, Copy)]
struct Answer {
    id: i64,
    next: i64,
    before: i64,
}

impl Rec for Answer {
    const SIZE: usize = 24;
    fn put(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.id.to_le_bytes());
        out.extend_from_slice(&self.next.to_le_bytes());
        out.extend_from_slice(&self.before.to_le_bytes());
    }
    fn get(b: &[u8]) -> Self {
        Answer {
            id: i64_at(b, 0),
            next: i64_at(b, 8),
            before: i64_at(b, 16),
        }
    }
}

/// Sets [`CollEv::waited`] and [`CollEv::overlapped`] of a GPU rank's collectives from its
/// compute kernels (start, end), when its trace records `cudaStreamWaitEvent`
/// (`stream_waits` > 0); else every collective keeps [`BLOCKING`](super::collector::BLOCKING).
pub(crate) fn mark_waited(
    colls: Spool<CollEv>,
    compute: Spool<(i64, i64)>,
    stream_waits: u64,
) -> Result<Spool<CollEv>> {
    if stream_waits == 0 {
        return Ok(colls);
    }
    // One query per collective, at its end, with its seq as the id.
    let mut queries: Spool<(i64, i64)> = colls.like();
    let mut again = colls.like();
    for c in colls.sorted_by(|c: &CollEv| c.seq)? {
        let c = c?;
        queries.push((c.end, i64::from(c.seq)));
        again.push(c);
    }
    let answers = sweep(queries, compute)?;
    let mut ans = answers.sorted_by(|a: &Answer| a.id)?;
    let mut cur = ans.next().transpose()?;
    let mut marked = again.like();
    // (seq, the start of compute's idle wait) of each collective compute waited for.
    let mut windows: Spool<(i64, i64)> = again.like();
    for c in again.sorted_by(|c: &CollEv| c.seq)? {
        let mut c = c?;
        let seq = i64::from(c.seq);
        while let Some(a) = cur.filter(|a| a.id <= seq) {
            if a.id == seq {
                (c.waited, c.overlapped) = waited_for(c.start, c.end, a.next, a.before);
                if c.waited > 0 {
                    windows.push((seq, a.before));
                }
            }
            cur = ans.next().transpose()?;
        }
        marked.push(c);
    }
    drained(marked, windows)
}

/// The stream's queue: where compute sat idle waiting for a collective, it waited for every
/// collective of that stream queued before it that ended during the wait, each from the wait's
/// start (or its own start, if later) to its own end. A late member of an earlier one delays
/// it, and through the queue the one compute waited for.
fn drained(colls: Spool<CollEv>, windows: Spool<(i64, i64)>) -> Result<Spool<CollEv>> {
    use std::cmp::Reverse;
    use std::collections::HashMap;
    let mut out = colls.like();
    let mut wins = windows.sorted_by(|w: &(i64, i64)| Reverse(w.0))?.peekable();
    // Per stream (key): the start of the idle wait still open, going back in arrival order.
    let mut open: HashMap<u32, i64> = HashMap::new();
    for c in colls.sorted_by(|c: &CollEv| Reverse(c.seq))? {
        let mut c = c?;
        let seq = i64::from(c.seq);
        match open.get(&c.key) {
            Some(&from) if c.end > from => {
                c.waited = c.waited.max(c.end - from.max(c.start));
            }
            Some(_) => {
                open.remove(&c.key);
            }
            None => {}
        }
        // Its own wait, if compute waited for it, opens one for the collectives before it.
        while let Some(w) = wins.next_if(|w| w.as_ref().map_or(true, |&(id, _)| id >= seq)) {
            let (id, from) = w?;
            if id == seq {
                open.insert(c.key, from);
            }
        }
        out.push(c);
    }
    Ok(out)
}

/// The most a collective `[start, end)` can hold up what waits for its end.
fn full_wait(start: i64, end: i64) -> i64 {
    (end - start).max(0) + WAIT_TOL_NS
}

/// Answers the query points `(t, id)` in one sweep of the compute kernels by start.
fn sweep(queries: Spool<(i64, i64)>, compute: Spool<(i64, i64)>) -> Result<Spool<Answer>> {
    let mut out = queries.like();
    let mut ivs = compute.sorted_by(|c: &(i64, i64)| *c)?.peekable();
    let mut before = i64::MIN;
    for q in queries.sorted_by(|q: &(i64, i64)| *q)? {
        let (t, id) = q?;
        let next = loop {
            match ivs.peek() {
                None => break i64::MAX,
                Some(Err(_)) => {
                    ivs.next().transpose()?;
                }
                Some(&Ok((s, e))) => {
                    if s >= t {
                        break s;
                    }
                    before = before.max(e);
                    ivs.next();
                }
            }
        };
        out.push(Answer { id, next, before });
    }
    Ok(out)
}

/// One collective `[start, end)` on its rank: how long compute waited for it, and whether
/// compute ran during it. `consumer`: the first compute kernel starting at or after its end;
/// `before`: the latest end of the compute kernels that started before its end.
fn waited_for(start: i64, end: i64, consumer: i64, before: i64) -> (i64, bool) {
    let overlapped = before > start;
    // Compute still running at its end did not wait for it.
    if before >= end || consumer == i64::MAX || consumer - end > WAIT_TOL_NS {
        return (0, overlapped);
    }
    let waited = (consumer - before.max(start)).clamp(0, full_wait(start, end));
    (waited, overlapped)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compute_waits_only_where_the_next_kernel_starts_at_the_end() {
        // Compute idle from before its start to right after its end: it waited for all of it
        // (a blocking collective, or the last arriver of a side-stream one).
        assert_eq!(waited_for(100, 200, 202, 90), (102, false));
        // Compute ran during it and went on well after its end: hidden.
        assert_eq!(waited_for(100, 200, 100_000, 90_000), (0, true));
        // Compute still running at its end: it did not wait, however soon the next starts.
        assert_eq!(waited_for(100, 200, 260, 259), (0, true));
        // Compute ran during it, sat idle from 150, and started again right at its end.
        assert_eq!(waited_for(100, 200, 201, 150), (51, true));
        // No compute after it.
        assert_eq!(waited_for(100, 200, i64::MAX, 150), (0, true));
    }

    fn ev(seq: u32, start: i64, end: i64) -> CollEv {
        CollEv::recorded(0, 0, seq, start, end, 0)
    }

    #[test]
    fn the_sweep_marks_each_collective() {
        // Compute: 0-90, 110-150 (during the first), 205-300 (after it, waited since 150);
        // 20.4-20.5 µs runs during the second (20.35-20.45 µs), the next kernel 55.55 µs
        // after its end: hidden; nothing runs during the third.
        let compute = [
            (0, 90),
            (110, 150),
            (205, 300),
            (20_400, 20_500),
            (76_000, 76_100),
        ];
        let colls = [
            ev(0, 100, 200),
            ev(1, 20_350, 20_450),
            ev(2, 90_000, 91_000),
        ];
        for cap in [1, 1 << 10] {
            let mut cs = Spool::with_cap(cap);
            colls.iter().for_each(|c| cs.push(*c));
            let mut ks = Spool::with_cap(cap);
            compute.iter().for_each(|c| ks.push(*c));
            let out: Vec<(i64, bool)> = mark_waited(cs, ks, 1)
                .unwrap()
                .sorted_by(|c: &CollEv| c.seq)
                .unwrap()
                .map(|c| c.unwrap())
                .map(|c| (c.waited, c.overlapped))
                .collect();
            assert_eq!(out, vec![(55, true), (0, true), (0, false)], "cap {cap}");
        }
    }

    /// (waited, overlapped) of each collective, by seq, for compute kernels `compute`.
    fn marked(colls: &[CollEv], compute: &[(i64, i64)]) -> Vec<(i64, bool)> {
        let mut cs = Spool::with_cap(1);
        colls.iter().for_each(|c| cs.push(*c));
        let mut ks = Spool::with_cap(1);
        compute.iter().for_each(|c| ks.push(*c));
        mark_waited(cs, ks, 1)
            .unwrap()
            .sorted_by(|c: &CollEv| c.seq)
            .unwrap()
            .map(|c| c.unwrap())
            .map(|c| (c.waited, c.overlapped))
            .collect()
    }

    #[test]
    fn compute_waiting_for_a_stream_waits_for_what_was_queued_before_it() {
        // Compute runs to 1 ms and waits from there for the second collective, which
        // followed the first on the stream: the first ended during the wait.
        let compute = [(0, 1_000_000), (5_020_000, 6_000_000)];
        let first = ev(0, 500_000, 3_000_000);
        let second = ev(1, 3_004_000, 5_000_000);
        assert_eq!(
            marked(&[first, second], &compute),
            vec![
                (3_000_000 - 1_000_000, true),
                (5_020_000 - 3_004_000, false)
            ]
        );
        // A first of another stream is not in that stream's queue: nothing waited for it.
        let other = CollEv { key: 1, ..first };
        assert_eq!(
            marked(&[other, second], &compute),
            vec![(0, true), (5_020_000 - 3_004_000, false)]
        );
        // A first that ended before compute went idle was not waited for.
        let early = ev(0, 100_000, 900_000);
        assert_eq!(
            marked(&[early, second], &compute),
            vec![(0, true), (5_020_000 - 3_004_000, false)]
        );
        // Compute that went on past the second's end waited for neither.
        assert_eq!(
            marked(
                &[first, second],
                &[
                    (0, 1_000_000),
                    (4_000_000, 5_500_000),
                    (90_000_000, 90_100_000)
                ]
            ),
            vec![(0, true), (0, true)]
        );
    }
}
