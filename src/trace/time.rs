//! Time as a type. Kineto writes `ts`/`dur` in microseconds with up to three fractional digits
//! (nanoseconds) and `baseTimeNanoseconds` in nanoseconds; mixing the two units is the classic
//! bug. Every time in rankprof is an [`Ns`]: integer nanoseconds, exact for any value Kineto
//! writes (absolute epoch µs with ns fractions still fit in an `i64`).

use std::fmt;
use std::iter::Sum;
use std::ops::{Add, AddAssign, Sub};

/// A time or duration in integer nanoseconds. Serialized as the bare integer.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(transparent)]
pub struct Ns(i64);

impl Ns {
    pub const ZERO: Ns = Ns(0);

    /// `ns` nanoseconds.
    #[inline]
    pub const fn new(ns: i64) -> Ns {
        Ns(ns)
    }

    /// The integer nanoseconds.
    #[inline]
    pub const fn get(self) -> i64 {
        self.0
    }

    /// Microseconds as a float (for display and statistics).
    pub fn as_us(self) -> f64 {
        self.0 as f64 / 1_000.0
    }

    pub fn as_ms(self) -> f64 {
        self.0 as f64 / 1_000_000.0
    }

    pub fn from_us_f64(us: f64) -> Option<Ns> {
        let ns = (us * 1_000.0).round();
        if ns.is_finite() && ns.abs() < 9.2e18 {
            Some(Ns(ns as i64))
        } else {
            None
        }
    }

    /// Parses a JSON number holding microseconds into exact nanoseconds.
    /// Digits past the third fractional one are rounded half away from zero.
    /// Returns `None` for text that is not a JSON number or does not fit in 64 bits.
    pub fn parse_us(text: &[u8]) -> Option<Ns> {
        // One pass for the common `[-]digits[.digits]`; any other text (an exponent, or not a
        // number at all) takes the float route exactly as before.
        Self::parse_us_plain(text).or_else(|| {
            if text.iter().any(|&b| b == b'e' || b == b'E') {
                let s = std::str::from_utf8(text).ok()?;
                Ns::from_us_f64(s.parse::<f64>().ok()?)
            } else {
                None
            }
        })
    }

    /// [`Ns::parse_us`] for text with no exponent: `None` for anything else.
    #[inline]
    fn parse_us_plain(text: &[u8]) -> Option<Ns> {
        let (neg, digits) = match text.first()? {
            b'-' => (true, &text[1..]),
            _ => (false, text),
        };
        if let Some(ns) = swar_us(digits) {
            return Some(Ns(if neg { -ns } else { ns }));
        }
        Self::parse_us_digits(neg, digits)
    }

    /// The digit-by-digit parse of [`Ns::parse_us_plain`]: every form, rounding included.
    fn parse_us_digits(neg: bool, digits: &[u8]) -> Option<Ns> {
        let mut whole: i64 = 0;
        let mut i = 0;
        while i < digits.len() && digits[i].is_ascii_digit() {
            whole = whole
                .checked_mul(10)?
                .checked_add(i64::from(digits[i] - b'0'))?;
            i += 1;
        }
        if i == 0 {
            return None;
        }
        let mut frac: i64 = 0;
        let mut round_up = false;
        if i < digits.len() {
            if digits[i] != b'.' {
                return None;
            }
            i += 1;
            let start = i;
            while i < digits.len() && digits[i].is_ascii_digit() {
                let d = i64::from(digits[i] - b'0');
                match i - start {
                    0..=2 => frac = frac * 10 + d,
                    3 => round_up = d >= 5,
                    _ => {}
                }
                i += 1;
            }
            if i == start {
                return None;
            }
            for _ in (i - start)..3 {
                frac *= 10;
            }
        }
        if i != digits.len() {
            return None;
        }
        let mut ns = whole.checked_mul(1_000)?.checked_add(frac)?;
        if round_up {
            ns = ns.checked_add(1)?;
        }
        Some(Ns(if neg { -ns } else { ns }))
    }

    /// Writes the value as microseconds with exactly the digits needed (up to 3 fractional).
    pub fn write_us(self, out: &mut Vec<u8>) {
        let v = self.0;
        let neg = v < 0;
        let a = v.unsigned_abs();
        let whole = a / 1_000;
        let frac = a % 1_000;
        if neg {
            out.push(b'-');
        }
        out.extend_from_slice(itoa::Buffer::new().format(whole).as_bytes());
        if frac != 0 {
            out.push(b'.');
            let digits = [
                b'0' + (frac / 100) as u8,
                b'0' + (frac / 10 % 10) as u8,
                b'0' + (frac % 10) as u8,
            ];
            let mut n = 3;
            while digits[n - 1] == b'0' {
                n -= 1;
            }
            out.extend_from_slice(&digits[..n]);
        }
    }
}

