//! The separator memo (#14): a writer of traces puts the same bytes between one value of an
//! event and the next value of every event of its kind. Kineto's `output_json.cpp` writes
//! `, "cat": "` after the `ph` of each complete event, and `,\n    "ts": ` after its `tid`. The
//! memo keeps, for each field position of each kind of event, the bytes last seen from the end
//! of one value to the start of the next (whitespace, `,`, the key, `:`, whitespace), already
//! validated by the full scan. When the next event holds the same bytes at the same place, two
//! 16-byte compares stand for the key scan, three whitespace skips and the `,` and `:` checks.
//!
//! Why this is exact: the scan of that stretch depends on its bytes alone (it is always
//! "after a value, inside an event at depth 1"), so the same bytes give the same key and the
//! same value start. The memo only holds stretches the full scan accepted, with no raw control
//! byte in the key, at most 32 bytes long; anything else, or a stretch that differs, takes the
//! full scan, which then records what it saw. Kinds are told apart by the byte after the first
//! value's first byte (`X`, `s`, `f`, `i`, … for Kineto's `"ph"` first), hashed to 8 slots; a
//! wrong guess costs one compare.
//!
//! The peek that decides which events a reader skims (`want::key_stretch`) keeps a memo of its
//! own, one kind, a field position per key it reads (`ph`, `cat`, `name`); its stretches run
//! one byte further, through the value's opening quote, since the peek reads only strings.

/// One remembered stretch: up to 32 bytes, compared under a mask.
#[derive(Clone, Copy, Default)]
struct Sep {
    lo: u128,
    hi: u128,
    mask_lo: u128,
    mask_hi: u128,
    len: u8,
    /// The key's body within the stretch (between its quotes).
    key: (u8, u8),
}

/// Field positions remembered per kind (later fields take the full scan).
const FIELDS: usize = 16;
/// Kinds (hashed).
const KINDS: usize = 8;

/// The separators of one reader, by kind and field position.
pub struct Memo {
    seps: Box<[Sep; KINDS * FIELDS]>,
}

impl Default for Memo {
    fn default() -> Self {
        Memo {
            seps: Box::new([Sep::default(); KINDS * FIELDS]),
        }
    }
}

/// What a match gives: where the key's body is and where the value starts.
pub struct Hit {
    pub key: (usize, usize),
    pub value: usize,
}

#[inline(always)]
fn slot(kind: u8, field: usize) -> Option<usize> {
    (field < FIELDS).then(|| (kind as usize % KINDS) * FIELDS + field)
}

#[inline(always)]
fn word(w: &[u8]) -> u128 {
    let mut x = [0u8; 16];
    x.copy_from_slice(w);
    u128::from_le_bytes(x)
}

impl Memo {
    /// The remembered stretch for field `field` of kind `kind`, if `b[at..]` starts with it.
    #[inline(always)]
    pub fn matches(&self, b: &[u8], at: usize, kind: u8, field: usize) -> Option<Hit> {
        let s = &self.seps[slot(kind, field)?];
        if s.len == 0 {
            return None;
        }
        let Some(w) = b.get(at..at + 32) else {
            return self.matches_short(b, at, s);
        };
        let diff = ((word(&w[..16]) ^ s.lo) & s.mask_lo) | ((word(&w[16..]) ^ s.hi) & s.mask_hi);
        (diff == 0).then(|| Hit {
            key: (at + s.key.0 as usize, at + s.key.1 as usize),
            value: at + s.len as usize,
        })
    }

    /// [`Memo::matches`] with fewer than 32 bytes left from `b[at]` (the last fields of a
    /// short `args` object, looked up on its own): the stretch must still fit; the bytes after
    /// it are masked off. Out of line, to keep the common case small where it is inlined.
    #[cold]
    #[inline(never)]
    fn matches_short(&self, b: &[u8], at: usize, s: &Sep) -> Option<Hit> {
        let rest = b.get(at..).filter(|r| r.len() >= usize::from(s.len))?;
        let mut w = [0u8; 32];
        w[..rest.len()].copy_from_slice(rest);
        let diff = ((word(&w[..16]) ^ s.lo) & s.mask_lo) | ((word(&w[16..]) ^ s.hi) & s.mask_hi);
        (diff == 0).then(|| Hit {
            key: (at + s.key.0 as usize, at + s.key.1 as usize),
            value: at + s.len as usize,
        })
    }

