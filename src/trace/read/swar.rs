//! Byte classes a word at a time for the JSON scanner ([`super::json`]): the end of a run of
//! whitespace 16 bytes at a time (SSE2, part of the x86_64 baseline; a byte loop elsewhere),
//! and quotes, backslashes and control bytes 8 bytes at a time in a plain `u64` (SWAR), which
//! is where most keys and short names end, and 16 at a time (SSE2) past the first word of a
//! long string. Also short byte strings compared, and two given bytes found, a word at a time
//! (the name tests of analyze's filter). `json_tests.rs` checks each against the byte loop it
//! replaces.

/// Whitespace from `b[i]` on, 16 bytes at a time where SSE2 is (x86_64), a byte at a time
/// elsewhere and near the end of `b`: the index of the first byte that is not whitespace.
#[inline(never)]
pub(crate) fn skip_ws_run(b: &[u8], mut i: usize) -> usize {
    #[cfg(target_arch = "x86_64")]
    while let Some(w) = b.get(i..i + 16) {
        let n = ws_prefix16(w);
        i += n;
        if n < 16 {
            return i;
        }
    }
    while i < b.len() && matches!(b[i], b' ' | b'\n' | b'\r' | b'\t') {
        i += 1;
    }
    i
}

/// How many of the 16 bytes of `w` are whitespace before the first that is not (16 if all).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn ws_prefix16(w: &[u8]) -> usize {
    use std::arch::x86_64::*;
    debug_assert!(w.len() >= 16);
    // SAFETY: SSE2 is part of the x86_64 baseline; `w` holds at least 16 readable bytes.
    let m = unsafe {
        let v = _mm_loadu_si128(w.as_ptr().cast::<__m128i>());
        let eq = |c: u8| _mm_cmpeq_epi8(v, _mm_set1_epi8(c as i8));
        let ws = _mm_or_si128(
            _mm_or_si128(eq(b' '), eq(b'\n')),
            _mm_or_si128(eq(b'\r'), eq(b'\t')),
        );
        _mm_movemask_epi8(ws) as u32
    };
    (!m).trailing_zeros().min(16) as usize
}

/// The end of a run of ASCII digits from `b[i]`: 8 bytes at a time (SWAR), then a byte at a
/// time near the end of `b`. A byte is a digit when its high nibble is 3 both as it is and
/// after adding 6; a carry out of a byte (from 0xFA and up, not a digit) can only spoil the
/// bytes above it, so the lowest flagged byte is exact.
#[inline(always)]
pub(crate) fn digits_end(b: &[u8], mut i: usize) -> usize {
    const HIGH_NIBBLES: u64 = 0xF0F0_F0F0_F0F0_F0F0;
    const THREES: u64 = 0x3030_3030_3030_3030;
    const LOW7: u64 = 0x7F7F_7F7F_7F7F_7F7F;
    while let Some(w) = b.get(i..i + 8) {
        let mut a = [0u8; 8];
        a.copy_from_slice(w);
        let x = u64::from_le_bytes(a);
        let v = ((x & HIGH_NIBBLES) ^ THREES)
            | ((x.wrapping_add(0x0606_0606_0606_0606) & HIGH_NIBBLES) ^ THREES);
        // The high bit of each byte of `v` that is not zero (no carry between bytes).
        let other = (((v & LOW7) + LOW7) | v) & !LOW7;
        if other != 0 {
            return i + other.trailing_zeros() as usize / 8;
        }
        i += 8;
    }
    while b.get(i).is_some_and(u8::is_ascii_digit) {
        i += 1;
    }
    i
}

/// SWAR masks of one 8-byte word: the high bit of byte `k` is set in the first for a `"`, in
/// the second for a `\\` or a byte below 0x20. `x - 0x01…01 & !x & 0x80…80` flags the zero bytes
/// of `x`; its lowest flag is exact (higher ones may be false), so only the lowest set bit of
/// either mask, or of their union, may be relied on; a word with neither mask set holds none.
#[inline(always)]
pub(crate) fn word_masks(w: &[u8]) -> (u64, u64) {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let mut a = [0u8; 8];
    a.copy_from_slice(&w[..8]);
    let x = u64::from_le_bytes(a);
    let zero = |v: u64| v.wrapping_sub(ONES) & !v & HIGH;
    let quote = zero(x ^ (ONES * u64::from(b'"')));
    let special = zero(x ^ (ONES * u64::from(b'\\'))) | (x.wrapping_sub(ONES * 0x20) & !x & HIGH);
    (quote, special)
}

