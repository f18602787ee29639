//! Tests of [`super`]: each kernel against the scalar definition, the skim against the
//! validating scanner, and what the skim declines.

use super::*;
use crate::trace::read::json;

/// A small deterministic generator (xorshift).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        crate::testrng::xorshift(&mut self.0)
    }
}

#[test]
fn the_kernel_matches_the_scalar_one() {
    // Besides the classes, bytes that share a nibble with one of them (`|` and `\`, `+` and
    // `[`, 0x19 and tab), which the AVX2 kernel's nibble lookups must not take for it.
    const ALPHABET: &[u8] =
        b"\"\\{}[]:, \t\n\r\x00\x01\x1f\x20\x7f\x80\xff;<zZ0-e.|+Rr,Yy\x19\x1a\x1d\x0b\x0e\xdb\xa2";
    let mut r = Rng(0x9E37_79B9_7F4A_7C15);
    for n in 0..20_000 {
        let b: [u8; 64] = std::array::from_fn(|_| {
            let s = r.next();
            if s.is_multiple_of(3) {
                (s >> 24) as u8
            } else {
                ALPHABET[(s >> 32) as usize % ALPHABET.len()]
            }
        });
        let b = match n {
            0 => [0u8; 64],
            1 => [0xFF; 64],
            _ => b,
        };
        assert_eq!(classify(&b), classify_scalar(&b), "{b:?}");
        assert_eq!(classify_detected(&b), classify_scalar(&b), "{b:?}");
    }
}

#[test]
fn scalar_kernel_by_hand() {
    let mut b = [b'a'; 64];
    b[..12].copy_from_slice(b"{\"k\": [1,\\\t]");
    b[63] = 0x01;
    let m = classify_scalar(&b);
    assert_eq!(m.quote, 1 << 1 | 1 << 3);
    assert_eq!(m.bracket, 1 | 1 << 6 | 1 << 11);
    assert_eq!(m.bad, 1 << 9 | 1 << 63);
    assert_eq!(m.ws, 1 << 10);
}

/// Random valid nested values: the skim ends where the validating scanner does.
fn value(r: &mut Rng, depth: u32, out: &mut Vec<u8>) {
    let pick = if depth > 5 {
        r.next() % 4
    } else {
        r.next() % 7
    };
    let ws = |r: &mut Rng, out: &mut Vec<u8>| {
        for _ in 0..r.next() % 3 {
            out.extend_from_slice([&b" "[..], b"\n    ", b"\t"][(r.next() % 3) as usize]);
        }
    };
    match pick {
        0 => out.extend_from_slice(b"12.5e3"),
        1 => out.extend_from_slice(b"null"),
        2 | 3 => {
            out.push(b'"');
            for _ in 0..r.next() % 90 {
                out.push(b"ab{}[],:x \xc3\xa9"[(r.next() % 12) as usize]);
            }
            out.push(b'"');
        }
        k => {
            let obj = k != 4;
            out.push(if obj { b'{' } else { b'[' });
            ws(r, out);
            for n in 0..r.next() % 6 {
                if n > 0 {
                    out.push(b',');
                    ws(r, out);
                }
                if obj {
                    out.extend_from_slice(b"\"k\":");
                    ws(r, out);
                }
                value(r, depth + 1, out);
                ws(r, out);
            }
            out.push(if obj { b'}' } else { b']' });
        }
    }
}

#[test]
fn skims_where_the_validating_scanner_ends() {
    let mut r = Rng(7);
    let mut taken = 0;
    for _ in 0..5_000 {
        let mut v = Vec::new();
        v.extend_from_slice(&b"   "[..(r.next() % 4) as usize]);
        let at = v.len();
        v.push(b'{');
        v.extend_from_slice(b"\"a\":");
        value(&mut r, 0, &mut v);
        v.push(b'}');
        let end = v.len();
        v.extend_from_slice(b", {\"next\": 1}");
        let want = json::skip_value(&v, at).map(|(e, _)| e);
        assert_eq!(want, Ok(end));
        // Whole, and cut anywhere inside (the window ending there).
        if let Some(e) = skip_nested(&v, at) {
            assert_eq!(e, Ok(end));
            taken += 1;
        }
        assert_eq!(skip_nested_baseline(&v, at), skip_nested(&v, at));
        let cut = at + (r.next() as usize % (end - at));
        assert_eq!(skip_nested(&v[..cut], at), Some(Err(Stop::Incomplete)));
        assert_eq!(
            skip_nested_baseline(&v[..cut], at),
            Some(Err(Stop::Incomplete))
        );
    }
    assert_eq!(taken, 5_000);
}

#[test]
fn the_detected_kernel_skims_as_the_baseline_one() {
    // Random bytes, mostly structural, from every start: same answer, decline included.
    const ALPHABET: &[u8] = b"\"\\{}[]{}[]:, \t\n\x01azzzzzzzzzzzzzzzzzzz";
    let mut r = Rng(99);
    for _ in 0..3_000 {
        let n = (r.next() % 300) as usize;
        let mut v: Vec<u8> = (0..n)
            .map(|_| ALPHABET[(r.next() >> 32) as usize % ALPHABET.len()])
            .collect();
        let open = [b'{', b'['][(r.next() % 2) as usize];
        v.insert(0, open);
        for at in 0..v.len() {
            if matches!(v[at], b'{' | b'[') {
                assert_eq!(
                    skip_nested(&v, at),
                    skip_nested_baseline(&v, at),
                    "{v:?} {at}"
                );
            }
        }
    }
}

