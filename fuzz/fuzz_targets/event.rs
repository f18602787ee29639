//! The event view and the JSON scanner on arbitrary object bytes.
//!
//! Properties:
//! 1. Scanning and every accessor of an accepted event run without panic.
//! 2. Any object `scan_event` accepts is, once `escape_ctl` has escaped its raw control bytes
//!    (what writers do), valid JSON for serde_json; so is every string `scan_string` accepts
//!    (when it is UTF-8), escaped the same way.
//! 3. `write_string` of any string is a JSON string literal that serde_json reads back equal.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rankprof::trace::event::{each_field, find_in_object, scan_event};
use rankprof::trace::json;
use rankprof_fuzz::check_json;

fuzz_target!(|data: &[u8]| {
    let mut fields = Vec::new();
    if let Ok(ev) = scan_event(data, &mut fields) {
        let _ = (
            ev.name.get(),
            ev.cat.get(),
            ev.name.is_empty(),
            ev.cat.eq_str("kernel"),
        );
        let _ = (ev.pid.as_int(), ev.tid.as_int(), ev.id.as_int(), ev.end());
        for key in ["device", "stream", "correlation", "name", ""] {
            if let Some(v) = ev.arg(key) {
                let _ = (
                    v.as_i64(),
                    v.as_f64(),
                    v.as_str().map(|s| s.get().into_owned()),
                );
            }
        }
        if let Some(args) = ev.args {
            each_field(args, |_, _, _| true);
            let _ = find_in_object(args, "stream");
        }
        let mut out = Vec::new();
        json::escape_ctl(ev.raw.as_bytes(), &mut out);
        if let Err(e) = check_json(&out) {
            panic!(
                "accepted event is not JSON once escaped: {e}\n{}",
                String::from_utf8_lossy(&out)
            );
        }
    }
    if data.first() == Some(&b'"') {
        if let Ok((end, escaped)) = json::scan_string(data, 0) {
            if let Ok(s) = std::str::from_utf8(&data[..end]) {
                let mut out = Vec::new();
                json::escape_ctl(s.as_bytes(), &mut out);
                if let Err(e) = check_json(&out) {
                    panic!("accepted string is not JSON once escaped: {e}: {s:?}");
                }
                if escaped {
                    let _ = json::unescape(&s[1..s.len() - 1]);
                }
            }
        }
    }
    if let Ok(s) = std::str::from_utf8(data) {
        let mut out = Vec::new();
        json::write_string(&mut out, s);
        let back: String = serde_json::from_slice(&out)
            .unwrap_or_else(|e| panic!("write_string({s:?}) is not JSON: {e}"));
        assert_eq!(back, s);
    }
});
