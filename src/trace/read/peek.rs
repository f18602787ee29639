//! The peek (#14): [`Want::peek`] reads an event's leading `ph`, `cat` and `name` where they
//! stand and decides from them, as [`Want::pick`] would, so that the reader skims an unwanted
//! event whole ([`super::want`] says which events a reader hands over).
//!
//! The `cat` and `name` values the peek has read before, with what they were picked as, come
//! from a memo ([`super::pickmemo`]): a rank repeats a few categories and a few hundred names
//! thousands of times each, and a remembered value is recognized by two masked 16-byte
//! compares instead of being scanned to its quote and tested against the lists again. So are
//! the stretches before them, `{"ph": "`, `, "cat": "` and `, "name": "`, as the last event
//! wrote them ([`key_stretch`]): one masked compare each instead of the walk over their
//! whitespace, key, `:` and quote (#14's seventeenth round: −4.1 % of analyze's instructions
//! on a real rank, −3.2 % on a synthetic one).

use super::json::{Field, Kind};
use super::memo::Memo;
use super::pickmemo::{CatMemo, PickMemo};
use super::want::{Pick, Want};

impl Want {
    /// From the bytes at `b[i]` (an event's `{`): what its leading `ph` (and, for `X`, `cat`
    /// and, for a named category, `name`) make of it, as [`Want::pick`] would, and the index
    /// after the last string read; `None` when the event does not start with them as plain
    /// strings inside `b` (the caller decodes it in full and asks [`Want::pick`]). Up to that
    /// index the event is `{`, keys, colons, commas, whitespace and plain strings, nothing a
    /// skim would decline or count as a bracket, so a skim may start there
    /// ([`super::skim::skip_rest_of_object`]).
    #[inline]
    pub fn peek(&self, b: &[u8], i: usize, devices: bool) -> Option<(Pick, usize)> {
        self.peek_into(b, i, devices, &mut Vec::new(), &mut PickMemo::default())
    }

    /// [`Want::peek`] that also puts the fields it read into `fields` (cleared first), as
    /// the scanner would have found them (ranges relative to `b[i]`): a scan of a kept
    /// event resumes after them ([`super::object::scan_object_resume`]). The `cat` and `name`
    /// it has read before come from `memo` ([`super::pickmemo`]): the same answer, as long as
    /// `memo` is only ever used with this `Want`.
    #[inline]
    pub(crate) fn peek_into(
        &self,
        b: &[u8],
        i: usize,
        devices: bool,
        fields: &mut Vec<Field>,
        memo: &mut PickMemo,
    ) -> Option<(Pick, usize)> {
        fields.clear();
        // Each key stretch as the last event wrote it, else walked ([`key_stretch`]).
        let (k, body) = key_stretch(&mut memo.keys, b, i + 1, (0, PH), false)?;
        let ph = one_byte_string(b, body)?;
        push_field(fields, i, k, PH.len(), body, 1);
        let j = body + 2;
        if let Some(p) = self.by_ph(ph) {
            return Some((p, j));
        }
        let (k, body) = key_stretch(&mut memo.keys, b, j, (1, CAT), true)?;
        let (len, by_cat, cat_id) = match memo.cat(b, body) {
            Some((len, m, id)) => (len, m, Some(id)),
            None => {
                let len = super::swar::plain_string_len(b.get(body..)?)?;
                let cat = &b[body..body + len];
                let pick = self.by_cat(cat);
                let prefix = pick.map_or_else(|| self.prefix_of(cat), |_| None);
                let m = CatMemo { pick, prefix };
                (len, m, memo.record_cat(b, body, len, m))
            }
        };
        push_field(fields, i, k, CAT.len(), body, len);
        let j = body + len + 1;
        if let Some(p) = by_cat.pick {
            return Some((p, j));
        }
        let cat = &b[body..body + len];
        let (k, body) = key_stretch(&mut memo.keys, b, j, (2, NAME), true)?;
        if let Some(prefix) = by_cat.prefix {
            // Turned down by the name's first bytes: the skim starts at its opening quote.
            if !b.get(body..)?.starts_with(prefix) {
                b.get(body..body + prefix.len())?;
                return Some((Pick::Skip, body - 1));
            }
        }
        let (len, pick) = match cat_id.and_then(|id| memo.name(b, body, id, devices)) {
            Some(hit) => hit,
            None => {
                let len = super::swar::plain_string_len(b.get(body..)?)?;
                let pick = self.by_name(cat, &b[body..body + len], devices);
                if let Some(id) = cat_id {
                    memo.record_name(b, body, len, id, devices, pick);
                }
                (len, pick)
            }
        };
        push_field(fields, i, k, NAME.len(), body, len);
        Some((pick, body + len + 1))
    }
}

