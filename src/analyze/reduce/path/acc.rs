//! The accumulator of the critical path: fed every matched collective by the matching
//! (`reduce::collectives`), as it reads them, it charges each late arrival to its rank and
//! cause, keeps the costliest, the transfers per world and the costs per step, and turns them
//! into a [`CriticalPath`] ([`Acc::finish`]). The model is in [`super`]'s documentation.

use std::collections::{BTreeMap, BTreeSet};

use super::graph::Member;
use super::kept::{waiters, Kept, LateRec, Names};
use super::whatif::WhatIfAcc;
use super::{
    label, Cause, CriticalPath, Hidden, Kind, Late, PathStep, Transfer, MARKS, ROW_CAUSES,
};
use crate::analyze::collect::collector::CollEv;
use crate::analyze::collect::segments::NO_PREV;
use crate::analyze::reduce::steps::StepTable;
use crate::analyze::stats::{lower_median, lower_median_in};
use crate::trace::Ns;

/// A member's segment split: (seg, busy, host, late), its segment starting at `from` (its own
/// `prev_end`, or the common start of a step's first collective: [`common_start`]); the time
/// from `from` to its own step start is late start.
fn split(r: &CollEv, from: i64) -> (i64, i64, i64, i64) {
    let seg = (r.start - from).max(0);
    let busy = r.busy.clamp(0, seg);
    let pre = r.pre
        + if r.from_step {
            (r.prev_end - from).max(0)
        } else {
            0
        };
    let late = pre.clamp(0, seg - busy);
    (seg, busy, seg - busy - late, late)
}

/// Where the members' segments start: their own `prev_end`, except that the members whose
/// segment starts at their step's start ([`CollEv::from_step`]: the first collective of a
/// profile) all start at the earliest of those step starts, so that a rank which began the
/// step after the others has that much more segment, as late start. Into `out`, one per record.
fn common_start(recs: &[CollEv], out: &mut Vec<i64>) {
    let first = recs
        .iter()
        .filter(|r| r.from_step)
        .map(|r| r.prev_end)
        .min();
    out.clear();
    out.extend(recs.iter().map(|r| match first {
        Some(t) if r.from_step => t,
        _ => r.prev_end,
    }));
}

/// A cost split over (work, host gap, late start) in proportion to the last arriver's excess
/// in each over the median member's; the host gap takes what rounding leaves, and all of it
/// when there is no excess.
fn split_cost(cost: i64, [e_work, e_host, e_late]: [i64; 3]) -> [i64; 3] {
    let e = e_work + e_host + e_late;
    let (work, late) = if e == 0 {
        (0, 0)
    } else {
        let share = |x: i64| (i128::from(cost) * i128::from(x) / i128::from(e)) as i64;
        (share(e_work), share(e_late))
    };
    [work, cost - work - late, late]
}

/// Which collective a late arrival is at.
#[derive(Clone, Copy)]
struct At<'a> {
    world: usize,
    key: &'a str,
    index: usize,
    name: &'a str,
}

/// One matched collective as [`Acc::add`] takes it: its members (rank indices), their
/// records, the position `l` of the last arriver, and what compute waited for it when compute
/// ran on through it ([`overlap_cap`]).
struct Matched<'a> {
    at: At<'a>,
    members: &'a [usize],
    recs: &'a [CollEv],
    l: usize,
    cap: Option<i64>,
}

impl Matched<'_> {
    /// The last arriver's record.
    fn last(&self) -> &CollEv {
        &self.recs[self.l]
    }
}

/// One collective's members' segments, in buffers kept from one collective to the next (a
/// profile matches hundreds of thousands).
#[derive(Default)]
struct Segments {
    /// Where each member's segment starts ([`common_start`]).
    from: Vec<i64>,
    /// Each member's (segment, work, host gap, late start) ([`split`]).
    parts: Vec<(i64, i64, i64, i64)>,
    replayed: Vec<Member>,
    sorted: Vec<i64>,
}

impl Segments {
    fn fill(&mut self, recs: &[CollEv]) {
        common_start(recs, &mut self.from);
        self.parts.clear();
        self.parts
            .extend(recs.iter().zip(&self.from).map(|(r, &f)| split(r, f)));
    }

    /// The lower median over the members of one part of their segments.
    fn median(&mut self, f: fn(&(i64, i64, i64, i64)) -> i64) -> i64 {
        self.sorted.clear();
        self.sorted.extend(self.parts.iter().map(f));
        lower_median_in(&mut self.sorted)
    }
}

