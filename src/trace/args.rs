//! Looking keys up in an event's `args` object (already validated, or skimmed by the reader):
//! by walking it token by token ([`each_field`], [`find_in_object`]), through the memo of
//! `args` layouts ([`find_in_object_memo`], [`find_all_in_object_memo`]: the same answers), or
//! by searching its text for the key ([`find_in_args`]: the same answers for every object that
//! is valid JSON).
//!
//! Why a search (#14): a kernel's `correlation` is its sixth member, after `External id`,
//! `queued`, `device`, `context` and `stream`; the walk recognizes each separator and scans
//! each value before it (~130 instructions a member, 4 % of analyze on the real set). A key
//! with its quotes found by `memchr`'s vector search, with nothing before it that could make it
//! anything but a member key (no bracket, no backslash, an even number of quotes) and a `:`
//! after it, is the member the walk would find.

use memchr::memmem::Finder;

use super::event::Val;
use super::json::{self, Kind};
use super::memo::Memo;
use super::swar::{flat_prefix, same_bytes};

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

/// [`find_in_object_memo`] that first searches `obj` for the key between quotes. Where the text
/// before the first match holds no bracket or backslash and an even number of quotes, the match
/// is a whole string outside every other, at the object's top level; with a `:` after it, it is
/// the first member with that key, and its value is read as the walk reads it. Otherwise
/// (a nested value or an escape before it, or the match is a value) the walk answers. With no
/// match the answer is `None` without a walk: the walk compares keys as written, so a key it
/// finds is in the text between quotes.
///
/// The same answer as [`find_in_object`] for every `obj` that is valid JSON. On one that is not
/// (an `args` the reader skimmed: its tokens are not checked), the search may find a key after
/// a damaged member, where the walk stops at the damage and answers `None`.
pub fn find_in_args<'a>(obj: &'a str, key: &ArgKey, memo: &mut Memo, kind: u8) -> Option<Val<'a>> {
    let b = obj.as_bytes();
    if let Some(finder) = &key.quoted {
        let p = finder.find(b)?;
        if b.first() == Some(&b'{') && flat_prefix(&b[1..p]) {
            let colon = json::skip_ws(b, p + key.key.len() + 2);
            if b.get(colon) == Some(&b':') {
                let j = json::skip_ws(b, colon + 1);
                let (vend, kind) = json::skip_known_value(b, j).ok()?;
                return Some(value(obj, j, vend, kind));
            }
        }
    }
    find_in_object_memo(obj, key.key, memo, kind)
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
