//! Whether a place in an object's text is at its top level and outside every string
//! ([`TopLevel`]), tracked from the object's `{` 16 bytes at a time: the check that lets
//! [`super::args::find_in_args`] take a key found by searching the text as the member the walk
//! would find.
//!
//! In text with no backslash no quote is escaped: every quote opens or closes a string, so
//! whether a byte is inside one is the parity of the quotes before it (a prefix XOR of the
//! quote mask, the simdjson stage-1 idea), and the depth is the brackets outside strings
//! opened less those closed. A backslash before the place (or a `|`, which shares its byte
//! class below) gives up: the caller walks instead.
//!
//! [`TopLevel::find_key`] does the search and this scan in one pass, 32 bytes a step with
//! AVX2 (16 with SSE2): a kernel's or a launch's `correlation` is its sixth or third member,
//! and a search followed by a second pass over the same bytes, then the value read as text
//! and again as a number, cost ~580 instructions a lookup, 5.5 % of analyze's on the bench's
//! synthetic set; in one pass, with the integer read where it stands
//! ([`super::args::find_int_in_args`]), ~400 (callgrind, one rank: 1,719 → 1,678 M
//! instructions; `farm-bench -n 13` CPU A/B 0.98 on the synth and many sets).

/// A scan of an object's text from the byte after its `{`.
#[derive(Debug, Default, Clone)]
pub(crate) struct TopLevel {
    /// Bytes scanned.
    at: usize,
    /// Inside a string at the last bracket met, before the quotes in `quotes`.
    in_string: bool,
    /// The quote masks since then XORed together: their parity is that of the quotes (a
    /// stretch without brackets needs no more than that).
    quotes: u32,
    depth: i64,
    /// A backslash or `|` was met: no answer.
    refused: bool,
}

/// Where [`TopLevel::find_key`] found a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KeyAt {
    /// Nowhere in the text.
    Absent,
    /// First at this place, at the top level outside every string, with no backslash (or
    /// `|`) before it.
    Top(usize),
    /// First somewhere the search cannot take as a member.
    Elsewhere,
}

/// Whether `x` has an odd number of bits set (without `popcnt`, not in the x86_64 baseline).
#[inline(always)]
fn odd(mut x: u32) -> bool {
    x ^= x >> 16;
    x ^= x >> 8;
    x ^= x >> 4;
    x ^= x >> 2;
    x ^= x >> 1;
    x & 1 == 1
}

impl TopLevel {
    /// Scans on to `b[to]` (`b`: the text after the `{`; `to` not before the last call's):
    /// whether `b[to]` is outside every string and every nested value, with no backslash (or
    /// `|`) before it. After a `false` for a backslash, every later answer is `false`.
    #[inline(always)]
    pub(crate) fn reaches(&mut self, b: &[u8], to: usize) -> bool {
        let to = to.min(b.len());
        if !self.refused && to > self.at {
            self.advance(b, to);
        }
        !self.refused && !self.inside() && self.depth == 0
    }

    /// Where `q` (`finder`'s needle) first occurs in `b` (the text after an object's `{`; `q`
    /// a key between its quotes, with no quote or backslash between them), and whether that
    /// place is at the object's top level, outside every string, with no backslash (or `|`)
    /// before it: the answer of a search for `q` followed by [`TopLevel::reaches`] at its
    /// place, in one pass over the bytes before it, 32 or 16 at a time: the quotes and `q`'s
    /// second and last bytes at each place are compared with the chunk's scan, and a place
    /// where all three match is checked whole.
    #[inline]
    pub(crate) fn find_key(b: &[u8], finder: &memchr::memmem::Finder<'_>) -> KeyAt {
        Self::find_key_with(b, finder, true)
    }

    /// [`TopLevel::find_key`], with the AVX2 loop first where `avx2` and the CPU has it, then
    /// the SSE2 one (the tests run both ways).
    #[inline(always)]
    fn find_key_with(b: &[u8], finder: &memchr::memmem::Finder<'_>, avx2: bool) -> KeyAt {
        let q = finder.needle();
        let mut scan = TopLevel::default();
        let mut i = 0;
        #[cfg(target_arch = "x86_64")]
        if q.len() >= 2 {
            if avx2 && std::is_x86_feature_detected!("avx2") {
                // SAFETY: the CPU has AVX2 (checked just above).
                if let Some(k) = unsafe { x86_avx2::find_key(b, q, &mut scan, &mut i) } {
                    return k;
                }
            }
            // The rest 16 bytes a step (a short `args` whole), then a search of the last bytes.
            if let Some(k) = find_key_sse2(b, q, &mut scan, &mut i) {
                return k;
            }
        }
        match finder.find(&b[i..]) {
            Some(k) => scan.key_at(b, i + k),
            None => KeyAt::Absent,
        }
    }