/// Accumulates the matched collectives as the matching reads them.
pub(crate) struct Acc {
    labels: Vec<String>,
    /// Per rank, its steps' windows (start, end) on the common clock and the step table row
    /// of each (None: not in the table).
    windows: Vec<Vec<(i64, i64, Option<usize>)>>,
    rows: Vec<(String, i64)>,
    collectives: usize,
    late: usize,
    /// (rank, kind) → (cost, collectives).
    cost: BTreeMap<(usize, Kind), (i64, usize)>,
    row_cost: Vec<BTreeMap<(usize, Kind), i64>>,
    /// Rows with a matched collective that could not be charged (a member had no collective
    /// before it): left out of the per-step figures, which would undercount them.
    row_skipped: Vec<bool>,
    worst: Kept,
    /// The costliest late arrivals for the merged trace (up to [`MARKS`]).
    marks: Kept,
    /// The kept late arrivals' collective keys and names.
    names: Names,
    /// One late arrival's waiters, before they are kept ([`waiters`]).
    waiting: Vec<(usize, i64)>,
    /// Keep the marks' waiters ([`crate::analyze::AnalyzeOptions::waiters`]).
    keep_waiters: bool,
    /// Buffers for one collective at a time ([`Acc::add`]).
    scratch: Segments,
    /// world → name → the transfer of each matched collective, its bytes (0: unknown) and
    /// its members (one record per collective of a world, not per rank: the medians need
    /// them). By world, then name, so that a collective's name is looked up as it is (not
    /// made a `String` a collective).
    transfers: BTreeMap<usize, BTreeMap<String, Vec<Moved>>>,
    origin: i64,
    /// The re-simulations ([`super::whatif`]).
    whatif: WhatIfAcc,
    /// (rank, step-table row) → its lead at the overlapped collectives it arrived last at
    /// (what it would cost had compute waited for them), the part the overlap hid, and how
    /// many ([`overlap_cap`]).
    hidden: BTreeMap<(usize, Option<usize>), (i64, i64, usize)>,
    /// The late arrivals charged so far, each rank's settled in its time order at the end (the
    /// lag one leaves may carry to the rank's next, [`Charged::carried`]; collectives are matched key by
    /// key, not in time order).
    charged: Vec<Charged>,
    /// The ranks' hosts run ahead of their devices (GPU traces): lag carries
    /// ([`Charged::carried`]).
    run_ahead: bool,
    /// (rank, arrival, end) → its parts (work, host, late start) once settled, where the lag
    /// carried changed them (two collectives on two streams may share an arrival, not an end).
    settled: BTreeMap<(usize, i64, i64), [i64; 3]>,
}

/// One late arrival as charged: the rank, its arrival, its segment's start, the collective's
/// end, its cost and its parts (work, host, late start).
#[derive(Debug, Clone, Copy)]
struct Charged {
    rank: usize,
    at: i64,
    from: i64,
    end: i64,
    cost: i64,
    parts: [i64; 3],
}

impl Charged {
    /// Its parts with the lag carried from `prev`, the same rank's previous late arrival as
    /// settled (GPU ranks). Its peers waited for it inside that collective's kernel, and their
    /// hosts ran on meanwhile, launching what comes next; its own host could not. So at its
    /// next collective its GPU finds less queued than theirs, and idles while its host catches
    /// up: lag carried, not a new host gap. When this segment starts at `prev`'s end, up to
    /// `prev`'s cost (what the peers waited there) of this host part is split as `prev`'s was.
    fn carried(&self, prev: &Charged) -> [i64; 3] {
        let total: i64 = prev.parts.iter().sum();
        if self.from != prev.end || total <= 0 {
            return self.parts;
        }
        let [work, host, late] = self.parts;
        let moved = host.min(prev.cost).max(0);
        let share = |x: i64| (i128::from(moved) * i128::from(x) / i128::from(total)) as i64;
        let (w, l) = (share(prev.parts[0]), share(prev.parts[2]));
        [work + w, host - w - l, late + l]
    }
}

/// One matched collective's transfer (ns), bytes (0: unknown) and member count.
type Moved = (i64, u64, u32);

impl Acc {
    /// `windows[r]`: rank r's step windows (start, duration) on the common clock, in its own
    /// step order (the step table's `idx` points into them). `ideal`: keep the what-if's ideal
    /// timeline ([`super::ideal`]). `run_ahead`: the ranks' hosts run ahead of their devices
    /// (GPU traces), so a last arrival's lag carries to its next collective ([`Charged::carried`]).
    /// `waiters`: keep the waiters of the late arrivals kept for a merged trace ([`Late::waiters`]).
    pub(crate) fn new(
        labels: &[String],
        windows: &[Vec<(i64, i64)>],
        steps: &StepTable,
        top_n: usize,
        ideal: bool,
        run_ahead: bool,
        waiters: bool,
    ) -> Acc {
        let mut w: Vec<Vec<(i64, i64, Option<usize>)>> = windows
            .iter()
            .map(|v| v.iter().map(|&(s, d)| (s, s + d.max(1), None)).collect())
            .collect();
        for (row, sr) in steps.rows.iter().enumerate() {
            for (r, &i) in sr.idx.iter().enumerate() {
                if let Some(x) = w.get_mut(r).and_then(|v| v.get_mut(i)) {
                    x.2 = Some(row);
                }
            }
        }
        for v in &mut w {
            v.sort_by_key(|x| x.0);
        }
        Acc {
            labels: labels.to_vec(),
            windows: w,
            rows: steps
                .rows
                .iter()
                .map(|r| {
                    (
                        r.step.clone(),
                        r.dur_ns.iter().map(|d| d.get()).max().unwrap_or(0),
                    )
                })
                .collect(),
            collectives: 0,
            late: 0,
            cost: BTreeMap::new(),
            row_cost: vec![BTreeMap::new(); steps.rows.len()],
            row_skipped: vec![false; steps.rows.len()],
            worst: Kept::new(top_n),
            marks: Kept::new(MARKS),
            names: Names::default(),
            waiting: Vec::new(),
            keep_waiters: waiters,
            transfers: BTreeMap::new(),
            scratch: Segments::default(),
            origin: i64::MAX,
            whatif: WhatIfAcc::new(
                ideal.then(|| steps.rows.iter().map(|r| r.step.clone()).collect()),
            ),
            hidden: BTreeMap::new(),
            charged: Vec::new(),
            run_ahead,
            settled: BTreeMap::new(),
        }
    }

