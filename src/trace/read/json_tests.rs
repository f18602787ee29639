//! Unit tests of [`super`] (`json.rs`), kept apart so the module stays readable.

use super::*;
use crate::testrng::xorshift;
use crate::trace::read::escape::{escape_ctl, first_ctl, unescape, write_string};
use crate::trace::read::swar::{plain_string_len, short_string_end};

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

fn random_bytes(s: &mut u64, alphabet: &[u8], max_len: usize) -> Vec<u8> {
    let n = (xorshift(s) % (max_len as u64 + 1)) as usize;
    (0..n)
        .map(|_| alphabet[(xorshift(s) % alphabet.len() as u64) as usize])
        .collect()
}

#[test]
fn plain_string_lengths_are_as_byte_by_byte() {
    let mut s = 0x2545_f491_4f6c_dd1d;
    for _ in 0..50_000 {
        let b = random_bytes(&mut s, b"aaaaaaaaaaz \"\\\x00\x1f\x7f\x80\xff", 40);
        let want = b
            .iter()
            .position(|&c| c == b'"' || c == b'\\' || c < 0x20)
            .filter(|&k| b[k] == b'"');
        assert_eq!(plain_string_len(&b), want, "{b:?}");
    }
}

#[test]
fn whitespace_runs_end_as_byte_by_byte() {
    let mut s = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..50_000 {
        let b = random_bytes(&mut s, b"    \n\r\t\t\n x{\"\x0b\xa0", 48);
        for i in 0..=b.len() + 1 {
            let mut want = i;
            while want < b.len() && matches!(b[want], b' ' | b'\n' | b'\r' | b'\t') {
                want += 1;
            }
            assert_eq!(skip_ws(&b, i), want, "{b:?} from {i}");
        }
    }
}

#[test]
fn inline_numbers_end_as_the_full_scanner() {
    for (text, end) in [
        (&b"12345678901234567x"[..], 17),
        (b"1234567/", 7),
        (b"123456789:", 9),
    ] {
        assert_eq!(crate::trace::read::swar::digits_end(text, 0), end);
    }
    let mut s = 0x2545_f491_4f6c_dd1d;
    for _ in 0..200_000 {
        // Short texts with every token, and long digit runs (timestamps such as
        // `4355656645620.491`) with the bytes next to the digits ('/', ':', 0xFA and up).
        let b = if s % 2 == 0 {
            random_bytes(&mut s, b"-0123456789019..eE+ ,}]x\n", 14)
        } else {
            random_bytes(
                &mut s,
                b"01234567890123456789012345678901234567.-/:\xfa\xff, e",
                40,
            )
        };
        for i in 0..b.len() {
            let mut e = i;
            while b.get(e).is_some_and(u8::is_ascii_digit) {
                e += 1;
            }
            assert_eq!(
                crate::trace::read::swar::digits_end(&b, i),
                e,
                "{b:?} at {i}"
            );
            if matches!(b[i], b'-' | b'0'..=b'9') {
                assert_eq!(
                    scan_number_inline(&b, i),
                    scan_number(&b, i),
                    "{b:?} at {i}"
                );
            }
        }
    }
}

/// The definition of a string's scan, one byte at a time.
fn scan_string_by_bytes(b: &[u8], i: usize) -> (Scan<(usize, bool)>, bool) {
    let (mut j, mut escaped, mut ctl) = (i + 1, false, false);
    loop {
        let Some(&c) = b.get(j) else {
            return (Err(Stop::Incomplete), ctl);
        };
        match c {
            b'"' => return (Ok((j + 1, escaped)), ctl),
            b'\\' => {
                escaped = true;
                match b.get(j + 1) {
                    None => return (Err(Stop::Incomplete), ctl),
                    Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => j += 2,
                    Some(b'u') => {
                        if j + 6 > b.len() {
                            return (Err(Stop::Incomplete), ctl);
                        }
                        if !b[j + 2..j + 6].iter().all(u8::is_ascii_hexdigit) {
                            return (Err(Stop::Invalid(j, "invalid \\u escape in string")), ctl);
                        }
                        j += 6;
                    }
                    Some(_) => return (Err(Stop::Invalid(j, "invalid escape in string")), ctl),
                }
            }
            c => {
                ctl |= c < 0x20;
                j += 1;
            }
        }
    }
}

#[test]
fn strings_end_as_byte_by_byte() {
    let mut s = 0x1234_5678_9abc_def1;
    for round in 0..200_000 {
        // Mostly plain text, so that strings run over several 8-byte words.
        let alphabet: &[u8] = if round % 2 == 0 {
            b"abcdefghijklmnop\"\\u0Ax\x01\x1f \xc3\xa9"
        } else {
            b"abcdefghijklmnopqrstuvwxyz0123456789 :,{}[]\"\\"
        };
        let mut b = vec![b'"'];
        b.extend(random_bytes(&mut s, alphabet, 40));
        let mut ctl = false;
        let got = scan_string_ctl(&b, 0, &mut ctl);
        let (want, want_ctl) = scan_string_by_bytes(&b, 0);
        assert_eq!(got, want, "{b:?}");
        if want.is_ok() {
            assert_eq!(ctl, want_ctl, "{b:?}");
        }
    }
}

