//! What a merge adds after the ranks (the `[watch]` load counters, the `--critical-path`
//! overlay), which the JSON merge writes as Chrome JSON events, as `.pftrace` packets: the
//! same events, read back from that JSON, so the two outputs draw the same content.
//!
//! Each process (`pid`) of the extras is a track: under its rank's track when its pid names
//! a rank of the merge (`"[TP02] critical path"`), else under the merge's root; named and
//! ordered by its `process_name` / `process_sort_index` metadata. Under it, a track per thread
//! for its slices (`X`), and one per counter series (`C`, `"<name> <arg>"`). The JSON's flow
//! events (`s`, `f`) become the flow ids of the slices that hold them on their track (for the
//! critical path: from each late arrival to the ranks that waited for it). Packets are on the merge's own sequence (1), names written in full
//! (a few thousand events, not worth interning), timestamps on the merged clock (JSON `ts`, µs,
//! as ns).

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::fields::{descriptor as d, event as e, packet};
use super::tracks::{self, Uuids, ROOT_UUID};
use crate::trace::write::protobuf as pb;

/// `TrackEvent.name` and `categories` (strings, not interned), `DebugAnnotation.name`.
const EVENT_NAME: u32 = 23;
const EVENT_CATEGORIES: u32 = 22;
const ANNOTATION_NAME: u32 = 10;

/// The flow ids of the extras' slices: this base plus the slice's place, between the ranks'
/// (below 2^62, or hashes with the top bit set: [`super::encode`]), so none is a rank's.
const FLOW_BASE: u64 = 0x7261_6e6b_7072_6f66; // "rankprof"

/// One process of the extras: its track and what names and orders it.
struct Proc {
    uuid: u64,
    parent: u64,
    name: Option<String>,
    sort: Option<i64>,
    /// Thread tracks by tid text, and counter tracks by series name.
    threads: BTreeMap<String, (u64, Option<String>)>,
    counters: BTreeMap<String, u64>,
}

/// The extras' packets, and how many events they hold.
pub(crate) struct Encoded {
    pub(crate) bytes: Vec<u8>,
    pub(crate) events: u64,
}

/// Encodes `json` (the extras as the JSON merge writes them: comma-separated objects) for
/// the ranks `ranks` (bare label, index in the group) of a group of `n`; track uuids in the
/// slot past the ranks' ([`Uuids`]). Events that are not `X`, `C`, `M`, `s` or `f` are left
/// out; a flow event no slice of its track holds is dropped.
pub(crate) fn encode(json: &[u8], ranks: &[(String, usize)], n: usize) -> Encoded {
    let mut out = Encoded {
        bytes: Vec::new(),
        events: 0,
    };
    if json.is_empty() {
        return out;
    }
    let Ok(events) =
        serde_json::from_slice::<Vec<Map<String, Value>>>(&[b"[", json, b"]"].concat())
    else {
        return out;
    };
    let mut procs: BTreeMap<String, Proc> = BTreeMap::new();
    let mut next = Uuids::new(n, n);
    let mut body = Vec::new();
    let mut slices: Vec<Slice<'_>> = Vec::new();
    let mut flows: Vec<FlowEv> = Vec::new();
    for ev in &events {
        let pid = text(ev.get("pid"));
        let p = procs.entry(pid.clone()).or_insert_with(|| {
            let parent = rank_of(&pid, ranks).map_or(ROOT_UUID, tracks::rank_uuid);
            Proc {
                uuid: next.fresh(),
                parent,
                name: None,
                sort: None,
                threads: BTreeMap::new(),
                counters: BTreeMap::new(),
            }
        });
        match str_of(ev, "ph") {
            "M" => metadata(p, ev),
            "X" => {
                let Some(ts) = ns(ev.get("ts")) else { continue };
                let dur = ns(ev.get("dur")).unwrap_or(0).max(0) as u64;
                let track = thread(p, &text(ev.get("tid")), &mut next);
                slices.push((ts, dur, track, ev));
            }
            "C" => out.events += counter(p, ev, &mut next, &mut body),
            ph @ ("s" | "f") => {
                let (Some(ts), Some(id)) = (ns(ev.get("ts")), ev.get("id").and_then(Value::as_u64))
                else {
                    continue;
                };
                let track = thread(p, &text(ev.get("tid")), &mut next);
                flows.push((track, ts, FLOW_BASE.wrapping_add(id), ph == "s"));
            }
            _ => {}
        }
    }
    out.events += write_slices(&mut slices, &flows, &mut body);
    out.events += events.iter().filter(|e| str_of(e, "ph") == "M").count() as u64;
    for p in procs.values() {
        describe_proc(&mut out.bytes, p);
    }
    out.bytes.extend_from_slice(&body);
    out
}

