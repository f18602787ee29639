#!/usr/bin/env python3
"""Decodes a rankprof `.pftrace` with Perfetto's own protos (the `perfetto` PyPI package's
`perfetto_trace_pb2`) and, independently, the JSON merge of the same ranks; prints what it
counts as one JSON object (tests/merge_perfetto.rs compares the two sides).

Usage: perfetto_decode.py MERGED.pftrace MERGED.trace.json.gz [RANK_TRACE ...]

Protobuf side, per rank (a rank is the track under the root, and every track below it):
slices (TYPE_SLICE_BEGIN), instants, counter values, flows begun (distinct ids in
`flow_ids`, else `flow_ids_old`) and ended (distinct ids in `terminating_flow_ids`, else
`terminating_flow_ids_old`: trace_processor reads the deprecated varint fields of an event
with none of the fixed64 ones, `MaybeParseTrackEventFlows`); ends without a begin on
their track. Whole file: interned iids used but not defined earlier on their sequence (the
state cleared by SEQ_INCREMENTAL_STATE_CLEARED), events on tracks never described, the rank
tracks in `sibling_order_rank` order and whether their parent orders its children
explicitly, timestamps going out of a rank's span.

JSON side, per rank (the label in front of each `pid`): `X` and `B` events (slices), `i`/`I`
(instants), counter values (numeric args of `C` events), distinct (cat, id) of `s` and of `f`
flow events, and the ranks in the order of the document's `ranks` list.

Both sides, compared here: every slice begin (rank, name, time in ns, args) and every slice
end (rank, time); the .pftrace's times through its sequences' incremental clocks, its args
from the debug annotations and from the TrackEvent extension its ExtensionDescriptor
declares, keyed as trace_processor keys them (`debug.<name>`).

Both sides: the critical path (slices on tracks / in processes named "critical path": how
many, on which ranks, and in the .pftrace the flow arrows chaining them in time order), the
what-if's ideal timeline (slices per rank on its "ideal steps, world N" threads / in its "what
if (every rank typical)" processes), and
the "memory allocated" counter's values per rank. The rank traces given after the two merges
(the inputs) are read for their `[memory]` events' `Total Allocated`, per file in time order,
the independent figure both merges' memory counters must show; and the rank labels of the
.pftrace are sorted by their numbers (DP, EP, PP, TP), the order the ranks must have.
"""

import gzip
from decimal import Decimal
import json
import re
import struct
import sys
from collections import Counter, defaultdict

from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

TE = pb.TrackEvent
EXPLICIT = pb.TrackDescriptor.ChildTracksOrdering.Value("EXPLICIT")
CLEARED = pb.TracePacket.SequenceFlags.Value("SEQ_INCREMENTAL_STATE_CLEARED")


def read_trace(path):
    """The `Trace` in a `.pftrace`, or in a `.pftrace.gz` (as trace_processor reads it: gzip
    first; Python's gzip reads every member, so a file of two members would pass here — the
    Rust test checks that a `.pftrace.gz` is one)."""
    trace = pb.Trace()
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        trace.ParseFromString(f.read())
    return trace


class Side:
    def __init__(self):
        self.tracks = {}  # uuid -> TrackDescriptor
        self.interned = {}  # seq -> {table: set(iid)}
        self.undefined_iids = 0
        self.undescribed_tracks = set()
        self.events = []  # (trace-clock time, TrackEvent with its track, its sequence's state)
        self.clock_errors = 0  # events on a clock their sequence never mapped
        # TrackEvent extensions declared by ExtensionDescriptor packets (trace_processor's
        # descriptor pool is the whole trace's): field number -> (name, message type), and
        # message type -> {field number: (name, FieldDescriptorProto.Type)}.
        self.extensions = {}
        self.messages = {}


def fresh():
    return {"names": {}, "cats": {}, "ann": {}, "str": {}}


