//! The ideal timeline that `merge --what-if` draws beside each rank: the what-if's "every rank
//! typical" re-simulation ([`super::whatif`]), step by step, on the common clock.
//!
//! While the matching reads the collectives, [`IdealAcc`] keeps a compact record of each (its
//! step-table row, world, name, members' recorded arrivals and ends, earliest segment start,
//! ideal segment and transfer), at most [`IDEAL_KEPT`] member-slices: past that it keeps
//! nothing more and remembers which steps it cut, which are then not drawn. At the end, per
//! (row, world) step measured in full ([`IdealTimeline`]):
//!
//! - a **chain** world: the ideal clock starts at the step's first segment start as recorded
//!   (the earliest `from` of its first collective), so the ideal step starts where the real
//!   one does; at each collective, in recorded order, every member arrives the ideal segment
//!   after the clock (the members' lower median segment; at a side-stream collective, no
//!   earlier than the compute's wait allows, as the what-if caps it), the collective ends its
//!   transfer (the last arriver's recorded duration) after that, and the clock moves there;
//! - a **graph** world ([`super::graph`]: CPU-only, or a pipeline): the world replayed with
//!   every rank typical as the what-if replays it, each member arriving and leaving on its own
//!   clock; each step moved so that it starts where it started as recorded.
//!
//! Either way an ideal step is as long as the what-if's ideal for that step and world.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use super::graph::{IdealReplay as Ideal, Member, World};
use super::label;
use crate::trace::write::overlay::{Overlay, Slice, WHAT_IF_SORT};
use crate::trace::Ns;

/// The most member-slices (one per member of each collective) the ideal timeline keeps.
pub const IDEAL_KEPT: usize = 200_000;

/// The name of the ideal timeline's process per rank (`"[TP02] what if (every rank typical)"`).
pub const IDEAL_TRACK: &str = "what if (every rank typical)";

/// One matched collective as the ideal timeline needs it.
#[derive(Debug, Clone)]
struct Kept {
    row: usize,
    world: usize,
    /// Into [`IdealAcc::names`].
    name: usize,
    /// Its node in its graph world's list, when the world is replayed on the graph.
    node: Option<usize>,
    /// The earliest member's segment start.
    from: i64,
    /// The ideal segment: the members' lower median (capped as the what-if caps it).
    seg: i64,
    transfer: i64,
    /// (rank, recorded arrival, recorded end) per member.
    members: Box<[(usize, i64, i64)]>,
}

/// One collective as the what-if sees it, for [`IdealAcc::add`].
pub(crate) struct Seen<'a> {
    pub(crate) row: usize,
    pub(crate) world: usize,
    pub(crate) name: &'a str,
    pub(crate) node: Option<usize>,
    pub(crate) members: &'a [Member],
    pub(crate) seg: i64,
    pub(crate) transfer: i64,
}

/// The records of the ideal timeline, kept as the collectives are read (bounded). The default
/// keeps nothing (`analyze` does not draw it).
#[derive(Debug, Default)]
pub(crate) struct IdealAcc {
    /// Whether it keeps records ([`IdealAcc::new`]).
    on: bool,
    /// The step table's step names, by row.
    steps: Vec<String>,
    names: Vec<String>,
    name_ids: BTreeMap<String, usize>,
    kept: Vec<Kept>,
    /// Member-slices kept.
    members: usize,
    /// The (row, world) steps with a collective not kept.
    cut: BTreeSet<(usize, usize)>,
}

impl IdealAcc {
    /// `steps`: the step table's step names, by row.
    pub(crate) fn new(steps: Vec<String>) -> IdealAcc {
        IdealAcc {
            on: true,
            steps,
            ..IdealAcc::default()
        }
    }

