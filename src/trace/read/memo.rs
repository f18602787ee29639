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
//! The peek that decides which events a reader skims (`peek::key_stretch`) keeps a memo of its
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
pub(super) mod alike {
    //! Test support: objects written mostly alike, for the tests of the scans and lookups that
    //! keep a memo (`object.rs`, `args.rs`), which check that the memo answers as the full scan.

    /// Random objects written mostly alike (the stretch before each field picked by its
    /// position, so that a memo hits), one in four picked all at random (so that it misses).
    pub(in crate::trace::read) struct Objects {
        pub(in crate::trace::read) s: u64,
        pub(in crate::trace::read) spaces: &'static [&'static str],
        pub(in crate::trace::read) keys: &'static [&'static str],
        pub(in crate::trace::read) values: &'static [&'static str],
    }

    impl Objects {
        pub(in crate::trace::read) fn next(&mut self) -> u64 {
            crate::testrng::xorshift(&mut self.s)
        }

        fn pick(&mut self, r: u64, k: usize, x: usize, m: usize) -> usize {
            if (r >> 20).is_multiple_of(4) {
                self.next() as usize % m
            } else {
                (x + k * 3 + (r % 3) as usize) % m
            }
        }

        pub(in crate::trace::read) fn object(&mut self) -> Vec<u8> {
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
        pub(in crate::trace::read) fn damage(&mut self, b: &mut [u8], from: usize, noise: &[u8]) {
            let at = from + self.next() as usize % (b.len() - from);
            b[at] = noise[self.next() as usize % noise.len()];
        }
    }
}
