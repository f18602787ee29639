//! Looking keys up in an event's `args` object (already validated, or skimmed by the reader):
//! by walking it token by token ([`each_field`], [`find_in_object`]), or through the memo of
//! `args` layouts ([`find_in_object_memo`], [`find_all_in_object_memo`]: the same answers).

use super::event::Val;
use super::json::{self, Kind};
use super::memo::Memo;
use super::swar::same_bytes;

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
        let val = || Val {
            kind: vkind,
            text: match vkind {
                Kind::Str { .. } => &obj[j + 1..vend - 1],
                _ => &obj[j..vend],
            },
        };
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