/// An `X` event of the extras: its start (ns), duration, track and the event.
type Slice<'a> = (i64, u64, u64, &'a Map<String, Value>);

/// A flow event of the extras (`s` or `f`): its track, time (ns), flow id, and whether it
/// begins the flow.
type FlowEv = (u64, i64, u64, bool);

/// Writes the slices in time order, each with the flows that begin or end inside it on its
/// track (as a viewer binds a JSON flow event to its enclosing slice); how many.
fn write_slices(slices: &mut [Slice<'_>], flows: &[FlowEv], body: &mut Vec<u8>) -> u64 {
    slices.sort_by_key(|s| (s.2, s.0));
    let mut bound: Vec<Flows> = slices.iter().map(|_| Flows::default()).collect();
    for &(track, ts, id, begins) in flows {
        let Some(k) = enclosing(slices, track, ts) else {
            continue;
        };
        if begins {
            bound[k].begins.push(id);
        } else {
            bound[k].ends.push(id);
        }
    }
    let mut order: Vec<usize> = (0..slices.len()).collect();
    order.sort_by_key(|&k| slices[k].0);
    for k in order {
        let (ts, dur, track, ev) = slices[k];
        slice(body, ts, dur, track, ev, &bound[k]);
    }
    slices.len() as u64
}

/// The slice of `track` that holds time `ts` (the latest to start at or before it), in
/// `slices` sorted by track and start.
fn enclosing(slices: &[Slice<'_>], track: u64, ts: i64) -> Option<usize> {
    let k = slices.partition_point(|s| (s.2, s.0) <= (track, ts));
    let k = k.checked_sub(1)?;
    let (start, dur, t, _) = slices[k];
    (t == track && ts >= start && ts <= start + dur as i64).then_some(k)
}

/// The rank a pid of the extras belongs to (`"[TP02] critical path"`: TP02), if in `ranks`.
fn rank_of(pid: &str, ranks: &[(String, usize)]) -> Option<usize> {
    let label = pid.strip_prefix('[')?.split(']').next()?;
    ranks.iter().find(|(l, _)| l == label).map(|r| r.1)
}

fn str_of<'a>(ev: &'a Map<String, Value>, key: &str) -> &'a str {
    ev.get(key).and_then(Value::as_str).unwrap_or("")
}

/// A `pid` or `tid` as text (a number in decimal).
fn text(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
        None => String::new(),
    }
}

/// JSON µs as ns.
fn ns(v: Option<&Value>) -> Option<i64> {
    let us = v?.as_f64()?;
    us.is_finite().then(|| (us * 1e3).round() as i64)
}

fn metadata(p: &mut Proc, ev: &Map<String, Value>) {
    let args = ev.get("args");
    let arg = |k: &str| args.and_then(|a| a.get(k));
    match str_of(ev, "name") {
        "process_name" => p.name = arg("name").and_then(Value::as_str).map(String::from),
        "process_sort_index" => p.sort = arg("sort_index").and_then(Value::as_i64),
        "thread_name" => {
            let name = arg("name").and_then(Value::as_str).map(String::from);
            let tid = text(ev.get("tid"));
            if let Some(t) = p.threads.get_mut(&tid) {
                t.1 = name;
            } else {
                // Described before its first slice: its uuid is taken when the slice comes.
                p.threads.insert(tid, (0, name));
            }
        }
        _ => {}
    }
}

/// The track of thread `tid` of `p`, made when new.
fn thread(p: &mut Proc, tid: &str, next: &mut Uuids) -> u64 {
    let t = p.threads.entry(tid.to_string()).or_insert((0, None));
    if t.0 == 0 {
        t.0 = next.fresh();
    }
    t.0
}

