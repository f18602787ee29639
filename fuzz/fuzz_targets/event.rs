//! The event view and the JSON scanner on arbitrary object bytes.
//!
//! Properties:
//! 1. Scanning and every accessor of an accepted event run without panic.
//! 2. Any object `scan_event` accepts is, once `escape_ctl` has escaped its raw control bytes
//!    (what writers do), valid JSON for serde_json; so is every string `scan_string` accepts
//!    (when it is UTF-8), escaped the same way.
//! 3. `write_string` of any string is a JSON string literal that serde_json reads back equal.
//! 4. The separator memo changes nothing: the input split at its first 0xFF byte, the first
//!    part (or a Kineto event when there is none) scanned to prime a memo, the second part
//!    scans to the same end or error and the same fields with that memo as without, whether
//!    nested values are validated or skimmed.
//! 5. The `args` lookups through the memo answer as `find_in_object`: one key at a time
//!    (`find_in_object_memo`) and several in one walk (`find_all_in_object_memo`), with a memo
//!    kept across runs, so layouts seen before hit it; so do the searched lookups
//!    (`find_in_args`, `find_all_in_args`) on the validated `args` of an accepted event, and
//!    the integer lookup (`find_int_in_args`) answers as `find_in_args` read by `as_i64`.
//! 6. The skim's kernels agree: the one this CPU runs (AVX2 where detected) classifies every
//!    64-byte block as the scalar definition does, and the skim with it answers as with the
//!    baseline kernel (end, `Incomplete` or decline) from every `{` or `[` of the input.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rankprof::trace::read::args::{
    each_field, find_all_in_args, find_all_in_object_memo, find_in_args, find_in_object,
    find_in_object_memo, find_int_in_args, ArgKey,
};
use rankprof::trace::read::escape;
use rankprof::trace::read::event::scan_event;
use rankprof::trace::read::json;
use rankprof::trace::read::memo::Memo;
use rankprof::trace::read::object;
use rankprof::trace::read::skim;
use rankprof_fuzz::check_json;

const KINETO: &[u8] = b"{\n    \"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, \"tid\": 7,\n    \"ts\": 1.5, \"dur\": 2.0,\n    \"args\": {\"correlation\": 3}\n  }";

fn memo_changes_nothing(data: &[u8]) {
    let (prime, rest) = match data.iter().position(|&c| c == 0xFF) {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (KINETO, data),
    };
    if rest.first() != Some(&b'{') {
        return;
    }
    let key = |f: &json::Field| (f.key, f.val, format!("{:?}", f.kind), f.ctl);
    for skim in [false, true] {
        let mut memo = Memo::default();
        let (mut fa, mut fb) = (Vec::new(), Vec::new());
        // Prime with every object start in the first part, as a reader would meet them.
        for at in (0..prime.len()).filter(|&i| prime[i] == b'{') {
            let _ = object::scan_object_memo(prime, at, &mut fa, skim, &mut memo);
        }
        let plain = if skim {
            object::scan_object_skim(rest, 0, &mut fa)
        } else {
            object::scan_object(rest, 0, &mut fa)
        };
        let memod = object::scan_object_memo(rest, 0, &mut fb, skim, &mut memo);
        assert_eq!(plain, memod, "skim {skim}");
        if plain.is_ok() {
            let a: Vec<_> = fa.iter().map(key).collect();
            let b: Vec<_> = fb.iter().map(key).collect();
            assert_eq!(a, b, "skim {skim}");
        }
    }
}

thread_local! {
    static ARGS_MEMO: std::cell::RefCell<Memo> = std::cell::RefCell::new(Memo::default());
}

/// Property 5.
fn args_lookups_agree(args: &str) {
    const KEYS: [&str; 5] = ["correlation", "stream", "In msg nelems", "name", ""];
    let canon = |v: Option<rankprof::trace::Val<'_>>| {
        v.map(|v| (format!("{:?}", v.kind), v.text.to_string()))
    };
    ARGS_MEMO.with(|m| {
        let mut memo = m.borrow_mut();
        let mut all = [None; 5];
        find_all_in_object_memo(args, &KEYS, &mut memo, b'l', &mut all);
        let searched = KEYS.map(ArgKey::new);
        let mut found = [None; 5];
        find_all_in_args(args, &searched, &mut memo, b'l', &mut found);
        for (k, key) in KEYS.iter().enumerate() {
            let plain = canon(find_in_object(args, key));
            assert_eq!(
                plain,
                canon(find_in_object_memo(args, key, &mut memo, b'l')),
                "{key}"
            );
            assert_eq!(plain, canon(all[k]), "{key} in one walk");
            let one = find_in_args(args, &searched[k], &mut memo, b'l');
            assert_eq!(plain, canon(one), "{key} searched");
            assert_eq!(
                find_int_in_args(args, &searched[k], &mut memo, b'l'),
                one.and_then(|v| v.as_i64()),
                "{key} as an integer"
            );
            assert_eq!(plain, canon(found[k]), "{key} all searched");
        }
    });
}

/// Property 6.
fn skim_kernels_agree(data: &[u8]) {
    for block in data.windows(64).step_by(7) {
        if let Ok(block) = <&[u8; 64]>::try_from(block) {
            assert_eq!(skim::classify_detected(block), skim::classify_scalar(block));
        }
    }
    for (at, _) in data
        .iter()
        .enumerate()
        .filter(|(_, &c)| c == b'{' || c == b'[')
    {
        assert_eq!(
            skim::skip_nested(data, at),
            skim::skip_nested_baseline(data, at),
            "from {at}"
        );
    }
}

fuzz_target!(|data: &[u8]| {
    memo_changes_nothing(data);
    skim_kernels_agree(data);
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
            args_lookups_agree(args);
        }
        let mut out = Vec::new();
        escape::escape_ctl(ev.raw.as_bytes(), &mut out);
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
                escape::escape_ctl(s.as_bytes(), &mut out);
                if let Err(e) = check_json(&out) {
                    panic!("accepted string is not JSON once escaped: {e}: {s:?}");
                }
                if escaped {
                    let _ = escape::unescape(&s[1..s.len() - 1]);
                }
            }
        }
    }
    if let Ok(s) = std::str::from_utf8(data) {
        let mut out = Vec::new();
        escape::write_string(&mut out, s);
        let back: String = serde_json::from_slice(&out)
            .unwrap_or_else(|e| panic!("write_string({s:?}) is not JSON: {e}"));
        assert_eq!(back, s);
    }
});
