//! The what-if's replay on the graph, for worlds whose collectives are not a chain.
//!
//! [`super::whatif`]'s chain replay takes a world's matched collectives one after another,
//! every member in each: a step is the sum of its collectives' longest segments plus
//! transfers, every member leaving each collective with the others. Two kinds of world break
//! that. A CPU-only (gloo) world's members leave a collective milliseconds apart on a busy CPU
//! (the chain missed such recordings by up to 7 %). A pipeline's point-to-point transfers run
//! at the same time, stage 0 → 1 beside stage 2 → 3, each between two ranks, so summing them
//! counts concurrent time twice (the gloo GPipe recording replayed 31 % over its step as a
//! chain). Those worlds are replayed here.
//!
//! Here each rank keeps its own clock. A collective (a pair, or any matched collective of the
//! world) is replayed once every member has reached it in its own order (the order it arrived
//! in on that rank, by its start): each member arrives its segment after its clock, and leaves
//! as long after the last arrival as it did in the recording (gloo's members leave a
//! collective at different times); its clock moves to that leave. A member's clock is the
//! replayed end of its previous collective when the recorded segment started there;
//! otherwise (a step's first collective, whose segment starts at the step's common start, or
//! a collective after an unmatched one) the recorded segment start. A step's span is its last
//! replayed end less its first replayed segment start.
//!
//! Ranks whose orders cannot all be met (rank A has x before y, rank B y before x) cannot be
//! replayed: [`replay`] says so and the chain is used.

use std::collections::BTreeMap;

/// A member of one matched collective, as the critical path split its segment: its rank, its
/// arrival order on that rank, where its segment starts, its length and its parts (busy, host,
/// late start), and where it ends (the chain's replay, [`super::whatif`], reads it too).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Member {
    pub(crate) rank: usize,
    pub(crate) seq: u32,
    pub(crate) from: i64,
    pub(crate) seg: i64,
    pub(crate) parts: [i64; 3],
    pub(crate) end: i64,
}

/// One collective in the graph: its step-table row and its members.
#[derive(Debug, Clone)]
pub(crate) struct Node {
    pub(crate) row: usize,
    pub(crate) members: Vec<Member>,
}

/// Each node's replayed (start, end), when every member's segment is `seg(node, member)`: its
/// earliest member's segment start and its last member's leave; `None` when the ranks' orders
/// cannot all be met.
pub(crate) fn replay(nodes: &[Node], seg: impl Fn(usize, usize) -> i64) -> Option<Vec<(i64, i64)>> {
    replay_with(nodes, seg, None)
}

/// One member at one node, as replayed: its arrival, the node's last arrival (its wait there is
/// the difference) and its leave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Replayed {
    pub(crate) arrival: i64,
    pub(crate) last: i64,
    pub(crate) leave: i64,
}

impl Replayed {
    /// How long it waited for the last arrival.
    pub(crate) fn wait(&self) -> i64 {
        self.last - self.arrival
    }
}

/// A world replayed with every rank typical ([`World::ideal_times`]): each node's (start,
/// end), and each member's replayed times by node and member position.
pub(crate) type IdealReplay = (Vec<(i64, i64)>, Vec<Vec<Replayed>>);

/// What a replay tells each member of a node: (node, member position, its replayed times).
pub(crate) type Told<'a> = &'a mut dyn FnMut(usize, usize, Replayed);

