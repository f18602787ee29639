//! One rank's events as `TracePacket`s, each track's on its own packet sequences (each in
//! time order, its times deltas on an incremental clock, its track the sequence's default):
//! slices as `TYPE_SLICE_BEGIN`/`TYPE_SLICE_END` pairs (an end held back until the track's
//! next event passes it), instants, counters, flows and the metadata that names the tracks;
//! numeric `args` as the rank's `TrackEvent` extension ([`super::ext`]); after a Kineto
//! `[memory]` instant, its rank's "memory allocated" counter ([`crate::merge::memory`]), as
//! the JSON merge adds it.
//!
//! What changes in an event is what the JSON merge changes ([`super::super::rewrite`]): the
//! clock shift, and integer ids (`correlation`, `External id`, flow ids) made `n * R + r`, so
//! nothing joins two ranks. A Kineto flow event (`ph` `s`/`t`/`f`) follows the slice it binds
//! to (the slice enclosing it on its thread): the last slice is held back until the next
//! event, so that the flows after it join its `flow_ids_old` (`s`, `t`) or
//! `terminating_flow_ids_old` (`f`), varints of small ids ([`RankEncoder::flow_id`]). A flow
//! with no such slice just before it is counted as unbound and left out.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rustc_hash::FxHashMap;

use super::ext::{ArgFields, Kind};
use super::fields::{annotation as a, clock, event as e, packet};
use super::intern::{decoded, Interner, Table};
use super::tracks::{Tracks, Uuids};
use crate::merge::args::{each_arg, parse_i64, Arg, ArgKind};
use crate::merge::memory;
use crate::trace::read::event::Event;
use crate::trace::read::value::Id;
use crate::trace::write::protobuf as pb;
use crate::trace::Ns;

/// What a rank's encoding wrote and left out.
#[derive(Clone, Debug, Default)]
pub(crate) struct Stats {
    pub(crate) slices: u64,
    pub(crate) instants: u64,
    pub(crate) counters: u64,
    pub(crate) flows: u64,
    /// Flow events with no slice of theirs just before them.
    pub(crate) unbound_flows: u64,
    /// Events of kinds the encoding does not write (async `b`/`e`/`n`, objects, a slice
    /// without `ts`), by `ph`.
    pub(crate) skipped: std::collections::BTreeMap<char, u64>,
}

/// A slice's begin, held back for the flow events that may follow it.
struct Held {
    ts: u64,
    /// `X`: its end; `B`: `None` (an `E` ends it).
    end: Option<u64>,
    track: u64,
    /// Its track's sequence ([`RankEncoder::pick`]), whose strings it uses.
    run: usize,
    name: u64,
    cat: Option<u64>,
    annotations: Vec<u8>,
    flows: Vec<u64>,
    terminating: Vec<u64>,
}

/// One rank's encoder.
pub(crate) struct RankEncoder {
    seq: u64,
    r: i64,
    n: i64,
    label: String,
    shift: Ns,
    /// The packet sequences of each track with events, by its uuid.
    seqs: FxHashMap<u64, TrackSeqs>,
    /// The numeric `args` as the rank's `TrackEvent` extension ([`super::ext`]).
    args: ArgFields,
    tracks: Tracks,
    /// The ids of the rank's packet sequences, apart from its track uuids: the first is the
    /// rank's own (its descriptors), the others a track's sequences in the order started, so
    /// the busiest (first met) have the smallest (one byte below 128, on every packet).
    seq_ids: Uuids,
    held: Option<Held>,
    /// Buffers kept between events, so that encoding allocates nothing in the steady state.
    spare: Spare,
    pub(crate) stats: Stats,
}

/// A released slice's buffers, emptied, for the next ([`RankEncoder::begin`]); and the
/// extension message's scratch ([`RankEncoder::annotations`]).
#[derive(Default)]
struct Spare {
    annotations: Vec<u8>,
    flows: Vec<u64>,
    terminating: Vec<u64>,
    ext: Vec<u8>,
}

