//! One rank's events as `TracePacket`s on the rank's own packet sequence: slices as
//! `TYPE_SLICE_BEGIN`/`TYPE_SLICE_END` pairs, instants, counters, flows and the metadata
//! that names the tracks; after a Kineto `[memory]` instant, its rank's "memory allocated"
//! counter ([`crate::merge::memory`]), as the JSON merge adds it.
//!
//! What changes in an event is what the JSON merge changes ([`super::super::rewrite`]): the
//! clock shift, and integer ids (`correlation`, `External id`, flow ids) made `n * R + r`, so
//! nothing joins two ranks. A Kineto flow event (`ph` `s`/`t`/`f`) follows the slice it binds
//! to (the slice enclosing it on its thread): the last slice is held back until the next
//! event, so that the flows after it join its `flow_ids` (`s`, `t`) or
//! `terminating_flow_ids` (`f`). A flow with no such slice just before it is counted as
//! unbound and left out.

use super::fields::{annotation as a, clock, event as e, packet};
use super::intern::{decoded, Interner, Table};
use super::tracks::Tracks;
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
    /// The rank clock's zero on the trace clock ([`RankEncoder::start`]), once the first
    /// packet is written, and the sequence's default track.
    start: Option<(u64, u64)>,
    intern: Interner,
    tracks: Tracks,
    held: Option<Held>,
    pub(crate) stats: Stats,
}

/// How far before a rank's first event its clock's zero is put: events up to this much
/// earlier are on it too (the rest carry the trace clock's id and their full time), and a
/// time on it takes 5 bytes up to 2^35 ns (34 s) past its zero.
const CLOCK_MARGIN: u64 = 1 << 32;

/// Output nanoseconds: `ts` shifted, before the epoch clamped to 0.
fn out_ns(ts: Ns, shift: Ns) -> u64 {
    u64::try_from((ts + shift).get()).unwrap_or(0)
}

