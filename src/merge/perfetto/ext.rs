//! A rank's numeric and boolean `args` as one `TrackEvent` extension message in place of a
//! `DebugAnnotation` each: the field tag (a byte) and the value, where an annotation took
//! 4 bytes more (its own framing and name iid). Perfetto's documented way to attach typed
//! fields to `TrackEvent` (`docs/instrumentation/extensions.md`): the trace carries the
//! schema in an `ExtensionDescriptor` packet (a `FileDescriptorSet`), and trace_processor
//! turns every field of an extension into an arg keyed by the field names
//! (`ProtoToArgsParser`: `<extension field name>.<field name>`), so an extension field named
//! `debug` whose message has a field named `External id` gives the arg `debug.External id`,
//! the key the debug annotation gave.
//!
//! Each rank has its own message type (`rankprof.r<index>.Args`, its fields the rank's arg
//! keys, Kineto's frequent ones on fields 1-15 ([`KNOWN`]: a tag of one byte) and the others
//! from 16 on in the order first met, each with the kind of its first value) and its own extension
//! field on `TrackEvent` ([`EXT_FIRST`] + index, in the registry's unallocated range), so the
//! ranks, encoded in parallel, never have to agree on numbers. A value of another kind than
//! its key's field, keys past [`MAX_FIELDS`], and ranks past [`EXT_LAST`] stay debug
//! annotations. Strings stay debug annotations (their values are interned).

use rustc_hash::FxHashMap;

use super::intern::decoded;
use crate::trace::write::protobuf as pb;

/// The first and last `TrackEvent` extension field numbers used (one per rank): the
/// "unallocated" range of Perfetto's `protos/perfetto/trace/extensions.json`, clear of the
/// Chromium (1000-1999), Android (2000-2999, 5000-8999), GPU (3000-3099) and test
/// (9000-9999) allocations trace_processor may know.
pub(super) const EXT_FIRST: u32 = 3100;
pub(super) const EXT_LAST: u32 = 4999;

/// Field numbers of a rank's message: 1-2047 (a tag of one or two bytes).
pub(super) const MAX_FIELDS: u32 = 2047;

/// Kineto's most frequent numeric arg keys, most frequent first (counted on the HTA A100
/// trace: `External id` on every op and kernel, …), given the fields 1-15, whose tag is one
/// byte; any other key takes the next field from 16 on (a tag of two bytes), in the order
/// first met. A field is declared only once used, with the kind of its first value.
const KNOWN: [&[u8]; 15] = [
    b"External id",
    b"correlation",
    b"Record function id",
    b"cbid",
    b"Sequence number",
    b"Fwd thread id",
    b"queued",
    b"device",
    b"context",
    b"stream",
    b"registers per thread",
    b"shared memory",
    b"blocks per SM",
    b"warps per SM",
    b"est. achieved occupancy %",
];

/// `FieldDescriptorProto.Type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    Double = 1,
    Int = 3,
    Bool = 8,
}

/// `descriptor.proto`'s field numbers.
mod d {
    pub(super) const SET_FILE: u32 = 1;
    pub(super) const FILE_NAME: u32 = 1;
    pub(super) const FILE_PACKAGE: u32 = 2;
    pub(super) const FILE_MESSAGE_TYPE: u32 = 4;
    pub(super) const FILE_EXTENSION: u32 = 7;
    pub(super) const MESSAGE_NAME: u32 = 1;
    pub(super) const MESSAGE_FIELD: u32 = 2;
    pub(super) const FIELD_NAME: u32 = 1;
    pub(super) const FIELD_EXTENDEE: u32 = 2;
    pub(super) const FIELD_NUMBER: u32 = 3;
    pub(super) const FIELD_LABEL: u32 = 4;
    pub(super) const FIELD_TYPE: u32 = 5;
    pub(super) const FIELD_TYPE_NAME: u32 = 6;
    pub(super) const LABEL_OPTIONAL: u64 = 1;
    pub(super) const TYPE_MESSAGE: u64 = 11;
    /// `TracePacket.extension_descriptor`, and `ExtensionDescriptor.extension_set`.
    pub(super) const PACKET_EXTENSION_DESCRIPTOR: u32 = 72;
    pub(super) const EXTENSION_SET: u32 = 1;
}

/// The arg keys of one rank's extension message.
pub(super) struct ArgFields {
    index: usize,
    /// The extension's field number on `TrackEvent`; `None`: this rank uses none.
    pub(super) ext: Option<u32>,
    /// Keyed by the key as written in the input (escapes undecoded).
    fields: FxHashMap<Box<[u8]>, (u32, Kind)>,
    /// In the order made: the field number, decoded name and kind.
    order: Vec<(u32, String, Kind)>,
    /// The next field number for a key not in [`KNOWN`].
    next: u32,
}