    fn row_of(&self, r: usize, t: i64) -> Option<usize> {
        let w = self.windows.get(r)?;
        let k = w.partition_point(|x| x.0 <= t);
        (0..k)
            .rev()
            .take(4)
            .find(|&i| t < w[i].1)
            .and_then(|i| w[i].2)
    }

    /// World `world`'s collectives are replayed on the graph ([`super::graph`]): a CPU-only
    /// world, or one with point-to-point pairs.
    pub(crate) fn graph_world(&mut self, world: usize, pipeline: bool) {
        self.whatif.graph_world(world, pipeline);
    }

    /// GPU world `world` is replayed on the graph if its members leave its collectives at
    /// different times ([`super::whatif`]).
    pub(crate) fn maybe_graph_world(&mut self, world: usize) {
        self.whatif.maybe_graph_world(world);
    }

    /// One matched collective: its members (rank indices) and their records; `latest`: the
    /// member position with the latest start, `tie`: another started less than the tolerance
    /// before it (no one arrived last).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn add(
        &mut self,
        world: usize,
        key: &str,
        index: usize,
        name: &str,
        members: &[usize],
        recs: &[CollEv],
        latest: usize,
        tie: bool,
    ) {
        if let Some(lo) = recs.iter().map(|r| r.start).min() {
            self.origin = self.origin.min(lo);
        }
        if members.len() < 2 {
            return;
        }
        let Some(lr) = recs.get(latest) else { return };
        self.add_transfer(world, name, members.len(), lr);
        if recs.iter().any(|r| r.prev_end == NO_PREV) {
            self.skip_rows(members, recs);
            return;
        }
        self.collectives += 1;
        let mut seg = std::mem::take(&mut self.scratch);
        seg.fill(recs);
        let c = Matched {
            at: At {
                world,
                key,
                index,
                name,
            },
            members,
            recs,
            l: latest,
            cap: overlap_cap(recs),
        };
        self.replay(&c, &mut seg);
        if !tie {
            self.charge_late(&c, &mut seg);
        }
        self.scratch = seg;
    }

    /// The transfer of a collective (its last arriver's record `lr`: from its start, when all
    /// members are in, to its end), one per collective, by world and name.
    fn add_transfer(&mut self, world: usize, name: &str, members: usize, lr: &CollEv) {
        let moved = ((lr.end - lr.start).max(0), lr.bytes, members as u32);
        let by_name = self.transfers.entry(world).or_default();
        match by_name.get_mut(name) {
            Some(v) => v.push(moved),
            None => {
                by_name.insert(name.to_string(), vec![moved]);
            }
        }
    }

    /// A collective some member has no segment before (nothing before it in its window): the
    /// step rows it falls in are not measured in full.
    fn skip_rows(&mut self, members: &[usize], recs: &[CollEv]) {
        for (&m, r) in members.iter().zip(recs) {
            if let Some(x) = self
                .row_of(m, r.start)
                .and_then(|i| self.row_skipped.get_mut(i))
            {
                *x = true;
            }
        }
    }

    /// The collective for the re-simulation ([`super::whatif`]), in the step row of its last
    /// arriver.
    fn replay(&mut self, c: &Matched<'_>, seg: &mut Segments) {
        let lr = c.last();
        let Some(row) = self.row_of(c.members[c.l], lr.start) else {
            return;
        };
        seg.replayed.clear();
        seg.replayed.extend(
            c.members
                .iter()
                .zip(c.recs)
                .zip(&seg.from)
                .zip(&seg.parts)
                .map(|(((&rank, r), &f), p)| Member {
                    rank,
                    seq: r.seq,
                    from: f,
                    seg: p.0,
                    parts: [p.1, p.2, p.3],
                    end: r.end,
                }),
        );
        let transfer = (lr.end - lr.start).max(0);
        self.whatif.add(
            row,
            c.at.world,
            c.at.name,
            &seg.replayed,
            transfer,
            c.cap.unwrap_or(i64::MAX),
        );
    }

    /// Charges the last arriver what the others waited for it at one collective: its
    /// segment's lead over the median member's, capped by what compute waited for the
    /// collective (its `cap`, when compute ran on through it), split over its causes
    /// ([`split_cost`]). Nothing when it has no lead.
    fn charge_late(&mut self, c: &Matched<'_>, seg: &mut Segments) {
        let (members, l, cap) = (c.members, c.l, c.cap);
        let lr = c.last();
        let mine = seg.parts[l];
        let lead = mine.0 - seg.median(|p| p.0);
        if lead <= 0 {
            return;
        }
        let cost = cap.map_or(lead, |w| lead.min(w));
        if let Some(w) = cap {
            let row = self.row_of(members[l], lr.start);
            let h = self.hidden.entry((members[l], row)).or_default();
            h.0 += lead;
            h.1 += lead - lead.min(w);
            h.2 += 1;
        }
        if cost <= 0 {
            return;
        }
        self.late += 1;
        let excess = [
            (mine.1 - seg.median(|p| p.1)).max(0),
            (mine.2 - seg.median(|p| p.2)).max(0),
            (mine.3 - seg.median(|p| p.3)).max(0),
        ];
        let parts = split_cost(cost, excess);
        let rank = members[l];
        self.charged.push(Charged {
            rank,
            at: lr.start,
            from: seg.from[l],
            end: lr.end,
            cost,
            parts,
        });
        if self.worst.wants(cost) || self.marks.wants(cost) {
            self.keep_late(c, seg.from[l], cost, parts);
        }
    }

    /// A late arrival among the costliest (its segment from `from`, its cost and the cost's
    /// parts): kept for the report and the merged trace's marks.
    fn keep_late(&mut self, c: &Matched<'_>, from: i64, cost: i64, parts: [i64; 3]) {
        let (at, lr) = (c.at, c.last());
        // Which collective: its world, key, index and name.
        let which = (
            at.world,
            self.names.id(at.key),
            at.index,
            self.names.id(at.name),
        );
        let transfer = (lr.end - lr.start).max(0);
        let rec = LateRec::new(
            which,
            c.members[c.l],
            (from, lr.start),
            cost,
            parts,
            transfer,
        );
        if self.worst.wants(cost) {
            self.worst.push(rec, &[], &self.names);
        }
        if self.marks.wants(cost) {
            self.waiting.clear();
            if self.keep_waiters {
                waiters(c.members, c.recs, c.l, &mut self.waiting);
            }
            self.marks.push(rec, &self.waiting, &self.names);
        }
    }

    /// Charges every late arrival, each rank's in time order, with the lag carried from the
    /// rank's previous one moved out of its host share ([`Charged::carried`], GPU ranks only); what
    /// changed is kept in `settled` for the arrivals listed ([`Acc::settled`]).
    fn settle(&mut self) {
        let mut charged = std::mem::take(&mut self.charged);
        charged.sort_by_key(|c| (c.rank, c.at, c.end));
        let mut prev: Option<Charged> = None;
        for c in charged {
            let parts = match prev {
                Some(p) if self.run_ahead && p.rank == c.rank => c.carried(&p),
                _ => c.parts,
            };
            if parts != c.parts {
                self.settled.insert((c.rank, c.at, c.end), parts);
            }
            prev = Some(Charged { parts, ..c });
            let [work, host, late] = parts;
            self.charge(
                c.rank,
                c.at,
                [
                    (Kind::Work, work),
                    (Kind::Host, host),
                    (Kind::LateStart, late),
                ],
            );
        }
    }

    /// A listed late arrival with its parts as settled.
    fn settled(&self, mut l: LateRec) -> LateRec {
        if let Some(parts) = self.settled.get(&(l.rank, l.start, l.start + l.transfer)) {
            l.parts = *parts;
        }
        l
    }

    /// Charges the last arriver `rank` (arrived at `at`) each part of its cost, over the
    /// profile and in its step-table row.
    fn charge(&mut self, rank: usize, at: i64, parts: [(Kind, i64); 3]) {
        let row = self.row_of(rank, at);
        for (kind, ns) in parts {
            if ns <= 0 {
                continue;
            }
            let c = self.cost.entry((rank, kind)).or_default();
            c.0 += ns;
            c.1 += 1;
            if let Some(m) = row.and_then(|i| self.row_cost.get_mut(i)) {
                *m.entry((rank, kind)).or_default() += ns;
            }
        }
    }
}