/// Whether a file without `baseTimeNanoseconds` lost it: its earliest `ts` is below ~3 years
/// after 1970, so its times cannot be absolute epoch times and are relative to a base the file
/// no longer holds (Kineto writes the key after the events, so a truncated file has none).
pub(crate) fn lost_base(base_ns: Option<i64>, earliest: Option<Ns>) -> bool {
    const RELATIVE_BELOW: Ns = Ns(100_000_000_000_000_000);
    base_ns.is_none() && earliest.is_some_and(|t| t < RELATIVE_BELOW)
}

impl Add for Ns {
    type Output = Ns;
    fn add(self, o: Ns) -> Ns {
        Ns(self.0.saturating_add(o.0))
    }
}

impl AddAssign for Ns {
    fn add_assign(&mut self, o: Ns) {
        self.0 = self.0.saturating_add(o.0);
    }
}

impl Sub for Ns {
    type Output = Ns;
    fn sub(self, o: Ns) -> Ns {
        Ns(self.0.saturating_sub(o.0))
    }
}

impl Sum for Ns {
    fn sum<I: Iterator<Item = Ns>>(it: I) -> Ns {
        it.fold(Ns::ZERO, Add::add)
    }
}

impl<'a> Sum<&'a Ns> for Ns {
    fn sum<I: Iterator<Item = &'a Ns>>(it: I) -> Ns {
        it.copied().sum()
    }
}

/// The bare count of nanoseconds (for the statistics over plain integers).
impl From<Ns> for i64 {
    fn from(t: Ns) -> i64 {
        t.0
    }
}

impl fmt::Display for Ns {
    /// Human form: picks µs, ms or s.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let a = self.0.unsigned_abs();
        if a < 1_000_000 {
            write!(f, "{:.1} µs", self.as_us())
        } else if a < 1_000_000_000 {
            write!(f, "{:.2} ms", self.as_ms())
        } else {
            write!(f, "{:.3} s", self.0 as f64 / 1e9)
        }
    }
}

/// `whole[.frac]` microseconds as nanoseconds, 8 bytes at a time, for the common Kineto
/// forms: 1 to 16 whole digits and up to 3 fractional ones (an integer `dur`, an epoch `ts`
/// with its nanoseconds). `None` for anything else, which the digit-by-digit parse decides
/// (more fractional digits, rounded; overflow; not a number).
#[inline]
fn swar_us(d: &[u8]) -> Option<i64> {
    // The text in three words, padded with a byte that is not a digit; a shorter text (a
    // short `dur`) is as quick digit by digit.
    if d.len() < 8 {
        return None;
    }
    let (w0, w1, w2) = (word_at(d, 0), word_at(d, 8), word_at(d, 16));
    let n = match (non_digits(w0), non_digits(w1)) {
        (0, 0) => 16 + (non_digits(w2).trailing_zeros() / 8) as usize,
        (0, m) => 8 + (m.trailing_zeros() / 8) as usize,
        (m, _) => (m.trailing_zeros() / 8) as usize,
    };
    if n == 0 || n > 16 {
        return None;
    }
    let whole = if n <= 8 {
        eight_digits(w0 << (8 * (8 - n)))
    } else {
        eight_digits(w0) * POW10[n - 8] + eight_digits(w1 << (8 * (16 - n)))
    };
    let frac = match d.len() - n {
        0 => 0,
        // `.` and 1 to 3 digits, the last byte of the text.
        r @ 2..=4 if d[n] == b'.' => {
            let f = &d[n + 1..];
            let mut v = 0u64;
            for &c in f {
                let x = c.wrapping_sub(b'0');
                if x > 9 {
                    return None;
                }
                v = v * 10 + u64::from(x);
            }
            v * POW10[4 - r]
        }
        _ => return None,
    };
    // 16 digits and 3 more fit an i64 (< 10^19).
    i64::try_from(whole * 1_000 + frac).ok()
}

/// The 8 bytes of `d` from `at` as a word (first byte lowest), bytes past the end `x`: one
/// load, or for the last partial word the load of `d`'s last 8 bytes shifted down. `d` holds 8
/// bytes or more.
#[inline(always)]
fn word_at(d: &[u8], at: usize) -> u64 {
    let load = |from: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&d[from..from + 8]);
        u64::from_le_bytes(w)
    };
    const PAD: u64 = 0x7878_7878_7878_7878;
    if at + 8 <= d.len() {
        load(at)
    } else if at >= d.len() {
        PAD
    } else {
        let have = d.len() - at;
        (load(d.len() - 8) >> (8 * (8 - have))) | (PAD << (8 * have))
    }
}

/// 10^k for the digits a word or a fraction leaves over.
const POW10: [u64; 9] = [
    1,
    10,
    100,
    1_000,
    10_000,
    100_000,
    1_000_000,
    10_000_000,
    100_000_000,
];

/// A word with a bit set in the bytes of `w` that are not ASCII digits, the lowest byte
/// exact: a byte's carry only reaches the bytes after it, and those only matter after a
/// non-digit.
#[inline(always)]
fn non_digits(w: u64) -> u64 {
    const HI: u64 = 0xF0F0_F0F0_F0F0_F0F0;
    const THREES: u64 = 0x3030_3030_3030_3030;
    ((w & HI) ^ THREES) | ((w.wrapping_add(0x0606_0606_0606_0606) & HI) ^ THREES)
}

