//! Unit tests of [`super`] (`json.rs`), kept apart so the module stays readable.

use super::*;

#[test]
fn skips_nested_values_and_reports_kinds() {
    let b = br#"{"a": [1, 2.5e-3, "x\"y", {"b": null}], "c": true} rest"#;
    let (end, kind) = skip_value(b, 0).unwrap();
    assert_eq!(kind, Kind::Obj);
    assert_eq!(&b[end..], b" rest");
}

#[test]
fn incomplete_is_not_invalid() {
    assert_eq!(skip_value(br#"{"a": [1, 2"#, 0), Err(Stop::Incomplete));
    assert_eq!(skip_value(br#"{"a": "abc"#, 0), Err(Stop::Incomplete));
    assert_eq!(skip_value(b"123", 0), Err(Stop::Incomplete));
    assert_eq!(skip_value(b"tru", 0), Err(Stop::Incomplete));
}

#[test]
fn rejects_nan_and_garbage() {
    assert!(matches!(
        skip_value(br#"{"a": NaN}"#, 0),
        Err(Stop::Invalid(6, _))
    ));
    assert!(matches!(
        skip_value(br#"{"a": 1 "b": 2}"#, 0),
        Err(Stop::Invalid(8, _))
    ));
    assert!(matches!(
        skip_value(br#"{"a": tx}"#, 0),
        Err(Stop::Invalid(6, _))
    ));
    assert!(matches!(
        skip_value(br#"{"a": 01}"#, 0),
        Err(Stop::Invalid(7, _))
    ));
}

#[test]
fn object_fields_are_indexed() {
    let b = br#"  {"ph": "X", "ts": 12.5, "args": {"k": [1]}}"#;
    let mut f = Vec::new();
    let end = scan_object(b, 2, &mut f).unwrap();
    assert_eq!(end, b.len());
    let ev = &b[2..];
    assert_eq!(f.len(), 3);
    assert_eq!(f[0].key(ev), b"ph");
    assert_eq!(f[0].val(ev), b"X");
    assert_eq!(f[0].raw_val(ev), b"\"X\"");
    assert_eq!(f[1].val(ev), b"12.5");
    assert_eq!(f[2].val(ev), br#"{"k": [1]}"#);
}

#[test]
fn raw_control_bytes_are_flagged_and_escaped() {
    let b = b"{\"name\": \"a\x01b\", \"args\": {\"k\": [\"x\ny\"]},\n \"ok\": \"plain text longer than twenty-four bytes\x1f\"}";
    let mut f = Vec::new();
    assert_eq!(scan_object(b, 0, &mut f), Ok(b.len()));
    assert_eq!(
        f.iter().map(|f| f.ctl).collect::<Vec<_>>(),
        [true, true, true]
    );
    assert_eq!(first_ctl(b), Some(11));
    let mut out = Vec::new();
    escape_ctl(b, &mut out);
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["name"], "a\u{1}b");
    assert_eq!(v["args"]["k"][0], "x\ny");
    assert!(v["ok"].as_str().unwrap().ends_with('\u{1f}'));
    let clean = br#"{"name": "a\u0001b", "t": 1}"#;
    assert_eq!(scan_object(clean, 0, &mut f), Ok(clean.len()));
    assert!(f.iter().all(|f| !f.ctl));
    assert_eq!(first_ctl(clean), None);
}

#[test]
fn short_strings_end_as_byte_by_byte() {
    // Every 8-byte word over the bytes that matter, against the plain definition.
    const B: &[u8] = b"\"\\a\x00\x1f \x80\xff";
    let mut w = [0u8; 8];
    for n in 0..B.len().pow(6) {
        let mut x = n;
        for c in w.iter_mut().take(6) {
            *c = B[x % B.len()];
            x /= B.len();
        }
        w[6] = b'"';
        let want = w
            .iter()
            .position(|&c| c == b'"' || c == b'\\' || c < 0x20)
            .filter(|&k| w[k] == b'"');
        assert_eq!(short_string_end(&w), want, "{w:?}");
    }
}

#[test]
fn unescapes() {
    assert_eq!(
        unescape(r#"a\"b\\c\u00e9\ud83d\ude00"#),
        "a\"b\\c\u{e9}\u{1F600}"
    );
    let mut o = Vec::new();
    write_string(&mut o, "a\"b\n");
    assert_eq!(o, br#""a\"b\n""#);
}