/// A track's packet sequences, each its track's events in time order on an incremental
/// clock ([`RankEncoder::emit`]), and its slices' ends not yet written. A Kineto thread's
/// events come in a few runs each in time order (its CPU ops, then its runtime calls from
/// the start again): each run finds the sequence it continues ([`RankEncoder::pick`]).
struct TrackSeqs {
    runs: Vec<Run>,
    /// The ends of the track's slices not yet written (their begins are), earliest first.
    ends: BinaryHeap<Reverse<u64>>,
}

/// One packet sequence of a track: its id (the rank's next sequence id: unique in the file),
/// the last time written on its clock, once started, and its interned strings.
struct Run {
    id: u64,
    last: Option<u64>,
    intern: Interner,
}

impl Spare {
    /// The annotations buffer, emptied (given back by [`Spare::give_back`] or directly).
    fn annotations(&mut self) -> Vec<u8> {
        let mut b = std::mem::take(&mut self.annotations);
        b.clear();
        b
    }

    /// Keeps a released slice's buffers, its flows emptied.
    fn give_back(&mut self, h: Held) {
        let Held {
            annotations,
            mut flows,
            mut terminating,
            ..
        } = h;
        flows.clear();
        terminating.clear();
        self.annotations = annotations;
        self.flows = flows;
        self.terminating = terminating;
    }
}

impl Run {
    fn new(id: u64) -> Self {
        Run {
            id,
            last: None,
            intern: Interner::default(),
        }
    }
}

/// Sequences per track at most; a time before all of theirs goes on the first, in full.
const MAX_RUNS: usize = 8;

/// Output nanoseconds: `ts` shifted, before the epoch clamped to 0.
fn out_ns(ts: Ns, shift: Ns) -> u64 {
    u64::try_from((ts + shift).get()).unwrap_or(0)
}

impl RankEncoder {
    /// The encoder of the rank at `index` of `nranks`, named `label`, its clock moved by
    /// `shift`; its descriptors are on sequence `index + 2` (1 is the merge's own), its
    /// tracks' events on its next sequence ids (`index + 2 + k * (nranks + 1)`).
    pub(crate) fn new(index: usize, nranks: usize, label: &str, shift: Ns) -> Self {
        let mut seq_ids = Uuids::new(index, nranks);
        RankEncoder {
            seq: seq_ids.fresh(),
            r: index as i64,
            n: nranks.max(1) as i64,
            label: label.to_string(),
            shift,
            seqs: FxHashMap::default(),
            args: ArgFields::new(index),
            tracks: Tracks::new(index, nranks),
            seq_ids,
            held: None,
            spare: Spare::default(),
            stats: Stats::default(),
        }
    }

    /// Encodes one event at the end of `out`; whether it was written (or joined a slice).
    pub(crate) fn event(&mut self, ev: &Event<'_>, out: &mut Vec<u8>) -> bool {
        if matches!(ev.ph, b's' | b't' | b'f') {
            return self.flow(ev);
        }
        self.release(out);
        match (ev.ph, ev.ts) {
            (b'M', _) => self.metadata(ev),
            (b'X' | b'B', Some(ts)) => self.begin(ev, ts),
            (b'E', Some(ts)) => {
                let track = self.tracks.thread(&ev.pid, &ev.tid);
                let ts = out_ns(ts, self.shift);
                self.packet(out, ts, track, None, |t| pb::uint(t, e::TYPE, e::SLICE_END));
            }
            (b'i' | b'I', Some(ts)) => self.instant(ev, ts, out),
            (b'C', Some(ts)) => self.counter(ev, ts, out),
            (ph, _) => {
                *self.stats.skipped.entry(char::from(ph)).or_default() += 1;
                return false;
            }
        }
        true
    }

    /// Writes what is held back; call once the rank is read.
    pub(crate) fn finish(&mut self, out: &mut Vec<u8>) {
        self.release(out);
        let mut tracks: Vec<u64> = self.seqs.keys().copied().collect();
        tracks.sort_unstable();
        for track in tracks {
            self.flush_ends(out, track, u64::MAX);
        }
    }

