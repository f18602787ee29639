//! A rank's tracks in the `.pftrace` output: the rank's own (a child of the merge's root,
//! ordered by rank), one per process under it, one per thread or GPU stream under its
//! process, and one per counter; each named from the rank's metadata events
//! (`process_name`, `thread_name`, `thread_sort_index`) and described once the rank is read,
//! in front of its events.

use rustc_hash::FxHashMap;

use super::fields::{descriptor as d, packet};
use crate::trace::read::value::Id;
use crate::trace::write::protobuf as pb;

/// The root track's uuid: the merge itself.
pub(super) const ROOT_UUID: u64 = 1;

/// Track uuids are small (a varint of a byte or two on every event): the rank at `index` of
/// `n` has `index + 2`, and its other tracks `index + 2 + k * (n + 1)` for k = 1, 2, …; the
/// merge's extras take the slot past the ranks (`n + 2 + k * (n + 1)`), and 1 is the root.
pub(crate) struct Uuids {
    next: u64,
    stride: u64,
}

impl Uuids {
    /// The uuids of slot `slot` (a rank's index, or `n` for the extras) of `n` ranks.
    pub(crate) fn new(slot: usize, n: usize) -> Self {
        Uuids {
            next: rank_uuid(slot),
            stride: n as u64 + 1,
        }
    }

    /// The next uuid of the slot (the first is the rank's own).
    pub(crate) fn fresh(&mut self) -> u64 {
        let u = self.next;
        self.next += self.stride;
        u
    }
}

struct Proc {
    uuid: u64,
    pid: String,
    pid_int: Option<i64>,
    name: Option<String>,
}

struct Thread {
    uuid: u64,
    parent: u64,
    tid: String,
    tid_int: Option<i64>,
    name: Option<String>,
    sort: Option<i64>,
}

struct Counter {
    uuid: u64,
    parent: u64,
    name: String,
}

/// One rank's tracks.
pub(super) struct Tracks {
    rank_uuid: u64,
    uuids: Uuids,
    procs: FxHashMap<String, Proc>,
    threads: FxHashMap<String, Thread>,
    counters: FxHashMap<String, Counter>,
    /// The last thread looked up (its key and uuid): events come in runs of one thread.
    last: (String, u64),
    key: String,
}

/// An id's text: an integer in decimal, a string as written.
fn id_text(id: &Id<'_>, out: &mut String) -> Option<i64> {
    match id {
        Id::Int(v) => {
            out.push_str(itoa::Buffer::new().format(*v));
            Some(*v)
        }
        Id::Str(s) => {
            out.push_str(s.raw());
            None
        }
        Id::None => None,
    }
}

/// The track of the rank at `index` in its group.
pub(super) fn rank_uuid(index: usize) -> u64 {
    index as u64 + 2
}

impl Tracks {
    /// The tracks of the rank at `index` of the `n` in its group.
    pub(super) fn new(index: usize, n: usize) -> Self {
        let mut uuids = Uuids::new(index, n);
        Tracks {
            rank_uuid: uuids.fresh(),
            uuids,
            procs: FxHashMap::default(),
            threads: FxHashMap::default(),
            counters: FxHashMap::default(),
            last: (String::from("\u{1}"), 0),
            key: String::new(),
        }
    }

    fn fresh(&mut self) -> u64 {
        self.uuids.fresh()
    }

    /// The process track of `pid`, made when new.
    fn process_mut(&mut self, pid: &Id<'_>) -> &mut Proc {
        let mut text = String::new();
        let int = id_text(pid, &mut text);
        let uuids = &mut self.uuids;
        self.procs.entry(text).or_insert_with_key(|k| {
            let uuid = uuids.fresh();
            Proc {
                uuid,
                pid: k.clone(),
                pid_int: int,
                name: None,
            }
        })
    }

    fn process(&mut self, pid: &Id<'_>) -> u64 {
        self.process_mut(pid).uuid
    }

    /// The track of thread (or GPU stream) `tid` of process `pid`, made when new.
    pub(super) fn thread(&mut self, pid: &Id<'_>, tid: &Id<'_>) -> u64 {
        let mut key = std::mem::take(&mut self.key);
        key.clear();
        id_text(pid, &mut key);
        key.push('\0');
        let tid_at = key.len();
        let tid_int = id_text(tid, &mut key);
        let uuid = if self.last.0 == key {
            self.last.1
        } else if let Some(t) = self.threads.get(&key) {
            t.uuid
        } else {
            let parent = self.process(pid);
            let uuid = self.fresh();
            let t = Thread {
                uuid,
                parent,
                tid: key[tid_at..].to_string(),
                tid_int,
                name: None,
                sort: None,
            };
            self.threads.insert(key.clone(), t);
            uuid
        };
        self.last.0.clone_from(&key);
        self.last.1 = uuid;
        self.key = key;
        uuid
    }

