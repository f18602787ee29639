//! Unit tests of [`super`] (`reader.rs`), kept apart so the module stays readable.

use super::*;

fn read_bytes(b: &[u8]) -> (ReadReport, Vec<String>) {
    let mut names = Vec::new();
    let r = read_from(
        Path::new("t.json"),
        Box::new(io::Cursor::new(b.to_vec())),
        false,
        |e| names.push(e.name.to_string()),
    );
    (r, names)
}

#[test]
fn object_form_with_header_on_both_sides() {
    let doc = br#"{"schemaVersion": 1, "distributedInfo": {"rank": 3}, "traceEvents": [
        {"ph": "X", "name": "a", "ts": 1, "dur": 2},
        {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "x"}}
    ], "baseTimeNanoseconds": 1700000000000000000, "displayTimeUnit": "ms", "traceName": "t"}"#;
    let (r, names) = read_bytes(doc);
    assert_eq!(names, ["a", "process_name"]);
    assert!(r.damage.is_none() && r.rejected == 0, "{r}");
    assert_eq!(r.header.base_time_ns, Some(1_700_000_000_000_000_000));
    assert_eq!(r.header.distributed_rank(), Some(3));
    assert_eq!(r.header.display_time_unit.as_deref(), Some("ms"));
    assert_eq!(
        r.header.other,
        [("traceName".to_string(), "\"t\"".to_string())]
    );
}

#[test]
fn bare_array_may_lack_its_closing_bracket() {
    let (r, names) =
        read_bytes(br#"[{"ph": "i", "ts": 1, "name": "a"}, {"ph": "i", "ts": 2, "name": "b"},"#);
    assert_eq!(names, ["a", "b"]);
    assert!(r.damage.is_none());
}

#[test]
fn truncated_object_keeps_complete_events() {
    let doc = br#"{"traceEvents": [{"ph": "i", "ts": 1, "name": "a"}, {"ph": "i", "ts": 2, "na"#;
    let (r, names) = read_bytes(doc);
    assert_eq!(names, ["a"]);
    assert_eq!(
        r.damage,
        Some(Damage::Truncated {
            at: doc.len() as u64
        })
    );
    assert_eq!(
        r.notes()[0],
        format!(
            "salvaged 1 events; t.json is truncated at byte {}",
            doc.len()
        )
    );
}

#[test]
fn invalid_event_is_skipped_and_reading_goes_on() {
    let doc = br#"{"traceEvents": [{"ph": "i", "ts": "x"}, {"ph": "i", "ts": 2, "name": "b"}]}"#;
    let (r, names) = read_bytes(doc);
    assert_eq!(names, ["b"]);
    assert_eq!(r.rejected, 1);
    assert_eq!(r.problems[0].offset, 35);
    assert!(r.damage.is_none());
}
