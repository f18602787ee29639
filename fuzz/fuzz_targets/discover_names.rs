//! `parse_name` on arbitrary UTF-8 file names.
//!
//! Properties: no panic; when a name yields a rank identity, its `label()` parses back with
//! `from_label()` to the same identity (every dimension present round-trips), and the label
//! is non-empty.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rankprof::trace::discover::{parse_name, RankId};

fuzz_target!(|name: &str| {
    if let Some(p) = parse_name(name) {
        let label = p.id.label();
        if p.id != RankId::default() {
            assert!(!label.is_empty(), "{name:?}: empty label for {:?}", p.id);
        }
        let back = RankId::from_label(&label);
        assert_eq!(back, p.id, "{name:?}: label {label:?} does not round-trip");
        let _ = (p.id.sort_key(), p.id.sort_index_base());
    }
});
