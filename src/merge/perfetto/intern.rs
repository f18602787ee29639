//! The strings a rank's packets refer to by number (Perfetto's `InternedData`): event names,
//! categories, debug-annotation names and string values, each defined once per sequence, in
//! the first packet that uses it. String values stop being interned past [`MAX_VALUES`]
//! distinct ones (they are written in full after that), so the tables stay bounded.

use rustc_hash::FxHashMap;

use super::fields::interned as f;
use crate::trace::read::escape;
use crate::trace::write::protobuf as pb;

/// Which table a string goes to (its field in `InternedData`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Table {
    Category = f::EVENT_CATEGORIES as isize,
    Name = f::EVENT_NAMES as isize,
    Annotation = f::DEBUG_ANNOTATION_NAMES as isize,
    StringValue = f::DEBUG_ANNOTATION_STRING_VALUES as isize,
}

/// Distinct annotation string values interned per rank, at most (about 10 MB of table).
pub(super) const MAX_VALUES: usize = 100_000;

/// One rank's interned strings and the definitions not yet written.
#[derive(Default)]
pub(super) struct Interner {
    /// Keyed by the text as written in the input (escapes undecoded), per table.
    tables: [FxHashMap<Box<[u8]>, u64>; 4],
    /// `InternedData`'s body for the next packet: the definitions made since the last one.
    pending: Vec<u8>,
}

impl Interner {
    /// The iid of `raw` (JSON string content, escapes as written) in `table`, defined now
    /// when new.
    pub(super) fn iid(&mut self, table: Table, raw: &[u8]) -> u64 {
        let slot = slot(table);
        if let Some(&iid) = self.tables[slot].get(raw) {
            return iid;
        }
        let iid = self.tables[slot].len() as u64 + 1;
        self.tables[slot].insert(raw.into(), iid);
        let text = decoded(raw);
        pb::message(&mut self.pending, table as u32, |m| {
            pb::uint(m, f::IID, iid);
            pb::bytes(m, f::NAME, text.as_bytes());
        });
        iid
    }

    /// An annotation string value's iid, or `None` when [`MAX_VALUES`] are interned and it
    /// is not one of them (written in full then).
    pub(super) fn value_iid(&mut self, raw: &[u8]) -> Option<u64> {
        let table = &self.tables[slot(Table::StringValue)];
        if table.len() >= MAX_VALUES && !table.contains_key(raw) {
            return None;
        }
        Some(self.iid(Table::StringValue, raw))
    }

    /// The definitions not yet written, as an `InternedData` body (empty: none); taken.
    pub(super) fn take_pending(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.pending)
    }

    /// Gives back a buffer [`Interner::take_pending`] took, emptied, to be reused.
    pub(super) fn give_back(&mut self, mut buf: Vec<u8>) {
        if self.pending.is_empty() {
            buf.clear();
            self.pending = buf;
        }
    }
}

fn slot(table: Table) -> usize {
    match table {
        Table::Category => 0,
        Table::Name => 1,
        Table::Annotation => 2,
        Table::StringValue => 3,
    }
}

/// JSON string content decoded (escapes, if any); invalid UTF-8 replaced.
pub(super) fn decoded(raw: &[u8]) -> std::borrow::Cow<'_, str> {
    let s = String::from_utf8_lossy(raw);
    if s.contains('\\') {
        std::borrow::Cow::Owned(escape::unescape(&s))
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_string_is_defined_once_per_table() {
        let mut i = Interner::default();
        assert_eq!(i.iid(Table::Name, b"aten::mm"), 1);
        assert_eq!(i.iid(Table::Name, b"k"), 2);
        assert_eq!(i.iid(Table::Category, b"k"), 1);
        let first = i.take_pending();
        assert!(!first.is_empty());
        assert_eq!(i.iid(Table::Name, b"aten::mm"), 1);
        assert!(i.take_pending().is_empty());
        assert_eq!(i.iid(Table::Annotation, br"a\\b"), 1);
        let p = i.take_pending();
        // DebugAnnotationName { iid: 1, name: "a\b" } in field 3.
        assert_eq!(p, [0x1a, 0x07, 0x08, 0x01, 0x12, 0x03, b'a', b'\\', b'b']);
    }

    /// String values are interned up to the cap; past it, only those already in.
    #[test]
    fn string_values_stop_at_the_cap() {
        let mut i = Interner::default();
        for n in 0..MAX_VALUES {
            assert_eq!(i.value_iid(n.to_string().as_bytes()), Some(n as u64 + 1));
        }
        assert_eq!(i.value_iid(b"new"), None);
        assert_eq!(i.value_iid(b"7"), Some(8));
        // InternedString { iid: 1, str: "0" } in field 29 first.
        assert_eq!(
            &i.take_pending()[..8],
            [0xea, 0x01, 0x05, 0x08, 0x01, 0x12, 0x01, b'0']
        );
    }
}
