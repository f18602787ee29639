//! The merge's Perfetto-native output (`-o merged.pftrace`, `--trace-format perfetto`): a
//! protobuf `Trace` of `TracePacket`s, which Perfetto reads natively — about a tenth of the
//! Chrome JSON's size and its parse, with the ranks in rank order (its JSON import ignores
//! `process_sort_index`).
//!
//! The same passes, filters and clock alignment as the JSON merge ([`super::pass`]); only the
//! encoding of each rank's piece differs ([`encode::RankEncoder`] in place of
//! [`super::rewrite`]). Every track's events are their own packet sequences
//! (`trusted_packet_sequence_id` a number of the rank's, small for the first started, one
//! per run of a track's events in time order: [`encode`]), each with its own interned strings, cleared on its
//! first packet, and its own incremental clock, so the ranks' pieces, encoded in parallel,
//! concatenate as they are: a `Trace` is nothing but its repeated field 1. The file is the
//! merge's root track, then per rank its `ExtensionDescriptor` (the schema of its numeric
//! `args`, [`ext`]), its track descriptors ([`tracks`]: rank → process → thread / GPU
//! stream, and counters) and its events, written through a temporary file renamed into
//! place. A `.pftrace.gz`'s ranks are compressed each on its own thread, into pieces of one
//! deflate stream, as the JSON merge's are ([`crate::trace::write::writer`]).
//!
//! The wire encoding is [`crate::trace::write::protobuf`], hand-written: no build-time
//! `protoc`, and no message structs between the event and its bytes.

pub(crate) mod encode;
mod ext;
pub(crate) mod extras;
mod intern;
pub(crate) mod tracks;

use std::io::{self, Write};
use std::path::Path;

use crate::trace::write::writer::{write_atomic, write_gzip, Piece, PieceData, SmallPieces};

pub(crate) use encode::{RankEncoder, Stats};

/// Field numbers and enum values, from Perfetto's protos (`protos/perfetto/trace/…`).
pub(super) mod fields {
    /// `trace.proto`: `Trace.packet`, and `trace_packet.proto`'s `TracePacket`.
    pub(crate) mod packet {
        pub(crate) const PACKET: u32 = 1;
        pub(crate) const CLOCK_SNAPSHOT: u32 = 6;
        pub(crate) const TIMESTAMP: u32 = 8;
        pub(crate) const SEQUENCE_ID: u32 = 10;
        pub(crate) const TRACK_EVENT: u32 = 11;
        pub(crate) const INTERNED_DATA: u32 = 12;
        pub(crate) const SEQUENCE_FLAGS: u32 = 13;
        pub(crate) const TIMESTAMP_CLOCK_ID: u32 = 58;
        pub(crate) const TRACE_PACKET_DEFAULTS: u32 = 59;
        pub(crate) const TRACK_DESCRIPTOR: u32 = 60;
        pub(crate) const SEQ_INCREMENTAL_STATE_CLEARED: u64 = 1;
        pub(crate) const SEQ_NEEDS_INCREMENTAL_STATE: u64 = 2;
    }
    /// `trace_packet_defaults.proto` (`TracePacketDefaults`, and `TrackEventDefaults` in
    /// `track_event/track_event.proto`), `clock_snapshot.proto` and `builtin_clock.proto`.
    pub(crate) mod clock {
        pub(crate) const DEFAULTS_CLOCK_ID: u32 = 58;
        pub(crate) const DEFAULTS_TRACK_EVENT: u32 = 11;
        pub(crate) const TRACK_EVENT_DEFAULTS_TRACK_UUID: u32 = 11;
        pub(crate) const SNAPSHOT_CLOCKS: u32 = 1;
        pub(crate) const CLOCK_ID: u32 = 1;
        pub(crate) const CLOCK_TIMESTAMP: u32 = 2;
        pub(crate) const CLOCK_IS_INCREMENTAL: u32 = 3;
        /// `BUILTIN_CLOCK_BOOTTIME`: the trace clock, which packets without a clock id are on.
        pub(crate) const BOOTTIME: u64 = 6;
        /// The first sequence-scoped clock id (64-127 belong to the sequence defining them):
        /// each track's sequence's incremental clock.
        pub(crate) const RANK_CLOCK: u64 = 64;
    }
    /// `track_event/track_event.proto`.
    pub(crate) mod event {
        pub(crate) const CATEGORY_IIDS: u32 = 3;
        pub(crate) const DEBUG_ANNOTATIONS: u32 = 4;
        pub(crate) const TYPE: u32 = 9;
        pub(crate) const NAME_IID: u32 = 10;
        pub(crate) const TRACK_UUID: u32 = 11;
        pub(crate) const DOUBLE_COUNTER_VALUE: u32 = 44;
        /// `flow_ids_old` (`repeated uint64`, varints), read by trace_processor when an event
        /// has no `flow_ids` (47, `fixed64`): `MaybeParseTrackEventFlows` in
        /// `src/trace_processor/importers/proto/track_event_event_importer.h`. A rank's ids
        /// are small, a varint of 3 to 5 bytes where a `fixed64` takes 8.
        pub(crate) const FLOW_IDS_OLD: u32 = 36;
        /// `terminating_flow_ids_old` (`repeated uint64`), likewise in place of 48.
        pub(crate) const TERMINATING_FLOW_IDS_OLD: u32 = 42;
        /// `flow_ids` / `terminating_flow_ids` (`fixed64`): the critical path's (`extras.rs`).
        pub(crate) const FLOW_IDS: u32 = 47;
        pub(crate) const TERMINATING_FLOW_IDS: u32 = 48;
        pub(crate) const SLICE_BEGIN: u64 = 1;
        pub(crate) const SLICE_END: u64 = 2;
        pub(crate) const INSTANT: u64 = 3;
        pub(crate) const COUNTER: u64 = 4;
    }
    /// `track_event/debug_annotation.proto`.
    pub(crate) mod annotation {
        pub(crate) const NAME_IID: u32 = 1;
        pub(crate) const BOOL_VALUE: u32 = 2;
        pub(crate) const INT_VALUE: u32 = 4;
        pub(crate) const DOUBLE_VALUE: u32 = 5;
        pub(crate) const STRING_VALUE: u32 = 6;
        pub(crate) const STRING_VALUE_IID: u32 = 17;
    }
    /// `track_event/track_descriptor.proto`.
    pub(crate) mod descriptor {
        pub(crate) const UUID: u32 = 1;
        pub(crate) const NAME: u32 = 2;
        pub(crate) const PARENT_UUID: u32 = 5;
        pub(crate) const COUNTER: u32 = 8;
        pub(crate) const CHILD_ORDERING: u32 = 11;
        pub(crate) const SIBLING_ORDER_RANK: u32 = 12;
        /// `ChildTracksOrdering.EXPLICIT`.
        pub(crate) const EXPLICIT: u64 = 3;
    }
    /// `interned_data/interned_data.proto`, and the `EventName`/`EventCategory`/
    /// `DebugAnnotationName` entries (`iid` 1, `name` 2).
    pub(crate) mod interned {
        pub(crate) const EVENT_CATEGORIES: u32 = 1;
        pub(crate) const EVENT_NAMES: u32 = 2;
        pub(crate) const DEBUG_ANNOTATION_NAMES: u32 = 3;
        /// Of `InternedString` (`iid` 1, `str` 2).
        pub(crate) const DEBUG_ANNOTATION_STRING_VALUES: u32 = 29;
        pub(crate) const IID: u32 = 1;
        pub(crate) const NAME: u32 = 2;
    }
}