def intern(side, seq, packet):
    if packet.sequence_flags & CLEARED or packet.incremental_state_cleared:
        side.interned[seq] = fresh()
    state = side.interned.setdefault(seq, None)
    if not packet.HasField("interned_data"):
        return state
    if state is None:
        side.undefined_iids += 1  # interned data before the state was cleared
        state = side.interned[seq] = fresh()
    d = packet.interned_data
    state["names"].update((e.iid, e.name) for e in d.event_names)
    state["cats"].update((e.iid, e.name) for e in d.event_categories)
    state["ann"].update((e.iid, e.name) for e in d.debug_annotation_names)
    state["str"].update((e.iid, e.str.decode("utf-8", "replace")) for e in d.debug_annotation_string_values)
    return state


def add_extensions(side, desc):
    """An ExtensionDescriptor: its FileDescriptorSet's messages and TrackEvent extensions."""
    for f in desc.extension_set.file:
        for m in f.message_type:
            side.messages["." + f.package + "." + m.name] = {
                x.number: (x.name, x.type) for x in m.field
            }
        for x in f.extension:
            if x.extendee == ".perfetto.protos.TrackEvent":
                side.extensions[x.number] = (x.name, x.type_name)


def varint(b, i):
    v = s = 0
    while True:
        x = b[i]
        i += 1
        v |= (x & 0x7F) << s
        s += 7
        if x < 0x80:
            return v, i