impl ArgFields {
    /// The fields of the rank at `index`.
    pub(super) fn new(index: usize) -> Self {
        let ext = u32::try_from(index)
            .ok()
            .and_then(|i| EXT_FIRST.checked_add(i))
            .filter(|&f| f <= EXT_LAST);
        ArgFields {
            index,
            ext,
            fields: FxHashMap::default(),
            order: Vec::new(),
            next: KNOWN.len() as u32 + 1,
        }
    }

    /// The field of key `raw` for a value of `kind`: made when the key is new (and there is
    /// room); `None` when the key's field is of another kind, or none can be made.
    pub(super) fn field(&mut self, raw: &[u8], kind: Kind) -> Option<u32> {
        self.ext?;
        if let Some(&(f, k)) = self.fields.get(raw) {
            return (k == kind).then_some(f);
        }
        let f = match KNOWN.iter().position(|&k| k == raw) {
            Some(i) => i as u32 + 1,
            None if self.next <= MAX_FIELDS => {
                self.next += 1;
                self.next - 1
            }
            None => return None,
        };
        self.fields.insert(raw.into(), (f, kind));
        self.order.push((f, decoded(raw).into_owned(), kind));
        Some(f)
    }

    /// The `ExtensionDescriptor` packet declaring the rank's message and extension, on
    /// sequence `seq`; nothing when no field was made.
    pub(super) fn descriptor(&self, seq: u64, out: &mut Vec<u8>) {
        let Some(ext) = self.ext.filter(|_| !self.order.is_empty()) else {
            return;
        };
        let package = format!("rankprof.r{}", self.index);
        pb::message(out, super::fields::packet::PACKET, |p| {
            pb::uint(p, super::fields::packet::SEQUENCE_ID, seq);
            pb::message(p, d::PACKET_EXTENSION_DESCRIPTOR, |e| {
                pb::message(e, d::EXTENSION_SET, |s| {
                    pb::message(s, d::SET_FILE, |f| {
                        pb::bytes(f, d::FILE_NAME, format!("{package}.proto").as_bytes());
                        pb::bytes(f, d::FILE_PACKAGE, package.as_bytes());
                        pb::message(f, d::FILE_MESSAGE_TYPE, |m| {
                            pb::bytes(m, d::MESSAGE_NAME, b"Args");
                            for (number, name, kind) in &self.order {
                                pb::message(m, d::MESSAGE_FIELD, |x| {
                                    pb::bytes(x, d::FIELD_NAME, name.as_bytes());
                                    pb::uint(x, d::FIELD_NUMBER, u64::from(*number));
                                    pb::uint(x, d::FIELD_LABEL, d::LABEL_OPTIONAL);
                                    pb::uint(x, d::FIELD_TYPE, *kind as u64);
                                });
                            }
                        });
                        pb::message(f, d::FILE_EXTENSION, |x| {
                            pb::bytes(x, d::FIELD_NAME, b"debug");
                            pb::bytes(x, d::FIELD_EXTENDEE, b".perfetto.protos.TrackEvent");
                            pb::uint(x, d::FIELD_NUMBER, u64::from(ext));
                            pb::uint(x, d::FIELD_LABEL, d::LABEL_OPTIONAL);
                            pb::uint(x, d::FIELD_TYPE, d::TYPE_MESSAGE);
                            pb::bytes(x, d::FIELD_TYPE_NAME, format!(".{package}.Args").as_bytes());
                        });
                    });
                });
            });
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_keeps_its_first_kind() {
        let mut a = ArgFields::new(0);
        assert_eq!(a.ext, Some(EXT_FIRST));
        assert_eq!(a.field(b"x", Kind::Double), Some(16));
        assert_eq!(a.field(b"correlation", Kind::Int), Some(2));
        assert_eq!(a.field(b"External id", Kind::Int), Some(1));
        assert_eq!(a.field(b"y", Kind::Int), Some(17));
        assert_eq!(a.field(b"External id", Kind::Int), Some(1));
        assert_eq!(a.field(b"x", Kind::Int), None);
        let mut out = Vec::new();
        a.descriptor(2, &mut out);
        assert!(!out.is_empty());
        let past = ArgFields::new((EXT_LAST - EXT_FIRST + 1) as usize);
        assert_eq!(past.ext, None);
    }
}
