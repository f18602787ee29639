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

/// The names [`Nested::SkimOnly`] hands over, and the report, with a `window`-byte window.
fn read_only(b: &[u8], window: usize) -> (ReadReport, Vec<String>) {
    let want = Want {
        ph: b"XM",
        complete_cats: &["kernel", "cpu_op"],
        named_cats: &[],
        every_cat_named: false,
        names: crate::trace::read::want::every_name,
        trust_devices: true,
        name_prefixes: &[],
        needs: crate::trace::read::want::no_needs,
    };
    let mut names = Vec::new();
    let src = Box::new(io::Cursor::new(b.to_vec()));
    let nested = Nested::SkimOnly(want);
    let r = read_from_with(Path::new("t.json"), src, false, window, nested, |e| {
        names.push(e.name.to_string())
    });
    (r, names)
}

#[test]
fn only_wanted_events_are_handed_over_whatever_the_layout_and_window() {
    let doc = br#"[
{"ph": "f", "id": 1, "pid": 0, "tid": 0, "ts": 1, "cat": "ac2g", "name": "flow"},
{"ph": "X", "cat": "kernel", "name": "k1", "pid": 0, "tid": 7, "ts": 2, "dur": 1},
{"ph": "X", "cat": "python_function", "name": "py", "pid": 1, "tid": 1, "ts": 3, "dur": 1},
{"cat": "ac2g", "ph": "s", "name": "flow later ph", "pid": 0, "tid": 0, "ts": 4, "id": 2},
{"ph": "X", "name": "cat later", "cat": "cpu_op", "pid": 1, "tid": 1, "ts": 5, "dur": 1},
{"ph": "X", "cat": "python_function", "name": "a \"quoted\" py", "pid": 1, "tid": 1, "ts": 6, "dur": 1},
{"ph": "X", "cat": "python\u005ffunction", "name": "escaped unwanted cat", "pid": 1, "tid": 1, "ts": 7, "dur": 1},
{"ph": "X", "cat": "ker\u006eel", "name": "escaped kernel (as written: not wanted)", "pid": 1, "tid": 1, "ts": 8, "dur": 1},
{"ph": "i", "name": "instant", "pid": 1, "tid": 1, "ts": 9, "s": "t", "args": {"a": [1, {"b": "}"}]}},
{"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "x"}},
{"ph": "X", "cat": "cpu_op", "name": "c1", "pid": 1, "tid": 1, "ts": 10, "dur": 1, "args": {"x": 1}}
]"#;
    let expect = ["k1", "cat later", "process_name", "c1"];
    for window in [16, 64, 100, 4096, CHUNK] {
        let (r, names) = read_only(doc, window);
        assert_eq!(names, expect, "window {window}");
        assert_eq!((r.events, r.rejected), (11, 0), "window {window}");
        assert!(r.damage.is_none(), "{:?}", r.damage);
    }
}

#[test]
fn a_merged_trace_is_handed_over_whole_from_its_first_labeled_event() {
    let doc = br#"[
{"ph": "f", "id": 1, "pid": 0, "tid": 0, "ts": 1, "cat": "ac2g", "name": "before"},
{"ph": "M", "name": "process_name", "pid": "[TP00] 0", "tid": 0, "args": {"name": "x"}},
{"ph": "f", "id": 1, "pid": "[TP00] 0", "tid": 0, "ts": 1, "cat": "ac2g", "name": "after"},
{"ph": "X", "cat": "python_function", "name": "py", "pid": 1, "tid": 1, "ts": 3, "dur": 1}
]"#;
    let (r, names) = read_only(doc, CHUNK);
    assert_eq!(names, ["process_name", "after", "py"]);
    assert_eq!(r.events, 4);
}

#[test]
fn damage_inside_an_unwanted_event_is_not_looked_for() {
    // A missing comma between two tokens of a flow event: the validating reader stops there;
    // the skim checks brackets, strings and control bytes only, and reads on (documented in
    // `want.rs`). Damage it does check (an unclosed string) still stops it.
    let doc = br#"[
{"ph": "X", "cat": "kernel", "name": "k1", "pid": 0, "tid": 7, "ts": 2, "dur": 1},
{"ph": "f", "id": 1 "pid": 0, "tid": 0, "ts": 1, "cat": "ac2g", "name": "flow"},
{"ph": "X", "cat": "kernel", "name": "k2", "pid": 0, "tid": 7, "ts": 3, "dur": 1}
]"#;
    let (r, names) = read_bytes(doc);
    assert_eq!(names, ["k1"]);
    assert!(
        matches!(r.damage, Some(Damage::InvalidJson { .. })),
        "{:?}",
        r.damage
    );
    let (r, names) = read_only(doc, 64);
    assert_eq!(names, ["k1", "k2"]);
    assert!(r.damage.is_none(), "{:?}", r.damage);
    let cut = br#"[
{"ph": "X", "cat": "kernel", "name": "k1", "pid": 0, "tid": 7, "ts": 2, "dur": 1},
{"ph": "f", "id": 1, "pid": 0, "tid": 0, "ts": 1, "cat": "ac2g", "name": "fl
{"ph": "X", "cat": "kernel", "name": "k2", "pid": 0, "tid": 7, "ts": 3, "dur": 1}
]"#;
    let (r, names) = read_only(cut, 64);
    assert_eq!(names, ["k1"]);
    assert!(r.damage.is_some());
}