    /// Keeps one collective, unless [`IDEAL_KEPT`] member-slices are kept already (then none
    /// after it either: its step and theirs are cut).
    pub(crate) fn add(&mut self, c: Seen<'_>) {
        if !self.on {
            return;
        }
        if !self.cut.is_empty() || self.members + c.members.len() > IDEAL_KEPT {
            self.cut.insert((c.row, c.world));
            return;
        }
        let name = match self.name_ids.get(c.name) {
            Some(&i) => i,
            None => {
                self.names.push(c.name.to_string());
                self.name_ids
                    .insert(c.name.to_string(), self.names.len() - 1);
                self.names.len() - 1
            }
        };
        self.members += c.members.len();
        self.kept.push(Kept {
            row: c.row,
            world: c.world,
            name,
            node: c.node,
            from: c.members.iter().map(|m| m.from).min().unwrap_or(0),
            seg: c.seg,
            transfer: c.transfer,
            members: c
                .members
                .iter()
                .map(|m| (m.rank, m.from + m.seg, m.end))
                .collect(),
        });
    }

    /// The timeline of the steps measured in full (`measured` rows) and kept whole; the graph
    /// worlds replayed from `graphs`, the others as chains; `labels` name the ranks.
    pub(crate) fn finish(
        &self,
        graphs: &BTreeMap<usize, World<'_>>,
        measured: &BTreeSet<usize>,
        labels: &[String],
    ) -> IdealTimeline {
        let mut by_step: BTreeMap<(usize, usize), Vec<&Kept>> = BTreeMap::new();
        for c in self.kept.iter().filter(|c| measured.contains(&c.row)) {
            by_step.entry((c.row, c.world)).or_default().push(c);
        }
        let left_out = self
            .cut
            .iter()
            .filter(|(row, _)| measured.contains(row))
            .count();
        by_step.retain(|k, _| !self.cut.contains(k));
        let worlds: BTreeSet<usize> = by_step.keys().map(|&(_, w)| w).collect();
        let replays: BTreeMap<usize, Ideal> = graphs
            .iter()
            .filter(|(w, _)| worlds.contains(w))
            .filter_map(|(&w, g)| Some((w, g.ideal_times()?)))
            .collect();
        let steps = by_step
            .into_iter()
            .map(|((row, world), mut colls)| {
                colls.sort_by_key(|c| (c.from, last_arrival(c)));
                let step = self
                    .steps
                    .get(row)
                    .cloned()
                    .unwrap_or_else(|| row.to_string());
                match replays.get(&world).filter(|r| on_nodes(&colls, r)) {
                    Some(r) => on_graph(step, world, &colls, r),
                    None => on_chain(step, world, &colls),
                }
            })
            .collect();
        IdealTimeline {
            labels: labels.to_vec(),
            names: self.names.clone(),
            steps,
            left_out,
        }
    }
}

/// The last recorded arrival at a collective.
fn last_arrival(c: &Kept) -> i64 {
    c.members.iter().map(|m| m.1).max().unwrap_or(c.from)
}

/// The latest recorded end of a step's collectives.
fn recorded_end(colls: &[&Kept]) -> i64 {
    colls
        .iter()
        .flat_map(|c| c.members.iter().map(|m| m.2))
        .max()
        .unwrap_or(0)
}

/// Whether every collective of a step is a node of the replay `r`, with as many members.
fn on_nodes(colls: &[&Kept], r: &Ideal) -> bool {
    colls.iter().all(|c| {
        c.node
            .and_then(|n| r.1.get(n))
            .is_some_and(|m| m.len() == c.members.len())
    })
}

/// One member's recorded and ideal times at a collective.
fn member(m: &(usize, i64, i64), arrival: i64, end: i64) -> IdealMember {
    IdealMember {
        rank: m.0,
        arrival: Ns::new(arrival),
        end: Ns::new(end),
        recorded_arrival: Ns::new(m.1),
        recorded_end: Ns::new(m.2),
    }
}