/// How long compute waited for a collective that it ran on through (a side-stream
/// collective, [`crate::analyze::collect::overlap`]: compute ran during it on some member):
/// the longest wait of its members, when every member's trace says how long; `None` (compute
/// waited for all of it, as the critical path assumes) for a blocking collective or one a
/// member's trace cannot tell about.
fn overlap_cap(recs: &[CollEv]) -> Option<i64> {
    if recs.iter().any(|r| r.waited < 0) || !recs.iter().any(|r| r.overlapped) {
        return None;
    }
    recs.iter().map(|r| r.waited).max()
}

/// The steps the per-step figures are over: the rows measured in full, and their mean time.
struct Measured {
    rows: Vec<usize>,
    step_ns: f64,
}

impl Measured {
    fn steps(&self) -> usize {
        self.rows.len()
    }

    /// With steps, what was charged inside them over their number; else the whole profile.
    fn per(&self, total: i64, in_steps: i64) -> f64 {
        if self.steps() > 0 {
            in_steps as f64 / self.steps() as f64
        } else {
            total as f64
        }
    }

    /// Of the mean step, percent (0 without steps).
    fn pct(&self, x: f64) -> f64 {
        if self.step_ns > 0.0 {
            100.0 * x / self.step_ns
        } else {
            0.0
        }
    }
}

