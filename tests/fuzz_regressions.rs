//! Inputs found by the fuzz targets (fuzz/, docs/reliability.md "Fuzzing"), replayed.
//! Each input is kept under fuzz/regressions/.

use std::io::{BufReader, Cursor};
use std::path::Path;

use rankprof::capture::workers::parse_workers_answer;
use rankprof::trace::read::damage::Damage;
use rankprof::trace::read::escape;
use rankprof::trace::read::event::scan_event;
use rankprof::trace::read::gz::Members;
use rankprof::trace::read::reader::{read_from_with, read_from_with_window, Nested};
use rankprof::trace::read::window::CHUNK;

fn input(name: &str) -> Vec<u8> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/regressions")
        .join(name);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// `event` target: `scan_event` took bytes not starting with `{` for an object (the scanner
/// trusts its caller to have seen the brace), so `~"name": …}` was an event, and not JSON.
#[test]
fn scan_event_wants_an_opening_brace() {
    let b = input("event-not-an-object.bin");
    assert_eq!(b[0], b'~');
    let mut f = Vec::new();
    assert!(scan_event(&b, &mut f).is_err());
    // With the brace it is an event, and valid JSON once escaped.
    let mut fixed = b.clone();
    fixed[0] = b'{';
    let ev = scan_event(&fixed, &mut f).expect("an event");
    let mut out = Vec::new();
    escape::escape_ctl(ev.raw.as_bytes(), &mut out);
    serde_json::from_slice::<serde_json::Value>(&out).expect("valid JSON");
}

fn names_read(gz: &[u8], window: usize) -> (Vec<String>, Option<Damage>) {
    let (m, _) = Members::new(
        BufReader::new(Cursor::new(gz.to_vec())),
        Some(gz.len() as u64),
    );
    let mut names = Vec::new();
    let r = read_from_with_window(Path::new("t.json.gz"), Box::new(m), true, window, |e| {
        names.push(e.name.to_string())
    });
    (names, r.damage)
}

/// `reader` target (fixed 2026-11-23, docs/reliability.md): in a corrupt deflate stream,
/// flate2's `GzDecoder` dropped what the failing read had inflated, so the default 1 MiB window
/// delivered 0 of the 25 events a 64-byte window delivered. The gzip reader now hands over what
/// it inflated before the damage first: every window delivers the same events and the same
/// damage, at the same offset. 27 events: Python's zlib, fed the deflate stream a byte at a
/// time, inflates 8,535 bytes before "invalid distance too far back", and `json.raw_decode`
/// finds 27 complete events in them.
#[test]
fn corrupt_deflate_loses_nothing_before_the_damage() {
    let b = input("reader-gzip-window-loss.bin");
    assert_eq!(b[0], 2, "mode 2: the rest is fed as is to the gzip reader");
    let (big, d_big) = names_read(&b[1..], CHUNK);
    let (small, d_small) = names_read(&b[1..], 64);
    let (mid, d_mid) = names_read(&b[1..], 4096);
    assert_eq!(small.len(), 27, "{small:?}");
    assert_eq!(big, small);
    assert_eq!(mid, small);
    let at = |d: &Option<Damage>| match d {
        Some(Damage::Gzip { at, msg }) => {
            // The inflated bytes just before the damage are already garbage: the JSON breaks
            // first, and the reader blames the broken stream, naming both.
            assert!(msg.contains("gzip member 1"), "{msg}");
            assert!(msg.contains("corrupt deflate stream"), "{msg}");
            assert!(msg.contains(&format!("invalid JSON at byte {at}")), "{msg}");
            *at
        }
        other => panic!("not a broken gzip stream: {other:?}"),
    };
    assert_eq!(at(&d_big), at(&d_small));
    assert_eq!(at(&d_mid), at(&d_small));
}

