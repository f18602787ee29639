//! `parse_name` on arbitrary UTF-8 file names.
//!
//! Properties: no panic; when a name yields a rank identity, its `label()` is non-empty and
//! parses back with `from_label()` to the same identity, every parallel dimension present
//! round-tripping. By design the label shows the global rank only when no parallel dimension
//! (TP, DP, PP, EP, DCP) is present (vLLM's `rank` is implied by them), and an identity with
//! nothing at all is `RANK00`: the expected identity is adjusted for those two rules.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rankprof::trace::discover::names::parse_name;
use rankprof::trace::RankId;

fuzz_target!(|name: &str| {
    if let Some(p) = parse_name(name) {
        let label = p.id.label();
        if p.id != RankId::default() {
            assert!(!label.is_empty(), "{name:?}: empty label for {:?}", p.id);
        }
        let back = RankId::from_label(&label);
        let mut want = p.id.clone();
        let parallel = [want.tp, want.dp, want.pp, want.ep, want.dcp];
        if parallel.iter().any(Option::is_some) {
            want.rank = None;
        } else if want.rank.is_none() {
            want.rank = Some(0);
        }
        assert_eq!(back, want, "{name:?}: label {label:?} does not round-trip");
        let _ = (p.id.sort_key(), p.id.sort_index_base());
    }
});