impl Acc {
    /// The totals; `worlds` as the matching used them. In phases: the steps measured in full,
    /// the (rank, kind) causes against their world's typical rank, the transfers and slow
    /// links, the order, the per-row costs of the costliest, the per-step table, the notes and
    /// the what-if (`stage_of`: each rank's pipeline stage, for its stages made typical).
    pub(crate) fn finish(
        mut self,
        worlds: &[Vec<usize>],
        stage_of: &[Option<u32>],
    ) -> CriticalPath {
        self.settle();
        let marks = self.marks();
        let worst = self.worst();
        let m = self.measured();
        let mut causes = self.rank_causes(&m, worlds);
        let (transfers, links, mut notes) = self.transfers(&m, worlds);
        causes.extend(links);
        causes.sort_by(|a, b| {
            b.net_per_step_ns
                .total_cmp(&a.net_per_step_ns)
                .then(b.per_step_ns.total_cmp(&a.per_step_ns))
                .then(a.who.cmp(&b.who))
                .then(a.kind.cmp(&b.kind))
        });
        self.keep_rows(&mut causes);
        let per_step = self.per_step();
        notes.extend(self.notes(m.steps()));
        let hidden = self.hidden(&m, worlds);
        notes.extend(hidden.iter().map(Hidden::note));
        let labels = std::mem::take(&mut self.labels);
        let lockstep: BTreeSet<usize> = (0..worlds.len())
            .filter(|&w| self.lockstep(&worlds[w]))
            .collect();
        let what_if = std::mem::take(&mut self.whatif)
            .finish(&m.rows, m.step_ns, &labels, worlds, &lockstep, stage_of);
        CriticalPath {
            what_if,
            collectives: self.collectives,
            late: self.late,
            steps: m.steps(),
            step_ns: m.step_ns,
            causes,
            worst,
            transfers,
            per_step,
            notes,
            host_ops: Vec::new(),
            hidden,
            marks,
        }
    }

    /// Whether the ranks `members` run their steps in lockstep, as a training pipeline's
    /// stages do (each step on every stage, one after another): in the median pair of
    /// consecutive steps, the next begins on some rank less than a third of the step before
    /// the last rank ends this one. A serving pipeline's stages work on different batches at
    /// once (stage 0 takes the next while the last finishes this one: two thirds of the step
    /// on `rankprof synth --pp 4`; 0–13 % on the recorded training pipelines).
    fn lockstep(&self, members: &[usize]) -> bool {
        let mut rows: BTreeMap<usize, (i64, i64)> = BTreeMap::new();
        for &r in members {
            for &(s, e, row) in self.windows.get(r).into_iter().flatten() {
                if let Some(row) = row {
                    let x = rows.entry(row).or_insert((s, e));
                    *x = (x.0.min(s), x.1.max(e));
                }
            }
        }
        let spans: Vec<(i64, i64)> = rows.into_values().collect();
        let overlaps: Vec<f64> = spans
            .windows(2)
            .filter(|p| p[0].1 > p[0].0)
            .map(|p| (p[0].1 - p[1].0) as f64 / (p[0].1 - p[0].0) as f64)
            .collect();
        overlaps.is_empty() || crate::analyze::stats::median(&overlaps) <= 1.0 / 3.0
    }

    /// Per rank, its late arrivals at collectives that compute ran on through: what they would
    /// cost had compute waited for them and the part hidden, per step over the measured rows;
    /// the most hidden first.
    fn hidden(&self, m: &Measured, worlds: &[Vec<usize>]) -> Vec<Hidden> {
        let mut by_rank: BTreeMap<usize, (i64, i64, usize, i64, i64)> = BTreeMap::new();
        for (&(r, row), &(lead, hidden, n)) in &self.hidden {
            let x = by_rank.entry(r).or_default();
            x.0 += lead;
            x.1 += hidden;
            x.2 += n;
            if row.is_some_and(|i| m.rows.contains(&i)) {
                x.3 += lead;
                x.4 += hidden;
            }
        }
        let mut out: Vec<Hidden> = by_rank
            .into_iter()
            .filter(|x| x.1 .1 > 0)
            .map(|(r, (lead, hidden, n, lead_in, hidden_in))| Hidden {
                who: label(&self.labels, r),
                world: worlds.iter().position(|w| w.contains(&r)).unwrap_or(0),
                collectives: n,
                lead_per_step_ns: m.per(lead, lead_in),
                hidden_per_step_ns: m.per(hidden, hidden_in),
            })
            .collect();
        out.sort_by(|a, b| {
            b.hidden_per_step_ns
                .total_cmp(&a.hidden_per_step_ns)
                .then(a.who.cmp(&b.who))
        });
        out
    }

