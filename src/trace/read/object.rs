//! The scan of an object's top-level fields ([`scan_object`] and its variants), and of an
//! event's `args` member by member while the reader validates the event ([`ArgMembers`], #14):
//! one loop, which calls itself one level down for `args`. The values between the keys are
//! scanned by [`super::json`]; between values, a reader's [`super::memo`] stands for the key
//! scan where events are written alike.
//!
//! **The members of `args`.** A reader that validates every byte
//! ([`super::reader::Nested::Validate`]) walks an event's `args` token by token anyway; merge
//! then walked the same object a second time to rewrite its ids field by field
//! ([`crate::merge`]'s `each_arg`: ~13 % of a merge's instructions). Here the validating walk
//! of `args` is the object scan itself (`scan_object_with` one level down: the same checks, the
//! same nesting limit, the same error at the same byte), which records each member as a
//! [`Field`] (positions relative to the event's `{`) into [`ArgMembers::fields`]: the event then
//! carries them ([`super::event::Event::arg_fields`]) and the rewrite reads them without
//! scanning.
//!
//! The members of an event's `args` are written alike for events of one category (Kineto
//! writes a kernel's `External id`, `queued`, `device`, … in one order and layout), so the
//! scan takes the stretches between them from a [`Memo`] of its own, keyed by the event's
//! `cat` as far as it has been read (`args_kind`): the same answer as the full scan
//! ([`super::memo`] says why), fewer instructions.

use super::json::{scan_string_inline, skip_ws, value_inline, Field, Kind};
use super::memo::Memo;
use super::stop::{Scan, Stop};

/// Scans the object at `b[i] == '{'`, pushing its top-level fields (ranges relative to `i`)
/// into `fields`. Returns the index after the closing brace.
pub fn scan_object(b: &[u8], i: usize, fields: &mut Vec<Field>) -> Scan<usize> {
    scan_object_with(b, i, fields, false, None, Inner::TOP)
}

/// [`scan_object`] that skims nested values ([`super::skim`]) instead of validating them token
/// by token; a value the skim declines is validated as by [`scan_object`]. For every input
/// [`scan_object`] accepts, the fields and the end are the same.
pub fn scan_object_skim(b: &[u8], i: usize, fields: &mut Vec<Field>) -> Scan<usize> {
    scan_object_with(b, i, fields, true, None, Inner::TOP)
}

/// [`scan_object`] (or with `skim`, [`scan_object_skim`]) that takes the stretches between
/// values it has seen before from `memo` ([`super::memo`]): the same answer, for a reader that
/// scans many events written alike.
pub fn scan_object_memo(
    b: &[u8],
    i: usize,
    fields: &mut Vec<Field>,
    skim: bool,
    memo: &mut Memo,
) -> Scan<usize> {
    scan_object_with(b, i, fields, skim, Some(memo), Inner::TOP)
}

/// [`scan_object_memo`], skimming, of the object at `b[i]` whose first fields, up to
/// `b[from]`, are already in `fields` as the scan would have found them (the peek
/// in `peek.rs` read them): the same answer as the scan from `b[i]`.
pub(crate) fn scan_object_resume(
    b: &[u8],
    i: usize,
    from: usize,
    fields: &mut Vec<Field>,
    memo: &mut Memo,
) -> Scan<usize> {
    let inner = Inner {
        resume: Some(from),
        ..Inner::TOP
    };
    scan_object_with(b, i, fields, true, Some(memo), inner)
}

/// Where an object scanned by [`scan_object_with`] stands: an event (depth 1, positions
/// relative to its `{`, its kind taken from its first value), or the `args` of one
/// ([`ArgMembers`]: depth 2, positions relative to the event's `{`, the kind given), and
/// what to do with an event's `args`.
pub(super) struct Inner<'m> {
    /// The depth of the object's values, for the nesting limit.
    pub depth: usize,
    /// Where the event starts, when the object is inside one.
    pub base: Option<usize>,
    /// The memo kind, when given.
    pub kind: Option<u8>,
    /// With `Some`, an event's `args` object is scanned member by member into it.
    pub args: Option<&'m mut ArgMembers>,
    /// With `Some(from)`, the scan resumes: the fields before `b[from]` are already in
    /// `fields` (at least one), as the scan would have found them.
    pub resume: Option<usize>,
}