    /// The rank's `TrackDescriptor` packets, `rank_order` its place among the ranks and
    /// `sort_index` a process's sort index (as the JSON merge's `process_sort_index`).
    pub(crate) fn descriptors(
        &self,
        rank_order: i64,
        sort_index: impl Fn(Option<i64>) -> i64,
    ) -> Vec<u8> {
        let mut out = Vec::new();
        self.args.descriptor(self.seq, &mut out);
        self.tracks
            .descriptors(self.seq, &self.label, rank_order, sort_index, &mut out);
        out
    }

    /// Appends one `TracePacket` holding a `TrackEvent` on `track` at `ts` (`body`'s
    /// fields) on the sequence `run` of the track (picked when `None`), after the ends of the
    /// track's slices up to `ts`.
    fn packet(
        &mut self,
        out: &mut Vec<u8>,
        ts: u64,
        track: u64,
        run: Option<usize>,
        body: impl FnOnce(&mut Vec<u8>),
    ) {
        self.flush_ends(out, track, ts);
        let run = run.unwrap_or_else(|| self.pick(track, ts));
        self.emit(out, ts, track, run, body);
    }

    /// Writes the held-back ends of `track`'s slices at or before `until`, in time order.
    fn flush_ends(&mut self, out: &mut Vec<u8>, track: u64, until: u64) {
        while let Some(end) = self.seqs.get_mut(&track).and_then(|s| {
            let Reverse(end) = *s.ends.peek()?;
            (end <= until).then(|| s.ends.pop().map(|Reverse(e)| e))?
        }) {
            let run = self.pick(track, end);
            self.emit(out, end, track, run, |t| pb::uint(t, e::TYPE, e::SLICE_END));
        }
    }

    /// The sequence of `track` a packet at `ts` goes on: the one whose last time is the
    /// latest not after `ts`, else one not started, else a new one ([`MAX_RUNS`] at most),
    /// else the first.
    fn pick(&mut self, track: u64, ts: u64) -> usize {
        let ids = &mut self.seq_ids;
        let seqs = self.seqs.entry(track).or_insert_with(|| TrackSeqs {
            runs: vec![Run::new(ids.fresh())],
            ends: BinaryHeap::new(),
        });
        let mut best: Option<(u64, usize)> = None;
        let mut idle = None;
        for (i, r) in seqs.runs.iter().enumerate() {
            match r.last {
                Some(l) if l <= ts && best.is_none_or(|(b, _)| l > b) => best = Some((l, i)),
                None => idle = Some(i),
                _ => {}
            }
        }
        match best.map(|b| b.1).or(idle) {
            Some(i) => i,
            None if seqs.runs.len() < MAX_RUNS => {
                seqs.runs.push(Run::new(ids.fresh()));
                seqs.runs.len() - 1
            }
            None => 0,
        }
    }

    /// The interner of sequence `run` of `track`.
    fn intern(&mut self, track: u64, run: usize) -> &mut Interner {
        let ids = &mut self.seq_ids;
        let seqs = self.seqs.entry(track).or_insert_with(|| TrackSeqs {
            runs: vec![Run::new(ids.fresh())],
            ends: BinaryHeap::new(),
        });
        if run >= seqs.runs.len() {
            seqs.runs.resize_with(run + 1, || Run::new(ids.fresh()));
        }
        &mut seqs.runs[run].intern
    }

