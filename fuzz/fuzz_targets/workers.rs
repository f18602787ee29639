//! The router `/workers` answer parser (`capture::workers::parse_workers_answer`) and the
//! de-duplication that follows it, on arbitrary text.
//!
//! Properties: no panic; every worker url returned is non-empty; after `dedupe`, every url is
//! non-empty and unique.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rankprof::capture::workers::{dedupe, parse_workers_answer};

fuzz_target!(|body: &str| {
    let Ok(listed) = parse_workers_answer(body) else {
        return;
    };
    for l in &listed {
        assert!(!l.url.trim().is_empty(), "empty worker url from {body:?}");
    }
    if let Ok((workers, _notes)) = dedupe(listed) {
        let mut seen = std::collections::HashSet::new();
        for w in &workers {
            assert!(!w.url.is_empty(), "empty url after dedupe from {body:?}");
            assert!(
                seen.insert(w.url.clone()),
                "duplicate url {} from {body:?}",
                w.url
            );
        }
    }
});
