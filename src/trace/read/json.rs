//! A small validating JSON scanner over byte windows, in the manner of Perfetto's JSON tokenizer:
//! it finds value boundaries without building a tree, so one pass both validates an event and
//! indexes it (the top-level fields of an object: [`super::object`]). Positions are indices into
//! the window; the reader turns them into file offsets. Running off the end of the window is
//! `Incomplete` (read more, or the input is truncated), never an error of its own
//! ([`super::stop`]).
//!
//! Why not serde_json for this: serde_json parses a value, but it cannot tell where the next
//! event starts in a partly-read buffer, nor say at which byte a damaged file stops being
//! readable while keeping what came before. We still use serde_json for the small header values.
//!
//! One leniency: a raw control byte (U+0000–U+001F) inside a string, which JSON forbids, does
//! not stop the scan. It is flagged instead ([`Field::ctl`], `scan_string_ctl`) so that a
//! writer copying raw text can escape it with [`escape_ctl`](super::escape::escape_ctl): what we write is always valid
//! JSON. The common byte (above `"`, not `\`) is handled as cheaply as before; the whole
//! check adds under 1 % to the reader's instruction count (callgrind, `ls --count` of a synth
//! rank).
//!
//! The commonest cases are taken inline and a word at a time (#14): whitespace runs 16 bytes
//! at a time and strings 8 bytes at a time (`swar.rs`), plain numbers and short strings
//! without the general dispatch; each falls back to the byte loop, whose answer is then the one
//! given (`json_tests.rs` checks every fast path against it on random input).
//!
//! The scanner of values, what it calls a value ([`Kind`]) and a field ([`Field`]); its tests are
//! in `json_tests.rs`, the escaping of what is written out in [`super::escape`] (re-exported
//! here).

use super::stop::{Scan, Stop};

/// What kind of value a field holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A string; the field's value range is the text between the quotes.
    Str {
        escaped: bool,
    },
    Num,
    Obj,
    Arr,
    Bool,
    Null,
}

/// One `"key": value` pair of an object, as ranges into the scanned slice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field {
    pub key: (u32, u32),
    pub val: (u32, u32),
    pub kind: Kind,
    /// The key or the value holds a raw control byte (U+0000–U+001F) inside a string, at any
    /// depth: the raw text is not valid JSON until [`escape_ctl`](super::escape::escape_ctl) has escaped it.
    pub ctl: bool,
}

impl Field {
    pub fn key<'a>(&self, b: &'a [u8]) -> &'a [u8] {
        &b[self.key.0 as usize..self.key.1 as usize]
    }
    pub fn val<'a>(&self, b: &'a [u8]) -> &'a [u8] {
        &b[self.val.0 as usize..self.val.1 as usize]
    }
    /// Where the value starts (its opening quote for strings).
    pub fn val_start(&self) -> usize {
        match self.kind {
            Kind::Str { .. } => self.val.0 as usize - 1,
            _ => self.val.0 as usize,
        }
    }
    /// The value exactly as written, quotes included for strings.
    pub fn raw_val<'a>(&self, b: &'a [u8]) -> &'a [u8] {
        match self.kind {
            Kind::Str { .. } => &b[self.val.0 as usize - 1..self.val.1 as usize + 1],
            _ => self.val(b),
        }
    }
}

const MAX_DEPTH: usize = 512;

/// Skips JSON whitespace from `b[i]`. Most calls find none or one space; the indentation of
/// pretty-printed traces (`"\n    "`) is taken 16 bytes at a time.
#[inline(always)]
pub(crate) fn skip_ws(b: &[u8], i: usize) -> usize {
    match b.get(i) {
        Some(&c) if c > b' ' => i,
        Some(b' ') if b.get(i + 1).is_some_and(|&c| c > b' ') => i + 1,
        Some(_) => super::swar::skip_ws_run(b, i),
        None => i,
    }
}

/// `b[i]` is the opening quote. Returns the index after the closing quote and whether the
/// string holds escapes.
#[inline]
#[doc(hidden)] // not API: for the fuzz targets/benches
pub fn scan_string(b: &[u8], i: usize) -> Scan<(usize, bool)> {
    scan_string_ctl(b, i, &mut false)
}