/// One rank's share of the file: its track descriptors and its events' piece (raw, or
/// compressed when the file is gzipped).
pub(crate) struct RankPart<'a> {
    pub(crate) head: &'a [u8],
    pub(crate) events: &'a Piece,
}

/// Writes the merged `.pftrace` to `out` atomically: the root track named `title`, then each
/// rank's part in order, then `tail` (the merge's extras, [`extras`]); gzip-compressed at
/// `gzip`'s level when given (`.pftrace.gz`: Perfetto's trace_processor, and so the UI,
/// recognises gzip and reads the protobuf inside), the ranks' events then already
/// compressed. Returns its uncompressed size.
pub(crate) fn write_file(
    out: &Path,
    title: &str,
    parts: &[RankPart<'_>],
    tail: &[u8],
    gzip: Option<u32>,
) -> io::Result<u64> {
    let mut root = Vec::new();
    tracks::describe(&mut root, 1, tracks::ROOT_UUID, 0, title, 0);
    match gzip {
        Some(level) => write_gzip(out, &gzip_pieces(level, &root, parts, tail)?),
        None => {
            let mut len = 0;
            write_atomic(out, |w| write_parts(w, &root, parts, tail).map(|n| len = n))?;
            Ok(len)
        }
    }
}

/// The gzipped file's pieces of one deflate stream, in order: the root, each rank's head
/// (compressed here) and events (compressed by its thread), and the tail, which ends it.
fn gzip_pieces(
    level: u32,
    root: &[u8],
    parts: &[RankPart<'_>],
    tail: &[u8],
) -> io::Result<Vec<Piece>> {
    let mut z = SmallPieces::new(level);
    let mut pieces = vec![z.piece(root, false)?];
    for p in parts {
        pieces.push(z.piece(p.head, false)?);
        pieces.push(p.events.clone());
    }
    pieces.push(z.piece(tail, true)?);
    Ok(pieces)
}

/// The file's bytes, in order, to `w`; how many.
fn write_parts(
    w: &mut impl Write,
    root: &[u8],
    parts: &[RankPart<'_>],
    tail: &[u8],
) -> io::Result<u64> {
    w.write_all(root)?;
    let mut len = root.len() as u64;
    for p in parts {
        w.write_all(p.head)?;
        len += p.head.len() as u64;
        len += match &p.events.data {
            PieceData::Bytes(b) => {
                w.write_all(b)?;
                b.len() as u64
            }
            PieceData::File(path) => io::copy(&mut std::fs::File::open(path)?, w)?,
        };
    }
    w.write_all(tail)?;
    Ok(len + tail.len() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::write::protobuf as pb;

    /// The root packet is `Trace.packet { trusted_packet_sequence_id: 1, track_descriptor {
    /// uuid: 1, name, child_ordering: EXPLICIT, sibling_order_rank: 0 } }`.
    #[test]
    fn root_packet_bytes() {
        let mut b = Vec::new();
        tracks::describe(&mut b, 1, tracks::ROOT_UUID, 0, "m", 0);
        let mut want = Vec::new();
        pb::message(&mut want, 1, |p| {
            p.extend_from_slice(&[0x50, 0x01]);
            p.extend_from_slice(&[0xe2, 0x03]);
            p.push(9);
            p.extend_from_slice(&[0x08, 0x01, 0x12, 0x01, b'm', 0x58, 0x03, 0x60, 0x00]);
        });
        assert_eq!(b, want);
    }
}