impl RankEncoder {
    /// The encoder of the rank at `index` of `nranks`, named `label`, its clock moved by
    /// `shift`; its packets are on sequence `index + 2` (1 is the merge's own).
    pub(crate) fn new(index: usize, nranks: usize, label: &str, shift: Ns) -> Self {
        RankEncoder {
            seq: index as u64 + 2,
            r: index as i64,
            n: nranks.max(1) as i64,
            label: label.to_string(),
            shift,
            start: None,
            intern: Interner::default(),
            tracks: Tracks::new(index, nranks),
            held: None,
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
                self.packet(out, ts, track, |t| pb::uint(t, e::TYPE, e::SLICE_END));
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
    }

    /// The rank's `TrackDescriptor` packets, `rank_order` its place among the ranks and
    /// `sort_index` a process's sort index (as the JSON merge's `process_sort_index`).
    pub(crate) fn descriptors(
        &self,
        rank_order: i64,
        sort_index: impl Fn(Option<i64>) -> i64,
    ) -> Vec<u8> {
        let mut out = Vec::new();
        self.tracks
            .descriptors(self.seq, &self.label, rank_order, sort_index, &mut out);
        out
    }

    /// Appends one `TracePacket` holding a `TrackEvent` on `track` (`body`'s other fields),
    /// with the interned strings defined since the last packet. Its time is on the rank's
    /// clock (from [`RankEncoder::start`]'s zero: five bytes, not nine), or on the trace clock
    /// when before that zero; its track is the sequence's default, or given.
    fn packet(&mut self, out: &mut Vec<u8>, ts: u64, track: u64, body: impl FnOnce(&mut Vec<u8>)) {
        let (zero, default_track) = match self.start {
            Some(s) => s,
            None => self.start(out, ts, track),
        };
        let interned = self.intern.take_pending();
        pb::message(out, packet::PACKET, |p| {
            match ts.checked_sub(zero) {
                Some(rel) => pb::uint(p, packet::TIMESTAMP, rel),
                None => {
                    pb::uint(p, packet::TIMESTAMP, ts);
                    pb::uint(p, packet::TIMESTAMP_CLOCK_ID, clock::BOOTTIME);
                }
            }
            pb::uint(p, packet::SEQUENCE_ID, self.seq);
            if !interned.is_empty() {
                pb::bytes(p, packet::INTERNED_DATA, &interned);
            }
            pb::message(p, packet::TRACK_EVENT, |t| {
                if track != default_track {
                    pb::uint(t, e::TRACK_UUID, track);
                }
                body(t);
            });
        });
        self.intern.give_back(interned);
    }

    /// Starts the sequence before its first event (at `ts`, on `track`): its state cleared
    /// (the flags only here: a file never loses it), its defaults (the rank's clock, 64, and
    /// `track` as the default track), and the clock's snapshot: its zero is [`CLOCK_MARGIN`]
    /// before the first event on the trace clock. The zero and the default track.
    fn start(&mut self, out: &mut Vec<u8>, ts: u64, track: u64) -> (u64, u64) {
        let zero = ts.saturating_sub(CLOCK_MARGIN);
        pb::message(out, packet::PACKET, |p| {
            pb::uint(p, packet::SEQUENCE_ID, self.seq);
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
            pb::uint(p, packet::SEQUENCE_ID, self.seq);
            pb::message(p, packet::CLOCK_SNAPSHOT, |c| {
                for (id, at) in [(clock::RANK_CLOCK, 0), (clock::BOOTTIME, zero)] {
                    pb::message(c, clock::SNAPSHOT_CLOCKS, |k| {
                        pb::uint(k, clock::CLOCK_ID, id);
                        pb::uint(k, clock::CLOCK_TIMESTAMP, at);
                    });
                }
            });
        });
        self.start = Some((zero, track));
        (zero, track)
    }

    /// An `X` or `B` event: its begin held back for the flows after it.
    fn begin(&mut self, ev: &Event<'_>, ts: Ns) {
        let track = self.tracks.thread(&ev.pid, &ev.tid);
        let name = self.intern.iid(Table::Name, ev.name.raw().as_bytes());
        let cat =
            (!ev.cat.is_empty()).then(|| self.intern.iid(Table::Category, ev.cat.raw().as_bytes()));
        let end = (ev.ph == b'X').then(|| {
            let dur = ev.dur.unwrap_or(Ns::ZERO).max(Ns::ZERO);
            out_ns(ts + dur, self.shift)
        });
        let mut annotations = Vec::new();
        self.annotations(ev, &mut annotations);
        self.held = Some(Held {
            ts: out_ns(ts, self.shift),
            end,
            track,
            name,
            cat,
            annotations,
            flows: Vec::new(),
            terminating: Vec::new(),
        });
        self.stats.slices += 1;
    }

    /// Writes the held slice: its begin, and its end when it has one.
    fn release(&mut self, out: &mut Vec<u8>) {
        let Some(h) = self.held.take() else {
            return;
        };
        self.packet(out, h.ts, h.track, |t| {
            pb::uint(t, e::TYPE, e::SLICE_BEGIN);
            pb::uint(t, e::NAME_IID, h.name);
            if let Some(c) = h.cat {
                pb::uint(t, e::CATEGORY_IIDS, c);
            }
            t.extend_from_slice(&h.annotations);
            for &f in &h.flows {
                pb::fixed64(t, e::FLOW_IDS, f);
            }
            for &f in &h.terminating {
                pb::fixed64(t, e::TERMINATING_FLOW_IDS, f);
            }
        });
        if let Some(end) = h.end {
            self.packet(out, end, h.track, |t| pb::uint(t, e::TYPE, e::SLICE_END));
        }
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

    /// A flow's id: its category and its id made unique across ranks as the JSON merge makes
    /// it (`id * R + r`; a string id with the rank label), hashed together.
    fn flow_id(&self, ev: &Event<'_>) -> Option<u64> {
        let mut h = Fnv::default();
        h.write(ev.cat.raw().as_bytes());
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
        Some(h.0)
    }

    fn instant(&mut self, ev: &Event<'_>, ts: Ns, out: &mut Vec<u8>) {
        let track = self.tracks.thread(&ev.pid, &ev.tid);
        let name = self.intern.iid(Table::Name, ev.name.raw().as_bytes());
        let mut annotations = Vec::new();
        self.annotations(ev, &mut annotations);
        self.packet(out, out_ns(ts, self.shift), track, |t| {
            pb::uint(t, e::TYPE, e::INSTANT);
            pb::uint(t, e::NAME_IID, name);
            t.extend_from_slice(&annotations);
        });
        self.stats.instants += 1;
        if let Some(s) = memory::sample(ev) {
            let track = self.tracks.counter(&ev.pid, memory::COUNTER, &s.series);
            self.counter_value(out, out_ns(ts, self.shift), track, s.value);
        }
    }

    /// One counter value packet.
    fn counter_value(&mut self, out: &mut Vec<u8>, ts: u64, track: u64, v: f64) {
        self.packet(out, ts, track, |t| {
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

    /// The event's scalar `args` as debug annotations (names and string values interned):
    /// numbers, strings and booleans, but Kineto's bookkeeping ids ([`LEFT_OUT`]); arrays,
    /// objects and nulls are left out. `correlation` and `External id` are made unique across
    /// ranks as in the JSON merge.
    fn annotations(&mut self, ev: &Event<'_>, out: &mut Vec<u8>) {
        let (r, n) = (self.r, self.n);
        let intern = &mut self.intern;
        for_each_arg(ev, |arg| {
            let val = arg.val();
            let key = arg.key();
            if LEFT_OUT.contains(&key) {
                return;
            }
            match arg.kind {
                ArgKind::Num => {
                    let iid = intern.iid(Table::Annotation, key);
                    pb::message(out, e::DEBUG_ANNOTATIONS, |m| {
                        pb::uint(m, a::NAME_IID, iid);
                        number(m, key, val, r, n);
                    });
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
                    let iid = intern.iid(Table::Annotation, key);
                    pb::message(out, e::DEBUG_ANNOTATIONS, |m| {
                        pb::uint(m, a::NAME_IID, iid);
                        pb::boolean(m, a::BOOL_VALUE, val == b"true");
                    });
                }
                ArgKind::Other => {}
            }
        });
    }
}

/// `args` the `.pftrace` leaves out: Kineto's bookkeeping ids, which only link a Python
/// function event to its parent and module (the slices' nesting shows the same) and number
/// the events; they were 36 % of the protobuf of a real SGLang trace with Python stacks.
const LEFT_OUT: &[&[u8]] = &[
    b"Python id",
    b"Python parent id",
    b"Python module id",
    b"Ev Idx",
];

/// A number's value field: an integer (an id made unique across ranks), else a double.
fn number(m: &mut Vec<u8>, key: &[u8], val: &[u8], r: i64, n: i64) {
    match parse_i64(val) {
        Some(v) if matches!(key, b"correlation" | b"External id") => {
            match v.checked_mul(n).and_then(|x| x.checked_add(r)) {
                Some(x) => pb::int(m, a::INT_VALUE, x),
                None => pb::int(m, a::INT_VALUE, v),
            }
        }
        Some(v) => pb::int(m, a::INT_VALUE, v),
        None => {
            let d = std::str::from_utf8(val)
                .ok()
                .and_then(|s| s.parse::<f64>().ok());
            pb::double(m, a::DOUBLE_VALUE, d.unwrap_or(f64::NAN));
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