    /// One `TracePacket` on sequence `run` of `track` (started before its first), with the
    /// interned strings defined since its last packet. Its time is a delta on the sequence's
    /// incremental clock (one to three bytes for the gaps of a track), or, before the
    /// sequence's last time (past [`MAX_RUNS`]), the full time on the trace clock.
    fn emit(
        &mut self,
        out: &mut Vec<u8>,
        ts: u64,
        track: u64,
        run: usize,
        body: impl FnOnce(&mut Vec<u8>),
    ) {
        let Some(seq) = self.seqs.get_mut(&track).and_then(|s| s.runs.get_mut(run)) else {
            return;
        };
        let id = seq.id;
        let last = *seq.last.get_or_insert_with(|| {
            start(out, ts, id, track);
            ts
        });
        let interned = seq.intern.take_pending();
        pb::message(out, packet::PACKET, |p| {
            match ts.checked_sub(last) {
                Some(delta) => {
                    pb::uint(p, packet::TIMESTAMP, delta);
                    seq.last = Some(ts);
                }
                None => {
                    pb::uint(p, packet::TIMESTAMP, ts);
                    pb::uint(p, packet::TIMESTAMP_CLOCK_ID, clock::BOOTTIME);
                }
            }
            pb::uint(p, packet::SEQUENCE_ID, id);
            if !interned.is_empty() {
                pb::bytes(p, packet::INTERNED_DATA, &interned);
            }
            pb::message(p, packet::TRACK_EVENT, body);
        });
        seq.intern.give_back(interned);
    }

    /// An `X` or `B` event: its begin held back for the flows after it.
    fn begin(&mut self, ev: &Event<'_>, ts: Ns) {
        let track = self.tracks.thread(&ev.pid, &ev.tid);
        let at = out_ns(ts, self.shift);
        let run = self.pick(track, at);
        let intern = self.intern(track, run);
        let name = intern.iid(Table::Name, ev.name.raw().as_bytes());
        let cat =
            (!ev.cat.is_empty()).then(|| intern.iid(Table::Category, ev.cat.raw().as_bytes()));
        let end = (ev.ph == b'X').then(|| {
            let dur = ev.dur.unwrap_or(Ns::ZERO).max(Ns::ZERO);
            out_ns(ts + dur, self.shift)
        });
        let mut annotations = self.spare.annotations();
        self.annotations(ev, track, run, &mut annotations);
        self.held = Some(Held {
            ts: at,
            end,
            track,
            run,
            name,
            cat,
            annotations,
            flows: std::mem::take(&mut self.spare.flows),
            terminating: std::mem::take(&mut self.spare.terminating),
        });
        self.stats.slices += 1;
    }

    /// Writes the held slice: its begin, and its end when it has one.
    fn release(&mut self, out: &mut Vec<u8>) {
        let Some(h) = self.held.take() else {
            return;
        };
        self.packet(out, h.ts, h.track, Some(h.run), |t| {
            pb::uint(t, e::TYPE, e::SLICE_BEGIN);
            pb::uint(t, e::NAME_IID, h.name);
            if let Some(c) = h.cat {
                pb::uint(t, e::CATEGORY_IIDS, c);
            }
            t.extend_from_slice(&h.annotations);
            for &f in &h.flows {
                pb::uint(t, e::FLOW_IDS_OLD, f);
            }
            for &f in &h.terminating {
                pb::uint(t, e::TERMINATING_FLOW_IDS_OLD, f);
            }
        });
        if let (Some(end), Some(seqs)) = (h.end, self.seqs.get_mut(&h.track)) {
            seqs.ends.push(Reverse(end));
        }
        self.spare.give_back(h);
    }

    /// A flow event: joins the held slice when it is on the slice's thread inside its span.
    fn flow(&mut self, ev: &Event<'_>) -> bool {
        let id = self.flow_id(ev);
        let track = self.tracks.thread(&ev.pid, &ev.tid);
        let at = ev.ts.map(|ts| out_ns(ts, self.shift));
        let held = self.held.as_mut().filter(|h| {
            h.track == track && at.is_some_and(|t| t >= h.ts && h.end.is_none_or(|end| t <= end))
        });
        match (held, id) {
            (Some(h), Some(id)) => {
                match ev.ph {
                    b'f' => h.terminating.push(id),
                    _ => h.flows.push(id),
                }
                if ev.ph == b's' {
                    self.stats.flows += 1;
                }
                true
            }
            _ => {
                self.stats.unbound_flows += 1;
                false
            }
        }
    }