/// [`replay`], telling `told` (when given) each member's replayed times at each node.
pub(crate) fn replay_with(
    nodes: &[Node],
    seg: impl Fn(usize, usize) -> i64,
    mut told: Option<Told<'_>>,
) -> Option<Vec<(i64, i64)>> {
    // Each rank's nodes in its own order: by arrival, then by the order the file wrote them
    // (a partial writes its collectives by key, so `seq` alone is not the arrival order there):
    // (arrival, seq, node, member position).
    type Queue = Vec<(i64, u32, usize, usize)>;
    let mut queues: BTreeMap<usize, Queue> = BTreeMap::new();
    for (n, node) in nodes.iter().enumerate() {
        for (m, mem) in node.members.iter().enumerate() {
            queues
                .entry(mem.rank)
                .or_default()
                .push((mem.from + mem.seg, mem.seq, n, m));
        }
    }
    let mut queues: Vec<Queue> = queues.into_values().collect();
    for q in &mut queues {
        q.sort_unstable();
    }
    let mut head = vec![0usize; queues.len()];
    // Per node, how many members have it at the head of their queue.
    let mut waiting = vec![0usize; nodes.len()];
    let mut ready: Vec<usize> = Vec::new();
    let arrive = |n: usize, waiting: &mut Vec<usize>, ready: &mut Vec<usize>| {
        waiting[n] += 1;
        if waiting[n] == nodes[n].members.len() {
            ready.push(n);
        }
    };
    for q in &queues {
        if let Some(&(_, _, n, _)) = q.first() {
            arrive(n, &mut waiting, &mut ready);
        }
    }
    // The node each rank's queue position refers to, to find a member's queue.
    let rank_queue: BTreeMap<usize, usize> = {
        let mut ranks: Vec<usize> = nodes
            .iter()
            .flat_map(|n| n.members.iter().map(|m| m.rank))
            .collect();
        ranks.sort_unstable();
        ranks.dedup();
        ranks.into_iter().enumerate().map(|(i, r)| (r, i)).collect()
    };
    // Per rank queue: (recorded end, replayed end) of its previous node.
    let mut clock: Vec<Option<(i64, i64)>> = vec![None; queues.len()];
    let mut ends = vec![(0i64, 0i64); nodes.len()];
    let mut done = 0usize;
    while let Some(n) = ready.pop() {
        let node = &nodes[n];
        let mut last = i64::MIN;
        let mut start = i64::MAX;
        for (m, mem) in node.members.iter().enumerate() {
            let base = clock_of(clock[rank_queue[&mem.rank]], mem);
            start = start.min(base);
            last = last.max(base + seg(n, m));
        }
        // Each member leaves as long after the last arrival as it did in the recording.
        let rec_last = node
            .members
            .iter()
            .map(|m| m.from + m.seg)
            .max()
            .unwrap_or(0);
        let mut end = last;
        done += 1;
        for (m, mem) in node.members.iter().enumerate() {
            let leave = last + (mem.end - rec_last).max(0);
            end = end.max(leave);
            let q = rank_queue[&mem.rank];
            if let Some(t) = told.as_deref_mut() {
                let arrival = clock_of(clock[q], mem) + seg(n, m);
                t(
                    n,
                    m,
                    Replayed {
                        arrival,
                        last,
                        leave,
                    },
                );
            }
            clock[q] = Some((mem.end, leave));
            head[q] += 1;
            if let Some(&(_, _, next, _)) = queues[q].get(head[q]) {
                arrive(next, &mut waiting, &mut ready);
            }
        }
        ends[n] = (start, end);
    }
    (done == nodes.len()).then_some(ends)
}

/// Where a member's segment starts in the replay: its rank's replayed end of its previous
/// collective (`clock`: that collective's recorded and replayed end) when its recorded segment
/// started there, else its recorded start.
fn clock_of(clock: Option<(i64, i64)>, mem: &Member) -> i64 {
    match clock {
        Some((rec, rep)) if rec == mem.from => rep,
        _ => mem.from,
    }
}

/// Per (row, rank), the factor each part is scaled by to make the rank typical: the world's
/// (lower) median rank's sum of the part in that row over the rank's, at most 1.
fn factors(nodes: &[Node]) -> BTreeMap<(usize, usize), [f64; 3]> {
    let mut sums: BTreeMap<(usize, usize), [i64; 3]> = BTreeMap::new();
    for node in nodes {
        for m in &node.members {
            let s = sums.entry((node.row, m.rank)).or_default();
            for (t, p) in s.iter_mut().zip(m.parts) {
                *t += p.max(0);
            }
        }
    }
    let mut by_row: BTreeMap<usize, Vec<[i64; 3]>> = BTreeMap::new();
    for (&(row, _), s) in &sums {
        by_row.entry(row).or_default().push(*s);
    }
    let medians: BTreeMap<usize, [i64; 3]> = by_row
        .into_iter()
        .map(|(row, v)| {
            let med = [0, 1, 2]
                .map(|k| crate::analyze::stats::lower_median(v.iter().map(|s| s[k]).collect()));
            (row, med)
        })
        .collect();
    sums.into_iter()
        .map(|((row, rank), s)| {
            let med = medians.get(&row).copied().unwrap_or(s);
            let f = [0, 1, 2].map(|k| {
                if s[k] > med[k] && s[k] > 0 {
                    med[k] as f64 / s[k] as f64
                } else {
                    1.0
                }
            });
            ((row, rank), f)
        })
        .collect()
}

