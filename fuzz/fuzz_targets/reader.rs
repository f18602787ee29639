//! Arbitrary bytes as a trace file, through `rankprof::trace::read::reader`.
//!
//! The first byte picks the form of the rest: 0 plain bytes, 1 the rest gzip-compressed (a
//! sound gzip stream), 2 the rest fed as is through the gzip member reader (a broken or
//! hand-made gzip stream).
//!
//! Properties:
//! 1. The events (ph, name, cat, ts, dur, pid, tid of each) and the report's counts and damage
//!    kind are the same whatever the read window: 64 bytes, 4 KiB and the default 1 MiB,
//!    a corrupt deflate stream included (the gzip reader delivers what it inflated before the
//!    damage first; until 2026-11-23 a larger window could lose up to one read's worth).
//! 2. When reading stopped early, every event delivered lies wholly before `damage.offset()`;
//!    and, for plain input stopped by invalid JSON, reading only the bytes before the damage
//!    offset delivers exactly the same events (salvage loses no complete event).
//! 3. Skimming nested values (`Nested::Skim`, analyze's reader) delivers the validating
//!    reader's events (same offsets, text and `args`) first, in order; it may go on past
//!    damage inside a value it does not validate, but on input the validating reader reads
//!    whole (no damage, nothing rejected) it delivers exactly the same and the same report.
//!    Its events do not depend on the read window either.
//! 4. Reading only some events (`Nested::SkimOnly`, analyze's reader since 2026-11-24): on
//!    input the validating reader reads whole, it hands over exactly the validating reader's
//!    events that the rule keeps (`ph` among `X`/`M`, a complete event's `cat` as written
//!    among a few; for a `cpu_op`, a name test that depends on whether the header lists a
//!    device, and for some, when one is listed, a key their text must hold; everything from
//!    the first `"[label] pid"` on), with the same report, and
//!    `ReadReport::narrowed` counts the events turned down only because devices are listed;
//!    on any input, what it hands over does not depend on the read window.
//! 5. The validating reader gives each event's `args` members (`Event::arg_fields`, what
//!    merge writes from since 2026-11-24): the fields of the `args` object scanned on its own;
//!    the skimming readers give none.
#![no_main]

use std::io::{BufReader, Cursor, Read, Write};
use std::path::Path;

use libfuzzer_sys::fuzz_target;
use rankprof::trace::read::event::Event;
use rankprof::trace::read::gz::Members;
use rankprof::trace::read::reader::{read_from_with, Nested};
use rankprof::trace::read::damage::{Damage, ReadReport};
use rankprof::trace::read::want::Want;
use rankprof::trace::read::window::CHUNK;

fn canon(e: &Event<'_>) -> String {
    format!(
        "{}|{}|{}|{:?}|{:?}|{:?}|{:?}",
        e.ph as char, e.name, e.cat, e.ts, e.dur, e.pid, e.tid
    )
}

fn source(mode: u8, bytes: &[u8]) -> (Box<dyn Read>, bool) {
    match mode {
        1 => {
            let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            enc.write_all(bytes).unwrap();
            let gz = enc.finish().unwrap();
            let len = gz.len() as u64;
            let (m, _) = Members::new(BufReader::new(Cursor::new(gz)), Some(len));
            (Box::new(m), true)
        }
        2 => {
            let len = bytes.len() as u64;
            let (m, _) = Members::new(BufReader::new(Cursor::new(bytes.to_vec())), Some(len));
            (Box::new(m), true)
        }
        _ => (Box::new(Cursor::new(bytes.to_vec())), false),
    }
}

struct Run {
    report: ReadReport,
    events: Vec<String>,
    /// (offset, end offset) of each event.
    spans: Vec<(u64, u64)>,
    /// The raw `args` of each event.
    args: Vec<Option<String>>,
    /// The raw `ph`, `cat` and `name` of each event, and whether its `pid` is a rank label.
    keys: Vec<(u8, String, String, bool, String)>,
    /// Some event has `ph`, `cat` or `name` twice.
    twice: bool,
}

/// Property 4's name test: CPU ops named `k…` always, others only when no device is listed.
fn names(_: &[u8], name: &[u8], devices: bool) -> bool {
    name.starts_with(b"k") || !devices
}

