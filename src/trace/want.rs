//! Which events a reader hands over ([`super::reader::Nested::SkimOnly`]), and the peek that
//! decides it from an event's first bytes so the others are skimmed whole (#14).
//!
//! A consumer such as analyze reads only some kinds of events: complete events (`ph` `X`) of a
//! few categories. A Kineto trace is a third flow events (`ph` `s`/`f`), and profiles taken
//! with Python stacks are mostly `python_function`; decoding their fields (times, ids, UTF-8)
//! is work nobody reads. Kineto writes `ph` first and, for complete events, `cat` second
//! (`libkineto`'s `output_json.cpp`), so [`Want::peek`] reads those two values where they stand and
//! the reader skims an unwanted event a block at a time ([`super::skim::skip_nested`]): its
//! brackets, strings and control bytes are checked, its tokens are not, and it is counted in
//! [`super::reader::ReadReport::events`] but not handed over.
//!
//! What is handed over does not depend on the layout: an event whose first keys are not `ph`
//! (and `cat`), or one the skim declines, is scanned and decoded in full and then filtered by
//! its decoded `ph` and `cat` ([`Want::wants`], on the same raw text the peek reads). The only
//! difference is for an event with a key twice (JSON leaves its meaning open; Kineto writes
//! none): the peek takes the first `ph`/`cat`, the decoder the last.
//!
//! A merged trace is read whole from its first event whose `pid` carries a rank label
//! (`"[TP00-DP00] 0"`, as `rankprof merge` writes them, metadata first): a consumer that
//! splits it by label then sees every event of every label, and its per-label counts stay
//! exact.

/// The events a consumer reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Want {
    /// The `ph` values (first byte) handed over.
    pub ph: &'static [u8],
    /// For complete events (`ph` `X`): the `cat` values handed over, as written (escapes not
    /// decoded).
    pub complete_cats: &'static [&'static str],
}

impl Want {
    /// Whether an event with this `ph` (first byte) and `cat` (raw) is handed over.
    #[inline]
    pub fn wants(&self, ph: u8, cat: &[u8]) -> bool {
        // A length test and a short byte loop per name, no call to `memcmp`.
        let same = |c: &&str| c.len() == cat.len() && c.bytes().zip(cat).all(|(a, &b)| a == b);
        self.ph.contains(&ph) && (ph != b'X' || self.complete_cats.iter().any(same))
    }

    /// From the bytes at `b[i]` (an event's `{`): `Some(false)` when its leading `ph` (and,
    /// for `X`, `cat`) show it is not wanted; `Some(true)` when they show it is; `None` when
    /// the event does not start with them as plain strings inside `b` (the caller decodes it
    /// in full and asks [`Want::wants`]).
    #[inline]
    pub fn peek(&self, b: &[u8], i: usize) -> Option<bool> {
        let (ph, j) = key_string(b, i + 1, b"\"ph\"")?;
        let &[ph] = ph else {
            return None;
        };
        if !self.ph.contains(&ph) {
            return Some(false);
        }
        if ph != b'X' {
            return Some(true);
        }
        let j = super::json::skip_ws(b, j);
        if *b.get(j)? != b',' {
            return None;
        }
        let (cat, _) = key_string(b, j + 1, b"\"cat\"")?;
        Some(self.wants(ph, cat))
    }
}

/// Whether `ev`'s `pid` carries a merged trace's rank label (`"[label] pid"`): from it on the
/// reader hands over every event.
pub fn labeled(ev: &super::Event<'_>) -> bool {
    matches!(ev.pid, super::Id::Str(s) if s.raw().starts_with('['))
}

/// At `b[i..]`: whitespace, `key` (with its quotes), whitespace, `:`, whitespace and a string
/// with no escape or control byte: the string's body and the index after its closing quote.
/// (`key` is an array so the compare is a word compare, not a call to `memcmp`.)
#[inline(always)]
fn key_string<'a, const N: usize>(
    b: &'a [u8],
    i: usize,
    key: &[u8; N],
) -> Option<(&'a [u8], usize)> {
    let j = super::json::skip_ws(b, i);
    if <[u8; N]>::try_from(b.get(j..j + N)?).ok()? != *key {
        return None;
    }
    let j = super::json::skip_ws(b, j + N);
    if *b.get(j)? != b':' {
        return None;
    }
    let j = super::json::skip_ws(b, j + 1);
    if *b.get(j)? != b'"' {
        return None;
    }
    let body = j + 1;
    let len = b
        .get(body..)?
        .iter()
        .position(|&c| c == b'"' || c == b'\\' || c < 0x20)?;
    if b[body + len] != b'"' {
        return None;
    }
    Some((&b[body..body + len], body + len + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    const W: Want = Want {
        ph: b"XM",
        complete_cats: &["kernel", "cpu_op"],
    };

    #[test]
    fn peeks_the_leading_ph_and_cat() {
        let cases: &[(&str, Option<bool>)] = &[
            (r#"{"ph": "f", "id": 1}"#, Some(false)),
            (r#"{ "ph" : "s" }"#, Some(false)),
            (r#"{"ph": "M", "name": "x"}"#, Some(true)),
            (r#"{"ph": "X", "cat": "kernel", "name": "k"}"#, Some(true)),
            (r#"{"ph": "X", "cat": "python_function"}"#, Some(false)),
            (r#"{"ph": "X", "cat": "kernels"}"#, Some(false)),
            // Not decidable from the leading bytes: decoded in full.
            (r#"{"name": "x", "ph": "f"}"#, None),
            (r#"{"ph": "X", "name": "k", "cat": "kernel"}"#, None),
            (r#"{"ph": "X", "cat": "ker\u006eel"}"#, None),
            (r#"{"ph": "\u0066"}"#, None),
            (r#"{"ph": "XY"}"#, None),
            (r#"{"ph": 1}"#, None),
            (r#"{"ph": "X", "cat": "kern"#, None),
            (r#"{"ph""#, None),
        ];
        for (text, want) in cases {
            assert_eq!(W.peek(text.as_bytes(), 0), *want, "{text}");
        }
    }

    #[test]
    fn wants_by_ph_and_cat() {
        assert!(W.wants(b'X', b"kernel"));
        assert!(W.wants(b'M', b""));
        assert!(!W.wants(b'X', b"gpu_memcpy"));
        assert!(!W.wants(b'f', b"kernel"));
    }
}