#[test]
fn escaped_raw_control_bytes_read_back_as_themselves() {
    // Strings of plain bytes, escapes and raw control bytes, inside an object and an array:
    // escaped, the text parses (serde_json) back to the same strings.
    let pieces: [&str; 7] = ["a", "\u{1}", "\n", "\\\"", "\\\\", "\u{1f}", "é"];
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..5_000 {
        let mut raw = String::new();
        let mut want = String::new();
        for k in 0..(x % 12) as usize {
            xorshift(&mut x);
            let p = pieces[(x >> (k % 50)) as usize % pieces.len()];
            raw.push_str(p);
            want.push_str(match p {
                "\\\"" => "\"",
                "\\\\" => "\\",
                _ => p,
            });
        }
        xorshift(&mut x);
        let text = format!("{{\"k\": \"{raw}\", \"a\": [1, \"{raw}\"]}}");
        let mut out = Vec::new();
        escape_ctl(text.as_bytes(), &mut out);
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["k"], want.as_str(), "{text:?}");
        assert_eq!(v["a"][1], want.as_str(), "{text:?}");
        let has = raw.bytes().any(|c| c < 0x20);
        assert_eq!(first_ctl(text.as_bytes()).is_some(), has, "{text:?}");
    }
}

#[test]
fn same_bytes_equals_slice_equality() {
    use crate::trace::read::swar::same_bytes;
    // Every length to 40 (each path of the word compare and its overlapping last load), with
    // one byte changed at every position, and pairs of different lengths.
    let base: Vec<u8> = (0..40u8).map(|i| b'a' + i % 26).collect();
    let mut differ = 0;
    for n in 0..=40 {
        let a = &base[..n];
        let copy: Vec<u8> = a.to_vec();
        assert!(same_bytes(a, &copy), "{n}");
        for k in 0..n {
            let mut b = a.to_vec();
            b[k] ^= 0x80 >> (k % 8);
            assert_eq!(same_bytes(a, &b), a == b.as_slice(), "{n} {k}");
            differ += usize::from(!same_bytes(a, &b));
        }
        if n > 0 {
            assert!(!same_bytes(a, &base[..n - 1]));
            assert!(!same_bytes(&base[..n - 1], a));
        }
    }
    assert_eq!(differ, 40 * 41 / 2);
}

#[test]
fn any_at_either_visits_every_position_of_the_two_bytes() {
    use crate::trace::read::swar::any_at_either;
    // Bytes next to the two looked for (and 0, 1, 0x80, 0xFF, where a borrow can spill), at
    // every length to 40 and every offset.
    const BYTES: [u8; 9] = [b'K', b'L', b'M', b'N', 0, 1, 0x80, 0xFF, b'a'];
    let mut s = 0x2545_F491_4F6C_DD1Du64;
    let mut found = 0;
    for round in 0..20_000 {
        let n = round % 41;
        let hay: Vec<u8> = (0..n)
            .map(|_| {
                xorshift(&mut s);
                BYTES[(s % 9) as usize]
            })
            .collect();
        let (x, y) = if round % 2 == 0 {
            (b'L', b'M')
        } else {
            (b'M', b'M')
        };
        let want: Vec<usize> = (0..n).filter(|&k| hay[k] == x || hay[k] == y).collect();
        let mut seen = Vec::new();
        assert!(!any_at_either(&hay, x, y, |k| {
            seen.push(k);
            false
        }));
        seen.retain(|&k| hay[k] == x || hay[k] == y);
        assert_eq!(seen, want, "{hay:?}");
        // Stopping at the first `true`: the first position of either byte.
        let mut first = None;
        let hit = any_at_either(&hay, x, y, |k| {
            let ok = hay[k] == x || hay[k] == y;
            if ok {
                first = Some(k);
            }
            ok
        });
        assert_eq!(hit, !want.is_empty());
        assert_eq!(first, want.first().copied());
        found += want.len();
    }
    assert!(found > 50_000, "{found}");
}

#[test]
fn skip_plain16_stops_at_the_first_quote_backslash_or_control_byte() {
    use crate::trace::read::swar::skip_plain16;
    let stop = |c: u8| c == b'"' || c == b'\\' || c < 0x20;
    let mut s = 0x1234_5678_9ABC_DEF1u64;
    let mut next = move || xorshift(&mut s);
    let mut stopped = 0;
    for round in 0..20_000 {
        let n = (next() % 80) as usize;
        // Mostly plain text, a stop byte (or 0x1f, 0x20, 0x7f, 0xff near one) now and then.
        let b: Vec<u8> = (0..n)
            .map(|_| match next() % 40 {
                0 => b'"',
                1 => b'\\',
                2 => (next() % 0x20) as u8,
                3 => [0x20, 0x7f, 0x80, 0xff][(next() % 4) as usize],
                _ => b'a' + (next() % 26) as u8,
            })
            .collect();
        let i = if n == 0 { 0 } else { round % (n + 1) };
        let got = skip_plain16(&b, i);
        // Every byte skipped is plain, and it stops at a stop byte or within 16 of the end.
        assert!(b[i..got].iter().all(|&c| !stop(c)), "{b:?} {i} {got}");
        if got < b.len() && stop(b[got]) {
            stopped += 1;
        } else {
            assert!(b.len() - got < 16, "{b:?} {i} {got}");
        }
    }
    assert!(stopped > 5_000, "{stopped}");
}
