//! Looking keys up in an event's `args` object (already validated, or skimmed by the reader):
//! by walking it token by token ([`each_field`], [`find_in_object`]), through the memo of
//! `args` layouts ([`find_in_object_memo`], [`find_all_in_object_memo`]: the same answers), or
//! by searching its text for the keys ([`find_in_args`], [`find_all_in_args`]: the same answers
//! for every object that is valid JSON).
//!
//! Why a search (#14): a kernel's `correlation` is its sixth member, after `External id`,
//! `queued`, `device`, `context` and `stream`, and a collective's process group its twentieth;
//! the walk recognizes each separator and scans each value before the key (~130 instructions a
//! member: 4 % of analyze on the real set, 13 % of its instructions on the synthetic one). A key
//! with its quotes found by `memchr`'s vector search is the member the walk would find when the
//! text before it is at the object's top level, outside every string, with no backslash
//! (`toplevel.rs`, 16 bytes a step), and a `:` follows it. A key not in the text at all is
//! not in the object: a CPU op's `Input Dims` in a trace taken without shapes costs one search.

use memchr::memmem::Finder;

use super::json::{self, Kind};
use super::memo::Memo;
use super::swar::same_bytes;
use super::toplevel::{KeyAt, TopLevel};
use super::value::Val;

/// Finds `key` among the top-level fields of the (already validated) JSON object `obj`.
pub fn find_in_object<'a>(obj: &'a str, key: &str) -> Option<Val<'a>> {
    let mut found = None;
    each_field(obj, |k, kind, text| {
        if k == key {
            found = Some(Val { kind, text });
            false
        } else {
            true
        }
    });
    found
}

/// [`find_in_object`] taking the stretches between `args` values it has seen before from
/// `memo` ([`super::memo`]), for events of kind `kind`: the same answer.
pub fn find_in_object_memo<'a>(
    obj: &'a str,
    key: &str,
    memo: &mut Memo,
    kind: u8,
) -> Option<Val<'a>> {
    let mut found = None;
    walk_memo(obj, memo, kind, |k, v| {
        if same_bytes(k.as_bytes(), key.as_bytes()) {
            found = Some(v());
        }
        found.is_none()
    });
    found
}

/// A key for [`find_in_args`]: the key as written and a searcher for it between quotes, built
/// once (building one per lookup would cost more than the walk).
pub struct ArgKey {
    key: &'static str,
    /// `None` for a key with a quote or a backslash: looked up by the walk.
    quoted: Option<Finder<'static>>,
}

impl ArgKey {
    pub fn new(key: &'static str) -> ArgKey {
        let plain = !key.bytes().any(|c| c == b'"' || c == b'\\');
        let quoted = plain.then(|| Finder::new(format!("\"{key}\"").as_bytes()).into_owned());
        ArgKey { key, quoted }
    }

    /// The key, as written.
    pub fn key(&self) -> &'static str {
        self.key
    }
}

/// [`find_in_object_memo`] that first searches `obj` for the key between quotes. Where the
/// first match is at the object's top level, outside every string, with no backslash before it
/// (`TopLevel`), and a `:` follows it, it is the first member with that key, and its value is
/// read as the walk reads it. Otherwise (an escape before it, or the match is a value) the
/// walk answers. With no match the answer is `None` without a walk: the walk compares keys as
/// written, so a key it finds is in the text between quotes.
///
/// The same answer as [`find_in_object`] for every `obj` that is valid JSON. On one that is not
/// (an `args` the reader skimmed: its tokens are not checked), the search may find a key after
/// a damaged member, where the walk stops at the damage and answers `None`.
pub fn find_in_args<'a>(obj: &'a str, key: &ArgKey, memo: &mut Memo, kind: u8) -> Option<Val<'a>> {
    match search(obj, key) {
        Search::Absent => None,
        Search::At(j) => value_at(obj, j),
        Search::Walk => find_in_object_memo(obj, key.key, memo, kind),
    }
}

/// [`find_in_args`] for a value read as an integer ([`Val::as_i64`]): the same answer, with
/// a plain integer (what `args` holds for ids and counts) read where it stands.
pub fn find_int_in_args(obj: &str, key: &ArgKey, memo: &mut Memo, kind: u8) -> Option<i64> {
    match search(obj, key) {
        Search::Absent => None,
        Search::At(j) => plain_int(obj.as_bytes(), j).or_else(|| value_at(obj, j)?.as_i64()),
        Search::Walk => find_in_object_memo(obj, key.key, memo, kind)?.as_i64(),
    }
}

