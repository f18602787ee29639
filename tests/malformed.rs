//! Damaged input: every case names the file and the decompressed byte offset, and every
//! complete event before the damage is still delivered. Offsets are worked out from the bytes
//! the test itself writes.

mod common;

use std::path::Path;

use common::write_gz;
use rankprof::trace::{read_trace, Damage, ReadReport};

const HEAD: &str = "{\"schemaVersion\": 1, \"traceEvents\": [\n";

fn ev(i: usize) -> String {
    format!(
        r#"{{"ph": "X", "cat": "kernel", "name": "k{i}", "pid": 0, "tid": 7, "ts": {i}.5, "dur": 1.25}}"#
    )
}

/// A document of `n` good events, returned with the offset where each event starts.
fn doc(n: usize) -> (String, Vec<usize>) {
    let mut s = HEAD.to_string();
    let mut starts = Vec::new();
    for i in 0..n {
        if i > 0 {
            s.push_str(",\n");
        }
        starts.push(s.len());
        s.push_str(&ev(i));
    }
    s.push_str("\n], \"baseTimeNanoseconds\": 1000}");
    (s, starts)
}

fn read(dir: &Path, name: &str, bytes: &[u8], gz: bool) -> (ReadReport, Vec<String>) {
    let p = dir.join(name);
    if gz {
        write_gz(&p, bytes);
    } else {
        std::fs::write(&p, bytes).unwrap();
    }
    let mut names = Vec::new();
    let r = read_trace(&p, |e| names.push(e.name.to_string())).unwrap();
    (r, names)
}

#[test]
fn truncated_json_salvages_complete_events() {
    let t = tempfile::tempdir().unwrap();
    let (d, starts) = doc(5);
    let cut = starts[3] + 10; // inside event 3
    for gz in [false, true] {
        let (r, names) = read(
            t.path(),
            if gz { "a.json.gz" } else { "a.json" },
            &d.as_bytes()[..cut],
            gz,
        );
        assert_eq!(names, ["k0", "k1", "k2"]);
        assert_eq!(r.damage, Some(Damage::Truncated { at: cut as u64 }));
        let file = t.path().join(if gz { "a.json.gz" } else { "a.json" });
        assert_eq!(
            r.notes()[0],
            format!(
                "salvaged 3 events; {} is truncated at byte {cut}",
                file.display()
            )
        );
    }
}

#[test]
fn truncated_gzip_stream_salvages_what_inflated() {
    let t = tempfile::tempdir().unwrap();
    let (d, _) = doc(20_000);
    let p = t.path().join("whole.json.gz");
    write_gz(&p, d.as_bytes());
    let gz = std::fs::read(&p).unwrap();
    // Cut the compressed file in half: no trailer, a deflate stream that stops mid-block.
    let cutp = t.path().join("cut.json.gz");
    std::fs::write(&cutp, &gz[..gz.len() / 2]).unwrap();
    let mut names = Vec::new();
    let r = read_trace(&cutp, |e| names.push(e.name.to_string())).unwrap();
    let Some(Damage::Truncated { at }) = r.damage else {
        panic!("{r}")
    };
    // Every delivered event is whole and in order, and the damage lies after the last one.
    assert!(
        names.len() > 1000 && names.len() < 20_000,
        "{}",
        names.len()
    );
    assert!(names.iter().enumerate().all(|(i, n)| *n == format!("k{i}")));
    let (_, starts) = doc(names.len() + 1);
    assert!(at as usize >= starts[names.len() - 1] + ev(names.len() - 1).len());
    assert!(r.notes()[0].starts_with(&format!("salvaged {} events; ", names.len())));
    assert!(r.notes()[0].contains("cut.json.gz is truncated at byte"));
}

#[test]
fn invalid_utf8_skips_only_that_event() {
    let t = tempfile::tempdir().unwrap();
    let (d, starts) = doc(3);
    let mut b = d.into_bytes();
    let at = starts[1] + ev(1).find("k1").unwrap() + 1; // the '1' of "k1"
    b[at] = 0xff;
    let (r, names) = read(t.path(), "u.json", &b, false);
    assert_eq!(names, ["k0", "k2"]);
    assert_eq!(r.rejected, 1);
    assert_eq!(r.problems[0].offset, at as u64);
    assert_eq!(r.problems[0].msg, "invalid UTF-8");
    assert!(r.is_damaged() && r.damage.is_none());
    assert!(r.notes()[0].contains(&format!(
        "u.json: skipped an event at byte {at}: invalid UTF-8"
    )));
}

#[test]
fn integer_beyond_64_bits_is_named() {
    let t = tempfile::tempdir().unwrap();
    let (d, starts) = doc(3);
    let bad = ev(1).replace("\"pid\": 0", "\"pid\": 184467440737095516160");
    let d = d.replacen(&ev(1), &bad, 1);
    let (r, names) = read(t.path(), "i.json", d.as_bytes(), false);
    assert_eq!(names, ["k0", "k2"]);
    assert_eq!(
        r.problems[0].offset,
        (starts[1] + bad.find("1844").unwrap()) as u64
    );
    assert!(r.problems[0]
        .msg
        .contains("\"pid\" is an integer beyond 64 bits"));
}