/// Per row, the span: the last end less the first segment start of its nodes (`times`: each
/// node's (start, end), replayed or recorded). A replayed start moves with what came before
/// (a segment that starts at the previous collective's end, across a step's boundary too), so
/// a change gives back in each step only what it gives back there.
pub(crate) fn spans(nodes: &[Node], times: &[(i64, i64)]) -> BTreeMap<usize, i64> {
    let mut by_row: BTreeMap<usize, (i64, i64)> = BTreeMap::new();
    for (node, &(from, end)) in nodes.iter().zip(times) {
        let e = by_row.entry(node.row).or_insert((from, end));
        e.0 = e.0.min(from);
        e.1 = e.1.max(end);
    }
    by_row.into_iter().map(|(r, (a, b))| (r, b - a)).collect()
}

/// Per row, the recorded span: the last recorded end less the first segment start.
pub(crate) fn recorded(nodes: &[Node]) -> BTreeMap<usize, i64> {
    let times: Vec<(i64, i64)> = nodes
        .iter()
        .map(|n| {
            let from = n.members.iter().map(|m| m.from).min().unwrap_or(0);
            (from, n.members.iter().map(|m| m.end).max().unwrap_or(0))
        })
        .collect();
    spans(nodes, &times)
}

/// One graph world's figures over the measured rows: per row its collectives and (recorded,
/// replayed, ideal) spans; what each rank made typical and each cause removed give back,
/// summed over rows.
#[derive(Debug, Default)]
pub(crate) struct Figures {
    pub(crate) rows: BTreeMap<usize, (usize, i64, i64, i64)>,
    pub(crate) ranks: BTreeMap<usize, i64>,
    pub(crate) kinds: [i64; 3],
    /// Per rank, its waits at the collectives summed over the rows (a pipeline stage's
    /// bubble): as recorded, and replayed with every rank typical.
    pub(crate) waits: BTreeMap<usize, [i64; 2]>,
}

/// A world's nodes, replayed under the what-if's changes.
///
/// **Typical** here is per rank and step, not per collective: a pipeline's two ends of a
/// transfer do different things before it (the receiver often nothing), so the median of a
/// pair's segments is no one's typical segment. Instead each rank's parts (busy, host, late
/// start) are summed over its segments in the step, and where a rank's sum of a part is
/// above the world's median rank's, each of its segments' part is scaled down by median /
/// its sum (never up): a rank made typical does that step's work in the median rank's time.
pub(crate) struct World<'a> {
    nodes: &'a [Node],
    /// Per (row, rank), the factor each part is scaled by when made typical (≤ 1).
    factors: BTreeMap<(usize, usize), [f64; 3]>,
    measured: &'a std::collections::BTreeSet<usize>,
    base: BTreeMap<usize, i64>,
}