    /// A flow's id, unique across the ranks as the JSON merge makes it (`id * R + r`) and
    /// across its categories: for an integer id of one of Kineto's flow categories
    /// ([`FLOW_CATS`]), `(id * R + r) * K + c + 1` with `c` the category's place of the
    /// `K` (a varint of a few bytes, below 2^62); any other (a string id, another category,
    /// a negative or huge id) is a hash of the category, the rank and the id with the top
    /// bit set, so the two never meet.
    fn flow_id(&self, ev: &Event<'_>) -> Option<u64> {
        let cat = ev.cat.raw().as_bytes();
        if let (Id::Int(v), Some(c)) = (&ev.id, FLOW_CATS.iter().position(|&k| k == cat)) {
            let small = v
                .checked_mul(self.n)
                .and_then(|x| x.checked_add(self.r))
                .and_then(|x| x.checked_mul(FLOW_CATS.len() as i64))
                .and_then(|x| x.checked_add(c as i64 + 1))
                .and_then(|x| u64::try_from(x).ok())
                .filter(|&x| x < SMALL_FLOW_IDS);
            if small.is_some() {
                return small;
            }
        }
        let mut h = Fnv::default();
        h.write(cat);
        h.write(b"\0");
        match ev.id {
            Id::Int(v) => match v.checked_mul(self.n).and_then(|x| x.checked_add(self.r)) {
                Some(x) => h.write(&x.to_le_bytes()),
                None => h.write(format!("{} {v}", self.label).as_bytes()),
            },
            Id::Str(s) => {
                h.write(self.label.as_bytes());
                h.write(s.raw().as_bytes());
            }
            Id::None => return None,
        }
        Some(h.0 | 1 << 63)
    }

    fn instant(&mut self, ev: &Event<'_>, ts: Ns, out: &mut Vec<u8>) {
        let track = self.tracks.thread(&ev.pid, &ev.tid);
        let at = out_ns(ts, self.shift);
        let run = self.pick(track, at);
        let name = self
            .intern(track, run)
            .iid(Table::Name, ev.name.raw().as_bytes());
        let mut annotations = self.spare.annotations();
        self.annotations(ev, track, run, &mut annotations);
        self.packet(out, at, track, Some(run), |t| {
            pb::uint(t, e::TYPE, e::INSTANT);
            pb::uint(t, e::NAME_IID, name);
            t.extend_from_slice(&annotations);
        });
        self.spare.annotations = annotations;
        self.stats.instants += 1;
        if let Some(s) = memory::sample(ev) {
            let track = self.tracks.counter(&ev.pid, memory::COUNTER, &s.series);
            self.counter_value(out, out_ns(ts, self.shift), track, s.value);
        }
    }

    /// One counter value packet.
    fn counter_value(&mut self, out: &mut Vec<u8>, ts: u64, track: u64, v: f64) {
        self.packet(out, ts, track, None, |t| {
            pb::uint(t, e::TYPE, e::COUNTER);
            pb::double(t, e::DOUBLE_COUNTER_VALUE, v);
        });
        self.stats.counters += 1;
    }

    /// A `C` event: each numeric member of its `args` a value on its own counter track.
    fn counter(&mut self, ev: &Event<'_>, ts: Ns, out: &mut Vec<u8>) {
        let name = ev.name.get();
        let mut series: Vec<(u64, f64)> = Vec::new();
        for_each_arg(ev, |arg| {
            if arg.kind != ArgKind::Num {
                return;
            }
            let Some(v) = std::str::from_utf8(arg.val())
                .ok()
                .and_then(|s| s.parse::<f64>().ok())
            else {
                return;
            };
            let key = decoded(arg.key());
            let track = self.tracks.counter(&ev.pid, &name, &key);
            series.push((track, v));
        });
        let ts = out_ns(ts, self.shift);
        for (track, v) in series {
            self.counter_value(out, ts, track, v);
        }
    }