/// The keys the peek reads, with their quotes.
const PH: &[u8; 4] = b"\"ph\"";
const CAT: &[u8; 5] = b"\"cat\"";
const NAME: &[u8; 6] = b"\"name\"";

/// After a value ending before `b[j]`: the index after the `,` that follows it.
#[inline(always)]
fn next_key(b: &[u8], j: usize) -> Option<usize> {
    let j = super::json::skip_ws(b, j);
    (*b.get(j)? == b',').then_some(j + 1)
}

/// [`key_body`] for `key` (with its quotes; `field`: its place among the peek's keys, which
/// keeps one stretch per key) from `b[at]`, after the `,` that follows a value when
/// `after_value`: where the key's quote and the string value's body start. The stretch
/// `b[at..body]` is the same bytes in every event a writer writes (Kineto: `{"ph": "`,
/// `, "cat": "`, `, "name": "`), so it is remembered in `memo` (a [`super::memo::Memo`] of the
/// peek's own: one kind, a field position per key) and recognized by one masked compare; the
/// walk runs on a miss and records what it found. Exact for the reason the scanner's
/// stretches are: the walk's answer depends on those bytes alone, and a stretch is remembered
/// only as the walk accepted it for this key.
#[inline(always)]
fn key_stretch<const N: usize>(
    memo: &mut Memo,
    b: &[u8],
    at: usize,
    (field, key): (usize, &[u8; N]),
    after_value: bool,
) -> Option<(usize, usize)> {
    if let Some(hit) = memo.matches(b, at, 0, field) {
        return Some((hit.key.0 - 1, hit.value));
    }
    let from = if after_value { next_key(b, at)? } else { at };
    let (k, body) = key_body(b, from, key)?;
    memo.record(b, at, (k + 1, k + N - 1), body, 0, field);
    Some((k, body))
}

/// The byte of a one-byte plain string whose body is at `b[body]` (a `ph`): `None` when the
/// string there is not one byte long or that byte is a quote, a backslash or a control byte
/// (what [`super::swar::plain_string_len`] would not find a length of 1 for).
#[inline(always)]
fn one_byte_string(b: &[u8], body: usize) -> Option<u8> {
    let (&c, &q) = (b.get(body)?, b.get(body + 1)?);
    (q == b'"' && c != b'"' && c != b'\\' && c >= 0x20).then_some(c)
}

/// At `b[i..]`: whitespace, `key` (with its quotes), whitespace, `:`, whitespace and a `"`:
/// where the key starts and where the string's body does.
/// (`key` is an array so the compare is a word compare, not a call to `memcmp`.)
#[inline(always)]
fn key_body<const N: usize>(b: &[u8], i: usize, key: &[u8; N]) -> Option<(usize, usize)> {
    let k = super::json::skip_ws(b, i);
    if <[u8; N]>::try_from(b.get(k..k + N)?).ok()? != *key {
        return None;
    }
    let j = super::json::skip_ws(b, k + N);
    if *b.get(j)? != b':' {
        return None;
    }
    let j = super::json::skip_ws(b, j + 1);
    if *b.get(j)? != b'"' {
        return None;
    }
    Some((k, j + 1))
}