def wire_fields(b):
    """A message's fields as (number, wire type, value: int, or bytes for LEN/fixed)."""
    i = 0
    while i < len(b):
        key, i = varint(b, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(b, i)
        elif wt == 1:
            v, i = b[i:i + 8], i + 8
        elif wt == 5:
            v, i = b[i:i + 4], i + 4
        elif wt == 2:
            n, i = varint(b, i)
            v, i = b[i:i + n], i + n
        else:
            raise ValueError("wire type %d" % wt)
        yield num, wt, v


# FieldDescriptorProto.Type values the scalar decoding below knows.
T_DOUBLE, T_INT64, T_UINT64, T_INT32, T_BOOL, T_STRING = 1, 3, 4, 5, 8, 9


def scalar(t, wt, v):
    if t == T_DOUBLE and wt == 1:
        return struct.unpack("<d", v)[0]
    if t in (T_INT64, T_INT32) and wt == 0:
        return v - (1 << 64) if v >= 1 << 63 else v
    if t == T_UINT64 and wt == 0:
        return v
    if t == T_BOOL and wt == 0:
        return v != 0
    if t == T_STRING and wt == 2:
        return v.decode("utf-8", "replace")
    return ("undecodable", t, wt)


def event_args(side, state, ev):
    """A TrackEvent's args as trace_processor keys them: each debug annotation as
    `debug.<name>`, and each field of a TrackEvent extension message as
    `<extension field name>.<field name>` (ProtoToArgsParser), decoded by the trace's
    ExtensionDescriptor schema (unknown to the perfetto package, so read off the wire)."""
    args = {}
    for a in ev.debug_annotations:
        name = a.name if a.HasField("name") else (state or {}).get("ann", {}).get(a.name_iid)
        kind = a.WhichOneof("value")
        if kind == "string_value_iid":
            v = (state or {}).get("str", {}).get(a.string_value_iid)
        elif kind in ("int_value", "double_value", "bool_value", "string_value"):
            v = getattr(a, kind)
        else:
            v = ("unsupported", kind)
        args["debug." + str(name)] = v
    if side.extensions:
        for num, wt, v in wire_fields(ev.SerializeToString()):
            if num not in side.extensions or wt != 2:
                continue
            ext_name, type_name = side.extensions[num]
            fields = side.messages.get(type_name, {})
            for fnum, fwt, fv in wire_fields(v):
                fname, ftype = fields.get(fnum, ("?%d" % fnum, 0))
                args[ext_name + "." + fname] = scalar(ftype, fwt, fv)
    return args


def check_iids(side, state, ev):
    used = []
    if ev.HasField("name_iid"):
        used.append(("names", ev.name_iid))
    used += [("cats", c) for c in ev.category_iids]
    used += [("ann", a.name_iid) for a in ev.debug_annotations if a.HasField("name_iid")]
    used += [
        ("str", a.string_value_iid)
        for a in ev.debug_annotations
        if a.HasField("string_value_iid")
    ]
    for table, iid in used:
        if state is None or iid not in state[table]:
            side.undefined_iids += 1


BOOTTIME = 6


def clock_offset(snapshot):
    """A sequence's ClockSnapshot: each clock id's offset to BOOTTIME (the trace clock) and
    whether it is incremental."""
    at = {c.clock_id: c.timestamp for c in snapshot.clocks}
    if BOOTTIME not in at:
        return {}
    return {
        c.clock_id: (at[BOOTTIME] - c.timestamp, c.is_incremental) for c in snapshot.clocks
    }


def decode(path):
    """Every TrackEvent with its time on the trace clock and its track (its own, else the
    sequence's default track). A packet's clock is its timestamp_clock_id, else its
    sequence's TracePacketDefaults'; a sequence-scoped clock (64-127) is mapped to BOOTTIME
    by the sequence's last ClockSnapshot, and an incremental one (clock_snapshot.proto:
    `is_incremental`) reads each packet's timestamp as a delta from the last packet on that
    clock of the sequence, the first after the snapshot from the snapshot's value
    (trace_processor's ClockSynchronizer: ClockDomain::ToNs, last_timestamp_ns reset by
    AddSnapshot)."""
    side = Side()
    defaults = {}  # seq -> TracePacketDefaults
    offsets = {}  # seq -> {clock id: (offset to BOOTTIME, incremental)}
    last = {}  # (seq, clock id) -> an incremental clock's last value
    for p in read_trace(path).packet:
        seq = p.trusted_packet_sequence_id
        if p.HasField("track_descriptor"):
            side.tracks[p.track_descriptor.uuid] = p.track_descriptor
        if p.HasField("trace_packet_defaults"):
            defaults[seq] = p.trace_packet_defaults
        if p.HasField("extension_descriptor"):
            add_extensions(side, p.extension_descriptor)
        if p.HasField("clock_snapshot"):
            offsets[seq] = clock_offset(p.clock_snapshot)
            for c in p.clock_snapshot.clocks:
                last[(seq, c.clock_id)] = c.timestamp
        state = intern(side, seq, p)
        if p.HasField("track_event"):
            check_iids(side, state, p.track_event)
            d = defaults.get(seq)
            cid = p.timestamp_clock_id if p.HasField("timestamp_clock_id") else (
                d.timestamp_clock_id if d is not None and d.HasField("timestamp_clock_id") else BOOTTIME)
            ts = p.timestamp
            if cid != BOOTTIME:
                if cid not in offsets.get(seq, {}):
                    side.clock_errors += 1
                else:
                    offset, incremental = offsets[seq][cid]
                    if incremental:
                        ts = last[(seq, cid)] = last[(seq, cid)] + ts
                    ts += offset
            ev = p.track_event
            if not ev.HasField("track_uuid") and d is not None:
                ev.track_uuid = d.track_event_defaults.track_uuid
            side.events.append((ts, ev, state))
    return side


def rank_of(side, uuid, root):
    seen = 0
    while uuid in side.tracks and seen < 64:
        t = side.tracks[uuid]
        if t.parent_uuid == root:
            return t.name
        uuid = t.parent_uuid
        seen += 1
    return None


def per_rank_pb(side):
    roots = [u for u, t in side.tracks.items() if not t.HasField("parent_uuid")]
    root = roots[0] if len(roots) == 1 else None
    ranks = defaultdict(lambda: defaultdict(int))
    flows = defaultdict(set)
    ends = defaultdict(set)
    depth = defaultdict(int)
    unmatched_ends = 0
    memory = defaultdict(list)
    critical = []
    ideal = defaultdict(int)
    flow_fields = Counter()  # the ranks' events with flows, by the fields that carry them
    slices = Counter()  # begins (rank, name, time, args) and ends ("end", rank, time)
    for ts, ev, state in sorted(side.events, key=lambda x: x[0]):
        label = rank_of(side, ev.track_uuid, root)
        if label is None:
            side.undescribed_tracks.add(ev.track_uuid)
            continue
        r = ranks[label]
        if ev.type == TE.TYPE_SLICE_BEGIN:
            r["slices"] += 1
            r["first_ts"] = min(r.get("first_ts", ts), ts)
            r["last_ts"] = max(r.get("last_ts", ts), ts)
            depth[ev.track_uuid] += 1
            slice_name = ev.name if ev.HasField("name") else (state or {}).get("names", {}).get(ev.name_iid)
            slices[begin_key(label, slice_name, ts, event_args(side, state, ev))] += 1
        elif ev.type == TE.TYPE_SLICE_END:
            if depth[ev.track_uuid] == 0:
                unmatched_ends += 1
            else:
                depth[ev.track_uuid] -= 1
            slices[("end", label, ts)] += 1
        elif ev.type == TE.TYPE_INSTANT:
            r["instants"] += 1
        elif ev.type == TE.TYPE_COUNTER:
            r["counters"] += 1
        name = side.tracks[ev.track_uuid].name
        if name != "critical path":  # its arrows join the ranks, by design
            flows[label].update(flow_ids(ev))
            ends[label].update(terminating_flow_ids(ev))
            if len(ev.flow_ids) or len(ev.terminating_flow_ids):
                flow_fields["fixed64"] += 1
            if len(ev.flow_ids_old) or len(ev.terminating_flow_ids_old):
                flow_fields["varint"] += 1
        if ev.type == TE.TYPE_COUNTER and name.startswith("memory allocated"):
            memory[label].append(ev.double_counter_value)
        if ev.type == TE.TYPE_SLICE_BEGIN and name == "critical path":
            critical.append((ts, label, slice_name, flow_ids(ev), terminating_flow_ids(ev)))
        if ev.type == TE.TYPE_SLICE_BEGIN and name.startswith("ideal steps, world "):
            ideal[label] += 1
    for label in ranks:
        ranks[label]["flows"] = len(flows[label])
        ranks[label]["flow_ends"] = len(ends[label])
    shared = set()
    labels = list(flows)
    for i, a in enumerate(labels):
        for b in labels[i + 1:]:
            shared |= (flows[a] | ends[a]) & (flows[b] | ends[b])
    order = sorted(
        (t for t in side.tracks.values() if t.parent_uuid == root and root is not None),
        key=lambda t: t.sibling_order_rank,
    )
    return {
        "per_rank": {k: dict(v) for k, v in ranks.items()},
        "memory": sorted(memory.values()),
        "critical": critical_summary(critical),
        "ideal": dict(ideal),
        "all_parents_explicit": all_parents_explicit(side),
        "rank_order": [t.name for t in order],
        "label_order": sorted((t.name for t in order), key=label_key),
        "root_explicit": root is not None and side.tracks[root].child_ordering == EXPLICIT,
        "roots": len(roots),
        "ranks_explicit": all(t.child_ordering == EXPLICIT for t in order),
        "unmatched_ends": unmatched_ends,
        "unclosed": sum(depth.values()),
        "flow_ids_shared_by_ranks": len(shared),
        "flow_fields": dict(flow_fields),
        "undefined_iids": side.undefined_iids,
        "clock_errors": side.clock_errors,
        "undescribed_tracks": len(side.undescribed_tracks),
        "tracks": len(side.tracks),
        "events": len(side.events),
    }, slices


def flow_ids(ev):
    """The flows an event begins or continues, as trace_processor reads them
    (`track_event_event_importer.h`, `MaybeParseTrackEventFlows`): `flow_ids` (47, fixed64)
    when the event has any, else `flow_ids_old` (36, varints)."""
    return list(ev.flow_ids) if len(ev.flow_ids) else list(ev.flow_ids_old)


def terminating_flow_ids(ev):
    """Likewise `terminating_flow_ids` (48), else `terminating_flow_ids_old` (42)."""
    if len(ev.terminating_flow_ids):
        return list(ev.terminating_flow_ids)
    return list(ev.terminating_flow_ids_old)


def begin_key(label, name, begin, args):
    """A slice's begin as both sides are compared: its rank, name, time (ns) and args. Ends
    are compared as ("end", rank, time): a TYPE_SLICE_END closes whichever slice is innermost
    on its track, so two slices of a track that overlap without nesting (SGLang's CPU traces
    have them) pair up differently in Perfetto than in the JSON, while every begin and end
    is still where the JSON has it."""
    return (label, name, begin, tuple(sorted((k, repr(v)) for k, v in args.items())))


def critical_summary(critical):
    """The critical path's slices: how many per rank, and the flows between them: each flow
    as (rank that begins it, the name's head, rank that ends it, the name's head), sorted."""
    per_rank = defaultdict(int)
    begins, ends = {}, {}
    for _, label, name, out, into in critical:
        per_rank[label] += 1
        for i in out:
            begins[i] = (label, name)
        for i in into:
            ends[i] = (label, name)
    return {
        "per_rank": dict(per_rank),
        "flows": sum(len(c[3]) for c in critical),
        "flow_ends": sum(len(c[4]) for c in critical),
        "pairs": sorted(
            [begins[i][0], head(begins[i][1]), ends[i][0], head(ends[i][1])]
            for i in begins if i in ends
        ),
    }


def head(name):
    """A critical-path slice's name up to its collective: "last at" or "waits for TPnn"."""
    if name.startswith("last at"):
        return "last at"
    return " ".join(name.split(" ")[:3])


def all_parents_explicit(side):
    """Every track with children orders them explicitly, and every child has its rank."""
    parents = {t.parent_uuid for t in side.tracks.values() if t.HasField("parent_uuid")}
    return all(
        side.tracks[p].child_ordering == EXPLICIT for p in parents if p in side.tracks
    ) and all(
        t.HasField("sibling_order_rank") for t in side.tracks.values()
        if t.HasField("parent_uuid") and not t.HasField("counter")
    )


def label_key(label):
    """A rank label's numbers in the merge's order: DP, EP, PP, TP (RANK as TP)."""
    nums = {k.upper(): int(v) for k, v in re.findall(r"([A-Za-z]+)(\d+)", label)}
    tp = nums.get("TP", nums.get("RANK", 0))
    return (nums.get("DP", 0), nums.get("EP", 0), nums.get("PP", 0), tp)


def raw_memory(paths):
    """Per input trace, its `[memory]` events' Total Allocated in time order (sorted lists)."""
    out = []
    for path in paths:
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rt") as f:
            doc = json.load(f)
        events = doc["traceEvents"] if isinstance(doc, dict) else doc
        vals = [
            (e["ts"], e["args"]["Total Allocated"])
            for e in events
            if e.get("name") == "[memory]" and e.get("ph") in ("i", "I")
            and isinstance(e.get("args", {}).get("Total Allocated"), (int, float))
        ]
        if vals:
            out.append([float(v) for _, v in sorted(vals, key=lambda x: x[0])])
    return sorted(out)


def label_of(pid):
    if isinstance(pid, str) and pid.startswith("[") and "]" in pid:
        return pid[: pid.index("]") + 1]
    return None


def per_rank_json(path):
    with gzip.open(path, "rt") as f:
        doc = json.load(f, parse_float=Decimal)  # exact µs, for times in ns
    ranks = defaultdict(lambda: defaultdict(int))
    starts = defaultdict(set)
    finishes = defaultdict(set)
    memory = defaultdict(list)
    critical = defaultdict(int)
    ideal = defaultdict(int)
    crit_x, crit_flows = [], []
    slices = Counter()  # as per_rank_pb's
    for e in doc["traceEvents"]:
        label = label_of(e.get("pid"))
        if label is None:
            continue
        ph = e.get("ph")
        r = ranks[label]
        if ph == "C":
            nums = [
                v for v in e.get("args", {}).values()
                if isinstance(v, (int, float, Decimal)) and not isinstance(v, bool)
            ]
            r["counters"] += len(nums)
            if e.get("name") == "memory allocated":
                memory[label].append((e["ts"], float(nums[0])))
        on_path = str(e.get("pid")).endswith(" critical path")
        if ph == "X" and on_path:
            critical[label] += 1
            crit_x.append((label, e["name"], int(round(Decimal(e["ts"]) * 1000)),
                           int(round(Decimal(e.get("dur", 0)) * 1000))))
        if ph == "X" and str(e.get("pid")).endswith(" what if (every rank typical)"):
            ideal[label] += 1
        if ph in ("s", "f") and on_path:
            crit_flows.append((ph, e.get("id"), label, int(round(Decimal(e["ts"]) * 1000))))
            continue
        if ph in ("X", "B") and "ts" in e:
            r["slices"] += 1
            ns = int(round(Decimal(e["ts"]) * 1000))
            r["first_ts"] = min(r.get("first_ts", ns), ns)
            r["last_ts"] = max(r.get("last_ts", ns), ns)
            slices[begin_key(label, e.get("name", ""), ns, json_args(e))] += 1
            if ph == "X":
                dur = max(int(round(Decimal(e.get("dur", 0)) * 1000)), 0)
                slices[("end", label, ns + dur)] += 1
        elif ph == "E" and "ts" in e:
            slices[("end", label, int(round(Decimal(e["ts"]) * 1000)))] += 1
        elif ph in ("i", "I") and "ts" in e:
            r["instants"] += 1
        elif ph == "s":
            starts[label].add((e.get("cat"), e.get("id")))
        elif ph == "f":
            finishes[label].add((e.get("cat"), e.get("id")))
    for label in ranks:
        ranks[label]["flows"] = len(starts[label])
        ranks[label]["flow_ends"] = len(finishes[label])
    order = [r["label"] for r in doc.get("ranks", []) if not r.get("unreadable")]
    return slices, {
        "per_rank": {k: dict(v) for k, v in ranks.items()},
        "rank_order": order,
        "memory": sorted([v for _, v in sorted(m)] for m in memory.values()),
        "critical": dict(critical),
        "ideal": dict(ideal),
        "critical_pairs": json_pairs(crit_x, crit_flows),
    }


def json_pairs(xs, flows):
    """The JSON's critical-path flows as critical_summary's pairs: each `s`/`f` bound to the
    slice of its rank's critical-path process that holds its time, as a viewer binds it."""
    def holder(label, ts):
        for lab, name, start, dur in xs:
            if lab == label and start <= ts <= start + dur:
                return name
        return None
    begins, ends = {}, {}
    for ph, i, label, ts in flows:
        name = holder(label, ts)
        if name is not None:
            (begins if ph == "s" else ends)[i] = (label, name)
    return sorted(
        [begins[i][0], head(begins[i][1]), ends[i][0], head(ends[i][1])]
        for i in begins if i in ends
    )


# The args the .pftrace leaves out (src/merge/perfetto/encode.rs: Kineto's bookkeeping ids).
LEFT_OUT = {"Python id", "Python parent id", "Python module id", "Ev Idx"}


def json_args(e):
    """An event's scalar args as the .pftrace must hold them: `debug.<key>`, numbers as int
    or float, strings, booleans (arrays, objects and nulls are not written)."""
    out = {}
    args = e.get("args")
    if not isinstance(args, dict):
        return out
    for k, v in args.items():
        if k in LEFT_OUT or v is None or isinstance(v, (list, dict)):
            continue
        out["debug." + k] = float(v) if isinstance(v, Decimal) else v
    return out


def main():
    pf, js = sys.argv[1], sys.argv[2]
    pf_out, pf_slices = per_rank_pb(decode(pf))
    js_slices, js_out = per_rank_json(js)
    only_pf = pf_slices - js_slices
    only_js = js_slices - pf_slices
    # Every slice begin of the JSON merge, to the ns, with its name and args, and every end,
    # and no other.
    pf_out["slices_compared"] = sum(js_slices.values())
    pf_out["slice_mismatches"] = sum(only_pf.values()) + sum(only_js.values())
    pf_out["mismatch_examples"] = {
        "only_pftrace": [list(map(str, k)) for k in list(only_pf)[:3]],
        "only_json": [list(map(str, k)) for k in list(only_js)[:3]],
    }
    out = {
        "pftrace": pf_out,
        "json": js_out,
        "raw_memory": raw_memory(sys.argv[3:]),
    }
    json.dump(out, sys.stdout, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
