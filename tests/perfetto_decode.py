#!/usr/bin/env python3
"""Decodes a rankprof `.pftrace` with Perfetto's own protos (the `perfetto` PyPI package's
`perfetto_trace_pb2`) and, independently, the JSON merge of the same ranks; prints what it
counts as one JSON object (tests/merge_perfetto.rs compares the two sides).

Usage: perfetto_decode.py MERGED.pftrace MERGED.trace.json.gz

Protobuf side, per rank (a rank is the track under the root, and every track below it):
slices (TYPE_SLICE_BEGIN), instants, counter values, flows begun (distinct ids in
`flow_ids`) and ended (distinct ids in `terminating_flow_ids`); ends without a begin on
their track. Whole file: interned iids used but not defined earlier on their sequence (the
state cleared by SEQ_INCREMENTAL_STATE_CLEARED), events on tracks never described, the rank
tracks in `sibling_order_rank` order and whether their parent orders its children
explicitly, timestamps going out of a rank's span.

JSON side, per rank (the label in front of each `pid`): `X` and `B` events (slices), `i`/`I`
(instants), distinct (cat, id) of `s` and of `f` flow events, and the ranks in the order of
the document's `ranks` list.
"""

import gzip
import json
import sys
from collections import defaultdict

from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

TE = pb.TrackEvent
EXPLICIT = pb.TrackDescriptor.ChildTracksOrdering.Value("EXPLICIT")
CLEARED = pb.TracePacket.SequenceFlags.Value("SEQ_INCREMENTAL_STATE_CLEARED")


def read_trace(path):
    trace = pb.Trace()
    with open(path, "rb") as f:
        trace.ParseFromString(f.read())
    return trace


class Side:
    def __init__(self):
        self.tracks = {}  # uuid -> TrackDescriptor
        self.interned = {}  # seq -> {table: set(iid)}
        self.undefined_iids = 0
        self.undescribed_tracks = set()
        self.events = []  # (seq, track_uuid, TrackEvent)


def fresh():
    return {"names": set(), "cats": set(), "ann": set(), "str": set()}


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
    state["names"].update(e.iid for e in d.event_names)
    state["cats"].update(e.iid for e in d.event_categories)
    state["ann"].update(e.iid for e in d.debug_annotation_names)
    state["str"].update(e.iid for e in d.debug_annotation_string_values)
    return state


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


def decode(path):
    side = Side()
    for p in read_trace(path).packet:
        seq = p.trusted_packet_sequence_id
        if p.HasField("track_descriptor"):
            side.tracks[p.track_descriptor.uuid] = p.track_descriptor
        state = intern(side, seq, p)
        if p.HasField("track_event"):
            check_iids(side, state, p.track_event)
            side.events.append((p.timestamp, p.track_event))
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
    for ts, ev in sorted(side.events, key=lambda x: x[0]):
        label = rank_of(side, ev.track_uuid, root)
        if label is None:
            side.undescribed_tracks.add(ev.track_uuid)
            continue
        r = ranks[label]
        if ev.type == TE.TYPE_SLICE_BEGIN:
            r["slices"] += 1
            depth[ev.track_uuid] += 1
        elif ev.type == TE.TYPE_SLICE_END:
            if depth[ev.track_uuid] == 0:
                unmatched_ends += 1
            else:
                depth[ev.track_uuid] -= 1
        elif ev.type == TE.TYPE_INSTANT:
            r["instants"] += 1
        elif ev.type == TE.TYPE_COUNTER:
            r["counters"] += 1
        flows[label].update(ev.flow_ids)
        ends[label].update(ev.terminating_flow_ids)
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
        "rank_order": [t.name for t in order],
        "root_explicit": root is not None and side.tracks[root].child_ordering == EXPLICIT,
        "roots": len(roots),
        "ranks_explicit": all(t.child_ordering == EXPLICIT for t in order),
        "unmatched_ends": unmatched_ends,
        "unclosed": sum(depth.values()),
        "flow_ids_shared_by_ranks": len(shared),
        "undefined_iids": side.undefined_iids,
        "undescribed_tracks": len(side.undescribed_tracks),
        "tracks": len(side.tracks),
        "events": len(side.events),
    }


def label_of(pid):
    if isinstance(pid, str) and pid.startswith("[") and "]" in pid:
        return pid[: pid.index("]") + 1]
    return None


def per_rank_json(path):
    with gzip.open(path, "rt") as f:
        doc = json.load(f)
    ranks = defaultdict(lambda: defaultdict(int))
    starts = defaultdict(set)
    finishes = defaultdict(set)
    for e in doc["traceEvents"]:
        label = label_of(e.get("pid"))
        if label is None:
            continue
        ph = e.get("ph")
        r = ranks[label]
        if ph in ("X", "B") and "ts" in e:
            r["slices"] += 1
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
    return {"per_rank": {k: dict(v) for k, v in ranks.items()}, "rank_order": order}


def main():
    pf, js = sys.argv[1], sys.argv[2]
    out = {"pftrace": per_rank_pb(decode(pf)), "json": per_rank_json(js)}
    json.dump(out, sys.stdout, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