    /// Whether byte `k` of a chunk whose masks are `m` is at the top level, outside every
    /// string, with no backslash (or `|`) before it (`self` scanned to the chunk's start).
    #[inline(always)]
    fn top_before(&self, m: Chunk, k: u32) -> bool {
        let before = (1u32 << k) - 1;
        let mut t = self.clone();
        if !t.refused {
            t.apply(m.masked(before), before);
        }
        !t.refused && !t.inside() && t.depth == 0
    }

    /// One step of [`TopLevel::find_key`]'s loops over the `width` bytes from `b[*i]`, whose
    /// masks are `m` and whose places where `q` may start are `cand`: the answer at the first
    /// place that holds `q`, else `None`, the chunk taken in and `*i` past it.
    #[inline(always)]
    fn take_chunk(
        &mut self,
        b: &[u8],
        q: &[u8],
        i: &mut usize,
        m: Chunk,
        mut cand: u32,
        width: usize,
    ) -> Option<KeyAt> {
        while cand != 0 {
            let k = cand.trailing_zeros();
            let p = *i + k as usize;
            if same_at(b, p, q) {
                return Some(if self.top_before(m, k) {
                    KeyAt::Top(p)
                } else {
                    KeyAt::Elsewhere
                });
            }
            cand &= cand - 1;
        }
        if !self.refused {
            self.apply(m, u32::MAX >> (32 - width));
        }
        *i += width;
        self.at = *i;
        None
    }

    /// [`TopLevel::find_key`]'s answer for the first occurrence at `b[p]`, scanned to
    /// `self.at <= p` (the last bytes, after the loops).
    #[inline(never)]
    fn key_at(&mut self, b: &[u8], p: usize) -> KeyAt {
        if self.reaches(b, p) {
            KeyAt::Top(p)
        } else {
            KeyAt::Elsewhere
        }
    }

    #[inline(always)]
    fn inside(&self) -> bool {
        self.in_string ^ odd(self.quotes)
    }

    #[inline(always)]
    fn advance(&mut self, b: &[u8], to: usize) {
        let mut i = self.at;
        #[cfg(target_arch = "x86_64")]
        {
            while i + 16 <= to && !self.refused {
                self.chunk(&b[i..i + 16], 0xFFFF);
                i += 16;
            }
            // The last bytes in a 16-byte load ending at `to`, the bytes already taken masked.
            if i < to && to >= 16 && !self.refused {
                let start = to - 16;
                self.chunk(&b[start..to], (0xFFFF_u32 << (i - start)) & 0xFFFF);
                i = to;
            }
        }
        while i < to && !self.refused {
            self.byte(b[i]);
            i += 1;
        }
        self.at = to;
    }

    #[inline(always)]
    fn byte(&mut self, c: u8) {
        match c {
            b'"' => self.quotes ^= 1,
            b'\\' | b'|' => self.refused = true,
            b'{' | b'[' if !self.inside() => self.depth += 1,
            b'}' | b']' if !self.inside() => self.depth -= 1,
            _ => {}
        }
    }

    /// The 16 bytes of `w`, of which only those whose bit is set in `valid` are new.
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    fn chunk(&mut self, w: &[u8], valid: u32) {
        let m = Chunk::of(w);
        self.apply(m.masked(valid), valid);
    }

    /// A chunk's masks taken in: those of its `valid` bytes (the others' bits clear).
    #[inline(always)]
    fn apply(&mut self, m: Chunk, valid: u32) {
        let Chunk {
            open,
            esc,
            close,
            quote,
        } = m;
        if esc != 0 {
            self.refused = true;
            return;
        }
        if open | close == 0 {
            self.quotes ^= quote;
            return;
        }
        // Inside a string: an odd number of quotes at or before the byte (its opening quote
        // counts as inside, its closing one as out; neither is a bracket).
        let mut x = quote;
        x ^= x << 1;
        x ^= x << 2;
        x ^= x << 4;
        x ^= x << 8;
        x ^= x << 16;
        if self.inside() {
            x = !x;
        }
        let out = !x & valid;
        self.depth += i64::from((open & out).count_ones()) - i64::from((close & out).count_ones());
        self.in_string = self.inside() ^ odd(quote);
        self.quotes = 0;
    }
}