/// What the search says of a key in an `args` object.
enum Search {
    /// Not in the text: not a member.
    Absent,
    /// The first member with the key; its value starts at this place.
    At(usize),
    /// The walk must answer (an escape before the key, the key found as a value, a key that
    /// holds a quote or backslash).
    Walk,
}

/// [`find_in_args`]'s search: the key's first place and whether it is a member at the top
/// level, in one pass ([`TopLevel::find_key`]), then the `:` after it.
#[inline(always)]
fn search(obj: &str, key: &ArgKey) -> Search {
    let b = obj.as_bytes();
    let Some(finder) = &key.quoted else {
        return Search::Walk;
    };
    if b.first() != Some(&b'{') {
        return match finder.find(b) {
            Some(_) => Search::Walk,
            None => Search::Absent,
        };
    }
    match TopLevel::find_key(&b[1..], finder) {
        KeyAt::Absent => Search::Absent,
        KeyAt::Top(p) => value_start(b, p + 1, key).map_or(Search::Walk, Search::At),
        KeyAt::Elsewhere => Search::Walk,
    }
}

/// The integer at `b[j]` when it is plain — an optional `-`, 1 to 18 digits with no leading
/// zero, then a `,`, a closing bracket or whitespace: a JSON number [`Val::as_i64`] reads as
/// that value — else `None` (the general path decides). One pass over the digits: taking
/// their run first and then `value::parse_int` over it costs +0.7 % of analyze's
/// instructions.
#[inline(always)]
fn plain_int(b: &[u8], j: usize) -> Option<i64> {
    let neg = b.get(j) == Some(&b'-');
    let first = j + usize::from(neg);
    let mut k = first;
    let mut v: i64 = 0;
    while let Some(&c) = b.get(k) {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            break;
        }
        // A 19th digit: not plain (and `v * 10` may not fit).
        if k - first == 18 {
            return None;
        }
        v = v * 10 + i64::from(d);
        k += 1;
    }
    let n = k - first;
    if n == 0 || (n > 1 && b[first] == b'0') {
        return None;
    }
    match b.get(k) {
        Some(b',' | b'}' | b']' | b' ' | b'\n' | b'\r' | b'\t') => Some(if neg { -v } else { v }),
        _ => None,
    }
}

/// The value of the member whose key (`key` between quotes) starts at `obj[p]`, when `scan`
/// (from the `{`) finds that place at the top level and a `:` follows: `Some(None)` when the
/// value is not readable (the walk stops there too). `None`: the search cannot say.
#[inline]
fn member_at<'a>(
    obj: &'a str,
    p: usize,
    key: &ArgKey,
    scan: &mut TopLevel,
) -> Option<Option<Val<'a>>> {
    if !scan.reaches(&obj.as_bytes()[1..], p - 1) {
        return None;
    }
    value_after_key(obj, p, key)
}

/// The value of the member whose key (`key` between quotes) starts at `obj[p]`, known to be
/// at the top level: `None` when no `:` follows (the search cannot say), `Some(None)` when
/// the value is not readable (the walk stops there too).
#[inline(always)]
fn value_after_key<'a>(obj: &'a str, p: usize, key: &ArgKey) -> Option<Option<Val<'a>>> {
    value_start(obj.as_bytes(), p, key).map(|j| value_at(obj, j))
}

/// Where the value of the member whose key (`key` between quotes) starts at `b[p]` starts:
/// after the `:` that follows the key (`None` when none does).
#[inline(always)]
fn value_start(b: &[u8], p: usize, key: &ArgKey) -> Option<usize> {
    let colon = json::skip_ws(b, p + key.key.len() + 2);
    (b.get(colon) == Some(&b':')).then(|| json::skip_ws(b, colon + 1))
}

/// The value at `obj[j]`, `None` when it is not readable (the walk stops there too).
#[inline(always)]
fn value_at(obj: &str, j: usize) -> Option<Val<'_>> {
    json::skip_known_value(obj.as_bytes(), j)
        .ok()
        .map(|(vend, kind)| value(obj, j, vend, kind))
}