/// Pushes the field whose key (`n` bytes with its quotes) starts at `b[k]` and whose plain
/// string value's body is `b[body..body + len]`, ranges relative to `b[ev]`.
#[inline(always)]
fn push_field(fields: &mut Vec<Field>, ev: usize, k: usize, n: usize, body: usize, len: usize) {
    let rel = |x: usize| (x - ev) as u32;
    fields.push(Field {
        key: (rel(k + 1), rel(k + n - 1)),
        val: (rel(body), rel(body + len)),
        kind: Kind::Str { escaped: false },
        ctl: false,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Keeps CPU ops named `keep…` always and `gpu…` only when no device is listed.
    fn names(_: &[u8], name: &[u8], devices: bool) -> bool {
        name.starts_with(b"keep") || (!devices && name.starts_with(b"gpu"))
    }

    const W: Want = Want {
        ph: b"XM",
        complete_cats: &["kernel", "cpu_op"],
        named_cats: &["cpu_op"],
        every_cat_named: false,
        names,
        trust_devices: true,
        name_prefixes: &[],
        needs: crate::trace::read::want::no_needs,
    };

    #[test]
    fn peeks_the_leading_ph_cat_and_name() {
        use Pick::*;
        let cases: &[(&str, Option<Pick>)] = &[
            (r#"{"ph": "f", "id": 1}"#, Some(Skip)),
            (r#"{ "ph" : "s" }"#, Some(Skip)),
            (r#"{"ph": "M", "name": "x"}"#, Some(Keep)),
            (r#"{"ph": "X", "cat": "kernel", "name": "k"}"#, Some(Keep)),
            (r#"{"ph": "X", "cat": "python_function"}"#, Some(Skip)),
            (r#"{"ph": "X", "cat": "kernels"}"#, Some(Skip)),
            (
                r#"{"ph": "X", "cat": "cpu_op", "name": "keep me"}"#,
                Some(Keep),
            ),
            (
                r#"{"ph": "X", "cat": "cpu_op" , "name":"other"}"#,
                Some(Skip),
            ),
            (
                r#"{"ph": "X", "cat": "cpu_op", "name": "gpu only"}"#,
                Some(Narrowed),
            ),
            // Not decidable from the leading bytes: decoded in full.
            (r#"{"name": "x", "ph": "f"}"#, None),
            (r#"{"ph": "X", "name": "k", "cat": "kernel"}"#, None),
            (r#"{"ph": "X", "cat": "ker\u006eel"}"#, None),
            (r#"{"ph": "\u0066"}"#, None),
            (r#"{"ph": "XY"}"#, None),
            (r#"{"ph": 1}"#, None),
            (r#"{"ph": "X", "cat": "kern"#, None),
            (r#"{"ph""#, None),
            (
                r#"{"ph": "X", "cat": "cpu_op", "pid": 1, "name": "keep"}"#,
                None,
            ),
            (r#"{"ph": "X", "cat": "cpu_op", "name": "kee\u0070"}"#, None),
            (r#"{"ph": "X", "cat": "cpu_op", "name": "keep"#, None),
        ];
        for (text, want) in cases {
            assert_eq!(
                W.peek(text.as_bytes(), 0, true).map(|p| p.0),
                *want,
                "{text}"
            );
        }
        // With no device listed, or devices not trusted, the name test is told none.
        let gpu = br#"{"ph": "X", "cat": "cpu_op", "name": "gpu only"}"#;
        assert_eq!(W.peek(gpu, 0, false).map(|p| p.0), Some(Keep));
        let untrusting = Want {
            trust_devices: false,
            ..W
        };
        assert_eq!(untrusting.peek(gpu, 0, true).map(|p| p.0), Some(Keep));
    }

    #[test]
    fn a_peek_stops_after_the_last_string_it_read() {
        let cases = [
            (r#"{"ph": "f", "id": 1}"#, r#", "id": 1}"#),
            (r#"{ "ph" : "s" }"#, " }"),
            (
                r#"{"ph": "X", "cat": "python_function", "a": 1}"#,
                r#", "a": 1}"#,
            ),
            (r#"{"ph": "X", "cat": "cpu_op" , "name":"other"}"#, "}"),
            (
                r#"{"ph": "X", "cat": "kernel", "name": "k", "ts": 1}"#,
                r#", "name": "k", "ts": 1}"#,
            ),
        ];
        for (text, rest) in cases {
            let (_, end) = W.peek(text.as_bytes(), 0, true).unwrap();
            assert_eq!(&text[end..], rest, "{text}");
        }
    }

    #[test]
    fn a_name_without_its_category_prefix_is_turned_down_from_its_first_bytes() {
        fn waits(_: &[u8], name: &[u8], devices: bool) -> bool {
            !devices && name.starts_with(b"wait ")
        }
        let w = Want {
            complete_cats: &["cpu_op", "python_function"],
            named_cats: &["cpu_op", "python_function"],
            names: waits,
            name_prefixes: &[("python_function", "wait ")],
            needs: crate::trace::read::want::no_needs,
            ..W
        };
        let peek = |t: &str, devices| w.peek(t.as_bytes(), 0, devices);
        // Skipped at the name's opening quote (a skim takes the rest, the name included).
        let t = r#"{"ph": "X", "cat": "python_function", "name": "we{"]", "ts": 1}"#;
        let (p, end) = peek(t, false).unwrap();
        assert_eq!((p, &t[end..]), (Pick::Skip, r#""we{"]", "ts": 1}"#));
        assert_eq!(
            w.pick(b'X', b"python_function", br#"we{"]"#, false),
            Pick::Skip
        );
        // A name that starts with it goes to the name test, which decides as before.
        let t = r#"{"ph": "X", "cat": "python_function", "name": "wait for it"}"#;
        assert_eq!(peek(t, false).map(|p| p.0), Some(Pick::Keep));
        assert_eq!(peek(t, true).map(|p| p.0), Some(Pick::Narrowed));
        // Shorter than the prefix: turned down; cut by the window inside the prefix: decoded
        // in full.
        let t = r#"{"ph": "X", "cat": "python_function", "name": "wai"}"#;
        assert_eq!(peek(t, false).map(|p| p.0), Some(Pick::Skip));
        assert_eq!(
            peek(
                r#"{"ph": "X", "cat": "python_function", "name": "wai"#,
                false
            ),
            None
        );
        // Another category is not held to the prefix.
        let t = r#"{"ph": "X", "cat": "cpu_op", "name": "wait"}"#;
        assert_eq!(peek(t, false).map(|p| p.0), Some(Pick::Skip));
        assert_eq!(w.pick(b'X', b"cpu_op", b"wait ", false), Pick::Keep);
    }

    #[test]
    fn picks_by_ph_cat_and_name() {
        assert_eq!(W.pick(b'X', b"kernel", b"any", true), Pick::Keep);
        assert_eq!(W.pick(b'M', b"", b"", true), Pick::Keep);
        assert_eq!(W.pick(b'X', b"gpu_memcpy", b"", false), Pick::Skip);
        assert_eq!(W.pick(b'f', b"kernel", b"", false), Pick::Skip);
        assert_eq!(W.pick(b'X', b"cpu_op", b"keep", true), Pick::Keep);
        assert_eq!(W.pick(b'X', b"cpu_op", b"gpu", true), Pick::Narrowed);
        assert_eq!(W.pick(b'X', b"cpu_op", b"gpu", false), Pick::Keep);
        assert_eq!(W.pick(b'X', b"cpu_op", b"other", false), Pick::Skip);
        // Every category named: an unlisted category is decided by its name too, and a
        // listed one the test turns down is skipped.
        let every = Want {
            every_cat_named: true,
            ..W
        };
        assert_eq!(
            every.pick(b'X', b"python_function", b"keep", true),
            Pick::Keep
        );
        assert_eq!(every.pick(b'X', b"kernel", b"any", true), Pick::Skip);
        assert_eq!(every.pick(b'X', b"", b"gpu", true), Pick::Narrowed);
        assert_eq!(every.pick(b'M', b"", b"", true), Pick::Keep);
        assert_eq!(every.pick(b'f', b"x", b"keep", true), Pick::Skip);
        let peek = |t: &str| every.peek(t.as_bytes(), 0, true).map(|p| p.0);
        assert_eq!(
            peek(r#"{"ph": "X", "cat": "python_function", "name": "keep"}"#),
            Some(Pick::Keep)
        );
        assert_eq!(
            peek(r#"{"ph": "X", "cat": "kernel", "name": "k"}"#),
            Some(Pick::Skip)
        );
    }

    /// A kept event's scan resumed after the fields the peek read gives what the scan from
    /// its `{` gives: the same end (or error) and the same fields, on events written in
    /// several layouts, cut short and with a byte changed here and there.
    #[test]
    fn a_scan_resumed_after_the_peek_is_the_whole_scan() {
        use super::super::memo::Memo;
        use super::super::object::{scan_object_resume, scan_object_skim};
        let layouts = [
            r#"{"ph": "M", "name": "process_name", "pid": 3, "args": {"name": "x"}}"#,
            r#"{"ph":"X","cat":"kernel","name":"k<1>","pid":0,"tid":7,"ts":1.5,"dur":2,"args":{"correlation":5}}"#,
            "{\n  \"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"keep it\",\n  \"ts\": 3, \"dur\": 1}",
            r#"{ "ph" : "X" , "cat" : "kernel" , "name" : "" , "args" : { } }"#,
            r#"{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 1, "ph": "i"}"#,
        ];
        let (mut memo, mut a, mut f) = (Memo::default(), Vec::new(), Vec::new());
        let mut picks = PickMemo::default();
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut resumed = 0;
        for n in 0..20_000 {
            crate::testrng::xorshift(&mut x);
            let mut b = layouts[n % layouts.len()].as_bytes().to_vec();
            if x.is_multiple_of(3) {
                let at = (x >> 8) as usize % b.len();
                let noise = b",:{}[]\" \x01\\a1X";
                b[at] = noise[(x >> 32) as usize % noise.len()];
            }
            if x.is_multiple_of(7) {
                b.truncate((x >> 16) as usize % b.len() + 1);
            }
            b.extend_from_slice(&[b' '; 40]);
            let Some((Pick::Keep, j)) = W.peek_into(&b, 0, true, &mut f, &mut picks) else {
                continue;
            };
            let whole = scan_object_skim(&b, 0, &mut a);
            let got = scan_object_resume(&b, 0, j, &mut f, &mut memo);
            assert_eq!(whole, got, "{:?}", String::from_utf8_lossy(&b));
            if whole.is_ok() {
                assert_eq!(a, f, "{:?}", String::from_utf8_lossy(&b));
                resumed += 1;
            }
        }
        assert!(resumed > 5_000, "{resumed}");
    }
}