    /// Remembers `b[from..value]` (validated by the full scan, key body at `key`, no raw control
    /// byte in the key) as the stretch before field `field` of kind `kind`.
    #[inline]
    pub fn record(
        &mut self,
        b: &[u8],
        from: usize,
        key: (usize, usize),
        value: usize,
        kind: u8,
        field: usize,
    ) {
        let (Some(i), len) = (slot(kind, field), value - from) else {
            return;
        };
        if len == 0 || len > 32 {
            return;
        }
        let mut bytes = [0u8; 32];
        bytes[..len].copy_from_slice(&b[from..value]);
        let mut mask = [0u8; 32];
        mask[..len].fill(0xFF);
        self.seps[i] = Sep {
            lo: word(&bytes[..16]),
            hi: word(&bytes[16..]),
            mask_lo: word(&mask[..16]),
            mask_hi: word(&mask[16..]),
            len: len as u8,
            key: ((key.0 - from) as u8, (key.1 - from) as u8),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::super::json::{scan_object, scan_object_memo, scan_object_skim, Field, Scan};
    use super::Memo;

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

    /// Random objects written mostly alike (the stretch before each field picked by its
    /// position, so that a memo hits), one in four picked all at random (so that it misses).
    struct Objects {
        s: u64,
        spaces: &'static [&'static str],
        keys: &'static [&'static str],
        values: &'static [&'static str],
    }

    impl Objects {
        fn next(&mut self) -> u64 {
            crate::testrng::xorshift(&mut self.s)
        }

        fn pick(&mut self, r: u64, k: usize, x: usize, m: usize) -> usize {
            if (r >> 20).is_multiple_of(4) {
                self.next() as usize % m
            } else {
                (x + k * 3 + (r % 3) as usize) % m
            }
        }

        fn object(&mut self) -> Vec<u8> {
            let (spaces, keys, values) = (self.spaces, self.keys, self.values);
            let r = self.next();
            let mut t = String::from("{");
            for k in 0..1 + (r >> 8) as usize % 6 {
                if k > 0 {
                    t.push_str(spaces[self.pick(r, k, 1, spaces.len())]);
                    t.push(',');
                }
                t.push_str(spaces[self.pick(r, k, 2, spaces.len())]);
                t.push('"');
                t.push_str(keys[self.pick(r, k, 3, keys.len())]);
                t.push('"');
                t.push_str(spaces[self.pick(r, k, 4, spaces.len())]);
                t.push(':');
                t.push_str(spaces[self.pick(r, k, 5, spaces.len())]);
                t.push_str(values[self.pick(r, k, 6, values.len())]);
            }
            t.push_str(spaces[(r >> 40) as usize % spaces.len()]);
            t.push('}');
            t.into_bytes()
        }

        /// `b` with one byte replaced by one of `noise`, at or after `from`.
        fn damage(&mut self, b: &mut [u8], from: usize, noise: &[u8]) {
            let at = from + self.next() as usize % (b.len() - from);
            b[at] = noise[self.next() as usize % noise.len()];
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

    /// `args` objects written alike, varied and damaged now and then, looked up with one memo
    /// per run and without: the same value (kind and text) for every key asked.
    #[test]
    fn the_args_memo_answers_as_find_in_object() {
        use crate::trace::event::{
            find_all_in_args, find_all_in_object_memo, find_in_args, find_in_object,
            find_in_object_memo, ArgKey,
        };
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
                crate::trace::skim::skip_nested(&b, 0), Some(Ok(end)) if end == b.len());
            for (key, found_key) in keys.iter().zip(&found_keys) {
                let plain = find_in_object(obj, key).map(|v| (format!("{:?}", v.kind), v.text));
                let memod = find_in_object_memo(obj, key, &mut memo, kind)
                    .map(|v| (format!("{:?}", v.kind), v.text));
                assert_eq!(plain, memod, "{obj:?} {key:?}");
                // Searched: the same on valid JSON; on damaged text the skim took, at most a
                // key found after damage the walk stops at.
                let found = find_in_args(obj, found_key, &mut memo_found, kind)
                    .map(|v| (format!("{:?}", v.kind), v.text));
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
