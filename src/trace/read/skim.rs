//! Skimming a nested value (an event's `args`, an array) 64 bytes at a time instead of token
//! by token: the part of #14's structural scanner that pays for itself.
//!
//! A block is classified at once into bit masks (quotes, brackets, what is declined anywhere,
//! whitespace control bytes), in the manner of simdjson's stage 1 (Langdale & Lemire, "Parsing
//! Gigabytes of JSON per Second", 2019): the string bodies are the prefix XOR of the quotes,
//! and the matching close of the value is found by walking only the brackets outside strings.
//! Most of a Kineto event's bytes are its `args`, which analyze never reads token by token, so
//! this is where the byte-at-a-time scanner ([`super::json`]) spent most of its time.
//!
//! What a skim checks: every string is closed; no string holds a raw control byte; no control
//! byte other than tab, newline or carriage return stands outside a string; the brackets nest
//! and pair (`{` with `}`, `[` with `]`), at most 63 deep. What it does not check: the tokens
//! between the brackets (a missing comma, a malformed number). So it is only for readers that
//! will not copy the value out ([`super::reader::Nested::Skim`], analyze's); merge, which
//! writes `args` into its output, validates every byte ([`super::reader::Nested::Validate`]).
//! On anything it does not take on — a backslash anywhere in the value, a raw control byte, a
//! bracket that does not pair, nesting over 63, the window ending inside the value — it answers
//! `None` and the caller scans the value again with the validating scanner, whose answer
//! (including an error's byte offset, or `Incomplete`) is then the one given.
//!
//! Kernels: on x86_64, AVX2 where run-time detection finds it (`is_x86_feature_detected!`,
//! cached by std), with the prefix XOR as one carry-less multiply (PCLMULQDQ, as simdjson
//! does; every AVX2 CPU has it, and both are checked), and SSE2 otherwise (part of the
//! baseline); NEON on aarch64 (likewise part of the baseline); a scalar loop elsewhere.
//! The AVX2 kernel classifies each byte with two table lookups (`vpshufb` on its low and its
//! high nibble, simdjson's way) instead of a compare per byte value: 13 vector instructions
//! per 32 bytes instead of 19, and four masks to gather instead of six. With the last, short
//! block out of line ([`skim_tail`]): callgrind, `analyze --all-ranks -j 1`, one rank of each
//! `./bench` set, real 1,248 → 1,222 M instructions, synth 1,922 → 1,897 M, stack 1,120 →
//! 1,080 M (CONTRIBUTING.md, "Benchmarks and performance work").
//! `tests` and the `event` fuzz target check each against the scalar one, and the skim with
//! the detected kernel against the baseline one.
//! AVX2 over SSE2: `analyze --all-ranks -j 2`, task-clock, best of 5, binaries alternated:
//! −10 % on the SGLang set with Python stacks (`./bench`'s `stack`), −5 % real, −3 % synth.
//! Why not a crate: `simd-json` parses whole documents held in memory and says only that a
//! document is invalid; `memchr` finds up to three given bytes, not four classes at once.
//!
//! A reader that has already read an event's leading `ph`/`cat`/`name` (the peek,
//! [`super::want::Want::peek`]) skims the rest from there ([`skip_rest_of_object`]) instead of from the
//! `{`: the same answer, a block fewer for most CPU ops and runtime calls. With the
//! carry-less prefix XOR: −28 % of the skim's instructions, −2.3 % of analyze's (callgrind, one rank of `./bench`'s real set; below the noise of a task-clock run).
//!
//! Measured (`rankprof analyze --profile-dir D -j 2`, D = `rankprof synth --dp 128 --tp 8
//! --target-mb 1`, 1,024 ranks, 1.05 GB of JSON; user + sys CPU s on an idle 2-core machine):
//! see docs/benchmarks.md.

use super::stop::{Scan, Stop};

/// One bit per byte of a 64-byte block (bit `k` is byte `k`): the four classes the skim
/// tells apart.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Masks {
    /// `"`
    pub quote: u64,
    /// `{`, `[`, `}` and `]` (which one is read from the byte itself).
    pub bracket: u64,
    /// What the skim declines wherever it stands: `\`, and a control byte (below 0x20) other
    /// than tab, newline and carriage return.
    pub bad: u64,
    /// Tab, newline and carriage return: allowed outside strings, declined inside them.
    pub ws: u64,
}