/// `workers` target: an empty url (`""`, or `{"url": ""}`) came out of the parser as a worker;
/// it is "has no url", like a missing one.
#[test]
fn workers_answer_refuses_empty_urls() {
    for body in [
        r#"["","htutilizationtp://:/@d&ih","htutilizationtp://:/@d&i/"]"#,
        r#"{"workers":[{"url":"  ","worker_type":"regular"}]}"#,
        r#"{"prefill":["http://p:1"],"decode":[""]}"#,
    ] {
        let e = parse_workers_answer(body).expect_err(body);
        assert!(format!("{e:#}").contains("has no url"), "{body}: {e:#}");
    }
    let ok = parse_workers_answer(r#"{"urls":["http://a:1","b:2@3"]}"#).unwrap();
    assert_eq!(ok.len(), 2);
}

/// `reader` target, property 3 (found 2026-11-23, before the skim landed): an event whose
/// `args` hold a grammar error the skim does not check (`"Evd I"x: 27169`), followed in the same
/// 64-byte block, after the event, by a raw NUL. The skim declined the value for the NUL, which
/// is not the value's, with the 1 MiB window, and took it with a 64-byte window (which ended
/// before the NUL): what was accepted depended on the window. Only the bytes up to the value's
/// close count now.
#[test]
fn the_skim_does_not_depend_on_the_window() {
    let b = input("reader-skim-window.bin");
    assert_eq!(b[0], 1, "mode 1: the rest is gzip-compressed");
    let rest = &b[1..];
    let read = |window: usize, nested: Nested| {
        let mut names = Vec::new();
        let r = read_from_with(
            Path::new("t.json"),
            Box::new(Cursor::new(rest.to_vec())),
            false,
            window,
            nested,
            |e| names.push(e.name.to_string()),
        );
        (names, r.damage)
    };
    // Validating: the grammar error in args is the damage, at its byte; no event.
    let at = rest.windows(3).position(|w| w == b"\"x:").unwrap() as u64 + 1;
    for window in [64, 4096, CHUNK] {
        let (names, d) = read(window, Nested::Validate);
        assert!(names.is_empty(), "{names:?}");
        assert!(
            matches!(d, Some(Damage::InvalidJson { at: a, .. }) if a == at),
            "{d:?}"
        );
    }
    // Skimming: the event, whatever the window; the damage is after it.
    for window in [64, 4096, CHUNK] {
        let (names, d) = read(window, Nested::Skim);
        assert_eq!(names.len(), 1, "{window}: {names:?}");
        assert!(
            names[0].starts_with("autograd::engine::evaluate_funct"),
            "{names:?}"
        );
        assert!(d.is_some_and(|d| d.offset() > at), "{window}");
    }
}

/// `event` target, property 5 (CI, 2026-12-03): an event whose `args` hold a `correlation` of
/// 94 digits. The integer lookup read a 19th digit by multiplying the 18 before it by 10, an
/// overflow in the fuzzer's build (overflow checks on; this test's release build wraps, so
/// here it checks the answer, and the lib test `long_integers_read_as_the_general_path_reads_them`
/// the overflow under `cargo test`). The fuzz smoke run replays the input first
/// (fuzz/seed.sh seeds fuzz/regressions/ into each target's corpus).
#[test]
fn a_94_digit_integer_is_not_an_i64() {
    use rankprof::trace::read::args::{find_in_args, find_int_in_args, ArgKey};
    use rankprof::trace::read::memo::Memo;
    let b = input("event-long-integer.bin");
    let mut f = Vec::new();
    let ev = scan_event(&b, &mut f).expect("an event");
    let args = ev.args.expect("args");
    let key = ArgKey::new("correlation");
    let mut memo = Memo::default();
    let general = find_in_args(args, &key, &mut memo, b'l').expect("a correlation");
    assert!(general.text.len() > 19, "{}", general.text);
    assert_eq!(general.as_i64(), None);
    assert_eq!(find_int_in_args(args, &key, &mut memo, b'l'), None);
}