#[test]
fn nan_stops_reading_with_the_offset() {
    let t = tempfile::tempdir().unwrap();
    let (d, starts) = doc(4);
    let bad = ev(2).replace("\"dur\": 1.25", "\"dur\": NaN");
    let d = d.replacen(&ev(2), &bad, 1);
    let (r, names) = read(t.path(), "n.json", d.as_bytes(), false);
    // Invalid JSON: the document cannot be followed past it, so reading stops there.
    assert_eq!(names, ["k0", "k1"]);
    let at = (starts[2] + bad.find("NaN").unwrap()) as u64;
    assert_eq!(
        r.damage,
        Some(Damage::InvalidJson {
            at,
            msg: "NaN is not valid JSON".into()
        })
    );
    assert!(r.notes()[0].starts_with("salvaged 2 events; "));
    assert!(r.notes()[0].ends_with(&format!(
        "n.json has invalid JSON at byte {at}: NaN is not valid JSON"
    )));
}

#[test]
fn missing_fields_and_wrong_types_skip_the_event() {
    let t = tempfile::tempdir().unwrap();
    let cases = [
        (ev(1).replace("\"ph\": \"X\", ", ""), "event has no \"ph\""),
        (
            ev(1).replace(", \"dur\": 1.25", ""),
            "complete event (ph \"X\") has no \"dur\"",
        ),
        (
            ev(1).replace("\"ts\": 1.5", "\"ts\": \"1.5\""),
            "\"ts\" is not a number",
        ),
        (
            ev(1).replace("\"tid\": 7", "\"tid\": [7]"),
            "\"tid\" is neither an integer nor a string",
        ),
        (
            ev(1).replace("\"name\": \"k1\"", "\"name\": 5"),
            "\"name\" is not a string",
        ),
    ];
    for (bad, msg) in cases {
        let (d, starts) = doc(3);
        let d = d.replacen(&ev(1), &bad, 1);
        let (r, names) = read(t.path(), "m.json", d.as_bytes(), false);
        assert_eq!(names.len(), 2, "{msg}");
        assert_eq!(r.rejected, 1, "{msg}");
        assert_eq!(r.problems[0].msg, msg);
        assert!(
            r.problems[0].offset >= starts[1] as u64
                && r.problems[0].offset < (starts[1] + bad.len()) as u64
        );
    }
}

#[test]
fn garbage_and_empty_files() {
    let t = tempfile::tempdir().unwrap();
    let (r, names) = read(t.path(), "g.json", b"hello", false);
    assert!(names.is_empty());
    assert_eq!(
        r.damage,
        Some(Damage::InvalidJson {
            at: 0,
            msg: "expected '{' or '[' at the start of a trace".into()
        })
    );
    let (r, _) = read(t.path(), "e.json", b"", false);
    assert_eq!(r.damage, Some(Damage::Truncated { at: 0 }));
    // Bytes after a complete document are reported, but nothing is lost.
    let (d, _) = doc(2);
    let (r, names) = read(
        t.path(),
        "x.json",
        format!("{d} trailing").as_bytes(),
        false,
    );
    assert_eq!(names.len(), 2);
    assert!(matches!(r.damage, Some(Damage::InvalidJson { .. })));
}

#[test]
fn multi_member_gzip_and_top_level_keys_on_both_sides() {
    let t = tempfile::tempdir().unwrap();
    let (d, _) = doc(6);
    let (a, b) = d.split_at(d.len() / 2);
    let p = t.path().join("mm.json.gz");
    write_gz(&t.path().join("a.gz"), a.as_bytes());
    write_gz(&t.path().join("b.gz"), b.as_bytes());
    let mut both = std::fs::read(t.path().join("a.gz")).unwrap();
    both.extend(std::fs::read(t.path().join("b.gz")).unwrap());
    std::fs::write(&p, both).unwrap();
    let r = read_trace(&p, |_| {}).unwrap();
    assert_eq!(r.events, 6);
    assert!(!r.is_damaged(), "{r}");
    assert_eq!(r.header.schema_version, Some(1));
    assert_eq!(r.header.base_time_ns, Some(1000));
    // A file named .json that is gzip inside is still read as gzip (magic bytes, not names).
    let q = t.path().join("plain-name.json");
    std::fs::copy(&p, &q).unwrap();
    assert_eq!(read_trace(&q, |_| {}).unwrap().events, 6);
}

/// A whole JSON document without `traceEvents` (a config or summary named like a rank) is not
/// a trace: damage, said as such; an empty trace, object or bare array, is not.
#[test]
fn a_json_document_without_trace_events_is_not_a_trace() {
    let t = tempfile::tempdir().unwrap();
    let (r, names) = read(
        t.path(),
        "run-TP-2.trace.json",
        br#"{"model": "llama", "config": {"tp": 4}}"#,
        false,
    );
    assert!(names.is_empty());
    assert_eq!(r.damage, Some(Damage::NotATrace));
    assert!(r.is_damaged());
    assert_eq!(
        r.stopped_early().as_deref(),
        Some("not a trace: a JSON document without traceEvents")
    );
    assert!(
        r.notes()[0].contains("run-TP-2.trace.json is not a trace"),
        "{:?}",
        r.notes()
    );
    for empty in [
        &br#"{"traceEvents": []}"#[..],
        b"[]",
        b"{\"a\": 1, \"traceEvents\": [\n]}",
    ] {
        let (r, _) = read(t.path(), "e.json.gz", empty, true);
        assert_eq!(r.damage, None, "{}", String::from_utf8_lossy(empty));
    }
}