/// The scalar kernel: the definition the vector kernels must match.
pub fn classify_scalar(block: &[u8; 64]) -> Masks {
    let mut m = Masks::default();
    for (k, &c) in block.iter().enumerate() {
        let bit = 1u64 << k;
        match c {
            b'"' => m.quote |= bit,
            b'{' | b'[' | b'}' | b']' => m.bracket |= bit,
            b'\\' => m.bad |= bit,
            b'\t' | b'\n' | b'\r' => m.ws |= bit,
            0..=0x1f => m.bad |= bit,
            _ => {}
        }
    }
    m
}

/// The kernel of this build's target.
#[inline(always)]
pub(crate) fn classify(block: &[u8; 64]) -> Masks {
    #[cfg(target_arch = "x86_64")]
    {
        x86::sse2(block)
    }
    #[cfg(target_arch = "aarch64")]
    {
        arm::neon(block)
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        classify_scalar(block)
    }
}

/// The best kernel this CPU has: AVX2 where run-time detection finds it, else [`classify`].
pub fn classify_detected(block: &[u8; 64]) -> Masks {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2 (checked just above).
        return unsafe { x86_avx2::avx2(block) };
    }
    classify(block)
}

/// Bit `k` of the result is the XOR of bits `0..=k` of `x`: with `x` the quotes of a block,
/// the bytes from an opening quote up to (not including) its closing one.
#[inline(always)]
pub(crate) fn prefix_xor(mut x: u64) -> u64 {
    x ^= x << 1;
    x ^= x << 2;
    x ^= x << 4;
    x ^= x << 8;
    x ^= x << 16;
    x ^= x << 32;
    x
}

/// `b[i]` is `{` or `[`: the index after the value's matching close; `Some(Err(Incomplete))`
/// when `b` ends inside the value with nothing declined so far (read more and skim again); or
/// `None` when the skim does not take the value on (see the module doc: the caller then
/// scans it byte by byte). What it answers depends only on the value's bytes, never on where
/// the window ends.
#[inline]
pub fn skip_nested(b: &[u8], i: usize) -> Option<Scan<usize>> {
    skip_from(b, i, Open::NONE)
}

/// [`skip_nested`] for an object whose first bytes, up to `b[j]`, are known to hold no
/// bracket and nothing the skim would decline outside a string (its `{`, then keys, colons,
/// commas, whitespace and plain strings: what [`super::want::Want::peek`] read). `b[j]` is
/// outside any string. The same answer as [`skip_nested`] from the `{`, without classifying
/// those bytes again.
#[inline]
pub(crate) fn skip_rest_of_object(b: &[u8], j: usize) -> Option<Scan<usize>> {
    skip_from(b, j, Open::OBJECT)
}

/// The brackets open where a skim starts: a stack of bits (1 for `{`, the innermost lowest)
/// and its depth.
#[derive(Clone, Copy)]
struct Open {
    stack: u64,
    depth: u32,
}

impl Open {
    const NONE: Open = Open { stack: 0, depth: 0 };
    const OBJECT: Open = Open { stack: 1, depth: 1 };
}

#[inline(always)]
fn skip_from(b: &[u8], i: usize, open: Open) -> Option<Scan<usize>> {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("pclmulqdq") {
        // SAFETY: the CPU has AVX2 and PCLMULQDQ (checked just above; the answer is cached
        // by std).
        return unsafe { x86_avx2::skip_avx2(b, i, open) };
    }
    skip_nested_with(b, i, open, classify, prefix_xor)
}

/// [`skip_nested`] with the baseline kernel only (tests compare the two).
pub fn skip_nested_baseline(b: &[u8], i: usize) -> Option<Scan<usize>> {
    skip_nested_with(b, i, Open::NONE, classify, prefix_xor)
}

/// Where a skim stands between blocks.
#[derive(Clone, Copy)]
struct Walk {
    /// Where the next block starts.
    pos: usize,
    /// All ones while a string runs on from the previous block.
    carry: u64,
    open: Open,
}

