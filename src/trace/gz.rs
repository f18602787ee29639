//! gzip input read member by member, with every member's trailer checked.
//!
//! A gzip member ends in an 8-byte trailer: the CRC-32 and the length (ISIZE, mod 2³²) of its
//! data. flate2's decoder checks both, but only when it is read past the member's last data
//! byte; [`Members`] always is (the reader drains its source to the end), so a damaged member
//! is an error here rather than silently corrupt data. On a mismatch the error says which
//! member, where it sits in the compressed file, and which field failed.
//!
//! After the last member: more members follow if the next bytes are the gzip magic; anything
//! else is *trailing garbage* (zero padding, a stray append). Every member before it was
//! verified, so nothing read is suspect: the garbage is not an error but recorded in
//! [`GzStatus::trailing`] for the reader to note, like `gzip -d` warns "trailing garbage
//! ignored".

use std::cell::RefCell;
use std::io::{self, BufRead, Read};
use std::rc::Rc;

use flate2::bufread::GzDecoder;

/// What reading the members found, shared with whoever created the [`Members`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GzStatus {
    /// Members read to their end and verified.
    pub members: u32,
    /// `(compressed offset, length)` of bytes after the last member that are not a member.
    pub trailing: Option<(u64, u64)>,
}

/// A `BufRead` that counts the bytes consumed from it and remembers the last 8 (a trailer).
struct Tracked<R> {
    inner: R,
    consumed: u64,
    last: [u8; 8],
}

impl<R: BufRead> Tracked<R> {
    fn remember(&mut self, n: usize) {
        if n == 0 {
            return;
        }
        if let Ok(b) = self.inner.fill_buf() {
            let n = n.min(b.len());
            let got = &b[n.saturating_sub(8)..n];
            self.last.rotate_left(got.len());
            self.last[8 - got.len()..].copy_from_slice(got);
        }
    }
}

impl<R: BufRead> Read for Tracked<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let b = self.inner.fill_buf()?;
        let n = b.len().min(out.len());
        out[..n].copy_from_slice(&b[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl<R: BufRead> BufRead for Tracked<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        self.inner.fill_buf()
    }
    fn consume(&mut self, n: usize) {
        self.remember(n);
        self.consumed += n as u64;
        self.inner.consume(n);
    }
}

/// The decompressed bytes of every gzip member of `R`, each member's CRC-32 and ISIZE checked.
pub struct Members<R> {
    dec: Option<GzDecoder<Tracked<R>>>,
    /// 1-based number of the member being read.
    member: u32,
    /// Compressed offset where the current member starts.
    start: u64,
    /// Decompressed bytes of the current member so far.
    out: u64,
    /// Compressed size of the whole input, when known (for the length of trailing garbage).
    len: Option<u64>,
    status: Rc<RefCell<GzStatus>>,
}

impl<R: BufRead> Members<R> {
    /// `input` must start with a gzip member; `len` is its whole size, if known.
    pub fn new(input: R, len: Option<u64>) -> (Self, Rc<RefCell<GzStatus>>) {
        let status = Rc::new(RefCell::new(GzStatus::default()));
        let tracked = Tracked {
            inner: input,
            consumed: 0,
            last: [0; 8],
        };
        let m = Members {
            dec: Some(GzDecoder::new(tracked)),
            member: 1,
            start: 0,
            out: 0,
            len,
            status: Rc::clone(&status),
        };
        (m, status)
    }

    /// The current member ended and verified: go on with the next, or stop at the end or at
    /// bytes that are not a member. False when there is nothing more to read.
    fn next_member(&mut self) -> io::Result<bool> {
        let Some(dec) = self.dec.take() else {
            return Ok(false);
        };
        self.status.borrow_mut().members += 1;
        let mut inner = dec.into_inner();
        let pos = inner.consumed;
        let rest = inner.fill_buf()?;
        let magic = match rest {
            [] => return Ok(false),
            [0x1f] => true,
            [a, b, ..] => *a == 0x1f && *b == 0x8b,
            _ => false,
        };
        if !magic {
            let len = match self.len {
                Some(total) => total.saturating_sub(pos),
                None => {
                    // Count what is left without keeping it.
                    io::copy(&mut inner, &mut io::sink())?
                }
            };
            self.status.borrow_mut().trailing = Some((pos, len));
            return Ok(false);
        }
        self.member += 1;
        self.start = pos;
        self.out = 0;
        self.dec = Some(GzDecoder::new(inner));
        Ok(true)
    }