    /// The kept late arrivals of `kept` as settled, with their times as ms from the first
    /// matched collective's, in `kept`'s order (costliest first).
    fn lates(&self, kept: Kept) -> Vec<Late> {
        let (recs, pool) = kept.finish(&self.names);
        recs.into_iter()
            .map(|r| {
                let t_ms = (r.start as f64 - self.origin as f64) / 1e6;
                self.settled(r)
                    .to_late(&self.labels, &self.names, &pool, t_ms)
            })
            .collect()
    }

    /// The late arrivals kept for the merged trace, in time order.
    fn marks(&mut self) -> Vec<Late> {
        let kept = std::mem::replace(&mut self.marks, Kept::new(0));
        let mut marks = self.lates(kept);
        marks.sort_by_key(|l| (l.start_ns, l.world, l.index));
        marks
    }

    /// The costliest late arrivals, costliest first.
    fn worst(&mut self) -> Vec<Late> {
        let kept = std::mem::replace(&mut self.worst, Kept::new(0));
        self.lates(kept)
    }

    /// Per step: over the steps measured in full.
    fn measured(&self) -> Measured {
        let rows: Vec<usize> = (0..self.rows.len())
            .filter(|&i| !self.row_skipped[i])
            .collect();
        let step_ns = if rows.is_empty() {
            0.0
        } else {
            rows.iter().map(|&i| self.rows[i].1 as f64).sum::<f64>() / rows.len() as f64
        };
        Measured { rows, step_ns }
    }

    /// Each (rank, kind) charged: its cost per step, and its net over the typical rank of its
    /// world in the same kind (the lower median over the world's ranks).
    fn rank_causes(&self, m: &Measured, worlds: &[Vec<usize>]) -> Vec<Cause> {
        let mut in_steps: BTreeMap<(usize, Kind), i64> = BTreeMap::new();
        for &i in &m.rows {
            for (&k, &ns) in &self.row_cost[i] {
                *in_steps.entry(k).or_default() += ns;
            }
        }
        let cost: BTreeMap<(usize, Kind), (i64, i64, usize)> = self
            .cost
            .iter()
            .map(|(&k, &(ns, n))| (k, (ns, in_steps.get(&k).copied().unwrap_or(0), n)))
            .collect();
        let world_of = |r: usize| worlds.iter().position(|w| w.contains(&r));
        cost.iter()
            .map(|(&(r, kind), &(ns, in_steps, n))| {
                let mine = m.per(ns, in_steps);
                let peers: Vec<usize> = world_of(r)
                    .and_then(|w| worlds.get(w))
                    .cloned()
                    .unwrap_or_else(|| vec![r]);
                let mut of_peers: Vec<f64> = peers
                    .iter()
                    .map(|&p| cost.get(&(p, kind)).map_or(0.0, |&(t, i, _)| m.per(t, i)))
                    .collect();
                of_peers.sort_by(f64::total_cmp);
                let typical = of_peers
                    .get(of_peers.len().saturating_sub(1) / 2)
                    .copied()
                    .unwrap_or(0.0);
                let net = (mine - typical).max(0.0);
                Cause {
                    who: label(&self.labels, r),
                    world: world_of(r).unwrap_or(0),
                    kind,
                    cost_ns: Ns::new(ns),
                    collectives: n,
                    per_step_ns: mine,
                    step_pct: m.pct(mine),
                    net_per_step_ns: net,
                    net_step_pct: m.pct(net),
                    per_row_ns: Vec::new(),
                }
            })
            .collect()
    }