impl Walk {
    /// Takes the block at `self.pos`, of which the bytes whose bit is set in `valid` are the
    /// input's, classified as `m`, the strings found by `pxor`: `Some` with the skim's answer
    /// when the value closes in this block or the skim declines it, `None` to go on with the
    /// next.
    #[inline(always)]
    fn block(
        &mut self,
        block: &[u8; 64],
        valid: u64,
        m: Masks,
        pxor: impl Fn(u64) -> u64,
    ) -> Option<Option<Scan<usize>>> {
        let instr = pxor(m.quote) ^ self.carry;
        // A backslash (escapes would change what the quotes mean), a control byte inside a
        // string, or one that is not whitespace outside: the validating scanner decides. Only
        // the bytes up to the value's close count (what follows is not the value's).
        let bad = (m.bad | (m.ws & instr)) & valid;
        self.carry = 0u64.wrapping_sub(instr >> 63);
        // One bit per open bracket, the innermost lowest: 1 for `{`.
        let Open { stack, depth } = &mut self.open;
        let mut br = m.bracket & !instr & valid;
        while br != 0 {
            let k = br.trailing_zeros() as usize;
            let c = block[k];
            if c == b'{' || c == b'[' {
                if *depth == 63 {
                    return Some(None);
                }
                *stack = *stack << 1 | u64::from(c == b'{');
                *depth += 1;
            } else {
                if *depth == 0 || (c == b'}') != (*stack & 1 == 1) {
                    return Some(None);
                }
                *stack >>= 1;
                *depth -= 1;
                if *depth == 0 {
                    let upto = u64::MAX >> (63 - k);
                    return Some((bad & upto == 0).then_some(Ok(self.pos + k + 1)));
                }
            }
            br &= br - 1;
        }
        if bad != 0 {
            return Some(None);
        }
        None
    }
}

/// The skim from `b[i]` with the brackets `open` already open, over blocks classified by
/// `classify` (inlined into each kernel's instance), the strings found by `pxor` (a
/// [`prefix_xor`]). The last, short block, when the skim reaches the end of `b`, is taken out
/// of line ([`skim_tail`]): most skims end within whole blocks, and the loop without it keeps
/// fewer values live.
#[inline(always)]
fn skip_nested_with(
    b: &[u8],
    i: usize,
    open: Open,
    classify: impl Fn(&[u8; 64]) -> Masks,
    pxor: impl Fn(u64) -> u64,
) -> Option<Scan<usize>> {
    let mut walk = Walk {
        pos: i,
        carry: 0,
        open,
    };
    loop {
        let Some(s) = b.get(walk.pos..walk.pos + 64) else {
            return skim_tail(b, walk);
        };
        let block = <&[u8; 64]>::try_from(s).ok()?;
        if let Some(answer) = walk.block(block, u64::MAX, classify(block), &pxor) {
            return answer;
        }
        walk.pos += 64;
    }
}