    /// Names the member and, for a failed trailer check, the field that failed.
    fn explain(&self, e: io::Error) -> io::Error {
        let Some(dec) = self.dec.as_ref() else {
            return e;
        };
        let t = dec.get_ref();
        let at = format!(
            "gzip member {} (compressed bytes {}-{})",
            self.member, self.start, t.consumed
        );
        let checksum =
            e.kind() == io::ErrorKind::InvalidInput && e.to_string().contains("checksum");
        if !checksum {
            return io::Error::new(e.kind(), format!("{at}: {e}"));
        }
        let stored_crc = u32::from_le_bytes([t.last[0], t.last[1], t.last[2], t.last[3]]);
        let stored_len = u32::from_le_bytes([t.last[4], t.last[5], t.last[6], t.last[7]]);
        let actual_len = (self.out & 0xffff_ffff) as u32;
        let msg = if stored_len != actual_len {
            format!(
                "{at}: ISIZE mismatch: the trailer says {stored_len} bytes, the member inflates to {actual_len} (mod 2^32)"
            )
        } else {
            format!(
                "{at}: CRC-32 mismatch: the trailer says {stored_crc:08x}, the inflated data does not match"
            )
        };
        io::Error::new(io::ErrorKind::InvalidData, msg)
    }
}

impl<R: BufRead> Read for Members<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            let Some(dec) = self.dec.as_mut() else {
                return Ok(0);
            };
            match dec.read(buf) {
                Ok(0) => {
                    if !self.next_member()? {
                        return Ok(0);
                    }
                }
                Ok(n) => {
                    self.out += n as u64;
                    return Ok(n);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let e = self.explain(e);
                    self.dec = None;
                    return Err(e);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn gz(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn read_all(b: &[u8]) -> (io::Result<Vec<u8>>, GzStatus) {
        let (mut m, st) = Members::new(b, Some(b.len() as u64));
        let mut out = Vec::new();
        let r = m.read_to_end(&mut out).map(|_| out);
        let st = st.borrow().clone();
        (r, st)
    }

    #[test]
    fn members_concatenate_and_trailers_are_checked() {
        let mut b = gz(b"hello ");
        b.extend(gz(b"world"));
        let (r, st) = read_all(&b);
        assert_eq!(r.unwrap(), b"hello world");
        assert_eq!(st.members, 2);
        assert_eq!(st.trailing, None);

        let first = gz(b"hello ").len();
        let mut bad_crc = b.clone();
        bad_crc[first - 8] ^= 1;
        let e = read_all(&bad_crc).0.unwrap_err();
        assert!(
            e.to_string().starts_with(&format!(
                "gzip member 1 (compressed bytes 0-{first}): CRC-32"
            )),
            "{e}"
        );
        let mut bad_len = b.clone();
        let n = bad_len.len();
        bad_len[n - 4] ^= 1;
        let e = read_all(&bad_len).0.unwrap_err();
        assert!(e.to_string().starts_with("gzip member 2"), "{e}");
        assert!(
            e.to_string()
                .contains("ISIZE mismatch: the trailer says 4 bytes, the member inflates to 5"),
            "{e}"
        );
    }

    #[test]
    fn trailing_garbage_is_recorded_not_an_error() {
        let mut b = gz(b"data");
        let at = b.len() as u64;
        b.extend_from_slice(&[0; 100]);
        let (r, st) = read_all(&b);
        assert_eq!(r.unwrap(), b"data");
        assert_eq!(st.trailing, Some((at, 100)));
    }
}
