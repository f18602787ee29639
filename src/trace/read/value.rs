//! The values an event hands out: its strings as written ([`Str`], escapes decoded on demand),
//! its ids ([`Id`]), the values found in its `args` ([`Val`]), and the integer parse they share
//! ([`parse_int`]).

use std::borrow::Cow;
use std::fmt;

use super::escape;
use super::json::Kind;

/// A JSON string as it sits in the input: valid UTF-8, escapes not yet decoded.
#[derive(Clone, Copy, PartialEq, Eq, Default)]
pub struct Str<'a> {
    raw: &'a str,
    escaped: bool,
}

impl<'a> Str<'a> {
    pub fn new(raw: &'a str, escaped: bool) -> Self {
        Str { raw, escaped }
    }
    /// The text between the quotes, escapes as written.
    pub fn raw(&self) -> &'a str {
        self.raw
    }
    /// The decoded text (borrowed unless it holds escapes).
    pub fn get(&self) -> Cow<'a, str> {
        if self.escaped {
            Cow::Owned(escape::unescape(self.raw))
        } else {
            Cow::Borrowed(self.raw)
        }
    }
    pub fn is_empty(&self) -> bool {
        self.raw.is_empty()
    }
    pub fn eq_str(&self, s: &str) -> bool {
        if self.escaped {
            self.get() == s
        } else {
            self.raw == s
        }
    }
}

impl fmt::Debug for Str<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.get())
    }
}

impl fmt::Display for Str<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.get())
    }
}

/// A `pid`, `tid` or `id`: Kineto writes integers, but also strings such as `"Spans"` or `""`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Id<'a> {
    #[default]
    None,
    Int(i64),
    Str(Str<'a>),
}

impl Id<'_> {
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Id::Int(v) => Some(*v),
            _ => None,
        }
    }
}

impl fmt::Display for Id<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Id::None => Ok(()),
            Id::Int(v) => write!(f, "{v}"),
            Id::Str(s) => write!(f, "{s}"),
        }
    }
}

/// A value inside `args`.
#[derive(Clone, Copy, Debug)]
pub struct Val<'a> {
    pub kind: Kind,
    /// For strings the text between the quotes; otherwise the raw JSON.
    pub text: &'a str,
}

impl<'a> Val<'a> {
    pub fn as_i64(&self) -> Option<i64> {
        match self.kind {
            Kind::Num => parse_int(self.text.as_bytes()).or_else(|| {
                self.text
                    .parse::<f64>()
                    .ok()
                    .filter(|v| v.fract() == 0.0 && v.abs() < 9.0e18)
                    .map(|v| v as i64)
            }),
            Kind::Str { .. } => self.text.parse::<i64>().ok(),
            _ => None,
        }
    }
    pub fn as_f64(&self) -> Option<f64> {
        match self.kind {
            Kind::Num | Kind::Str { .. } => self.text.parse::<f64>().ok(),
            _ => None,
        }
    }
    pub fn as_str(&self) -> Option<Str<'a>> {
        match self.kind {
            Kind::Str { escaped } => Some(Str::new(self.text, escaped)),
            _ => None,
        }
    }
}

/// `str::parse::<i64>`, answering at once for plain `[-]digits` of up to 18 digits (no
/// overflow possible); anything else takes the standard parse, so the answers are the same.
#[inline(always)]
pub(crate) fn parse_int(t: &[u8]) -> Option<i64> {
    let digits = t.strip_prefix(b"-").unwrap_or(t);
    if !digits.is_empty() && digits.len() <= 18 {
        let mut v: i64 = 0;
        let mut plain = true;
        for &c in digits {
            let d = c.wrapping_sub(b'0');
            plain &= d <= 9;
            v = v.wrapping_mul(10).wrapping_add(i64::from(d));
        }
        if plain {
            return Some(if digits.len() < t.len() { -v } else { v });
        }
    }
    std::str::from_utf8(t).ok()?.parse::<i64>().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_int_answers_as_the_standard_parse() {
        let mut cases: Vec<String> = [
            "",
            "-",
            "0",
            "-0",
            "+5",
            "007",
            "1.0",
            "1e3",
            " 1",
            "12a",
            "--1",
            "-+1",
            "999999999999999999",
            "-999999999999999999",
            "9223372036854775807",
            "9223372036854775808",
            "-9223372036854775808",
            "-9223372036854775809",
            "1234567890123456789",
            "99999999999999999999",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let mut s = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..50_000 {
            crate::testrng::xorshift(&mut s);
            let len = (s % 22) as usize;
            // Half the cases are plain `[-]digits`, the fast path's own ground.
            let alphabet: &[u8] = if s & 1 == 0 {
                b"0123456789-+.e /"
            } else {
                b"0123456789"
            };
            let mut t: String = (0..len)
                .map(|k| alphabet[((s >> (k * 3 % 60)) as usize) % alphabet.len()] as char)
                .collect();
            if s & 6 == 2 {
                t.insert(0, '-');
            }
            cases.push(t);
        }
        for t in cases {
            assert_eq!(parse_int(t.as_bytes()), t.parse::<i64>().ok(), "{t:?}");
        }
    }
}