/// [`TopLevel::find_key`]'s loop over 16-byte chunks while a whole candidate fits: the
/// answer when the key is found, else `None` with `scan` and `*i` where the loop stopped.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn find_key_sse2(b: &[u8], q: &[u8], scan: &mut TopLevel, i: &mut usize) -> Option<KeyAt> {
    let l = q.len();
    while *i + l + 16 <= b.len() {
        let m = Chunk::of(&b[*i..]);
        let cand =
            m.quote & eq_mask(load16(b, *i + 1), q[1]) & eq_mask(load16(b, *i + l - 1), b'"');
        if let Some(k) = scan.take_chunk(b, q, i, m, cand, 16) {
            return Some(k);
        }
    }
    None
}

/// Whether `b[p..]` starts with `q` (`b` holds `q.len()` bytes there): two overlapping words
/// for the keys of 8 to 16 bytes, the usual ones.
#[inline(always)]
fn same_at(b: &[u8], p: usize, q: &[u8]) -> bool {
    let l = q.len();
    let word = |x: &[u8], at: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&x[at..at + 8]);
        u64::from_le_bytes(w)
    };
    if (8..=16).contains(&l) {
        word(b, p) == word(q, 0) && word(b, p + l - 8) == word(q, l - 8)
    } else {
        b[p..p + l] == *q
    }
}

#[cfg(target_arch = "x86_64")]
mod x86_avx2 {
    use super::{Chunk, KeyAt, TopLevel};
    use std::arch::x86_64::*;

    /// [`super::find_key_sse2`] 32 bytes a step.
    ///
    /// # Safety
    /// The CPU must have AVX2.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn find_key(
        b: &[u8],
        q: &[u8],
        scan: &mut TopLevel,
        i: &mut usize,
    ) -> Option<KeyAt> {
        let l = q.len();
        let set = |c: u8| _mm256_set1_epi8(c as i8);
        let (quote, second, fold) = (set(b'"'), set(q[1]), set(0xDF));
        let (open, esc, close) = (set(0x5B), set(0x5C), set(0x5D));
        let mask = |x: __m256i, c: __m256i| _mm256_movemask_epi8(_mm256_cmpeq_epi8(x, c)) as u32;
        while *i + l + 32 <= b.len() {
            // SAFETY: the three 32-byte loads, at `i`, `i + 1` and `i + l - 1`, end at or
            // before `i + l + 31 < b.len()`.
            let load =
                |k: usize| unsafe { _mm256_loadu_si256(b.as_ptr().add(*i + k).cast::<__m256i>()) };
            let v = load(0);
            let f = _mm256_and_si256(v, fold);
            let m = Chunk {
                open: mask(f, open),
                esc: mask(f, esc),
                close: mask(f, close),
                quote: mask(v, quote),
            };
            let cand = m.quote & mask(load(1), second) & mask(load(l - 1), quote);
            if let Some(k) = scan.take_chunk(b, q, i, m, cand, 32) {
                return Some(k);
            }
        }
        None
    }
}

/// The masks of a chunk of 16 (or 32) bytes, bit `k` for byte `k`: `{` or `[`, `\` or `|`,
/// `}` or `]`, `"`.
#[derive(Clone, Copy)]
struct Chunk {
    open: u32,
    esc: u32,
    close: u32,
    quote: u32,
}