    /// A metadata event naming or ordering a track; the others are left.
    fn metadata(&mut self, ev: &Event<'_>) {
        let arg = |key: &str| ev.arg(key);
        if ev.name.eq_str("process_name") {
            if let Some(n) = arg("name").and_then(|v| v.as_str()) {
                self.tracks.name_process(&ev.pid, n.get().into_owned());
            }
        } else if ev.name.eq_str("thread_name") {
            if let Some(n) = arg("name").and_then(|v| v.as_str()) {
                self.tracks
                    .name_thread(&ev.pid, &ev.tid, n.get().into_owned());
            }
        } else if ev.name.eq_str("thread_sort_index") {
            if let Some(s) = arg("sort_index").and_then(|v| v.as_i64()) {
                self.tracks.sort_thread(&ev.pid, &ev.tid, s);
            }
        }
    }

    /// The event's scalar `args`: numbers and booleans as fields of the rank's extension
    /// message ([`super::ext`]), strings (and what the extension has no field for) as debug
    /// annotations, names and string values interned; but Kineto's bookkeeping ids
    /// ([`LEFT_OUT`]); arrays, objects and nulls are left out. `correlation` and
    /// `External id` are made unique across ranks as in the JSON merge.
    fn annotations(&mut self, ev: &Event<'_>, track: u64, run: usize, out: &mut Vec<u8>) {
        let (r, n) = (self.r, self.n);
        let mut ext = std::mem::take(&mut self.spare.ext);
        ext.clear();
        self.intern(track, run);
        let args = &mut self.args;
        let Some(intern) = self.seqs.get_mut(&track).map(|s| &mut s.runs[run].intern) else {
            self.spare.ext = ext;
            return;
        };
        for_each_arg(ev, |arg| {
            let val = arg.val();
            let key = arg.key();
            if LEFT_OUT.contains(&key) {
                return;
            }
            match arg.kind {
                ArgKind::Num => {
                    let v = number(key, val, r, n);
                    let kind = match v {
                        Number::Int(_) => Kind::Int,
                        Number::Double(_) => Kind::Double,
                    };
                    match args.field(key, kind) {
                        Some(f) => v.write(&mut ext, f),
                        None => {
                            let iid = intern.iid(Table::Annotation, key);
                            pb::message(out, e::DEBUG_ANNOTATIONS, |m| {
                                pb::uint(m, a::NAME_IID, iid);
                                v.write(m, v.annotation_field());
                            });
                        }
                    }
                }
                ArgKind::Str => {
                    let iid = intern.iid(Table::Annotation, key);
                    let value = intern.value_iid(val);
                    pb::message(out, e::DEBUG_ANNOTATIONS, |m| {
                        pb::uint(m, a::NAME_IID, iid);
                        match value {
                            Some(v) => pb::uint(m, a::STRING_VALUE_IID, v),
                            None => pb::bytes(m, a::STRING_VALUE, decoded(val).as_bytes()),
                        }
                    });
                }
                ArgKind::Other if val == b"true" || val == b"false" => {
                    match args.field(key, Kind::Bool) {
                        Some(f) => pb::boolean(&mut ext, f, val == b"true"),
                        None => {
                            let iid = intern.iid(Table::Annotation, key);
                            pb::message(out, e::DEBUG_ANNOTATIONS, |m| {
                                pb::uint(m, a::NAME_IID, iid);
                                pb::boolean(m, a::BOOL_VALUE, val == b"true");
                            });
                        }
                    }
                }
                ArgKind::Other => {}
            }
        });
        if let (false, Some(f)) = (ext.is_empty(), args.ext) {
            pb::bytes(out, f, &ext);
        }
        self.spare.ext = ext;
    }
}

/// Kineto's flow categories (launch → kernel, forward → backward): their integer ids are
/// made flow ids of a few bytes ([`RankEncoder::flow_id`]).
const FLOW_CATS: &[&[u8]] = &[b"ac2g", b"fwdbwd"];

/// Flow ids below this are the small ones; the hashed ones have the top bit set, and the
/// merge's own (the critical path's, [`super::extras`]) are in between.
const SMALL_FLOW_IDS: u64 = 1 << 62;

/// `args` the `.pftrace` leaves out: Kineto's bookkeeping ids, which only link a Python
/// function event to its parent and module (the slices' nesting shows the same) and number
/// the events; they were 36 % of the protobuf of a real SGLang trace with Python stacks.
const LEFT_OUT: &[&[u8]] = &[
    b"Python id",
    b"Python parent id",
    b"Python module id",
    b"Ev Idx",
];