/// The skim's last block, shorter than 64 bytes (maybe empty), padded with spaces and
/// classified by the baseline kernel (every kernel's masks are the same): the skim's answer,
/// `Incomplete` when the value runs on past `b`'s end.
#[cold]
#[inline(never)]
fn skim_tail(b: &[u8], mut walk: Walk) -> Option<Scan<usize>> {
    let Some(rest) = b.get(walk.pos..) else {
        return Some(Err(Stop::Incomplete));
    };
    let mut pad = [b' '; 64];
    pad[..rest.len()].copy_from_slice(rest);
    let valid = (1u64 << rest.len()) - 1;
    walk.block(&pad, valid, classify(&pad), prefix_xor)
        .unwrap_or(Some(Err(Stop::Incomplete)))
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::Masks;
    use std::arch::x86_64::*;

    /// SSE2, part of every x86_64 CPU: four 16-byte compares per class.
    #[inline(always)]
    pub(super) fn sse2(block: &[u8; 64]) -> Masks {
        let p = block.as_ptr().cast::<__m128i>();
        // SAFETY: SSE2 is part of the x86_64 baseline, so these intrinsics can run on every
        // CPU this code is built for; `block` is 64 readable bytes, the four unaligned
        // 16-byte loads lie inside it.
        unsafe {
            let v = [
                _mm_loadu_si128(p),
                _mm_loadu_si128(p.add(1)),
                _mm_loadu_si128(p.add(2)),
                _mm_loadu_si128(p.add(3)),
            ];
            let mask = |f: &dyn Fn(__m128i) -> __m128i| -> u64 {
                v.iter().enumerate().fold(0u64, |acc, (k, &x)| {
                    acc | u64::from(_mm_movemask_epi8(f(x)) as u16) << (16 * k)
                })
            };
            let eq = |x: __m128i, c: u8| _mm_cmpeq_epi8(x, _mm_set1_epi8(c as i8));
            // `[` and `]` are `{` and `}` with bit 5 clear: with it set, two compares.
            let bracket = |x: __m128i| {
                let folded = _mm_or_si128(x, _mm_set1_epi8(0x20));
                _mm_or_si128(eq(folded, b'{'), eq(folded, b'}'))
            };
            let ws = |x| _mm_or_si128(_mm_or_si128(eq(x, b'\t'), eq(x, b'\n')), eq(x, b'\r'));
            let ctl = |x| _mm_cmpeq_epi8(_mm_min_epu8(x, _mm_set1_epi8(0x1f)), x);
            Masks {
                quote: mask(&|x| eq(x, b'"')),
                bracket: mask(&bracket),
                bad: mask(&|x| _mm_or_si128(eq(x, b'\\'), _mm_andnot_si128(ws(x), ctl(x)))),
                ws: mask(&ws),
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod x86_avx2 {
    use super::{Masks, Open, Scan};
    use std::arch::x86_64::*;

    /// A class byte's bits: `"`, a bracket, a backslash, tab/newline/carriage return, another
    /// control byte below 0x10, one from 0x10 to 0x1F.
    const Q: u8 = 0x80;
    const BR: u8 = 0x40;
    const BS: u8 = 0x20;
    const WS: u8 = 0x10;
    const C0: u8 = 0x08;
    const C1: u8 = 0x04;

    /// The class bits a byte's low nibble allows, twice (`vpshufb` looks up within each
    /// 128-bit lane).
    const LOW: [u8; 32] = {
        let mut t = [0u8; 32];
        let mut n = 0;
        while n < 32 {
            let ctl = match n % 16 {
                0x9 | 0xA | 0xD => WS,
                _ => C0,
            };
            let other = match n % 16 {
                0x2 => Q,
                0xB | 0xD => BR,
                0xC => BS,
                _ => 0,
            };
            t[n] = C1 | ctl | other;
            n += 1;
        }
        t
    };

    /// The class bits a byte's high nibble allows, twice: a byte's class is the bits both
    /// allow (`"` 0x22, `[ \ ]` 0x5B–0x5D, `{ }` 0x7B and 0x7D, control bytes 0x00–0x1F).
    const HIGH: [u8; 32] = {
        let mut t = [0u8; 32];
        let mut n = 0;
        while n < 32 {
            t[n] = match n % 16 {
                0x0 => C0 | WS,
                0x1 => C1,
                0x2 => Q,
                0x5 => BR | BS,
                0x7 => BR,
                _ => 0,
            };
            n += 1;
        }
        t
    };

    /// AVX2: each byte's class from two table lookups (`vpshufb` on its low and its high
    /// nibble, as simdjson classifies), then a mask per class.
    #[target_feature(enable = "avx2")]
    #[inline]
    pub(super) fn avx2(block: &[u8; 64]) -> Masks {
        let p = block.as_ptr().cast::<__m256i>();
        // SAFETY: `block` is 64 readable bytes, the two unaligned 32-byte loads lie inside it,
        // as `LOW` and `HIGH` are 32; the intrinsics need AVX2, which this function's callers
        // have checked.
        let (v, low, high) = unsafe {
            (
                [_mm256_loadu_si256(p), _mm256_loadu_si256(p.add(1))],
                _mm256_loadu_si256(LOW.as_ptr().cast()),
                _mm256_loadu_si256(HIGH.as_ptr().cast()),
            )
        };
        let class = v.map(|x| {
            // A byte with bit 7 set looks up 0 in `LOW`.
            let hi = _mm256_and_si256(_mm256_srli_epi16(x, 4), _mm256_set1_epi8(0x0f));
            _mm256_and_si256(_mm256_shuffle_epi8(low, x), _mm256_shuffle_epi8(high, hi))
        });
        // Bit 7 of each byte of `f(class)`, for the 64 bytes.
        let mask = |f: &dyn Fn(__m256i) -> __m256i| -> u64 {
            u64::from(_mm256_movemask_epi8(f(class[0])) as u32)
                | u64::from(_mm256_movemask_epi8(f(class[1])) as u32) << 32
        };
        let bad = (BS | C0 | C1) as i8;
        Masks {
            quote: mask(&|c| c),
            // Each byte doubled: the bracket bit (6) moves to bit 7.
            bracket: mask(&|c| _mm256_add_epi8(c, c)),
            // Bit 7 set where any of `bad`'s bits is: 0x7F added, saturating.
            bad: mask(&|c| {
                _mm256_adds_epu8(
                    _mm256_and_si256(c, _mm256_set1_epi8(bad)),
                    _mm256_set1_epi8(0x7f),
                )
            }),
            // The whitespace bit (4) moved to bit 7 (in 16-bit lanes: what a low byte shifts
            // into its high byte lands in bits 0 to 2).
            ws: mask(&|c| _mm256_slli_epi16(c, 3)),
        }
    }

    /// [`super::prefix_xor`] in one carry-less multiply by all ones (as simdjson does).
    #[target_feature(enable = "pclmulqdq")]
    #[inline]
    pub(super) fn prefix_xor_clmul(x: u64) -> u64 {
        let p = _mm_clmulepi64_si128(_mm_set_epi64x(0, x as i64), _mm_set1_epi8(-1), 0);
        _mm_cvtsi128_si64(p) as u64
    }

    /// The skim with the AVX2 kernel and the carry-less prefix XOR inlined.
    #[target_feature(enable = "avx2,pclmulqdq")]
    pub(super) fn skip_avx2(b: &[u8], i: usize, open: Open) -> Option<Scan<usize>> {
        super::skip_nested_with(b, i, open, |block| avx2(block), |x| prefix_xor_clmul(x))
    }
}

#[cfg(target_arch = "aarch64")]
mod arm {
    use super::Masks;
    use std::arch::aarch64::*;

    /// 64 compare results (0xFF or 0) to a 64-bit mask, as simdjson does on NEON.
    #[inline(always)]
    fn bits(v: [uint8x16_t; 4]) -> u64 {
        const W: [u8; 16] = [1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128];
        // SAFETY: NEON is part of the aarch64 baseline, so these intrinsics run on every CPU
        // this code is built for; `W` is 16 readable bytes.
        unsafe {
            let w = vld1q_u8(W.as_ptr());
            let s0 = vpaddq_u8(vandq_u8(v[0], w), vandq_u8(v[1], w));
            let s1 = vpaddq_u8(vandq_u8(v[2], w), vandq_u8(v[3], w));
            let s = vpaddq_u8(s0, s1);
            let s = vpaddq_u8(s, s);
            vgetq_lane_u64::<0>(vreinterpretq_u64_u8(s))
        }
    }

    /// NEON, part of every aarch64 CPU.
    #[inline(always)]
    pub fn neon(block: &[u8; 64]) -> Masks {
        let p = block.as_ptr();
        // SAFETY: NEON is part of the aarch64 baseline (as above); `block` is 64 readable
        // bytes: four 16-byte loads inside it.
        unsafe {
            let v = [
                vld1q_u8(p),
                vld1q_u8(p.add(16)),
                vld1q_u8(p.add(32)),
                vld1q_u8(p.add(48)),
            ];
            let eq = |c: u8| v.map(|x| vceqq_u8(x, vdupq_n_u8(c)));
            let or = |a: [uint8x16_t; 4], b: [uint8x16_t; 4]| {
                std::array::from_fn(|k| vorrq_u8(a[k], b[k]))
            };
            let folded = v.map(|x| vorrq_u8(x, vdupq_n_u8(0x20)));
            let feq = |c: u8| folded.map(|x| vceqq_u8(x, vdupq_n_u8(c)));
            let ws = or(or(eq(b'\t'), eq(b'\n')), eq(b'\r'));
            let ctl = v.map(|x| vcltq_u8(x, vdupq_n_u8(0x20)));
            let other_ctl = std::array::from_fn(|k| vbicq_u8(ctl[k], ws[k]));
            Masks {
                quote: bits(eq(b'"')),
                bracket: bits(or(feq(b'{'), feq(b'}'))),
                bad: bits(or(eq(b'\\'), other_ctl)),
                ws: bits(ws),
            }
        }
    }
}

#[cfg(test)]
#[path = "skim_tests.rs"]
mod tests;