impl Chunk {
    /// The masks of the bytes whose bit is set in `valid` only.
    #[inline(always)]
    fn masked(self, valid: u32) -> Chunk {
        Chunk {
            open: self.open & valid,
            esc: self.esc & valid,
            close: self.close & valid,
            quote: self.quote & valid,
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    fn of(w: &[u8]) -> Chunk {
        use std::arch::x86_64::*;
        assert!(w.len() >= 16);
        // SAFETY: SSE2 is part of the x86_64 baseline; `w` holds 16 readable bytes.
        unsafe {
            let v = _mm_loadu_si128(w.as_ptr().cast::<__m128i>());
            // With bit 5 cleared, `[` and `{` are 0x5B, `\` and `|` 0x5C, `]` and `}` 0x5D.
            let f = _mm_and_si128(v, _mm_set1_epi8(0xDF_u8 as i8));
            Chunk {
                open: eq_mask(f, 0x5B),
                esc: eq_mask(f, 0x5C),
                close: eq_mask(f, 0x5D),
                quote: eq_mask(v, b'"'),
            }
        }
    }
}

/// The bytes of `x` equal to `c`, a bit each.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn eq_mask(x: std::arch::x86_64::__m128i, c: u8) -> u32 {
    use std::arch::x86_64::*;
    // SAFETY: SSE2 is part of the x86_64 baseline.
    unsafe { _mm_movemask_epi8(_mm_cmpeq_epi8(x, _mm_set1_epi8(c as i8))) as u32 }
}

/// The 16 bytes of `b` from `at` (16 readable bytes there).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn load16(b: &[u8], at: usize) -> std::arch::x86_64::__m128i {
    use std::arch::x86_64::*;
    assert!(at + 16 <= b.len());
    // SAFETY: SSE2 is part of the x86_64 baseline; the 16 bytes lie inside `b` (checked).
    unsafe { _mm_loadu_si128(b.as_ptr().add(at).cast::<__m128i>()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Random texts with keys (and pieces of them) strewn in: [`TopLevel::find_key`] answers
    /// as the search followed by the scan to the match.
    #[test]
    fn find_key_answers_as_the_search_then_the_scan() {
        let mut s = 0x5eed_0ff1_d0ca_fe01_u64;
        let mut next = move || crate::testrng::xorshift(&mut s);
        let pieces: &[&[u8]] = &[
            b"\"correlation\"",
            b"\"corr",
            b"elation\"",
            b"\"cbid\"",
            b"\"c\"",
            b": 12, ",
            b"\"x\": [1, {\"y\": 2}], ",
            b"{",
            b"}",
            b"[",
            b"]",
            b"\\",
            b"|",
            b" ",
            b"\n      ",
            b"\"",
            b"a",
        ];
        let keys: Vec<memchr::memmem::Finder<'static>> = ["\"correlation\"", "\"cbid\"", "\"c\""]
            .iter()
            .map(|k| memchr::memmem::Finder::new(k.as_bytes()).into_owned())
            .collect();
        let (mut top, mut elsewhere, mut absent) = (0, 0, 0);
        for _ in 0..40_000 {
            let n = (next() % 40) as usize;
            let mut b = Vec::new();
            for _ in 0..n {
                b.extend_from_slice(pieces[(next() % pieces.len() as u64) as usize]);
            }
            for f in &keys {
                let want = match f.find(&b) {
                    None => KeyAt::Absent,
                    Some(p) if TopLevel::default().reaches(&b, p) => KeyAt::Top(p),
                    Some(_) => KeyAt::Elsewhere,
                };
                let got = TopLevel::find_key(&b, f);
                assert_eq!(got, want, "{:?}", String::from_utf8_lossy(&b));
                let sse2 = TopLevel::find_key_with(&b, f, false);
                assert_eq!(sse2, want, "{:?} (SSE2)", String::from_utf8_lossy(&b));
                match got {
                    KeyAt::Top(_) => top += 1,
                    KeyAt::Elsewhere => elsewhere += 1,
                    KeyAt::Absent => absent += 1,
                }
            }
        }
        assert!(
            top > 5_000 && elsewhere > 5_000 && absent > 5_000,
            "{top} {elsewhere} {absent}"
        );
    }

    /// Random texts, scanned to random places in turn: the answer at each is the byte loop's.
    #[test]
    fn answers_as_the_byte_loop_at_every_place() {
        let mut s = 0x0bad_cafe_1234_5678_u64;
        let mut next = move || crate::testrng::xorshift(&mut s);
        let alphabet = b"aaaaaaaaaaaaaaaaa: ,1\"\"\"\"\"{}[]{}[]\\|Z^z~\xdb\xfb\xdd";
        let (mut yes, mut no) = (0, 0);
        for _ in 0..30_000 {
            let n = (next() % 90) as usize;
            let b: Vec<u8> = (0..n)
                .map(|_| alphabet[(next() % alphabet.len() as u64) as usize])
                .collect();
            let mut t = TopLevel::default();
            let mut to = 0;
            while to <= n {
                let mut model = TopLevel::default();
                for &c in &b[..to] {
                    model.byte(c);
                }
                let want = !model.refused && !model.inside() && model.depth == 0;
                assert_eq!(
                    t.reaches(&b, to),
                    want,
                    "{:?} to {to}",
                    String::from_utf8_lossy(&b)
                );
                if want {
                    yes += 1;
                } else {
                    no += 1;
                }
                to += 1 + (next() % 24) as usize;
            }
        }
        assert!(yes > 5_000 && no > 5_000, "{yes} {no}");
    }
}