/// [`find_all_in_object_memo`] that searches for each key first, as [`find_in_args`] does: the
/// matches taken in the order they stand, with one scan of the text before them. When one of
/// them cannot be taken as a member (or a key has a quote or backslash, or there are more
/// than eight), the walk answers for all.
pub fn find_all_in_args<'a>(
    obj: &'a str,
    keys: &[ArgKey],
    memo: &mut Memo,
    kind: u8,
    out: &mut [Option<Val<'a>>],
) {
    out.fill(None);
    let b = obj.as_bytes();
    let n = keys.len().min(out.len());
    let mut at = [(0usize, 0usize); 8];
    let mut found = 0;
    let searchable =
        n <= at.len() && b.first() == Some(&b'{') && keys.iter().all(|k| k.quoted.is_some());
    if searchable {
        for (k, key) in keys[..n].iter().enumerate() {
            if let Some(p) = key.quoted.as_ref().and_then(|f| f.find(b)) {
                at[found] = (p, k);
                found += 1;
            }
        }
        at[..found].sort_unstable();
        let mut scan = TopLevel::default();
        let mut all = true;
        for &(p, k) in &at[..found] {
            match member_at(obj, p, &keys[k], &mut scan) {
                // An unreadable value: the walk stops there, the keys after it unanswered.
                Some(None) => break,
                Some(v) => out[k] = v,
                None => {
                    all = false;
                    break;
                }
            }
        }
        if all {
            return;
        }
    }
    // Rare (an escape before a key): the allocation does not matter.
    let names: Vec<&str> = keys.iter().map(|k| k.key).collect();
    find_all_in_object_memo(obj, &names, memo, kind, out);
}

/// The value `obj[j..vend]` of kind `kind` as the lookups give it (a string without its quotes).
#[inline(always)]
fn value(obj: &str, j: usize, vend: usize, kind: Kind) -> Val<'_> {
    Val {
        kind,
        text: match kind {
            Kind::Str { .. } => &obj[j + 1..vend - 1],
            _ => &obj[j..vend],
        },
    }
}

/// [`find_in_object_memo`] for several keys in one walk: `out[n]` becomes what
/// `find_in_object_memo(obj, keys[n], ..)` answers (the first field with that key, `None`
/// when there is none before the end or before what the walk cannot read). The walk stops
/// once every key is found.
pub fn find_all_in_object_memo<'a>(
    obj: &'a str,
    keys: &[&str],
    memo: &mut Memo,
    kind: u8,
    out: &mut [Option<Val<'a>>],
) {
    out.fill(None);
    let mut left = keys.len().min(out.len());
    if left == 0 {
        return;
    }
    walk_memo(obj, memo, kind, |k, v| {
        for (want, slot) in keys.iter().zip(out.iter_mut()) {
            if slot.is_none() && same_bytes(k.as_bytes(), want.as_bytes()) {
                *slot = Some(v());
                left -= 1;
            }
        }
        left > 0
    });
}

/// Calls `f(key, value)` for each top-level field of `obj` (already validated or skimmed), in
/// order, while it returns true; stops early, as [`each_field`] does, at what it cannot read.
/// The value is made only when asked for. The stretches between values come from `memo` when
/// they match ([`super::memo`]).
#[inline(always)]
fn walk_memo<'a>(
    obj: &'a str,
    memo: &mut Memo,
    kind: u8,
    mut f: impl FnMut(&str, &dyn Fn() -> Val<'a>) -> bool,
) {
    let b = obj.as_bytes();
    let mut from = 1;
    let mut k = 0;
    loop {
        let (kr, j) = match memo.matches(b, from, kind, k) {
            Some(h) => (h.key, json::skip_ws(b, h.value)),
            None => {
                // As `each_field` walks: an optional ',' after a value, then a key.
                let mut j = json::skip_ws(b, from);
                if k > 0 && b.get(j) == Some(&b',') {
                    j = json::skip_ws(b, j + 1);
                }
                if b.get(j) != Some(&b'"') {
                    return;
                }
                let Ok((kend, _)) = json::scan_known_string(b, j) else {
                    return;
                };
                let v = json::skip_ws(b, json::skip_ws(b, kend) + 1);
                memo.record(b, from, (j + 1, kend - 1), v, kind, k);
                ((j + 1, kend - 1), v)
            }
        };
        let Ok((vend, vkind)) = json::skip_known_value(b, j) else {
            return;
        };
        let val = || value(obj, j, vend, vkind);
        if !f(&obj[kr.0..kr.1], &val) {
            return;
        }
        from = vend;
        k += 1;
    }
}