impl Inner<'_> {
    const TOP: Inner<'static> = Inner {
        depth: 1,
        base: None,
        kind: None,
        args: None,
        resume: None,
    };
}

// Long on purpose: the loop over one object's fields, every step inline (#14).
#[allow(clippy::too_many_lines)]
#[inline(always)]
pub(super) fn scan_object_with(
    b: &[u8],
    i: usize,
    fields: &mut Vec<Field>,
    skim: bool,
    mut memo: Option<&mut Memo>,
    mut inner: Inner<'_>,
) -> Scan<usize> {
    let base = inner.base.unwrap_or(i);
    let rel = |x: usize| (x - base) as u32;
    // `from`: where the stretch before the next value starts (after `{`, then after a value).
    let mut from = i + 1;
    let mut k = 0usize;
    let mut kind = inner.kind.unwrap_or(0);
    match (inner.resume, fields.first()) {
        (Some(at), Some(f0)) => {
            from = at;
            k = fields.len();
            if inner.kind.is_none() {
                // As below: the byte after the first value's first byte.
                kind = b.get(f0.val_start() + base + 1).copied().unwrap_or(0);
            }
        }
        _ => fields.clear(),
    }
    loop {
        let mut ctl = false;
        let hit = match memo {
            Some(ref m) => m.matches(b, from, kind, k),
            None => None,
        };
        let (key, j) = match hit {
            Some(h) => (h.key, skip_ws(b, h.value)),
            None => {
                let mut j = skip_ws(b, from);
                if k == 0 {
                    if b.get(j) == Some(&b'}') {
                        return Ok(j + 1);
                    }
                } else {
                    match b.get(j) {
                        None => return Err(Stop::Incomplete),
                        Some(b',') => j = skip_ws(b, j + 1),
                        Some(b'}') => return Ok(j + 1),
                        Some(_) => return Err(Stop::Invalid(j, "expected ',' or '}'")),
                    }
                }
                match b.get(j) {
                    None => return Err(Stop::Incomplete),
                    Some(b'"') => {}
                    Some(_) => return Err(Stop::Invalid(j, "expected a string key")),
                }
                let (kend, _) = scan_string_inline(b, j, &mut ctl)?;
                let key = (j + 1, kend - 1);
                j = skip_ws(b, kend);
                match b.get(j) {
                    None => return Err(Stop::Incomplete),
                    Some(b':') => j = skip_ws(b, j + 1),
                    Some(_) => return Err(Stop::Invalid(j, "expected ':'")),
                }
                if let Some(m) = memo.as_deref_mut() {
                    if !ctl {
                        m.record(b, from, key, j, kind, k);
                    }
                }
                (key, j)
            }
        };
        let (vend, vkind) = match inner.args.as_deref_mut() {
            Some(m) if b.get(j) == Some(&b'{') && b.get(key.0..key.1) == Some(b"args") => {
                (m.scan(b, i, j, fields, &mut ctl)?, Kind::Obj)
            }
            _ => value_inline(b, j, skim, inner.depth, &mut ctl)?,
        };
        let val = match vkind {
            Kind::Str { .. } => (rel(j + 1), rel(vend - 1)),
            _ => (rel(j), rel(vend)),
        };
        fields.push(Field {
            key: (rel(key.0), rel(key.1)),
            val,
            kind: vkind,
            ctl,
        });
        if k == 0 && inner.kind.is_none() {
            kind = b.get(j + 1).copied().unwrap_or(0);
        }
        from = vend;
        k += 1;
    }
}

