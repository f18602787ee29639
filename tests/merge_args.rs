//! `merge`'s fast walk over an event's `args` ([`rankprof::merge::args::each_arg`]) against the
//! validating one it replaced ([`rankprof::trace::read::args::each_field`]): the same fields, kinds
//! and values on hand-made tricky objects and on every `args` object of the real fixtures; on
//! broken objects it stops without panicking. On the real fixtures, the members the validating
//! reader found ([`rankprof::trace::Event::arg_fields`], what merge now writes from) too.

mod common;

use std::path::{Path, PathBuf};

use rankprof::merge::args::{each_arg, parse_i64, Arg, ArgKind};
use rankprof::trace::read::args::each_field;
use rankprof::trace::read::json::Kind;
use rankprof::trace::read_trace;

type Fields = Vec<(String, ArgKind, String)>;

/// Both walkers' fields of `obj`, as `(key, kind, value)` with the kinds mapped alike.
fn both(obj: &str) -> (Fields, Fields) {
    let mut fast = Vec::new();
    each_arg(obj.as_bytes(), |a| {
        let s = |x: &[u8]| String::from_utf8(x.to_vec()).unwrap();
        // The raw forms are the plain ones with their quotes.
        let q = |x: &[u8]| format!("\"{}\"", s(x));
        assert_eq!(s(a.quoted_key), q(a.key()));
        let raw = match a.kind {
            ArgKind::Str => q(a.val()),
            _ => s(a.val()),
        };
        assert_eq!(s(a.raw_val), raw);
        fast.push((s(a.key()), a.kind, s(a.val())));
    });
    let mut slow = Vec::new();
    each_field(obj, |k, kind, v| {
        let kind = match kind {
            Kind::Str { .. } => ArgKind::Str,
            Kind::Num => ArgKind::Num,
            _ => ArgKind::Other,
        };
        slow.push((k.to_string(), kind, v.to_string()));
        true
    });
    (fast, slow)
}

#[test]
fn same_fields_as_each_field_on_tricky_objects() {
    let cases = [
        (r#"{}"#, 0),
        ("{ \n }", 0),
        (r#"{"a":1}"#, 1),
        (
            "{\n  \"External id\": 3, \"Record function id\": 0 , \"Ev Idx\":-2.5e-3\n}",
            3,
        ),
        (
            r#"{"s":"x\"y\\","t":"\u00e9\\\"","u":"","k\"q":true,"n":null,"f":false}"#,
            6,
        ),
        (
            r#"{"nest":{"a":[1,{"b":"}]"}],"c":"\\"},"arr":[ ],"z":[[[]]] ,"w":0}"#,
            4,
        ),
        (
            r#"{"correlation":12345678901234,"name":"é ü 中","x":{"y":"a\"}"}}"#,
            3,
        ),
        // A raw tab inside a string (invalid JSON the reader lets through and flags).
        ("{\"raw\":\"tab\there\",\"n\":1}", 2),
    ];
    for (obj, n) in cases {
        let (fast, slow) = both(obj);
        assert_eq!(fast, slow, "{obj}");
        assert_eq!(fast.len(), n, "{obj}");
    }
    let (fast, _) = both(r#"{"k\"q":"v\\","n":-7}"#);
    assert_eq!(
        fast,
        [
            (r#"k\"q"#.to_string(), ArgKind::Str, r"v\\".to_string()),
            ("n".to_string(), ArgKind::Num, "-7".to_string())
        ]
    );
}

#[test]
fn stops_without_panicking_on_cut_or_broken_objects() {
    for (obj, most) in [
        (r#"{"a"#, 0),
        (r#"{"a":"#, 0),
        (r#"{"a":"x"#, 0),
        (r#"{"a":"x\"#, 0),
        (r#"{"a":{"b":1"#, 0),
        (r#"{"a" 1}"#, 0),
        (r#"{"a":1,"b":"#, 1),
    ] {
        let mut n = 0;
        each_arg(obj.as_bytes(), |_| n += 1);
        assert!(n <= most, "{obj}: {n} fields");
    }
}

#[test]
fn parse_i64_agrees_with_str_parse_on_json_numbers() {
    for t in [
        "0",
        "-0",
        "7",
        "-7",
        "1234567890123",
        "9223372036854775807",
        "9223372036854775808",
        "-9223372036854775808",
        "-9223372036854775809",
        "99999999999999999999",
        "1.5",
        "-2.0",
        "1e3",
        "-1E-3",
        "-",
        "",
    ] {
        assert_eq!(parse_i64(t.as_bytes()), t.parse::<i64>().ok(), "{t}");
    }
    assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
}

fn traces(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let p = entry.unwrap().path();
        if p.is_dir() {
            traces(&p, out);
        } else if p.to_string_lossy().ends_with(".json.gz") {
            out.push(p);
        }
    }
}

#[test]
fn same_fields_as_each_field_on_every_real_args_object() {
    let mut files = Vec::new();
    traces(&common::shared("hta"), &mut files);
    traces(&common::shared("sglang-cpu"), &mut files);
    let mut objects = 0u64;
    let mut fields = 0usize;
    for path in &files {
        read_trace(path, |ev| {
            if let Some(args) = ev.args {
                let (fast, slow) = both(args);
                assert_eq!(fast, slow, "{}: {args}", path.display());
                // The members the validating reader found as it read the event.
                let found: Fields = ev
                    .arg_fields
                    .expect("a validating reader gives the members")
                    .iter()
                    .map(|f| {
                        let a = Arg::of_field(f, ev.raw.as_bytes());
                        let s = |x: &[u8]| String::from_utf8(x.to_vec()).unwrap();
                        (s(a.key()), a.kind, s(a.val()))
                    })
                    .collect();
                assert_eq!(found, slow, "{}: {args}", path.display());
                objects += 1;
                fields += fast.len();
            }
        })
        .unwrap();
    }
    // `zcat hta/*.gz | grep -o '"args"' | wc -l` gives 37,719 (some in nested values).
    assert!(
        objects > 10_000 && fields > objects as usize,
        "{objects} {fields}"
    );
}