/// Starts sequence `seq` of `track` before its first packet, at `ts`: its state cleared (the
/// flags only here: a file never loses it), its defaults (the sequence's clock, 64, and
/// `track` as the default track), and the clock's snapshot: 64 is incremental, and reads
/// as the trace clock (both at `ts`, as the Perfetto SDK's; the first packet's delta is
/// from there).
fn start(out: &mut Vec<u8>, ts: u64, seq: u64, track: u64) {
    pb::message(out, packet::PACKET, |p| {
        pb::uint(p, packet::SEQUENCE_ID, seq);
        pb::uint(
            p,
            packet::SEQUENCE_FLAGS,
            packet::SEQ_INCREMENTAL_STATE_CLEARED | packet::SEQ_NEEDS_INCREMENTAL_STATE,
        );
        pb::message(p, packet::TRACE_PACKET_DEFAULTS, |d| {
            pb::uint(d, clock::DEFAULTS_CLOCK_ID, clock::RANK_CLOCK);
            pb::message(d, clock::DEFAULTS_TRACK_EVENT, |t| {
                pb::uint(t, clock::TRACK_EVENT_DEFAULTS_TRACK_UUID, track);
            });
        });
    });
    pb::message(out, packet::PACKET, |p| {
        pb::uint(p, packet::SEQUENCE_ID, seq);
        pb::message(p, packet::CLOCK_SNAPSHOT, |c| {
            pb::message(c, clock::SNAPSHOT_CLOCKS, |k| {
                pb::uint(k, clock::CLOCK_ID, clock::RANK_CLOCK);
                pb::uint(k, clock::CLOCK_TIMESTAMP, ts);
                pb::boolean(k, clock::CLOCK_IS_INCREMENTAL, true);
            });
            pb::message(c, clock::SNAPSHOT_CLOCKS, |k| {
                pb::uint(k, clock::CLOCK_ID, clock::BOOTTIME);
                pb::uint(k, clock::CLOCK_TIMESTAMP, ts);
            });
        });
    });
}

/// An `args` number: an integer (an id made unique across ranks), else a double.
#[derive(Clone, Copy)]
enum Number {
    Int(i64),
    Double(f64),
}

impl Number {
    /// The value as field `field` (an `int64` or a `double`).
    fn write(self, m: &mut Vec<u8>, field: u32) {
        match self {
            Number::Int(v) => pb::int(m, field, v),
            Number::Double(v) => pb::double(m, field, v),
        }
    }

    /// Its field in a `DebugAnnotation`.
    fn annotation_field(self) -> u32 {
        match self {
            Number::Int(_) => a::INT_VALUE,
            Number::Double(_) => a::DOUBLE_VALUE,
        }
    }
}

fn number(key: &[u8], val: &[u8], r: i64, n: i64) -> Number {
    match parse_i64(val) {
        Some(v) if matches!(key, b"correlation" | b"External id") => {
            Number::Int(v.checked_mul(n).and_then(|x| x.checked_add(r)).unwrap_or(v))
        }
        Some(v) => Number::Int(v),
        None => {
            let d = std::str::from_utf8(val)
                .ok()
                .and_then(|s| s.parse::<f64>().ok());
            Number::Double(d.unwrap_or(f64::NAN))
        }
    }
}

/// Calls `f` with each top-level member of the event's `args` (those the reader found, else
/// walked here).
fn for_each_arg<'a>(ev: &Event<'a>, mut f: impl FnMut(Arg<'a>)) {
    let raw = ev.raw.as_bytes();
    match (ev.arg_fields, ev.args) {
        (Some(fields), _) => fields.iter().for_each(|x| f(Arg::of_field(x, raw))),
        (None, Some(text)) => each_arg(text.as_bytes(), f),
        (None, None) => {}
    }
}

/// FNV-1a, 64 bits: a flow's id from its category and id.
struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}
