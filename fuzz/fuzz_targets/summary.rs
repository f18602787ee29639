//! The saved-summary loader (`analyze::summary::from_json_str`) on arbitrary text.
//!
//! Properties: no panic, whatever the text (bad JSON, wrong kind or version, malformed or
//! out-of-range fields are `Err`); a summary it accepts serializes again (`to_json`) and that
//! text loads again.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use rankprof::analyze::summary::{from_json_str, to_json};

fuzz_target!(|text: &str| {
    if let Ok(s) = from_json_str(text, Path::new("fuzz.json")) {
        let again = to_json(&s).expect("an accepted summary serializes");
        if let Err(e) = from_json_str(&again, Path::new("again.json")) {
            panic!("a written summary does not load again: {e:#}\n{again}");
        }
    }
});