/// [`scan_string`] that also sets `*ctl` when the string holds a raw control byte.
#[inline]
pub(crate) fn scan_string_ctl(b: &[u8], i: usize, ctl: &mut bool) -> Scan<(usize, bool)> {
    let mut j = i + 1;
    let mut escaped = false;
    // Plain text one 8-byte word at a time (SWAR): keys and most names end within a few
    // words. At the first quote the string ends; at a backslash or a control byte, or near
    // the window's end, the loop below takes over from that word.
    while let Some(w) = b.get(j..j + 8) {
        let (quote, special) = super::swar::word_masks(w);
        let m = quote | special;
        if m == 0 {
            // Longer than a word: the rest of a long run a vector at a time.
            j = super::swar::skip_plain16(b, j + 8);
            continue;
        }
        let t = m.trailing_zeros();
        if quote & (1u64 << t) != 0 {
            return Ok((j + t as usize / 8 + 1, false));
        }
        j += t as usize / 8;
        break;
    }
    loop {
        let Some(k) = memchr::memchr2(b'"', b'\\', &b[j.min(b.len())..]) else {
            return Err(Stop::Incomplete);
        };
        let p = j + k;
        *ctl |= has_ctl(&b[j..p]);
        if b[p] == b'"' {
            return Ok((p + 1, escaped));
        }
        escaped = true;
        let Some(&c) = b.get(p + 1) else {
            return Err(Stop::Incomplete);
        };
        match c {
            b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => j = p + 2,
            b'u' => {
                if p + 6 > b.len() {
                    return Err(Stop::Incomplete);
                }
                if !b[p + 2..p + 6].iter().all(u8::is_ascii_hexdigit) {
                    return Err(Stop::Invalid(p, "invalid \\u escape in string"));
                }
                j = p + 6;
            }
            _ => return Err(Stop::Invalid(p, "invalid escape in string")),
        }
    }
}

/// [`scan_string_ctl`] with its commonest case, a plain string of at most 7 bytes (most keys
/// and many values), taken inline.
#[inline(always)]
pub(super) fn scan_string_inline(b: &[u8], i: usize, ctl: &mut bool) -> Scan<(usize, bool)> {
    if let Some(end) = b.get(i + 1..i + 9).and_then(super::swar::short_string_end) {
        return Ok((i + end + 2, false));
    }
    scan_string_ctl(b, i, ctl)
}

/// Whether `s` holds a byte below 0x20 (written so that it vectorizes: no early exit).
#[inline]
fn has_ctl(s: &[u8]) -> bool {
    s.iter().fold(0u8, |acc, &c| acc | u8::from(c < 0x20)) != 0
}

/// `b[i]` starts a number. Returns the index after it.
pub(crate) fn scan_number(b: &[u8], i: usize) -> Scan<usize> {
    let mut j = i;
    let at = |j: usize| b.get(j).copied();
    if at(j) == Some(b'-') {
        j += 1;
    }
    match at(j) {
        None => return Err(Stop::Incomplete),
        Some(b'0') => j += 1,
        Some(b'1'..=b'9') => {
            while matches!(at(j), Some(b'0'..=b'9')) {
                j += 1;
            }
        }
        Some(b'I') => return Err(Stop::Invalid(i, "-Infinity is not valid JSON")),
        Some(_) => return Err(Stop::Invalid(i, "invalid number")),
    }
    if at(j) == Some(b'.') {
        j += 1;
        let s = j;
        while matches!(at(j), Some(b'0'..=b'9')) {
            j += 1;
        }
        if j == s {
            return if j == b.len() {
                Err(Stop::Incomplete)
            } else {
                Err(Stop::Invalid(i, "invalid number"))
            };
        }
    }
    if matches!(at(j), Some(b'e' | b'E')) {
        j += 1;
        if matches!(at(j), Some(b'+' | b'-')) {
            j += 1;
        }
        let s = j;
        while matches!(at(j), Some(b'0'..=b'9')) {
            j += 1;
        }
        if j == s {
            return if j == b.len() {
                Err(Stop::Incomplete)
            } else {
                Err(Stop::Invalid(i, "invalid number"))
            };
        }
    }
    match at(j) {
        // A number may go on in the next read.
        None => Err(Stop::Incomplete),
        Some(b',' | b'}' | b']' | b' ' | b'\n' | b'\r' | b'\t') => Ok(j),
        Some(_) => Err(Stop::Invalid(j, "unexpected character after number")),
    }
}

/// [`scan_number`] with its commonest case, `[-]digits[.digits]` followed by a delimiter,
/// taken inline; anything else (an exponent, a leading zero, the window's end) goes to
/// [`scan_number`], whose answer is then the one given.
#[inline(always)]
fn scan_number_inline(b: &[u8], i: usize) -> Scan<usize> {
    let first = i + usize::from(b.get(i) == Some(&b'-'));
    let mut j = super::swar::digits_end(b, first);
    if j == first || (j > first + 1 && b[first] == b'0') {
        return scan_number(b, i);
    }
    if b.get(j) == Some(&b'.') {
        j += 1;
        let s = j;
        j = super::swar::digits_end(b, j);
        if j == s {
            return scan_number(b, i);
        }
    }
    match b.get(j) {
        Some(b',' | b'}' | b']' | b' ' | b'\n' | b'\r' | b'\t') => Ok(j),
        _ => scan_number(b, i),
    }
}

fn scan_literal(b: &[u8], i: usize, word: &'static [u8]) -> Scan<usize> {
    let end = i + word.len();
    let have = &b[i..end.min(b.len())];
    if !word.starts_with(have) {
        return Err(Stop::Invalid(i, "invalid literal"));
    }
    if end > b.len() {
        return Err(Stop::Incomplete);
    }
    Ok(end)
}

