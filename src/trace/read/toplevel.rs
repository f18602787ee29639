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
    #[inline]
    pub(crate) fn reaches(&mut self, b: &[u8], to: usize) -> bool {
        let to = to.min(b.len());
        if !self.refused && to > self.at {
            self.advance(b, to);
        }
        !self.refused && !self.inside() && self.depth == 0
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
        use std::arch::x86_64::*;
        debug_assert!(w.len() >= 16);
        // SAFETY: SSE2 is part of the x86_64 baseline; `w` holds 16 readable bytes.
        let (open, esc, close, quote) = unsafe {
            let v = _mm_loadu_si128(w.as_ptr().cast::<__m128i>());
            // With bit 5 cleared, `[` and `{` are 0x5B, `\` and `|` 0x5C, `]` and `}` 0x5D.
            let f = _mm_and_si128(v, _mm_set1_epi8(0xDF_u8 as i8));
            let m = |x: __m128i, c: u8| {
                _mm_movemask_epi8(_mm_cmpeq_epi8(x, _mm_set1_epi8(c as i8))) as u32
            };
            (
                m(f, 0x5B) & valid,
                m(f, 0x5C) & valid,
                m(f, 0x5D) & valid,
                m(v, b'"') & valid,
            )
        };
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
        if self.inside() {
            x = !x;
        }
        let out = !x & valid;
        self.depth += i64::from((open & out).count_ones()) - i64::from((close & out).count_ones());
        self.in_string = self.inside() ^ odd(quote);
        self.quotes = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