#[test]
fn declines_what_it_does_not_check() {
    for (text, why) in [
        (&b"{\"a\\\"b\": 1}"[..], "a backslash"),
        (b"{\"a\x01\": 1}", "a control byte in a string"),
        (b"{\"a\": 1\x02}", "a control byte outside"),
        (b"{\"a\": [1}]", "brackets that do not pair"),
    ] {
        assert_eq!(skip_nested(text, 0), None, "{why}");
    }
    for text in [&b"{\"a\": 1"[..], b"{\"a\": \"}", b"{\"a\": 1\\"] {
        let want = if text.contains(&b'\\') {
            None
        } else {
            Some(Err(Stop::Incomplete))
        };
        assert_eq!(skip_nested(text, 0), want, "{text:?}");
    }
    let deep: Vec<u8> = [vec![b'['; 64], vec![b']'; 64]].concat();
    assert_eq!(skip_nested(&deep, 0), None, "64 deep");
    let ok: Vec<u8> = [vec![b'['; 63], vec![b']'; 63]].concat();
    assert_eq!(skip_nested(&ok, 0), Some(Ok(126)));
    // What follows the value's close, in the same block, is not the value's.
    assert_eq!(skip_nested(b"{\"a\": 1} \x00\\", 0), Some(Ok(8)));
    assert_eq!(skip_nested(b"{\"a\": \"}\"}\n\t", 0), Some(Ok(10)));
}

#[test]
fn the_rest_of_an_object_skims_as_the_whole() {
    // An event whose leading `ph`/`cat`/`name` a peek read, then anything (valid or not, cut
    // or whole): the skim from where the peek stopped answers as the skim from the `{`.
    use crate::trace::read::want::{every_name, Want};
    const W: Want = Want {
        ph: b"X",
        complete_cats: &["cpu_op"],
        named_cats: &["cpu_op"],
        every_cat_named: false,
        names: every_name,
        trust_devices: true,
        name_prefixes: &[],
        needs: crate::trace::read::want::no_needs,
    };
    const ALPHABET: &[u8] = b"\"\\{}[]{}[]:, \t\n\x01azzzzzzzzzzzzzzzzzzz";
    let mut r = Rng(2024);
    // What the skim from the peek's end answered: taken, declined, cut short.
    let (mut taken, mut declined, mut cut_short) = (0, 0, 0);
    for n in 0..6_000 {
        let mut v = Vec::new();
        v.extend_from_slice(
            [
                &b"{\"ph\": \"f\""[..],
                b"{ \"ph\":\"X\" , \"cat\": \"python_function\"",
                b"{\"ph\": \"X\", \"cat\": \"cpu_op\",\n \"name\": \"aten::mm {x} [y]\"",
            ][n % 3],
        );
        if r.next().is_multiple_of(2) {
            v.extend_from_slice(b", \"args\": ");
            value(&mut r, 0, &mut v);
            v.push(b'}');
        } else {
            let k = (r.next() % 200) as usize;
            v.extend((0..k).map(|_| ALPHABET[(r.next() >> 32) as usize % ALPHABET.len()]));
        }
        let (_, j) = W.peek(&v, 0, false).unwrap();
        match skip_rest_of_object(&v, j) {
            Some(Ok(_)) => taken += 1,
            None => declined += 1,
            Some(Err(_)) => cut_short += 1,
        }
        assert_eq!(skip_rest_of_object(&v, j), skip_nested(&v, 0), "{v:?}");
        assert_eq!(
            skip_rest_of_object(&v, j),
            skip_nested_baseline(&v, 0),
            "{v:?}"
        );
        let cut = j + (r.next() as usize % (v.len() - j + 1));
        assert_eq!(
            skip_rest_of_object(&v[..cut], j),
            skip_nested(&v[..cut], 0),
            "{v:?} cut at {cut}"
        );
    }
    // The inputs reach every answer, not only the easy one.
    assert!(
        taken > 1_000 && declined > 1_000 && cut_short > 50,
        "{taken} {declined} {cut_short}"
    );
}

#[cfg(target_arch = "x86_64")]
#[test]
fn the_carry_less_prefix_xor_is_the_shifted_one() {
    if !std::is_x86_feature_detected!("pclmulqdq") {
        return;
    }
    let mut r = Rng(5);
    for n in 0..100_000 {
        let x = match n {
            0 => 0,
            1 => u64::MAX,
            2 => 1 << 63,
            _ => r.next(),
        };
        // SAFETY: the CPU has PCLMULQDQ (checked above).
        let c = unsafe { x86_avx2::prefix_xor_clmul(x) };
        assert_eq!(c, prefix_xor(x), "{x:#x}");
    }
}