/// A `C` event: one counter value per numeric arg; how many.
fn counter(p: &mut Proc, ev: &Map<String, Value>, next: &mut Uuids, out: &mut Vec<u8>) -> u64 {
    let Some(ts) = ns(ev.get("ts")) else { return 0 };
    let Some(args) = ev.get("args").and_then(Value::as_object) else {
        return 0;
    };
    let mut n = 0;
    for (key, v) in args {
        let Some(v) = v.as_f64() else { continue };
        let series = format!("{} {key}", str_of(ev, "name"));
        let track = *p.counters.entry(series).or_insert_with(|| next.fresh());
        event_packet(out, ts.max(0) as u64, |t| {
            pb::uint(t, e::TYPE, e::COUNTER);
            pb::uint(t, e::TRACK_UUID, track);
            pb::double(t, e::DOUBLE_COUNTER_VALUE, v);
        });
        n += 1;
    }
    n
}

/// The flows a slice begins and those it ends.
#[derive(Default)]
struct Flows {
    begins: Vec<u64>,
    ends: Vec<u64>,
}

/// An `X` event as a slice's begin and end, its scalar args as debug annotations.
fn slice(out: &mut Vec<u8>, ts: i64, dur: u64, track: u64, ev: &Map<String, Value>, f: &Flows) {
    let ts = ts.max(0) as u64;
    event_packet(out, ts, |t| {
        pb::uint(t, e::TYPE, e::SLICE_BEGIN);
        pb::uint(t, e::TRACK_UUID, track);
        pb::bytes(t, EVENT_NAME, str_of(ev, "name").as_bytes());
        let cat = str_of(ev, "cat");
        if !cat.is_empty() {
            pb::bytes(t, EVENT_CATEGORIES, cat.as_bytes());
        }
        if let Some(args) = ev.get("args").and_then(Value::as_object) {
            args.iter().for_each(|(k, v)| annotation(t, k, v));
        }
        for &id in &f.begins {
            pb::fixed64(t, e::FLOW_IDS, id);
        }
        for &id in &f.ends {
            pb::fixed64(t, e::TERMINATING_FLOW_IDS, id);
        }
    });
    event_packet(out, ts + dur, |t| {
        pb::uint(t, e::TYPE, e::SLICE_END);
        pb::uint(t, e::TRACK_UUID, track);
    });
}

/// One scalar arg as a `DebugAnnotation` (arrays, objects and nulls left out).
fn annotation(out: &mut Vec<u8>, key: &str, v: &Value) {
    use super::fields::annotation as a;
    let value = |m: &mut Vec<u8>| match v {
        Value::Bool(b) => pb::boolean(m, a::BOOL_VALUE, *b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => pb::int(m, a::INT_VALUE, i),
            None => pb::double(m, a::DOUBLE_VALUE, n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => pb::bytes(m, a::STRING_VALUE, s.as_bytes()),
        _ => {}
    };
    if matches!(v, Value::Bool(_) | Value::Number(_) | Value::String(_)) {
        pb::message(out, e::DEBUG_ANNOTATIONS, |m| {
            pb::bytes(m, ANNOTATION_NAME, key.as_bytes());
            value(m);
        });
    }
}

/// A `TracePacket` on the merge's sequence holding a `TrackEvent`.
fn event_packet(out: &mut Vec<u8>, ts: u64, body: impl FnOnce(&mut Vec<u8>)) {
    pb::message(out, packet::PACKET, |p| {
        pb::uint(p, packet::TIMESTAMP, ts);
        pb::uint(p, packet::SEQUENCE_ID, 1);
        pb::message(p, packet::TRACK_EVENT, body);
    });
}

/// A process's track, its threads' and its counters'.
fn describe_proc(out: &mut Vec<u8>, p: &Proc) {
    let name = p.name.clone().unwrap_or_else(|| "rankprof".into());
    tracks::describe(out, 1, p.uuid, p.parent, &name, p.sort.unwrap_or(i64::MAX));
    for (tid, (uuid, name)) in &p.threads {
        if *uuid != 0 {
            let name = name.clone().unwrap_or_else(|| format!("thread {tid}"));
            tracks::describe(out, 1, *uuid, p.uuid, &name, 0);
        }
    }
    for (series, uuid) in &p.counters {
        pb::message(out, packet::PACKET, |q| {
            pb::uint(q, packet::SEQUENCE_ID, 1);
            pb::message(q, packet::TRACK_DESCRIPTOR, |t| {
                pb::uint(t, d::UUID, *uuid);
                pb::uint(t, d::PARENT_UUID, p.uuid);
                pb::bytes(t, d::NAME, series.as_bytes());
                pb::message(t, d::COUNTER, |_| {});
            });
        });
    }
}