impl<'a> World<'a> {
    /// The world as recorded and replayed; `None` when its orders cannot be met.
    pub(crate) fn new(
        nodes: &'a [Node],
        measured: &'a std::collections::BTreeSet<usize>,
    ) -> Option<World<'a>> {
        let mut w = World {
            nodes,
            factors: factors(nodes),
            measured,
            base: BTreeMap::new(),
        };
        w.base = w.spans_with(|n, m| nodes[n].members[m].seg)?;
        Some(w)
    }

    /// Per measured row, the replayed span with segments `seg`.
    fn spans_with(&self, seg: impl Fn(usize, usize) -> i64) -> Option<BTreeMap<usize, i64>> {
        let ends = replay(self.nodes, seg)?;
        let mut s = spans(self.nodes, &ends);
        s.retain(|r, _| self.measured.contains(r));
        Some(s)
    }

    /// Per rank, its waits at the collectives of the measured rows (the last arrival less its
    /// own), replayed with segments `seg`.
    fn waits_with(&self, seg: impl Fn(usize, usize) -> i64) -> BTreeMap<usize, i64> {
        let mut out: BTreeMap<usize, i64> = BTreeMap::new();
        let mut add = |n: usize, m: usize, r: Replayed| {
            let node = &self.nodes[n];
            if self.measured.contains(&node.row) {
                *out.entry(node.members[m].rank).or_default() += r.wait().max(0);
            }
        };
        replay_with(self.nodes, seg, Some(&mut add));
        out
    }

    /// Per rank, its waits at the collectives of the measured rows as recorded.
    fn recorded_waits(&self) -> BTreeMap<usize, i64> {
        let mut out: BTreeMap<usize, i64> = BTreeMap::new();
        for node in self.nodes.iter().filter(|n| self.measured.contains(&n.row)) {
            let arrive = |m: &Member| m.from + m.seg;
            let last = node.members.iter().map(arrive).max().unwrap_or(0);
            for m in &node.members {
                *out.entry(m.rank).or_default() += last - arrive(m);
            }
        }
        out
    }

    /// The world replayed with every rank typical (the what-if's ideal, as [`World::figures`]
    /// replays it): each node's (start, end) and each member's replayed times, by node and
    /// member position; `None` when it cannot be replayed.
    pub(crate) fn ideal_times(&self) -> Option<IdealReplay> {
        let mut members: Vec<Vec<Replayed>> = self
            .nodes
            .iter()
            .map(|n| {
                let none = Replayed {
                    arrival: 0,
                    last: 0,
                    leave: 0,
                };
                vec![none; n.members.len()]
            })
            .collect();
        let mut keep = |n: usize, m: usize, r: Replayed| {
            if let Some(x) = members.get_mut(n).and_then(|v| v.get_mut(m)) {
                *x = r;
            }
        };
        let seg = |n: usize, m: usize| self.typical_seg(n, m, &[0, 1, 2]);
        let nodes = replay_with(self.nodes, seg, Some(&mut keep))?;
        Some((nodes, members))
    }

    /// What the change `seg` gives back over the measured rows: the base spans less its.
    fn saved(&self, seg: impl Fn(usize, usize) -> i64) -> i64 {
        self.spans_with(seg).map_or(0, |s| {
            s.iter()
                .map(|(r, &x)| self.base.get(r).copied().unwrap_or(x) - x)
                .sum()
        })
    }

    /// Member `m` of node `n`'s segment with the parts `kinds` of its rank made typical.
    fn typical_seg(&self, n: usize, m: usize, kinds: &[usize]) -> i64 {
        let node = &self.nodes[n];
        let mm = &node.members[m];
        let Some(f) = self.factors.get(&(node.row, mm.rank)) else {
            return mm.seg;
        };
        let cut: f64 = kinds
            .iter()
            .map(|&k| mm.parts[k] as f64 * (1.0 - f[k]))
            .sum();
        (mm.seg - cut.round() as i64).max(0)
    }

    /// What making the ranks in `fixed` typical gives back.
    pub(crate) fn saved_fixed(&self, fixed: &[usize]) -> i64 {
        self.saved(|n, m| {
            if fixed.contains(&self.nodes[n].members[m].rank) {
                self.typical_seg(n, m, &[0, 1, 2])
            } else {
                self.nodes[n].members[m].seg
            }
        })
    }

    /// The figures: spans recorded, replayed and ideal per row; each rank typical alone; each
    /// cause cut to the members' median part; with `waits` (a pipeline), each rank's waits
    /// as recorded and with every rank typical.
    pub(crate) fn figures(&self, waits: bool) -> Figures {
        let mut rec = recorded(self.nodes);
        rec.retain(|r, _| self.measured.contains(r));
        let ideal = self
            .spans_with(|n, m| self.typical_seg(n, m, &[0, 1, 2]))
            .unwrap_or_else(|| self.base.clone());
        let mut counts: BTreeMap<usize, usize> = BTreeMap::new();
        for n in self.nodes {
            *counts.entry(n.row).or_default() += 1;
        }
        let rows = self
            .base
            .iter()
            .map(|(&r, &rep)| {
                let i = ideal.get(&r).copied().unwrap_or(rep);
                let n = counts.get(&r).copied().unwrap_or(0);
                (r, (n, rec.get(&r).copied().unwrap_or(rep), rep, i))
            })
            .collect();
        let mut ranks: Vec<usize> = self
            .nodes
            .iter()
            .flat_map(|n| n.members.iter().map(|m| m.rank))
            .collect();
        ranks.sort_unstable();
        ranks.dedup();
        let ranks = ranks
            .into_iter()
            .map(|r| (r, self.saved_fixed(&[r])))
            .collect();
        let kinds = [0usize, 1, 2].map(|k| self.saved(|n, m| self.typical_seg(n, m, &[k])));
        let waits = if waits {
            let ideal = self.waits_with(|n, m| self.typical_seg(n, m, &[0, 1, 2]));
            self.recorded_waits()
                .into_iter()
                .map(|(r, rec)| (r, [rec, ideal.get(&r).copied().unwrap_or(rec)]))
                .collect()
        } else {
            BTreeMap::new()
        };
        Figures {
            rows,
            ranks,
            kinds,
            waits,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(members: Vec<Member>) -> Node {
        Node { row: 0, members }
    }

    fn mem(rank: usize, seq: u32, from: i64, seg: i64, end: i64) -> Member {
        Member {
            rank,
            seq,
            from,
            seg,
            parts: [seg, 0, 0],
            end,
        }
    }

    /// A 3-stage forward: 0 → 1 (stage 0 computes 10), 1 → 2 (stage 1 computes 10 after its
    /// receive), each transfer 1; and 0 → 1 again while 1 → 2 is in flight.
    fn pipeline() -> Vec<Node> {
        vec![
            // 0 → 1, first micro-batch: 0 arrives at 10, 1 at 0; ends 11.
            node(vec![mem(0, 0, 0, 10, 11), mem(1, 0, 0, 0, 11)]),
            // 1 → 2: 1 computes 10 after 11, arrives 21; 2 waits from 0; ends 22.
            node(vec![mem(1, 1, 11, 10, 22), mem(2, 0, 0, 0, 22)]),
            // 0 → 1, second: 0 computes 10 after 11, arrives 21; 1 arrives at 22; ends 23.
            node(vec![mem(0, 1, 11, 10, 23), mem(1, 2, 22, 0, 23)]),
        ]
    }

    #[test]
    fn concurrent_transfers_are_not_summed() {
        let nodes = pipeline();
        let ends = replay(&nodes, |n, m| nodes[n].members[m].seg).expect("replayable");
        assert_eq!(ends, vec![(0, 11), (0, 22), (11, 23)]);
        // The recording is reproduced: span 23, where a chain would sum 11 + 11 + 11.
        assert_eq!(spans(&nodes, &ends), recorded(&nodes));
        assert_eq!(spans(&nodes, &ends)[&0], 23);
    }

    #[test]
    fn each_member_waits_for_the_last_arrival() {
        let nodes = pipeline();
        let measured = std::collections::BTreeSet::from([0]);
        let w = World::new(&nodes, &measured).expect("replayable");
        // Recorded: 1 waits 10 at the first 0 → 1 (arrives 0, 0 at 10), 2 waits 21 for 1 → 2,
        // 0 waits 1 at the second 0 → 1 (arrives 21, 1 at 22).
        assert_eq!(
            w.recorded_waits(),
            BTreeMap::from([(0, 1), (1, 10), (2, 21)])
        );
        // Replayed as recorded, the same.
        assert_eq!(
            w.waits_with(|n, m| nodes[n].members[m].seg),
            w.recorded_waits()
        );
        // Stage 0 computing 5: 1 waits 5 at the first, 2 waits 16; the second 0 → 1 sees 0 at
        // 11 and 1 at 17 (0 waits 6).
        let faster = w.waits_with(|n, m| {
            let mm = nodes[n].members[m];
            if mm.rank == 0 {
                5
            } else {
                mm.seg
            }
        });
        assert_eq!(faster, BTreeMap::from([(0, 6), (1, 5), (2, 16)]));
    }

    #[test]
    fn a_shorter_segment_moves_what_follows() {
        let nodes = pipeline();
        // Stage 0 computes 5 instead of 10: 0 → 1 ends at 6, 1 → 2 at 17, the second 0 → 1
        // (0 arrives at 11, 1 at 17) at 18.
        let ends = replay(&nodes, |n, m| {
            let mm = nodes[n].members[m];
            if mm.rank == 0 {
                5
            } else {
                mm.seg
            }
        })
        .expect("replayable");
        assert_eq!(ends, vec![(0, 6), (0, 17), (6, 18)]);
    }

    #[test]
    fn orders_that_cannot_be_met_are_not_replayed() {
        // Rank 0 arrives at the first at 1 and the second at 3; rank 1 the other way round.
        let nodes = vec![
            node(vec![mem(0, 0, 0, 1, 4), mem(1, 1, 0, 3, 4)]),
            node(vec![mem(0, 1, 0, 3, 4), mem(1, 0, 0, 1, 4)]),
        ];
        assert!(replay(&nodes, |_, _| 1).is_none());
    }
}