/// Skips one value starting at `b[i]` (no leading whitespace), validating it.
/// Returns the index after it and its kind.
pub(crate) fn skip_value(b: &[u8], i: usize) -> Scan<(usize, Kind)> {
    skip_value_depth(b, i, 0, &mut false)
}

/// [`skip_value`] that also sets `*ctl` when a string in the value holds a raw control byte.
pub(crate) fn skip_value_ctl(b: &[u8], i: usize, ctl: &mut bool) -> Scan<(usize, Kind)> {
    skip_value_depth(b, i, 0, ctl)
}

fn skip_value_depth(b: &[u8], i: usize, depth: usize, ctl: &mut bool) -> Scan<(usize, Kind)> {
    let Some(&c) = b.get(i) else {
        return Err(Stop::Incomplete);
    };
    match c {
        b'"' => scan_string_ctl(b, i, ctl).map(|(e, escaped)| (e, Kind::Str { escaped })),
        b'{' | b'[' => {
            if depth >= MAX_DEPTH {
                return Err(Stop::Invalid(i, "nesting too deep"));
            }
            let close = if c == b'{' { b'}' } else { b']' };
            let mut j = skip_ws(b, i + 1);
            if b.get(j) == Some(&close) {
                return Ok((j + 1, if c == b'{' { Kind::Obj } else { Kind::Arr }));
            }
            loop {
                if c == b'{' {
                    match b.get(j) {
                        None => return Err(Stop::Incomplete),
                        Some(b'"') => {}
                        Some(_) => return Err(Stop::Invalid(j, "expected a string key")),
                    }
                    j = skip_ws(b, scan_string_ctl(b, j, ctl)?.0);
                    match b.get(j) {
                        None => return Err(Stop::Incomplete),
                        Some(b':') => j = skip_ws(b, j + 1),
                        Some(_) => return Err(Stop::Invalid(j, "expected ':'")),
                    }
                }
                j = skip_ws(b, skip_value_depth(b, j, depth + 1, ctl)?.0);
                match b.get(j) {
                    None => return Err(Stop::Incomplete),
                    Some(b',') => j = skip_ws(b, j + 1),
                    Some(&x) if x == close => {
                        return Ok((j + 1, if c == b'{' { Kind::Obj } else { Kind::Arr }))
                    }
                    Some(_) => {
                        return Err(Stop::Invalid(
                            j,
                            if c == b'{' {
                                "expected ',' or '}'"
                            } else {
                                "expected ',' or ']'"
                            },
                        ))
                    }
                }
            }
        }
        b'-' | b'0'..=b'9' => scan_number(b, i).map(|e| (e, Kind::Num)),
        b't' => scan_literal(b, i, b"true").map(|e| (e, Kind::Bool)),
        b'f' => scan_literal(b, i, b"false").map(|e| (e, Kind::Bool)),
        b'n' => scan_literal(b, i, b"null").map(|e| (e, Kind::Null)),
        b'N' => Err(Stop::Invalid(i, "NaN is not valid JSON")),
        b'I' => Err(Stop::Invalid(i, "Infinity is not valid JSON")),
        _ => Err(Stop::Invalid(i, "unexpected character")),
    }
}

/// A value inside an object at `depth`, the common ones first, as `skip_value_depth` would
/// take them; nested values are skimmed when `skim` ([`super::skim`]).
#[inline(always)]
pub(super) fn value_inline(
    b: &[u8],
    j: usize,
    skim: bool,
    depth: usize,
    ctl: &mut bool,
) -> Scan<(usize, Kind)> {
    match b.get(j) {
        Some(b'"') => {
            let (e, escaped) = scan_string_inline(b, j, ctl)?;
            Ok((e, Kind::Str { escaped }))
        }
        Some(b'-' | b'0'..=b'9') => Ok((scan_number_inline(b, j)?, Kind::Num)),
        Some(&c @ (b'{' | b'[')) if skim => match super::skim::skip_nested(b, j) {
            Some(end) => Ok((end?, if c == b'{' { Kind::Obj } else { Kind::Arr })),
            None => skip_value_depth(b, j, depth, ctl),
        },
        _ => skip_value_depth(b, j, depth, ctl),
    }
}

/// [`skip_value`] for a value already validated or skimmed (an event's `args` and what it
/// holds): the same end and kind, taking the common values inline and skimming nested ones.
#[inline]
pub(crate) fn skip_known_value(b: &[u8], i: usize) -> Scan<(usize, Kind)> {
    value_inline(b, i, true, 1, &mut false)
}

/// [`scan_string`] with the short plain case inline.
#[inline]
pub(crate) fn scan_known_string(b: &[u8], i: usize) -> Scan<(usize, bool)> {
    scan_string_inline(b, i, &mut false)
}

#[cfg(test)]
#[path = "json_tests.rs"]
mod tests;