    /// Transfers per world and collective name, the slow links among them (as causes), and
    /// the notes on transfers not judged for want of sizes.
    fn transfers(
        &self,
        m: &Measured,
        worlds: &[Vec<usize>],
    ) -> (Vec<Transfer>, Vec<Cause>, Vec<String>) {
        // Transfers: each world's median against the other worlds' (the median of their
        // medians) for the same collective name; medians, as one collective that also moves
        // more data or waits on something else does not make a link slow.
        let each: Vec<((usize, &String), &Vec<Moved>)> = self
            .transfers
            .iter()
            .flat_map(|(&w, by_name)| by_name.iter().map(move |(name, v)| ((w, name), v)))
            .collect();
        let medians: BTreeMap<(usize, &String), (i64, Option<u64>)> =
            each.iter().map(|&(k, v)| (k, median_transfer(v))).collect();
        let rows = self.rows.len();
        let mut links = Vec::new();
        let mut transfers = Vec::new();
        let mut no_size: Vec<String> = Vec::new();
        for &(key, v) in &each {
            let (w, name) = key;
            let n = v.len();
            let (median, bytes) = medians.get(&key).copied().unwrap_or((0, None));
            // The same collective in the other worlds, when it moves as much data (within
            // 10 %, or the sizes are not known: shown, not judged).
            let alike = |b: Option<u64>| match (bytes, b) {
                (Some(x), Some(y)) => (x as f64 - y as f64).abs() <= 0.1 * x.max(y) as f64,
                _ => true,
            };
            let others: Vec<i64> = medians
                .iter()
                .filter(|((ow, on), (_, ob))| *ow != w && *on == name && alike(*ob))
                .map(|(_, &(m, _))| m)
                .collect();
            let others_ns = (!others.is_empty()).then(|| lower_median(others) as f64);
            let mean = median as f64;
            // A slow link is judged only between collectives whose sizes the trace gives (a
            // longer transfer of more data is no slow link): a gloo `c10d::` op, or a kernel
            // without `In msg nelems` / `dtype`, is shown, not judged.
            let sized = bytes.is_some()
                && medians
                    .iter()
                    .filter(|((ow, on), _)| *ow != w && *on == name)
                    .all(|(_, (_, ob))| ob.is_some());
            if !sized {
                if let Some(o) = others_ns.filter(|&o| mean > 1.2 * o && mean - o >= 1_000.0) {
                    no_size.push(format!(
                        "{name} in world {w} takes {:.2}× the transfer time of the other worlds' (median {:.1} µs vs {:.1} µs), but the trace gives no sizes: not judged a slow link",
                        mean / o,
                        mean / 1e3,
                        o / 1e3
                    ));
                }
            }
            let busbw_gbps = median_busbw(name, v);
            if let Some(o) = others_ns.filter(|_| sized) {
                let extra = ((mean - o) * n as f64).round() as i64;
                // Out of line: more than a fifth over the others' and at least 1 µs a time.
                if mean > 1.2 * o && mean - o >= 1_000.0 {
                    let who = worlds
                        .get(w)
                        .map(|m| {
                            let l: Vec<&str> = m
                                .iter()
                                .filter_map(|&r| self.labels.get(r).map(String::as_str))
                                .collect();
                            crate::analyze::rankset::compact(&l)
                        })
                        .unwrap_or_default();
                    // Transfers are not split by step: spread over the steps' share of them.
                    // Over every step (a transfer needs no collective before it).
                    let each = if rows > 0 {
                        extra as f64 / rows as f64
                    } else {
                        extra as f64
                    };
                    links.push(Cause {
                        who,
                        world: w,
                        kind: Kind::Transfer,
                        cost_ns: Ns::new(extra),
                        collectives: n,
                        per_step_ns: each,
                        step_pct: m.pct(each),
                        net_per_step_ns: each,
                        net_step_pct: m.pct(each),
                        per_row_ns: Vec::new(),
                    });
                }
            }
            transfers.push(Transfer {
                world: w,
                name: name.clone(),
                collectives: n,
                median_ns: mean,
                others_ns,
                bytes: bytes.map(|b| b as f64),
                busbw_gbps,
            });
        }
        (transfers, links, no_size)
    }

    /// The costliest causes keep their cost per row (the verdict's figure from an onset).
    fn keep_rows(&self, causes: &mut [Cause]) {
        for c in causes.iter_mut().take(ROW_CAUSES) {
            if c.kind == Kind::Transfer {
                continue;
            }
            let Some(r) = self.labels.iter().position(|l| *l == c.who) else {
                continue;
            };
            c.per_row_ns = self
                .row_cost
                .iter()
                .zip(&self.row_skipped)
                .map(|(m, &skipped)| {
                    (!skipped).then(|| Ns::new(m.get(&(r, c.kind)).copied().unwrap_or(0)))
                })
                .collect();
        }
    }

    /// What the late arrivals cost each row of the step table, and the largest.
    fn per_step(&self) -> Vec<PathStep> {
        self.rows
            .iter()
            .zip(&self.row_cost)
            .map(|((step, dur), m)| {
                let top = m
                    .iter()
                    .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
                    .map(|(&(r, k), &ns)| (label(&self.labels, r), k, ns));
                PathStep {
                    step: step.clone(),
                    step_ns: Ns::new(*dur),
                    cost_ns: Ns::new(m.values().sum()),
                    top_ns: Ns::new(top.as_ref().map_or(0, |t| t.2)),
                    top_kind: top.as_ref().map(|t| t.1),
                    top_who: top.map(|t| t.0),
                }
            })
            .collect()
    }

    /// Why some figures are partial or missing.
    fn notes(&self, steps: usize) -> Vec<String> {
        let mut notes = Vec::new();
        let partial = self.rows.len() - steps;
        if partial > 0 && steps > 0 {
            notes.push(format!(
                "per-step costs are over the {steps} steps measured in full: {partial} step(s) hold a collective that some rank had no collective before (its first), which cannot be charged"
            ));
        }
        // (One rank has nothing to wait for: nothing to say.)
        if self.collectives == 0 && self.labels.len() > 1 {
            notes.push(
                "no matched collective has a collective before it on every rank: the critical path needs at least two per rank"
                    .to_string(),
            );
        }
        notes
    }
}