/// A chain world's step (`colls` in recorded order): the ideal clock from its first segment
/// start, each collective the ideal segment and its transfer after the one before.
fn on_chain(step: String, world: usize, colls: &[&Kept]) -> IdealStep {
    let start = colls.first().map_or(0, |c| c.from);
    let mut clock = start;
    let collectives = colls
        .iter()
        .map(|c| {
            let arrival = clock + c.seg;
            clock = arrival + c.transfer;
            IdealColl {
                name: c.name,
                members: c
                    .members
                    .iter()
                    .map(|m| member(m, arrival, clock))
                    .collect(),
            }
        })
        .collect();
    IdealStep {
        step,
        world,
        start: Ns::new(start),
        ideal_end: Ns::new(clock),
        recorded_end: Ns::new(recorded_end(colls)),
        collectives,
    }
}

/// A graph world's step: its nodes as replayed ideal (`r`), moved to start where the step
/// started as recorded.
fn on_graph(step: String, world: usize, colls: &[&Kept], r: &Ideal) -> IdealStep {
    let (nodes, members) = r;
    let node = |c: &Kept| c.node.and_then(|n| nodes.get(n)).copied();
    let recorded_start = colls.iter().map(|c| c.from).min().unwrap_or(0);
    let ideal_start = colls
        .iter()
        .filter_map(|c| node(c))
        .map(|t| t.0)
        .min()
        .unwrap_or(recorded_start);
    let ideal_end = colls
        .iter()
        .filter_map(|c| node(c))
        .map(|t| t.1)
        .max()
        .unwrap_or(ideal_start);
    let shift = recorded_start - ideal_start;
    let collectives = colls
        .iter()
        .map(|c| {
            let times = c.node.and_then(|n| members.get(n));
            IdealColl {
                name: c.name,
                members: c
                    .members
                    .iter()
                    .zip(times.into_iter().flatten())
                    .map(|(m, t)| member(m, t.arrival + shift, t.leave + shift))
                    .collect(),
            }
        })
        .collect();
    IdealStep {
        step,
        world,
        start: Ns::new(recorded_start),
        ideal_end: Ns::new(ideal_end + shift),
        recorded_end: Ns::new(recorded_end(colls)),
        collectives,
    }
}

/// The what-if's ideal timeline: per (step-table row, world), the step with every rank
/// typical ([`IdealAcc`] says how), for `merge --what-if` ([`IdealTimeline::overlay`]). Not
/// in the analysis' JSON.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct IdealTimeline {
    /// The ranks' labels, by rank index.
    pub labels: Vec<String>,
    /// The collectives' names ([`IdealColl::name`] points here).
    pub names: Vec<String>,
    /// In (row, world) order.
    pub steps: Vec<IdealStep>,
    /// The steps measured in full that are not drawn: more member-slices than
    /// [`IDEAL_KEPT`] came before their end.
    pub left_out: usize,
}

/// One step of one world with every rank typical, on the common clock (ns).
#[derive(Debug, Clone, PartialEq)]
pub struct IdealStep {
    /// The step table's name of the step.
    pub step: String,
    pub world: usize,
    /// Its first segment's start as recorded: the ideal step starts there too.
    pub start: Ns,
    pub ideal_end: Ns,
    /// Its last collective's end as recorded.
    pub recorded_end: Ns,
    /// In recorded order.
    pub collectives: Vec<IdealColl>,
}

/// One collective of an ideal step.
#[derive(Debug, Clone, PartialEq)]
pub struct IdealColl {
    /// Into [`IdealTimeline::names`].
    pub name: usize,
    pub members: Vec<IdealMember>,
}

/// One member at one collective: its ideal arrival and end (its leave), and as recorded.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IdealMember {
    /// Into [`IdealTimeline::labels`].
    pub rank: usize,
    pub arrival: Ns,
    pub end: Ns,
    pub recorded_arrival: Ns,
    pub recorded_end: Ns,
}

impl IdealStep {
    pub fn ideal(&self) -> Ns {
        self.ideal_end - self.start
    }

    pub fn recorded(&self) -> Ns {
        self.recorded_end - self.start
    }

    /// The ranks with a collective in the step, in rank order.
    fn ranks(&self) -> BTreeSet<usize> {
        self.collectives
            .iter()
            .flat_map(|c| c.members.iter().map(|m| m.rank))
            .collect()
    }
}

