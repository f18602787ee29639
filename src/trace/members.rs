//! The members of an event's `args`, found while the reader validates the event (#14).
//!
//! A reader that validates every byte ([`super::Nested::Validate`]) walks an event's `args`
//! token by token anyway; merge then walked the same object a second time to rewrite its ids
//! field by field ([`crate::merge`]'s `each_arg`: ~13 % of a merge's instructions). Here the
//! validating walk of `args` is the object scan itself ([`json::scan_object_with`] one level
//! down: the same checks, the same nesting limit, the same error at the same byte), which
//! records each member as a [`Field`] (positions relative to the event's `{`) into
//! [`ArgMembers::fields`]: the event then carries them ([`super::Event::arg_fields`]) and the
//! rewrite reads them without scanning.
//!
//! The members of an event's `args` are written alike for events of one category (Kineto
//! writes a kernel's `External id`, `queued`, `device`, … in one order and layout), so the
//! scan takes the stretches between them from a [`Memo`] of its own, keyed by the event's
//! `cat` as far as it has been read ([`args_kind`]): the same answer as the full scan
//! ([`super::memo`] says why), fewer instructions.

use super::json::{self, Field, Inner, Scan};
use super::memo::Memo;

/// The members of the last `args` scanned, and the memo of their layouts.
#[derive(Default)]
pub struct ArgMembers {
    /// The members of the event's `args` (its last one, as the decoder takes the last), as
    /// ranges relative to the event's `{`.
    pub fields: Vec<Field>,
    /// Whether `fields` belongs to the event just scanned (it had an `args` object).
    pub found: bool,
    memo: Memo,
}

impl ArgMembers {
    /// Scans the event at `b[i] == '{'` as [`json::scan_object_memo`] does (not skimming),
    /// with its `args` object scanned member by member into `self`.
    pub fn scan_event(
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
        json::scan_object_with(b, i, fields, false, Some(memo), inner)
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
        let end =
            json::scan_object_with(b, j, &mut self.fields, false, Some(&mut self.memo), inner)?;
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
    use super::*;

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
            let plain = json::scan_object(&b, 0, &mut plain_f);
            let got = members.scan_event(&b, 0, &mut f, &mut memo);
            assert_eq!(plain, got, "{:?}", String::from_utf8_lossy(&b));
            if plain.is_err() {
                continue;
            }
            assert_eq!(plain_f, f, "{:?}", String::from_utf8_lossy(&b));
            let last = plain_f.iter().rev().find(|f| f.key(&b) == b"args");
            match last {
                Some(a) if a.kind == json::Kind::Obj => {
                    assert!(members.found);
                    let at = a.val.0 as usize;
                    json::scan_object(&b, at, &mut args_f).unwrap();
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
            let plain = json::scan_object(ev.as_bytes(), 0, &mut a);
            let got = members.scan_event(ev.as_bytes(), 0, &mut b, &mut memo);
            assert_eq!(plain, got, "depth {n}");
        }
        let ok = |n: usize| {
            let ev = format!(r#"{{"args":{{"d":{}{}}}}}"#, "[".repeat(n), "]".repeat(n));
            json::scan_object(ev.as_bytes(), 0, &mut Vec::new()).is_ok()
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
            json::scan_object(format!("{ev}}}").as_bytes(), 0, &mut f).unwrap();
            args_kind(ev.as_bytes(), &f) % 8
        })
        .collect();
        let mut distinct = kinds.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), 8, "{kinds:?}");
    }
}