/// The members of the last `args` scanned, and the memo of their layouts.
#[derive(Default)]
pub(crate) struct ArgMembers {
    /// The members of the event's `args` (its last one, as the decoder takes the last), as
    /// ranges relative to the event's `{`.
    pub(crate) fields: Vec<Field>,
    /// Whether `fields` belongs to the event just scanned (it had an `args` object).
    pub(crate) found: bool,
    memo: Memo,
}

impl ArgMembers {
    /// Scans the event at `b[i] == '{'` as [`scan_object_memo`] does (not skimming),
    /// with its `args` object scanned member by member into `self`.
    pub(crate) fn scan_event(
        &mut self,
        b: &[u8],
        i: usize,
        fields: &mut Vec<Field>,
        memo: &mut Memo,
    ) -> Scan<usize> {
        self.found = false;
        self.fields.clear();
        let inner = Inner {
            depth: 1,
            base: None,
            kind: None,
            args: Some(self),
            resume: None,
        };
        scan_object_with(b, i, fields, false, Some(memo), inner)
    }

    /// Scans the `args` object at `b[j] == '{'` of the event at `b[i]` (`top`: its fields
    /// before `args`); sets `*ctl` when a member holds a raw control byte. Returns the index
    /// after the object.
    pub(super) fn scan(
        &mut self,
        b: &[u8],
        i: usize,
        j: usize,
        top: &[Field],
        ctl: &mut bool,
    ) -> Scan<usize> {
        let inner = Inner {
            depth: 2,
            base: Some(i),
            kind: Some(args_kind(b.get(i..).unwrap_or_default(), top)),
            args: None,
            resume: None,
        };
        let end = scan_object_with(b, j, &mut self.fields, false, Some(&mut self.memo), inner)?;
        *ctl |= self.fields.iter().any(|f| f.ctl);
        self.found = true;
        Ok(end)
    }
}

/// The memo kind of an event's `args`: a hash of its `cat` (`ev`: the event's text from its
/// `{`; `top`: its fields read so far), under which Kineto's categories (`kernel`, `cpu_op`,
/// `cuda_runtime`, `cuda_driver`, `gpu_memcpy`, `python_function`, `user_annotation`,
/// `gpu_user_annotation`) take the memo's 8 kinds one each; 0 without a `cat`.
fn args_kind(ev: &[u8], top: &[Field]) -> u8 {
    let Some(cat) = top.iter().find(|f| f.key(ev) == b"cat") else {
        return 0;
    };
    let v = cat.val(ev);
    let at = |k: usize| v.get(k).copied().unwrap_or(0);
    (v.len() as u8)
        .wrapping_mul(2)
        .wrapping_add(at(0))
        .wrapping_add(at(1).wrapping_mul(3))
}

#[cfg(test)]
mod tests {
    use super::super::escape::{escape_ctl, first_ctl};
    use super::super::memo::alike::Objects;
    use super::*;

    fn key(f: &Field) -> (u32, u32, u32, u32, String, bool) {
        (
            f.key.0,
            f.key.1,
            f.val.0,
            f.val.1,
            format!("{:?}", f.kind),
            f.ctl,
        )
    }

    fn same(a: Scan<usize>, fa: &[Field], b: Scan<usize>, fb: &[Field], text: &[u8]) {
        assert_eq!(a, b, "{:?}", String::from_utf8_lossy(text));
        if a.is_ok() {
            let ka: Vec<_> = fa.iter().map(key).collect();
            let kb: Vec<_> = fb.iter().map(key).collect();
            assert_eq!(ka, kb, "{:?}", String::from_utf8_lossy(text));
        }
    }