impl IdealTimeline {
    /// The ideal steps as slices for a merged trace: per rank, on its "what if (every rank
    /// typical)" process, one thread per world; on it each ideal step ("step 3 ideal: 1.41 ms
    /// (recorded 1.85 ms)"), from the recorded step's first segment start to its ideal end,
    /// and inside it each collective the rank is in, from its ideal arrival to its ideal end,
    /// named as the collective, the recorded and ideal times in its args.
    pub fn overlay(&self) -> Overlay {
        let mut slices = Vec::new();
        let mut worlds = BTreeSet::new();
        for s in &self.steps {
            worlds.insert(s.world);
            self.step_slices(s, &mut slices);
        }
        Overlay {
            track: IDEAL_TRACK.into(),
            sort: WHAT_IF_SORT,
            threads: worlds
                .into_iter()
                .map(|w| (tid(w), format!("ideal steps, world {w}")))
                .collect(),
            slices,
        }
    }

    /// One step's slices: the step on each of its ranks, then its collectives.
    fn step_slices(&self, s: &IdealStep, out: &mut Vec<Slice>) {
        let ms = |ns: Ns| Value::from((ns.get() as f64 / 1e3).round() / 1e3);
        let mut args = Map::new();
        args.insert("step".into(), Value::from(s.step.clone()));
        args.insert("world".into(), Value::from(s.world));
        args.insert("ideal_ms".into(), ms(s.ideal()));
        args.insert("recorded_ms".into(), ms(s.recorded()));
        args.insert("gives_back_ms".into(), ms(s.recorded() - s.ideal()));
        args.insert("collectives".into(), Value::from(s.collectives.len()));
        let name = format!(
            "step {} ideal: {:.2} ms (recorded {:.2} ms)",
            s.step,
            s.ideal().get() as f64 / 1e6,
            s.recorded().get() as f64 / 1e6
        );
        for r in s.ranks() {
            out.push(Slice {
                rank: label(&self.labels, r),
                name: name.clone(),
                start_ns: s.start,
                dur_ns: s.ideal(),
                args: args.clone(),
                tid: tid(s.world),
                ..Slice::default()
            });
        }
        for c in &s.collectives {
            let name = self.names.get(c.name).cloned().unwrap_or_default();
            for m in &c.members {
                out.push(self.collective_slice(s, &name, m));
            }
        }
    }

    /// A member's ideal collective: from its ideal arrival to its ideal end; its args the
    /// ideal and recorded arrival and end, µs after the step's start.
    fn collective_slice(&self, s: &IdealStep, name: &str, m: &IdealMember) -> Slice {
        let us = |t: Ns| Value::from(((t - s.start).get() as f64).round() / 1e3);
        let mut args = Map::new();
        args.insert("collective".into(), Value::from(name));
        args.insert("times".into(), Value::from("µs after the step's start"));
        args.insert("ideal_arrival_us".into(), us(m.arrival));
        args.insert("recorded_arrival_us".into(), us(m.recorded_arrival));
        args.insert("ideal_end_us".into(), us(m.end));
        args.insert("recorded_end_us".into(), us(m.recorded_end));
        Slice {
            rank: label(&self.labels, m.rank),
            name: name.to_string(),
            start_ns: m.arrival,
            dur_ns: (m.end - m.arrival).max(Ns::ZERO),
            args,
            tid: tid(s.world),
            ..Slice::default()
        }
    }
}