const WANT: Want = Want {
    ph: b"XM",
    complete_cats: &["kernel", "cpu_op", "a"],
    named_cats: &["cpu_op"],
    every_cat_named: false,
    names,
    trust_devices: true,
    name_prefixes: &[],
    needs,
};

/// Property 4's key test: CPU ops named `kk…`, when devices are listed, only if their text
/// holds `"need"`.
fn needs(cat: &[u8], name: &[u8]) -> Option<&'static [u8]> {
    (cat == b"cpu_op" && name.starts_with(b"kk")).then_some(&b"\"need\""[..])
}

/// Property 4's rule, event by event: (kept, turned down only because devices are listed),
/// with `devices` listed before the events.
fn rule(run: &Run, devices: bool) -> Vec<(bool, bool)> {
    let mut labeled = false;
    let mut out = Vec::new();
    for (ph, cat, name, label, raw) in &run.keys {
        let complete = *ph == b'X' && ["kernel", "cpu_op", "a"].contains(&cat.as_str());
        let by_name = |d: bool| cat != "cpu_op" || names(b"", name.as_bytes(), d);
        let held = |key: &[u8]| raw.as_bytes().windows(key.len()).any(|w| w == key);
        let by_text = !devices || needs(cat.as_bytes(), name.as_bytes()).is_none_or(held);
        let k = labeled || *ph == b'M' || (complete && by_name(devices) && by_text);
        let narrowed = !k && complete && by_name(false);
        // From the first handed-over event with a labeled pid on, every event is handed over.
        labeled |= k && *label;
        out.push((k, narrowed));
    }
    out
}

fn run(mode: u8, bytes: &[u8], window: usize) -> Run {
    run_with(mode, bytes, window, Nested::Validate)
}

fn run_with(mode: u8, bytes: &[u8], window: usize, nested: Nested) -> Run {
    let (src, gzip) = source(mode, bytes);
    let mut events = Vec::new();
    let mut spans = Vec::new();
    let mut args = Vec::new();
    let mut keys = Vec::new();
    let mut twice = false;
    let report = read_from_with(Path::new("fuzz.json"), src, gzip, window, nested, |e| {
        events.push(canon(e));
        spans.push((e.offset, e.offset + e.raw.len() as u64));
        args.push(e.args.map(str::to_string));
        let label = matches!(e.pid, rankprof::trace::Id::Str(s) if s.raw().starts_with('['));
        keys.push((
            e.ph,
            e.cat.raw().to_string(),
            e.name.raw().to_string(),
            label,
            e.raw.to_string(),
        ));
        // Property 5: a validating reader gives the members of `args`, the fields of the
        // object scanned on its own; the others give none.
        assert_eq!(
            e.arg_fields.is_some(),
            e.args.is_some() && matches!(nested, Nested::Validate)
        );
        if let (Some(a), Some(members)) = (e.args, e.arg_fields) {
            let at = (a.as_ptr() as usize - e.raw.as_ptr() as usize) as u32;
            let mut f = Vec::new();
            rankprof::trace::read::object::scan_object(a.as_bytes(), 0, &mut f).unwrap();
            let alone: Vec<_> = f
                .iter()
                .map(|x| (x.key.0 + at, x.key.1 + at, x.val.0 + at, x.val.1 + at, x.kind, x.ctl))
                .collect();
            let given: Vec<_> = members
                .iter()
                .map(|m| (m.key.0, m.key.1, m.val.0, m.val.1, m.kind, m.ctl))
                .collect();
            assert_eq!(alone, given);
        }
        // A key twice: the peek reads the first `ph`/`cat`/`name`, the decoder the last
        // (documented).
        let raw = e.raw.as_bytes();
        let n = |key: &[u8]| e.fields.iter().filter(|f| f.key(raw) == key).count();
        twice |= n(b"ph") > 1 || n(b"cat") > 1 || n(b"name") > 1;
    });
    Run {
        report,
        events,
        spans,
        args,
        keys,
        twice,
    }
}