/// Calls `f(key, kind, text)` for every top-level field of a validated object, until it
/// returns false. Keys are given as written (escapes undecoded).
pub fn each_field<'a>(obj: &'a str, mut f: impl FnMut(&'a str, Kind, &'a str) -> bool) {
    let b = obj.as_bytes();
    let mut j = json::skip_ws(b, 1);
    while b.get(j) == Some(&b'"') {
        let Ok((kend, _)) = json::scan_known_string(b, j) else {
            return;
        };
        let key = &obj[j + 1..kend - 1];
        j = json::skip_ws(b, kend) + 1;
        j = json::skip_ws(b, j);
        let Ok((vend, kind)) = json::skip_known_value(b, j) else {
            return;
        };
        let text = match kind {
            Kind::Str { .. } => &obj[j + 1..vend - 1],
            _ => &obj[j..vend],
        };
        if !f(key, kind, text) {
            return;
        }
        j = json::skip_ws(b, vend);
        if b.get(j) == Some(&b',') {
            j = json::skip_ws(b, j + 1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::memo::alike::Objects;
    use super::*;

    /// [`find_in_args`] in two passes, as it was written first: the search for the key, then
    /// the scan of the text before the match ([`TopLevel::reaches`]).
    fn find_in_args_two_passes<'a>(
        obj: &'a str,
        key: &ArgKey,
        memo: &mut Memo,
        kind: u8,
    ) -> Option<Val<'a>> {
        let b = obj.as_bytes();
        if let Some(finder) = &key.quoted {
            let p = finder.find(b)?;
            if b.first() == Some(&b'{') {
                if let Some(v) = member_at(obj, p, key, &mut TopLevel::default()) {
                    return v;
                }
            }
        }
        find_in_object_memo(obj, key.key, memo, kind)
    }

    /// Integers of 1 to 25 digits, signed and not: [`find_int_in_args`] answers as
    /// [`find_in_args`] read by [`Val::as_i64`], at the edges of the plain reading (18 digits)
    /// and of `i64`. Found by the `event` fuzz target (CI, 2026-12-03): a 19th digit multiplied
    /// an 18-digit value by 10 before the length check, an overflow where it is checked.
    #[test]
    fn long_integers_read_as_the_general_path_reads_them() {
        let key = ArgKey::new("correlation");
        let mut memo = Memo::default();
        let mut numbers: Vec<String> = (1..=25).map(|n| "9".repeat(n)).collect();
        numbers.extend((1..=25).map(|n| format!("1{}", "0".repeat(n - 1))));
        numbers.extend(["9223372036854775807", "9223372036854775808"].map(String::from));
        for n in numbers {
            for text in [n.clone(), format!("-{n}")] {
                let obj = format!("{{\"stream\": 7, \"correlation\": {text}, \"device\": 0}}");
                let general = find_in_args(&obj, &key, &mut memo, b'l').and_then(|v| v.as_i64());
                let int = find_int_in_args(&obj, &key, &mut memo, b'l');
                assert_eq!(int, general, "{text}");
                assert_eq!(int, text.parse::<i64>().ok(), "{text}");
            }
        }
    }

    /// `args` objects written alike, varied and damaged now and then, looked up with one memo
    /// per run and without: the same value (kind and text) for every key asked.
    #[test]
    fn the_args_memo_answers_as_find_in_object() {
        let keys: &[&str] = &[
            "External id",
            "correlation",
            "stream",
            "cbid",
            "a\\\"b",
            "Input Dims",
        ];
        // The first four have no quote or backslash: searched.
        let mut gen = Objects {
            s: 0x2545_f491_4f6c_dd1d,
            spaces: &[" ", "", "\n      ", "  "],
            keys,
            values: &[
                "13",
                "-2.5",
                // Integers plain and not: as `Val::as_i64` reads them.
                "0",
                "-0",
                "-7",
                "007",
                "123456789012345678",
                "1234567890123456789",
                "123456789012345678901",
                "12e3",
                "1.0",
                "\"x\"",
                "[[1, 2], [3]]",
                "{\"a\": 1}",
                "null",
                "\"q\\\"r\"",
                // Wanted keys inside a nested value and a string: not members.
                "{\"correlation\": 9, \"stream\": [\"cbid\"]}",
                "\"correlation\"",
            ],
        };
        let mut memo = Memo::default();
        let mut memo_all = Memo::default();
        let mut memo_found = Memo::default();
        let found_keys: Vec<ArgKey> = keys.iter().map(|&k| ArgKey::new(k)).collect();
        let (mut valid, mut differed) = (0, 0);
        let some: Vec<&str> = keys.iter().rev().step_by(2).copied().collect();
        for _ in 0..60_000 {
            let mut b = gen.object();
            let r = gen.next();
            if r.is_multiple_of(4) {
                gen.damage(&mut b, 1, b",:{}[]\" \\a1");
            }
            let obj = std::str::from_utf8(&b).unwrap();
            let kind = b"lep"[(r >> 50) as usize % 3];
            let is_valid = serde_json::from_str::<serde_json::Value>(obj).is_ok();
            valid += usize::from(is_valid);
            // What the reader hands over: valid JSON, or an object the skim took (brackets
            // matched, no backslash; its tokens unchecked).
            let skimmed = matches!(
                crate::trace::read::skim::skip_nested(&b, 0), Some(Ok(end)) if end == b.len());
            for (key, found_key) in keys.iter().zip(&found_keys) {
                let plain = find_in_object(obj, key).map(|v| (format!("{:?}", v.kind), v.text));
                let memod = find_in_object_memo(obj, key, &mut memo, kind)
                    .map(|v| (format!("{:?}", v.kind), v.text));
                assert_eq!(plain, memod, "{obj:?} {key:?}");
                // Searched: the same on valid JSON; on damaged text the skim took, at most a
                // key found after damage the walk stops at.
                let found = find_in_args(obj, found_key, &mut memo_found, kind)
                    .map(|v| (format!("{:?}", v.kind), v.text));
                // On every text, valid or not: what the search and then the scan answer.
                let two = find_in_args_two_passes(obj, found_key, &mut memo_found, kind)
                    .map(|v| (format!("{:?}", v.kind), v.text));
                assert_eq!(found, two, "{obj:?} {key:?} (one pass)");
                let int = find_int_in_args(obj, found_key, &mut memo_found, kind);
                let int_two = find_in_args_two_passes(obj, found_key, &mut memo_found, kind)
                    .and_then(|v| v.as_i64());
                assert_eq!(int, int_two, "{obj:?} {key:?} (integer)");
                if is_valid || (skimmed && plain.is_some()) {
                    assert_eq!(plain, found, "{obj:?} {key:?} (searched)");
                } else if skimmed && found.is_some() {
                    differed += 1;
                }
            }
            // Searched for all at once (some keys searchable, and all of them).
            for ks in [&found_keys[..], &found_keys[..4]] {
                let mut out = vec![None; ks.len()];
                find_all_in_args(obj, ks, &mut memo_found, kind, &mut out);
                for (key, got) in ks.iter().zip(&out) {
                    let plain =
                        find_in_object(obj, key.key()).map(|v| (format!("{:?}", v.kind), v.text));
                    let got = got.map(|v| (format!("{:?}", v.kind), v.text));
                    if is_valid || (skimmed && plain.is_some()) {
                        assert_eq!(plain, got, "{obj:?} {:?} (all searched)", key.key());
                    }
                }
            }
            // All keys, and half of them in another order, each in one walk.
            for ks in [keys, &some[..]] {
                let mut out = vec![None; ks.len()];
                find_all_in_object_memo(obj, ks, &mut memo_all, kind, &mut out);
                for (key, got) in ks.iter().zip(&out) {
                    let plain = find_in_object(obj, key).map(|v| (format!("{:?}", v.kind), v.text));
                    let got = got.map(|v| (format!("{:?}", v.kind), v.text));
                    assert_eq!(plain, got, "{obj:?} {key:?} of {ks:?}");
                }
            }
        }
        // Both kinds of object were met, and the search did find keys past damage.
        assert!(
            valid > 20_000 && differed > 0,
            "{valid} valid, {differed} differed"
        );
    }
}
