//! JSON string escapes, both ways: decoding a scanned string's escapes ([`unescape`]) and
//! writing strings and raw text out as valid JSON ([`write_string`]; [`escape_ctl`] for the raw
//! control bytes the scanner lets through and flags, [`super::json`]'s leniency). Re-exported
//! by [`super::json`], where the callers find them.

/// Decodes the escapes of a JSON string body (already validated).
pub fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut it = s.chars();
    while let Some(c) = it.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match it.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some('b') => out.push('\u{8}'),
            Some('f') => out.push('\u{c}'),
            Some('u') => {
                let hex: String = it.by_ref().take(4).collect();
                let mut code = u32::from_str_radix(&hex, 16).unwrap_or(0xFFFD);
                if (0xD800..0xDC00).contains(&code) {
                    // A surrogate pair: the low half follows as another \u escape.
                    let rest = it.as_str();
                    if let Some(low) = rest
                        .strip_prefix("\\u")
                        .and_then(|r| r.get(..4))
                        .and_then(|h| u32::from_str_radix(h, 16).ok())
                        .filter(|l| (0xDC00..0xE000).contains(l))
                    {
                        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
                        for _ in 0..6 {
                            it.next();
                        }
                    }
                }
                out.push(char::from_u32(code).unwrap_or('\u{FFFD}'));
            }
            Some(other) => out.push(other),
            None => {}
        }
    }
    out
}

/// Writes `s` as a JSON string literal, quotes included.
pub fn write_string(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    for &c in s.as_bytes() {
        match c {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            c if c < 0x20 => out.extend_from_slice(format!("\\u{c:04x}").as_bytes()),
            c => out.push(c),
        }
    }
    out.push(b'"');
}

/// Copies `src`, valid JSON but for raw control bytes inside strings, to `out` with each such
/// byte written as `\u00XX`. Whitespace between values is left alone.
pub fn escape_ctl(src: &[u8], out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut st = InString::default();
    let mut from = 0;
    while let Some(i) = st.next_ctl(src, from) {
        out.extend_from_slice(&src[from..i]);
        let c = src[i];
        out.extend_from_slice(&[
            b'\\',
            b'u',
            b'0',
            b'0',
            HEX[usize::from(c >> 4)],
            HEX[usize::from(c & 15)],
        ]);
        from = i + 1;
    }
    out.extend_from_slice(&src[from..]);
}

/// Escapes, in place, the raw control bytes inside strings of `buf[start..]` (see [`escape_ctl`]).
pub fn escape_ctl_from(buf: &mut Vec<u8>, start: usize) {
    let tail = buf.split_off(start.min(buf.len()));
    escape_ctl(&tail, buf);
}

/// Index of the first raw control byte inside a string of `src` (valid JSON otherwise).
pub fn first_ctl(src: &[u8]) -> Option<usize> {
    InString::default().next_ctl(src, 0)
}

/// Where a walk over JSON text stands: inside a string or not, just after a backslash or not.
#[derive(Default)]
struct InString {
    in_str: bool,
    esc: bool,
}

impl InString {
    /// The index of the next raw control byte inside a string of `src`, from `src[from]` on
    /// (`self`: the state there; left at the state after that byte, or at the end).
    fn next_ctl(&mut self, src: &[u8], from: usize) -> Option<usize> {
        for (i, &c) in src.iter().enumerate().skip(from) {
            if self.in_str {
                if self.esc {
                    self.esc = false;
                } else if c == b'\\' {
                    self.esc = true;
                } else if c == b'"' {
                    self.in_str = false;
                } else if c < 0x20 {
                    return Some(i);
                }
            } else if c == b'"' {
                self.in_str = true;
            }
        }
        None
    }
}