/// Property 4.
fn only_agrees(mode: u8, rest: &[u8], valid: &Run) {
    let only = run_with(mode, rest, CHUNK, Nested::SkimOnly(WANT));
    if valid.report.damage.is_none() && valid.report.rejected == 0 && !valid.twice {
        // The name test is told what the header said when the events started: a header
        // key written after the events (legal, as `baseTimeNanoseconds` in old traces) is
        // not known then.
        assert!(!only.report.devices || valid.report.header.lists_devices());
        assert_eq!(only.report.devices, valid.report.devices);
        let rule = rule(valid, only.report.devices);
        let expect: Vec<&String> = valid
            .events
            .iter()
            .zip(&rule)
            .filter_map(|(e, &(k, _))| k.then_some(e))
            .collect();
        let got: Vec<&String> = only.events.iter().collect();
        assert_eq!(got, expect, "SkimOnly handed over other events");
        assert_eq!(only.report.events, valid.report.events);
        let narrowed = rule.iter().filter(|&&(_, n)| n).count() as u64;
        assert_eq!(only.report.narrowed, narrowed, "narrowed miscounted");
        assert_eq!(only.report.raw_control, valid.report.raw_control);
        assert!(only.report.damage.is_none(), "{:?}", only.report.damage);
    }
    let small = run_with(mode, rest, 64, Nested::SkimOnly(WANT));
    assert_eq!(small.events, only.events, "SkimOnly depends on the window");
    assert_eq!(small.report.events, only.report.events);
    assert_eq!(small.report.narrowed, only.report.narrowed);
    assert_eq!(kind(&small.report.damage), kind(&only.report.damage));
}

/// Property 3.
fn skim_agrees(mode: u8, rest: &[u8], valid: &Run) {
    let skim = run_with(mode, rest, CHUNK, Nested::Skim);
    let n = valid.events.len();
    assert!(skim.events.len() >= n, "the skim lost events");
    assert_eq!(
        skim.events[..n],
        valid.events[..],
        "the skim read other events"
    );
    assert_eq!(
        skim.spans[..n],
        valid.spans[..],
        "the skim found other event bounds"
    );
    assert_eq!(skim.args[..n], valid.args[..], "the skim found other args");
    if valid.report.damage.is_none() && valid.report.rejected == 0 {
        assert_eq!(
            skim.events.len(),
            n,
            "the skim read more of an undamaged input"
        );
        assert!(skim.report.damage.is_none(), "{:?}", skim.report.damage);
        assert_eq!(skim.report.raw_control, valid.report.raw_control);
    }
    let small = run_with(mode, rest, 64, Nested::Skim);
    assert_eq!(small.events, skim.events, "the skim depends on the window");
    assert_eq!(small.spans, skim.spans);
    assert_eq!(kind(&small.report.damage), kind(&skim.report.damage));
}

fn kind(d: &Option<Damage>) -> u8 {
    match d {
        None => 0,
        Some(Damage::Truncated { .. }) => 1,
        Some(Damage::InvalidJson { .. }) => 2,
        Some(Damage::Gzip { .. }) => 3,
        Some(Damage::NotATrace) => 4,
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    let mode = first % 3;
    let big = run(mode, rest, CHUNK);
    for window in [64, 4096] {
        let small = run(mode, rest, window);
        assert_eq!(
            big.events, small.events,
            "events differ with a {window}-byte window"
        );
        assert_eq!(big.report.events, small.report.events);
        assert_eq!(big.report.rejected, small.report.rejected);
        assert_eq!(big.report.raw_control, small.report.raw_control);
        assert_eq!(
            kind(&big.report.damage),
            kind(&small.report.damage),
            "damage differs with a {window}-byte window: {:?} vs {:?}",
            big.report.damage,
            small.report.damage
        );
        if let (Some(a), Some(b)) = (&big.report.damage, &small.report.damage) {
            let (a, b) = (a.offset(), b.offset());
            assert_eq!(
                a, b,
                "the damage offset differs with a {window}-byte window"
            );
        }
    }
    assert_eq!(big.report.events as usize, big.events.len());
    skim_agrees(mode, rest, &big);
    only_agrees(mode, rest, &big);
    if let Some(d) = &big.report.damage {
        let at = d.offset();
        for &(start, end) in &big.spans {
            assert!(
                end <= at,
                "event {start}..{end} delivered past the damage at {at}: {d:?}"
            );
        }
        if mode == 0 {
            if let Damage::InvalidJson { at, .. } = d {
                let prefix = run(0, &rest[..*at as usize], CHUNK);
                assert_eq!(
                    prefix.events, big.events,
                    "the bytes before the damage at {at} hold other events"
                );
            }
        }
    }
});