/// The thread of world `w` in each rank's ideal process.
fn tid(w: usize) -> u32 {
    u32::try_from(w).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mem(rank: usize, from: i64, seg: i64, end: i64) -> Member {
        Member {
            rank,
            seq: 0,
            from,
            seg,
            parts: [seg, 0, 0],
            end,
        }
    }

    /// Two ranks, one step of two collectives, in µs. Recorded: both start at 1000; the first
    /// collective, rank 0 arrives at 1100 (segment 100), rank 1 at 1300 (300), both leave at
    /// 1350 (transfer 50); the second, rank 0 arrives at 1450 (100), rank 1 at 1400 (50), both
    /// leave at 1480 (transfer 30). Lower medians: 100 and 50.
    /// Ideal: clock 1000; the first arrives at 1000 + 100 = 1100 and ends at 1150; the second
    /// arrives at 1150 + 50 = 1200 and ends at 1230: 230 against the recorded 480.
    #[test]
    fn the_ideal_chain_runs_median_segments_and_transfers_from_the_step_start() {
        let us = |x: i64| x * 1_000;
        let m = |rank, from, seg, end| mem(rank, us(from), us(seg), us(end));
        let mut acc = IdealAcc::new(vec!["7".into()]);
        let first = [m(0, 1000, 100, 1350), m(1, 1000, 300, 1350)];
        let second = [m(0, 1350, 100, 1480), m(1, 1350, 50, 1480)];
        // Given out of order: the chain runs in recorded order.
        for (members, name, seg, transfer) in [(&second, "b", 50, 30), (&first, "a", 100, 50)] {
            acc.add(Seen {
                row: 0,
                world: 0,
                name,
                node: None,
                members,
                seg: us(seg),
                transfer: us(transfer),
            });
        }
        let labels = vec!["TP00".to_string(), "TP01".to_string()];
        let t = acc.finish(&BTreeMap::new(), &BTreeSet::from([0]), &labels);
        assert_eq!(t.steps.len(), 1);
        let s = &t.steps[0];
        let ns = |x: i64| Ns::new(us(x));
        assert_eq!(
            (s.start, s.ideal_end, s.recorded_end),
            (ns(1000), ns(1230), ns(1480))
        );
        assert_eq!((s.ideal(), s.recorded()), (ns(230), ns(480)));
        let times: Vec<(&str, Ns, Ns)> = s
            .collectives
            .iter()
            .map(|c| {
                (
                    t.names[c.name].as_str(),
                    c.members[1].arrival,
                    c.members[1].end,
                )
            })
            .collect();
        assert_eq!(
            times,
            [("a", ns(1100), ns(1150)), ("b", ns(1200), ns(1230))]
        );
        assert_eq!(s.collectives[0].members[1].recorded_arrival, ns(1300));
        // On each rank: the step, and inside it its two collectives.
        let o = t.overlay();
        let on = |r: &str| o.slices.iter().filter(|x| x.rank == r).count();
        assert_eq!((on("TP00"), on("TP01")), (3, 3));
        assert_eq!(o.slices[0].name, "step 7 ideal: 0.23 ms (recorded 0.48 ms)");
        assert_eq!(
            (o.slices[0].start_ns.get(), o.slices[0].dur_ns.get()),
            (us(1000), us(230))
        );
        assert_eq!(o.slices[0].args["gives_back_ms"], 0.25);
        // Rank 1 at the first collective: µs after the step's start.
        let a = &o.slices[3];
        assert_eq!((a.rank.as_str(), a.name.as_str()), ("TP01", "a"));
        assert_eq!((a.start_ns.get(), a.dur_ns.get()), (us(1100), us(50)));
        assert_eq!(a.args["recorded_arrival_us"], 300.0);
        assert_eq!(a.args["ideal_arrival_us"], 100.0);
        assert_eq!(a.args["ideal_end_us"], 150.0);
        assert_eq!(a.args["recorded_end_us"], 350.0);
    }

    #[test]
    fn past_the_cap_the_steps_cut_are_left_out() {
        let mut acc = IdealAcc::new(vec!["0".into(), "1".into()]);
        let big: Vec<Member> = (0..IDEAL_KEPT / 2).map(|r| mem(r, 0, 10, 20)).collect();
        for row in [0, 0, 1] {
            acc.add(Seen {
                row,
                world: 0,
                name: "allreduce",
                node: None,
                members: &big,
                seg: 10,
                transfer: 10,
            });
        }
        let t = acc.finish(&BTreeMap::new(), &BTreeSet::from([0, 1]), &[]);
        assert_eq!(t.steps.len(), 1, "row 0 whole, row 1 cut");
        assert_eq!((t.steps[0].step.as_str(), t.left_out), ("0", 1));
    }
}