/// The length of a plain string body at the start of `s` (no backslash, no control byte):
/// the index of its closing quote; `None` when a backslash or control byte comes first or
/// `s` ends before the quote. A word at a time, then byte by byte for the last few.
#[inline]
pub(crate) fn plain_string_len(s: &[u8]) -> Option<usize> {
    let mut j = 0;
    while let Some(w) = s.get(j..j + 8) {
        let (quote, special) = word_masks(w);
        let m = quote | special;
        if m != 0 {
            let t = m.trailing_zeros();
            return (quote & (1u64 << t) != 0).then_some(j + t as usize / 8);
        }
        j += 8;
    }
    let k = s[j..]
        .iter()
        .position(|&c| c == b'"' || c == b'\\' || c < 0x20)?;
    (s[j + k] == b'"').then_some(j + k)
}

/// Where the closing quote is in `w` when a plain string (no backslash, no control byte)
/// ends within these 8 bytes.
#[inline(always)]
pub(crate) fn short_string_end(w: &[u8]) -> Option<usize> {
    if w.len() < 8 {
        return None;
    }
    let (quote, special) = word_masks(w);
    let q = quote.trailing_zeros();
    (q < 64 && q < special.trailing_zeros()).then_some(q as usize / 8)
}

/// Whether `a` and `b` hold the same bytes, compared a word at a time with overlapping loads
/// (two `u32` for 4–7 bytes, two `u64` for 8–16, a `u64` per 8 bytes beyond): the short
/// category and op names [`super::want::Want`] and analyze test, without a call to `memcmp`.
#[inline(always)]
pub(crate) fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    #[inline(always)]
    fn w64(s: &[u8], i: usize) -> u64 {
        let mut x = [0u8; 8];
        x.copy_from_slice(&s[i..i + 8]);
        u64::from_le_bytes(x)
    }
    #[inline(always)]
    fn w32(s: &[u8], i: usize) -> u32 {
        let mut x = [0u8; 4];
        x.copy_from_slice(&s[i..i + 4]);
        u32::from_le_bytes(x)
    }
    let n = a.len();
    if n != b.len() {
        return false;
    }
    match n {
        0..=3 => a.iter().zip(b).all(|(x, y)| x == y),
        4..=7 => w32(a, 0) == w32(b, 0) && w32(a, n - 4) == w32(b, n - 4),
        _ => {
            let mut i = 0;
            while i + 8 < n {
                if w64(a, i) != w64(b, i) {
                    return false;
                }
                i += 8;
            }
            w64(a, n - 8) == w64(b, n - 8)
        }
    }
}

/// Whether `f(k)` holds at some index `k` where `hay[k]` is `x` or `y` (neither 0), in
/// order, looking 8 bytes at a time: the short-name searches of analyze's filter, where
/// `memchr`'s set-up costs more than the search. A byte equal to `x` or `y` is flagged by the
/// usual zero-byte test, which can also flag a byte above a flagged one (never miss one):
/// `f` decides.
#[inline(always)]
pub(crate) fn any_at_either(hay: &[u8], x: u8, y: u8, mut f: impl FnMut(usize) -> bool) -> bool {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    debug_assert!(x != 0 && y != 0);
    let mut i = 0;
    while i < hay.len() {
        let mut a = [0u8; 8];
        match hay.get(i..i + 8) {
            Some(s) => a.copy_from_slice(s),
            // The last few bytes, the rest 0 (neither `x` nor `y`).
            None => {
                for (d, &c) in a.iter_mut().zip(&hay[i..]) {
                    *d = c;
                }
            }
        }
        let w = u64::from_le_bytes(a);
        let (ex, ey) = (w ^ (LO * u64::from(x)), w ^ (LO * u64::from(y)));
        let mut m = (ex.wrapping_sub(LO) & !ex | ey.wrapping_sub(LO) & !ey) & HI;
        while m != 0 {
            let k = i + (m.trailing_zeros() / 8) as usize;
            if k < hay.len() && f(k) {
                return true;
            }
            m &= m - 1;
        }
        i += 8;
    }
    false
}

/// From `b[i]` on, 16 bytes at a time (SSE2, part of the x86_64 baseline; nothing elsewhere):
/// the index of the first `"`, `\\` or control byte, or where fewer than 16 bytes are left
/// without one. The long runs of plain text in strings (CUDA kernel names, Python stacks) go
/// at a vector a step; the word loops above find the byte from there.
#[inline(always)]
pub(crate) fn skip_plain16(b: &[u8], mut i: usize) -> usize {
    #[cfg(target_arch = "x86_64")]
    while let Some(w) = b.get(i..i + 16) {
        use std::arch::x86_64::*;
        // SAFETY: SSE2 is part of the x86_64 baseline; `w` holds 16 readable bytes.
        let m = unsafe {
            let v = _mm_loadu_si128(w.as_ptr().cast::<__m128i>());
            let quote = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8));
            let bslash = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8));
            let ctl = _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(0x1f)), v);
            _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(quote, bslash), ctl)) as u32
        };
        if m != 0 {
            return i + m.trailing_zeros() as usize;
        }
        i += 16;
    }
    i
}