/// A world's median transfer of one collective name, ns, and its median size in bytes when
/// every one of them says it.
fn median_transfer(v: &[Moved]) -> (i64, Option<u64>) {
    let t = lower_median(v.iter().map(|x| x.0).collect());
    let b = v
        .iter()
        .all(|x| x.1 > 0)
        .then(|| lower_median(v.iter().map(|x| x.1 as i64).collect()) as u64);
    (t, b)
}

/// Bus bandwidth, GB/s (NCCL's: the algorithm bandwidth S / t times the collective's factor
/// for its n ranks), the median over the collectives that say their size.
fn median_busbw(name: &str, v: &[Moved]) -> Option<f64> {
    let rule = bus_rule(name);
    let bw: Vec<i64> = v
        .iter()
        .filter(|x| x.0 > 0 && x.1 > 0)
        .filter_map(|&(t, b, n)| {
            rule.map(|r| (b as f64 * r.factor(n) / t as f64 * 1e3).round() as i64)
        })
        .collect();
    (!bw.is_empty()).then(|| lower_median(bw) as f64 / 1e3)
}

/// Which of NCCL's bus-bandwidth factors a collective name takes (read once per name), for a
/// collective of `n` ranks (nccl-tests' PERFORMANCE.md): all-reduce 2(n−1)/n; all-gather,
/// reduce-scatter and all-to-all (n−1)/n; broadcast, reduce, send and receive 1. `None` for a
/// name it does not know.
#[derive(Clone, Copy)]
enum BusRule {
    /// 2(n−1)/n.
    AllReduce,
    /// (n−1)/n.
    Part,
    /// 1.
    One,
}

impl BusRule {
    fn factor(self, n: u32) -> f64 {
        let n = f64::from(n.max(1));
        let part = (n - 1.0) / n;
        match self {
            BusRule::AllReduce => 2.0 * part,
            BusRule::Part => part,
            BusRule::One => 1.0,
        }
    }
}

fn bus_rule(name: &str) -> Option<BusRule> {
    let l: String = name
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .map(|c| c.to_ascii_lowercase())
        .collect();
    if l.contains("allreduce") {
        Some(BusRule::AllReduce)
    } else if l.contains("allgather") || l.contains("reducescatter") || l.contains("alltoall") {
        Some(BusRule::Part)
    } else if ["broadcast", "reduce", "send", "recv"]
        .iter()
        .any(|w| l.contains(w))
    {
        Some(BusRule::One)
    } else {
        None
    }
}

#[cfg(test)]
mod bus_tests {
    use super::bus_rule;
    use crate::analyze::collect::collector::dtype_bytes;

    #[test]
    fn nccl_factors_and_sizes() {
        let bus_factor = |name: &str, n: u32| bus_rule(name).map(|r| r.factor(n));
        assert_eq!(bus_factor("allreduce", 8), Some(1.75));
        assert_eq!(bus_factor("_allgather_base", 4), Some(0.75));
        assert_eq!(bus_factor("reduce_scatter_tensor_coalesced", 2), Some(0.5));
        assert_eq!(bus_factor("all_to_all", 4), Some(0.75));
        assert_eq!(bus_factor("broadcast", 4), Some(1.0));
        assert_eq!(bus_factor("deep_ep::intranode::dispatch<8>", 8), None);
        assert_eq!(dtype_bytes("BFloat16"), 2);
        assert_eq!(dtype_bytes("Float"), 4);
        assert_eq!(dtype_bytes("Float8_e4m3fn"), 1);
        assert_eq!(dtype_bytes("Quaternion"), 0);
    }
}

#[cfg(test)]
mod carry_tests {
    use super::Charged;

    /// Rank 7's late arrival whose segment starts at `from`, at a collective ending at `end`.
    fn late(from: i64, end: i64, cost: i64, parts: [i64; 3]) -> Charged {
        Charged {
            rank: 7,
            at: from + 1,
            from,
            end,
            cost,
            parts,
        }
    }

    #[test]
    fn the_lag_a_late_start_leaves_is_charged_as_the_late_start_up_to_the_wait_it_made() {
        // The DLRM step's rank 7 (tests/truth_dlrm.md): last at c0 by its late start, the
        // others waiting 4669 µs there; at c1, ending at c0's end + its segment, 1017 µs of
        // idle GPU ahead of the median, no more work.
        let c0 = late(0, 10_735, 4_669, [0, 0, 4_669]);
        let c1 = |from: i64, host: i64| late(from, 20_000, host, [0, host, 0]);
        assert_eq!(c1(10_735, 1_017).carried(&c0), [0, 0, 1_017]);
        // More idle than the others waited: the rest is its own host gap.
        assert_eq!(c1(10_735, 5_000).carried(&c0), [0, 331, 4_669]);
        // A segment that does not start at c0's end (another collective between): no carry.
        assert_eq!(c1(10_800, 1_017).carried(&c0), [0, 1_017, 0]);
        // Split as the previous collective's cost was: a quarter work, three quarters late.
        let mixed = late(-10, 0, 400, [100, 0, 300]);
        assert_eq!(late(0, 9, 210, [10, 200, 0]).carried(&mixed), [60, 0, 150]);
    }
}
