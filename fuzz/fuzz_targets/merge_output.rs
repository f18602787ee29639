//! Merging rank files built from the fuzz bytes.
//!
//! The first byte picks one or two ranks and where the rest is split; each part is written as
//! a plain-JSON SGLang rank file (`f-TP-<n>.trace.json`) in a fresh temporary directory, the
//! directory is gathered and merged with the default options.
//!
//! Property: whenever a merged output is written, it is valid JSON (gunzipped, checked with
//! serde_json) and its top level is an object with a `traceEvents` array.
#![no_main]

use std::io::Read;

use libfuzzer_sys::fuzz_target;
use rankprof::merge::{gather, merge_group, MergeOptions};
use rankprof_fuzz::check_json;

fuzz_target!(|data: &[u8]| {
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    let parts: Vec<&[u8]> = if first & 1 == 0 {
        vec![rest]
    } else {
        let cut = rest.len() * usize::from(first >> 1) / 127;
        let (a, b) = rest.split_at(cut.min(rest.len()));
        vec![a, b]
    };
    let dir = tempfile::tempdir().unwrap();
    let ranks = dir.path().join("ranks");
    std::fs::create_dir(&ranks).unwrap();
    for (i, p) in parts.iter().enumerate() {
        std::fs::write(ranks.join(format!("f-TP-{i}.trace.json")), p).unwrap();
    }
    let Ok(d) = gather(Some(&ranks), &[], false, None, None) else {
        return;
    };
    for (i, g) in d.groups.iter().enumerate() {
        let out = dir.path().join(format!("m{i}.trace.json.gz"));
        let Ok(res) = merge_group(g, &out, &MergeOptions::default()) else {
            continue;
        };
        let Some(path) = res.output else {
            continue;
        };
        let raw = std::fs::read(&path).unwrap();
        let mut text = Vec::new();
        flate2::read::MultiGzDecoder::new(&raw[..])
            .read_to_end(&mut text)
            .unwrap_or_else(|e| panic!("merged output is not gzip: {e}"));
        if let Err(e) = check_json(&text) {
            panic!(
                "merged output is not JSON: {e}\n{}",
                String::from_utf8_lossy(&text[..text.len().min(4000)])
            );
        }
        let v: serde_json::Value = match serde_json::from_slice(&text) {
            Ok(v) => v,
            // Lone surrogate escapes or deep nesting: grammatical, checked above.
            Err(_) => continue,
        };
        assert!(
            v.get("traceEvents").is_some_and(|e| e.is_array()),
            "merged output has no traceEvents array"
        );
    }
});
