//! The top-level fields of an event's `args` object as the merge rewrites them, found without
//! validating the object a second time.
//!
//! The write pass reads with [`crate::trace::Nested::Validate`]: by the time an event reaches
//! [`super::rewrite`], every byte of its `args` has been checked, and the reader has kept the
//! members it found doing so ([`crate::trace::Event::arg_fields`], [`crate::trace::read::object`]);
//! [`Arg::of_field`] views one of them. For an event without them (one scanned on its own),
//! [`each_arg`] walks the object again, only finding the boundaries: the end of a string with
//! the scanner's own string scan (`json::scan_known_string`, 8 bytes at a time), a nested
//! value with the 64-byte-block [`crate::trace::read::skim::skip_nested`] (the validating scanner
//! when the skim declines), a number or literal by the byte that ends it. On a valid object it
//! gives exactly what the validating [`crate::trace::read::args::each_field`] gives
//! (tests/merge_args.rs compares the three on every `args` object of the real fixtures); on
//! anything else it stops early and never panics.

use crate::trace::read::json::{self, Field, Kind};
use crate::trace::read::skim;

/// What kind of value an `args` field holds, as far as the rewrite cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgKind {
    /// A string: the value given is the text between the quotes, escapes as written.
    Str,
    /// A number: the value given is its text.
    Num,
    /// An object, an array, `true`, `false` or `null`: the value given is its text.
    Other,
}

/// One top-level field of an `args` object.
#[derive(Debug, Clone, Copy)]
pub struct Arg<'a> {
    /// The key as written, quotes included.
    pub quoted_key: &'a [u8],
    pub kind: ArgKind,
    /// The value as written, quotes included for a string.
    pub raw_val: &'a [u8],
}

impl<'a> Arg<'a> {
    /// A member the reader found ([`crate::trace::Event::arg_fields`]); `raw`: the event's
    /// text, which the field's ranges index.
    #[inline]
    pub fn of_field(f: &Field, raw: &'a [u8]) -> Self {
        Arg {
            quoted_key: &raw[f.key.0 as usize - 1..f.key.1 as usize + 1],
            kind: match f.kind {
                Kind::Str { .. } => ArgKind::Str,
                Kind::Num => ArgKind::Num,
                _ => ArgKind::Other,
            },
            raw_val: f.raw_val(raw),
        }
    }

    /// The key's text between its quotes, escapes as written.
    pub fn key(&self) -> &'a [u8] {
        self.quoted_key
            .get(1..self.quoted_key.len().saturating_sub(1))
            .unwrap_or_default()
    }

    /// The value's text: between the quotes for a string, else as written.
    pub fn val(&self) -> &'a [u8] {
        match self.kind {
            ArgKind::Str => self
                .raw_val
                .get(1..self.raw_val.len() - 1)
                .unwrap_or_default(),
            _ => self.raw_val,
        }
    }
}

/// Calls `f` with each top-level field of `obj`, a JSON object (`{` first) already validated.
pub fn each_arg<'a>(obj: &'a [u8], mut f: impl FnMut(Arg<'a>)) {
    let b = obj;
    let mut j = json::skip_ws(b, 1);
    while b.get(j) == Some(&b'"') {
        let Ok((kend, _)) = json::scan_known_string(b, j) else {
            return;
        };
        let quoted_key = &b[j..kend];
        j = json::skip_ws(b, kend);
        if b.get(j) != Some(&b':') {
            return;
        }
        j = json::skip_ws(b, j + 1);
        let Some((vend, kind)) = value_end(b, j) else {
            return;
        };
        f(Arg {
            quoted_key,
            kind,
            raw_val: &b[j..vend],
        });
        j = json::skip_ws(b, vend);
        if b.get(j) == Some(&b',') {
            j = json::skip_ws(b, j + 1);
        }
    }
}

/// A JSON integer's text as `i64` (what `str::parse::<i64>` gives on it, without the UTF-8
/// check): `None` for a fraction, an exponent, an overflow or a leading `+` (not JSON).
pub fn parse_i64(b: &[u8]) -> Option<i64> {
    if b.first() == Some(&b'+') {
        return None;
    }
    crate::trace::read::value::parse_int(b)
}

/// The index after the value starting at `b[i]`, and its kind.
fn value_end(b: &[u8], i: usize) -> Option<(usize, ArgKind)> {
    match *b.get(i)? {
        b'"' => Some((json::scan_known_string(b, i).ok()?.0, ArgKind::Str)),
        b'{' | b'[' => {
            let end = match skim::skip_nested(b, i) {
                Some(Ok(end)) => end,
                // Declined (a backslash, a control byte, …) or cut short: the validating
                // scanner finds the end.
                _ => json::skip_value(b, i).ok()?.0,
            };
            Some((end, ArgKind::Other))
        }
        c => {
            let len = b[i..]
                .iter()
                .position(|&c| matches!(c, b',' | b'}' | b']' | b' ' | b'\n' | b'\r' | b'\t'))
                .unwrap_or(b.len() - i);
            let kind = if c == b'-' || c.is_ascii_digit() {
                ArgKind::Num
            } else {
                ArgKind::Other
            };
            (len > 0).then_some((i + len, kind))
        }
    }
}