    /// Events written alike (so the memo hits), with whitespace, keys, values and single bytes
    /// varied now and then (so it must miss, or must not be fooled), each scanned with one memo
    /// kept across the run and without: the same end or error and the same fields, both modes.
    #[test]
    fn the_memo_answers_as_the_full_scan() {
        let mut gen = Objects {
            s: 0x9e37_79b9_7f4a_7c15,
            spaces: &[" ", "", "\n    ", "  ", "\t"],
            keys: &["ph", "cat", "name", "pid", "ts", "a\\\"b", "k\u{1}", "args"],
            values: &[
                "\"X\"",
                "\"s\"",
                "12",
                "-3.5e2",
                "\"kernel\"",
                "{\"a\": [1, {\"b\": null}]}",
                "[1, 2]",
                "true",
                "\"x\\ny\"",
            ],
        };
        let (mut memo, mut memo_skim) = (Memo::default(), Memo::default());
        let (mut fa, mut fb) = (Vec::new(), Vec::new());
        for _ in 0..60_000 {
            let mut b = gen.object();
            let r = gen.next();
            if r.is_multiple_of(5) {
                gen.damage(&mut b, 0, b",:{}[]\" \x01\\a1");
            }
            if (r >> 8).is_multiple_of(7) {
                b.truncate(gen.next() as usize % b.len() + 1);
            }
            // Room after the event, so the memo's 32-byte compare can run at its end too.
            b.extend_from_slice(b" ,  {\"ph\": \"X\", \"cat\": \"k\"}                         ");
            let plain = scan_object(&b, 0, &mut fa);
            let memod = scan_object_memo(&b, 0, &mut fb, false, &mut memo);
            same(plain, &fa, memod, &fb, &b);
            let plain = scan_object_skim(&b, 0, &mut fa);
            let memod = scan_object_memo(&b, 0, &mut fb, true, &mut memo_skim);
            same(plain, &fa, memod, &fb, &b);
        }
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

    /// Events written alike with `args` objects written alike (so both memos hit), varied,
    /// damaged and cut now and then: the member scan gives the end or the error of the plain
    /// scan, the same top-level fields, and as members the fields of the last `args` object
    /// scanned on its own (shifted to the event's start).
    #[test]
    fn the_members_are_the_args_objects_fields() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || crate::testrng::xorshift(&mut x);
        let spaces = [" ", "", "\n      ", "  "];
        let keys = [
            "External id",
            "correlation",
            "stream",
            "a\\\"b",
            "k\u{1}",
            "Input Dims",
        ];
        let values = [
            "13",
            "-2.5e1",
            "\"x\"",
            "[[1, 2], [3]]",
            "{\"a\": {\"b\": [null]}}",
            "true",
            "\"q\\\"r\"",
        ];
        let cats = ["kernel", "cpu_op", "cuda_runtime"];
        let (mut memo, mut members) = (Memo::default(), ArgMembers::default());
        let (mut plain_f, mut f, mut args_f) = (Vec::new(), Vec::new(), Vec::new());
        let (mut checked, mut with_ctl) = (0, 0);
        for _ in 0..40_000 {
            let r = next();
            let alike = !r.is_multiple_of(4);
            let pick = |k: usize, m: usize, salt: u64| {
                if alike {
                    (k * 3 + salt as usize) % m
                } else {
                    (next_free(r, k, salt)) % m
                }
            };
            let mut args = String::from("{");
            for k in 0..(r >> 8) as usize % 5 {
                if k > 0 {
                    args.push(',');
                }
                args.push_str(spaces[pick(k, spaces.len(), 1)]);
                args.push('"');
                args.push_str(keys[pick(k, keys.len(), 2)]);
                args.push_str("\":");
                args.push_str(spaces[pick(k, spaces.len(), 3)]);
                args.push_str(values[pick(k, values.len(), 4)]);
            }
            args.push_str(spaces[pick(9, spaces.len(), 5)]);
            args.push('}');
            let cat = cats[(r >> 30) as usize % 3];
            let mut ev = format!(r#"{{"ph": "X", "cat": "{cat}", "ts": 1, "args": {args}"#);
            if (r >> 12).is_multiple_of(5) {
                // A second `args`, the one the decoder takes.
                ev.push_str(r#", "args": {"correlation": 7}"#);
            }
            if (r >> 16).is_multiple_of(3) {
                ev.push_str(r#", "tid": 2"#);
            }
            ev.push('}');
            let mut b = ev.into_bytes();
            if (r >> 20).is_multiple_of(5) {
                let noise = b",:{}[]\" \x01\\a1";
                let at = next() as usize % b.len();
                b[at] = noise[next() as usize % noise.len()];
            }
            if (r >> 24).is_multiple_of(7) {
                b.truncate(next() as usize % b.len() + 1);
            }
            // Room after the event for the memo's 32-byte compares.
            b.extend_from_slice(&[b' '; 40]);
            let plain = scan_object(&b, 0, &mut plain_f);
            let got = members.scan_event(&b, 0, &mut f, &mut memo);
            assert_eq!(plain, got, "{:?}", String::from_utf8_lossy(&b));
            if plain.is_err() {
                continue;
            }
            assert_eq!(plain_f, f, "{:?}", String::from_utf8_lossy(&b));
            let last = plain_f.iter().rev().find(|f| f.key(&b) == b"args");
            match last {
                Some(a) if a.kind == Kind::Obj => {
                    assert!(members.found);
                    let at = a.val.0 as usize;
                    scan_object(&b, at, &mut args_f).unwrap();
                    let shifted: Vec<Field> = args_f
                        .iter()
                        .map(|g| Field {
                            key: (g.key.0 + at as u32, g.key.1 + at as u32),
                            val: (g.val.0 + at as u32, g.val.1 + at as u32),
                            ..*g
                        })
                        .collect();
                    assert_eq!(shifted, members.fields);
                    // The `args` field holds a raw control byte exactly when a member does.
                    assert_eq!(a.ctl, members.fields.iter().any(|m| m.ctl));
                    with_ctl += usize::from(a.ctl);
                    checked += 1;
                }
                _ => assert!(!members.found || last.is_none()),
            }
        }
        assert!(checked > 10_000 && with_ctl > 100, "{checked} {with_ctl}");
    }

    fn next_free(r: u64, k: usize, salt: u64) -> usize {
        (r.rotate_left((k as u32 * 7 + salt as u32) % 64) >> 3) as usize
    }

    /// The nesting limit counts `args` and its members as the plain scan does.
    #[test]
    fn the_nesting_limit_falls_where_the_plain_scan_puts_it() {
        let (mut memo, mut members) = (Memo::default(), ArgMembers::default());
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for n in 505..=515 {
            let ev = format!(
                r#"{{"ph":"X","args":{{"deep":{}{}}}}}"#,
                "[".repeat(n),
                "]".repeat(n)
            );
            let plain = scan_object(ev.as_bytes(), 0, &mut a);
            let got = members.scan_event(ev.as_bytes(), 0, &mut b, &mut memo);
            assert_eq!(plain, got, "depth {n}");
        }
        let ok = |n: usize| {
            let ev = format!(r#"{{"args":{{"d":{}{}}}}}"#, "[".repeat(n), "]".repeat(n));
            scan_object(ev.as_bytes(), 0, &mut Vec::new()).is_ok()
        };
        // The limit is inside the range tried.
        assert!(ok(505) && !ok(515));
    }

    #[test]
    fn kinetos_categories_take_one_kind_each() {
        let kinds: Vec<u8> = [
            "kernel",
            "cpu_op",
            "cuda_runtime",
            "gpu_memcpy",
            "python_function",
            "user_annotation",
            "cuda_driver",
            "gpu_user_annotation",
        ]
        .iter()
        .map(|c| {
            let ev = format!(r#"{{"cat":"{c}""#);
            let mut f = Vec::new();
            // The fields so far: scan the event closed.
            scan_object(format!("{ev}}}").as_bytes(), 0, &mut f).unwrap();
            args_kind(ev.as_bytes(), &f) % 8
        })
        .collect();
        let mut distinct = kinds.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), 8, "{kinds:?}");
    }
}