/// The value of eight ASCII digits, the first in the lowest byte (a `0x00` byte, shifted in
/// below them, counts as a leading zero).
#[inline(always)]
fn eight_digits(w: u64) -> u64 {
    // Bytes that are `0x00` (shifted in) stay 0: only digit bytes have their `0x30` taken away.
    let v = w & 0x0F0F_0F0F_0F0F_0F0F;
    // No lane overflows its word: 9·10 + 9 per byte pair, 99·100 + 99, 9999·10^4 + 9999.
    let v = (v * 10 + (v >> 8)) & 0x00FF_00FF_00FF_00FF;
    let v = (v * 100 + (v >> 16)) & 0x0000_FFFF_0000_FFFF;
    (v * 10_000 + (v >> 32)) & 0xFFFF_FFFF
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_kineto_microseconds_exactly() {
        assert_eq!(
            Ns::parse_us(b"1712345678901234.567"),
            Some(Ns(1_712_345_678_901_234_567))
        );
        assert_eq!(Ns::parse_us(b"12.5"), Some(Ns(12_500)));
        assert_eq!(Ns::parse_us(b"7"), Some(Ns(7_000)));
        assert_eq!(Ns::parse_us(b"-3.001"), Some(Ns(-3_001)));
        assert_eq!(Ns::parse_us(b"0.0005"), Some(Ns(1)));
        assert_eq!(Ns::parse_us(b"0.0004"), Some(Ns(0)));
        assert_eq!(Ns::parse_us(b"1.5e3"), Some(Ns(1_500_000)));
        assert_eq!(Ns::parse_us(b"99999999999999999999"), None);
        assert_eq!(Ns::parse_us(b"1."), None);
        assert_eq!(Ns::parse_us(b"abc"), None);
    }

    #[test]
    fn sums_saturate_and_convert_to_the_bare_count() {
        let v = [Ns(1_500), Ns(-500), Ns(2_000)];
        assert_eq!(v.iter().sum::<Ns>(), Ns(3_000));
        assert_eq!(v.into_iter().sum::<Ns>(), Ns(3_000));
        assert_eq!([Ns(i64::MAX), Ns(1)].iter().sum::<Ns>(), Ns(i64::MAX));
        assert_eq!(std::iter::empty::<Ns>().sum::<Ns>(), Ns::ZERO);
        assert_eq!(i64::from(Ns(-7)), -7);
    }

    #[test]
    fn writes_shortest_microseconds() {
        let w = |v| {
            let mut o = Vec::new();
            Ns(v).write_us(&mut o);
            String::from_utf8(o).unwrap()
        };
        assert_eq!(w(1_712_345_678_901_234_567), "1712345678901234.567");
        assert_eq!(w(12_500), "12.5");
        assert_eq!(w(7_000), "7");
        assert_eq!(w(-3_010), "-3.01");
    }

    #[test]
    fn the_word_at_a_time_parse_answers_as_the_digit_by_digit_one() {
        let alphabet = b"0123456789999.-eE x\x00\xff/:";
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut seen = 0;
        for _ in 0..200_000 {
            crate::testrng::xorshift(&mut x);
            let len = (x % 26) as usize;
            let mut t: Vec<u8> = (0..len)
                .map(|k| alphabet[((x >> (k * 2 % 60)) as usize + k) % alphabet.len()])
                .collect();
            // Most texts a number: digits, a point, digits.
            if !x.is_multiple_of(3) {
                t.retain(u8::is_ascii_digit);
                let p = (x >> 40) as usize % (t.len() + 1);
                if !x.is_multiple_of(5) && p > 0 {
                    t.insert(p, b'.');
                }
            }
            let (neg, d) = match t.first() {
                Some(b'-') => (true, &t[1..]),
                _ => (false, &t[..]),
            };
            let want = Ns::parse_us_digits(neg, d);
            seen += usize::from(want.is_some());
            assert_eq!(
                Ns::parse_us_plain(&t),
                want,
                "{:?}",
                String::from_utf8_lossy(&t)
            );
        }
        assert!(seen > 50_000, "{seen} numbers only");
        // The word-at-a-time path itself answers Kineto's forms.
        assert_eq!(swar_us(b"4458676522690.655"), Some(4_458_676_522_690_655));
        assert_eq!(swar_us(b"1567.125"), Some(1_567_125));
        assert_eq!(swar_us(b"156.7"), None);
        assert_eq!(swar_us(b"12345678"), Some(12_345_678_000));
        assert_eq!(swar_us(b"1.2345"), None);
        for t in [
            "9999999999999999.999",
            "9999999999999999",
            "99999999999999999",
            "12345678.9",
            "1234567.89",
            "0.001",
            "7",
            "1.",
            ".5",
        ] {
            let (neg, d) = (false, t.as_bytes());
            assert_eq!(Ns::parse_us_plain(d), Ns::parse_us_digits(neg, d), "{t}");
        }
    }
}
