//! Time as a type. Kineto writes `ts`/`dur` in microseconds with up to three fractional digits
//! (nanoseconds) and `baseTimeNanoseconds` in nanoseconds; mixing the two units is the classic
//! bug. Every time in rankprof is an [`Ns`]: integer nanoseconds, exact for any value Kineto
//! writes (absolute epoch µs with ns fractions still fit in an `i64`).

use std::fmt;
use std::ops::{Add, AddAssign, Sub};

/// A time or duration in integer nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Ns(pub i64);

impl Ns {
    pub const ZERO: Ns = Ns(0);

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
pub fn lost_base(base_ns: Option<i64>, earliest: Option<Ns>) -> bool {
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
}