    /// The counter track of counter `name`, series `series`, of process `pid`.
    pub(super) fn counter(&mut self, pid: &Id<'_>, name: &str, series: &str) -> u64 {
        let mut key = String::new();
        id_text(pid, &mut key);
        key.push('\0');
        key.push_str(name);
        key.push('\0');
        key.push_str(series);
        if let Some(c) = self.counters.get(&key) {
            return c.uuid;
        }
        let parent = self.process(pid);
        let uuid = self.fresh();
        let name = match series {
            "" => name.to_string(),
            s => format!("{name} {s}"),
        };
        self.counters.insert(key, Counter { uuid, parent, name });
        uuid
    }

    /// A `process_name` metadata event's name.
    pub(super) fn name_process(&mut self, pid: &Id<'_>, name: String) {
        self.process_mut(pid).name = Some(name);
    }

    /// A `thread_name` metadata event's name.
    pub(super) fn name_thread(&mut self, pid: &Id<'_>, tid: &Id<'_>, name: String) {
        let uuid = self.thread(pid, tid);
        if let Some(t) = self.threads.get_mut(&self.key) {
            debug_assert_eq!(t.uuid, uuid);
            t.name = Some(name);
        }
    }

    /// A `thread_sort_index` metadata event's index.
    pub(super) fn sort_thread(&mut self, pid: &Id<'_>, tid: &Id<'_>, sort: i64) {
        self.thread(pid, tid);
        if let Some(t) = self.threads.get_mut(&self.key) {
            t.sort = Some(sort);
        }
    }

    /// Every track's `TrackDescriptor` packet on sequence `seq`: the rank's (named `label`,
    /// `rank_order` among its siblings), its processes ordered as the JSON merge sorts them
    /// (`sort_index`), their threads by `thread_sort_index` or tid, then counters.
    pub(super) fn descriptors(
        &self,
        seq: u64,
        label: &str,
        rank_order: i64,
        sort_index: impl Fn(Option<i64>) -> i64,
        out: &mut Vec<u8>,
    ) {
        describe(out, seq, self.rank_uuid, ROOT_UUID, label, rank_order);
        let mut procs: Vec<&Proc> = self.procs.values().collect();
        procs.sort_by_key(|p| (sort_index(p.pid_int), p.uuid));
        for p in procs {
            let name = match &p.name {
                Some(n) => format!("{n} ({})", p.pid),
                None => format!("pid {}", p.pid),
            };
            describe(
                out,
                seq,
                p.uuid,
                self.rank_uuid,
                &name,
                sort_index(p.pid_int),
            );
        }
        let mut threads: Vec<&Thread> = self.threads.values().collect();
        threads.sort_by_key(|t| t.uuid);
        for t in threads {
            let name = t
                .name
                .clone()
                .unwrap_or_else(|| format!("thread {}", t.tid));
            let order = t.sort.or(t.tid_int).unwrap_or(i64::from(i32::MAX));
            describe(out, seq, t.uuid, t.parent, &name, order);
        }
        let mut counters: Vec<&Counter> = self.counters.values().collect();
        counters.sort_by_key(|c| c.uuid);
        for c in counters {
            pb::message(out, packet::PACKET, |p| {
                pb::uint(p, packet::SEQUENCE_ID, seq);
                pb::message(p, packet::TRACK_DESCRIPTOR, |t| {
                    pb::uint(t, d::UUID, c.uuid);
                    pb::uint(t, d::PARENT_UUID, c.parent);
                    pb::bytes(t, d::NAME, c.name.as_bytes());
                    pb::message(t, d::COUNTER, |_| {});
                });
            });
        }
    }
}

/// One `TrackDescriptor` packet: a track whose children are in the order given
/// (`sibling_order_rank`, an `int32`: clamped).
pub(super) fn describe(
    out: &mut Vec<u8>,
    seq: u64,
    uuid: u64,
    parent: u64,
    name: &str,
    order: i64,
) {
    let order = order.clamp(i64::from(i32::MIN), i64::from(i32::MAX));
    pb::message(out, packet::PACKET, |p| {
        pb::uint(p, packet::SEQUENCE_ID, seq);
        pb::message(p, packet::TRACK_DESCRIPTOR, |t| {
            pb::uint(t, d::UUID, uuid);
            if parent != 0 {
                pb::uint(t, d::PARENT_UUID, parent);
            }
            pb::bytes(t, d::NAME, name.as_bytes());
            pb::uint(t, d::CHILD_ORDERING, d::EXPLICIT);
            // int32: a negative value is written as its 64-bit two's complement, as protobuf does.
            pb::int(t, d::SIBLING_ORDER_RANK, order);
        });
    });
}
