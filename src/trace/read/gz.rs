//! gzip input read member by member, with every integrity check the format offers.
//!
//! A gzip member (RFC 1952) is a header, a raw deflate stream and an 8-byte trailer: the
//! CRC-32 and the length (ISIZE, mod 2³²) of its data. The header may carry its own CRC-16
//! (`FHCRC`). [`Members`] parses the header itself, inflates with [`flate2::Decompress`]
//! (zlib-rs) and checks the header CRC, the trailer CRC-32 and ISIZE of every member. On a
//! failure the error says which member, where it sits in the compressed file, and which check
//! failed.
//!
//! Why not `flate2`'s `GzDecoder`: when a read hits corrupt deflate data it returns the error
//! and drops what that same read had already inflated, so how much of a damaged file could be
//! salvaged depended on the caller's buffer size (up to a whole 1 MiB window of good events
//! lost; found by the `reader` fuzz target). Here the bytes inflated before the damage are
//! delivered first and the error comes on the next read, whatever the buffer size.
//!
//! The inflate state (~40 KB, its window allocated 64-byte aligned) is kept per thread and
//! reset for the next file: allocated afresh for each of 1,024 small ranks read one after
//! another, it fragmented the heap (`analyze --all-ranks`: 67 MB peak RSS for 16 MB of live
//! heap; with the reuse, 37 MB; merge 51–57 → 25 MB).
//!
//! After the last member: more members follow if the next bytes are the gzip magic; anything
//! else is *trailing garbage* (zero padding, a stray append). Every member before it was
//! verified, so nothing read is suspect: the garbage is not an error but recorded in
//! [`GzStatus::trailing`] for the reader to note, like `gzip -d` warns "trailing garbage
//! ignored".

use std::cell::RefCell;
use std::io::{self, BufRead, Read};
use std::rc::Rc;

use flate2::{Crc, Decompress, FlushDecompress, Status};

/// What reading the members found, shared with whoever created the [`Members`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GzStatus {
    /// Members read to their end and verified.
    pub members: u32,
    /// `(compressed offset, length)` of bytes after the last member that are not a member.
    pub trailing: Option<(u64, u64)>,
}

/// Where the reader is inside the current member.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    Header,
    Body,
    Trailer,
    /// The end of the input, or an error was returned: nothing more is read.
    Done,
}

/// Header flags (RFC 1952 2.3.1).
const FHCRC: u8 = 0x02;
const FEXTRA: u8 = 0x04;
const FNAME: u8 = 0x08;
const FCOMMENT: u8 = 0x10;
const FRESERVED: u8 = 0xe0;

/// The decompressed bytes of every gzip member of `R`, each member's header CRC (when
/// present), CRC-32 and ISIZE checked.
pub struct Members<R> {
    src: R,
    /// `None` only once dropped (the state goes back to the thread's spare).
    inflate: Option<Decompress>,
    /// CRC-32 and length (mod 2³²) of the current member's inflated data. `crc32fast`, not
    /// `flate2::Crc`: with the zlib-rs backend the latter took 2.4× as long a byte (`perf` of a
    /// merge of 1,040 MB of JSON into 895 MB: 1.65 % of the CPU time for the input's CRC
    /// there, 0.6 % for crc32fast's over the output).
    crc: crc32fast::Hasher,
    amount: u32,
    part: Part,
    /// 1-based number of the member being read.
    member: u32,
    /// Compressed offset where the current member starts.
    start: u64,
    /// Compressed bytes consumed so far.
    pos: u64,
    /// Compressed size of the whole input, when known (for the length of trailing garbage).
    len: Option<u64>,
    /// An error found after some bytes were inflated in the same read: returned next.
    pending: Option<io::Error>,
    status: Rc<RefCell<GzStatus>>,
}

thread_local! {
    /// The inflate state (~40 KB with its window) a finished reader left this thread: reading
    /// a thousand small ranks one after another then allocates it once per thread.
    static SPARE: RefCell<Option<Decompress>> = const { RefCell::new(None) };
}

fn take_inflate() -> Decompress {
    match SPARE.with(|s| s.borrow_mut().take()) {
        Some(mut d) => {
            d.reset(false);
            d
        }
        None => Decompress::new(false),
    }
}

impl<R> Drop for Members<R> {
    fn drop(&mut self) {
        if let Some(d) = self.inflate.take() {
            // `try_with`: a reader dropped while the thread's locals are torn down just frees.
            let _ = SPARE.try_with(|s| *s.borrow_mut() = Some(d));
        }
    }
}

impl<R: BufRead> Members<R> {
    /// `input` must start with a gzip member; `len` is its whole size, if known.
    pub fn new(input: R, len: Option<u64>) -> (Self, Rc<RefCell<GzStatus>>) {
        let status = Rc::new(RefCell::new(GzStatus::default()));
        let m = Members {
            src: input,
            inflate: Some(take_inflate()),
            crc: crc32fast::Hasher::new(),
            amount: 0,
            part: Part::Header,
            member: 1,
            start: 0,
            pos: 0,
            len,
            pending: None,
            status: Rc::clone(&status),
        };
        (m, status)
    }

    /// An error naming the member and where it sits in the compressed input.
    fn fail(&mut self, kind: io::ErrorKind, what: &str) -> io::Error {
        self.part = Part::Done;
        io::Error::new(
            kind,
            format!(
                "gzip member {} (compressed bytes {}-{}): {what}",
                self.member, self.start, self.pos
            ),
        )
    }

    /// Fills `out` from the input, counting the bytes; `hcrc` sees them (the header's CRC).
    fn take(&mut self, out: &mut [u8], mut hcrc: Option<&mut Crc>, what: &str) -> io::Result<()> {
        let mut got = 0;
        while got < out.len() {
            let b = self.src.fill_buf()?;
            if b.is_empty() {
                return Err(self.fail(
                    io::ErrorKind::UnexpectedEof,
                    &format!("the file ends inside the {what}"),
                ));
            }
            let n = b.len().min(out.len() - got);
            out[got..got + n].copy_from_slice(&b[..n]);
            if let Some(c) = hcrc.as_deref_mut() {
                c.update(&b[..n]);
            }
            self.src.consume(n);
            self.pos += n as u64;
            got += n;
        }
        Ok(())
    }

    /// Skips a zero-terminated header field (file name, comment).
    fn skip_zstring(&mut self, hcrc: &mut Crc, what: &str) -> io::Result<()> {
        loop {
            let b = self.src.fill_buf()?;
            if b.is_empty() {
                return Err(self.fail(
                    io::ErrorKind::UnexpectedEof,
                    &format!("the file ends inside the header's {what}"),
                ));
            }
            let (n, done) = match memchr::memchr(0, b) {
                Some(i) => (i + 1, true),
                None => (b.len(), false),
            };
            hcrc.update(&b[..n]);
            self.src.consume(n);
            self.pos += n as u64;
            if done {
                return Ok(());
            }
        }
    }

    /// Reads and checks the member header (RFC 1952 2.3).
    fn header(&mut self) -> io::Result<()> {
        let mut hcrc = Crc::new();
        let mut h = [0u8; 10];
        self.take(&mut h, Some(&mut hcrc), "header")?;
        let bad = io::ErrorKind::InvalidData;
        if h[0] != 0x1f || h[1] != 0x8b {
            return Err(self.fail(bad, "invalid gzip header: no gzip magic"));
        }
        if h[2] != 8 {
            let m = format!(
                "invalid gzip header: compression method {} (only 8, deflate)",
                h[2]
            );
            return Err(self.fail(bad, &m));
        }
        let flags = h[3];
        if flags & FRESERVED != 0 {
            return Err(self.fail(bad, "invalid gzip header: reserved flag bits set"));
        }
        if flags & FEXTRA != 0 {
            let mut x = [0u8; 2];
            self.take(&mut x, Some(&mut hcrc), "header's extra field")?;
            let mut left = u16::from_le_bytes(x) as usize;
            let mut chunk = [0u8; 256];
            while left > 0 {
                let n = left.min(chunk.len());
                self.take(&mut chunk[..n], Some(&mut hcrc), "header's extra field")?;
                left -= n;
            }
        }
        if flags & FNAME != 0 {
            self.skip_zstring(&mut hcrc, "file name")?;
        }
        if flags & FCOMMENT != 0 {
            self.skip_zstring(&mut hcrc, "comment")?;
        }
        if flags & FHCRC != 0 {
            let want = (hcrc.sum() & 0xffff) as u16;
            let mut x = [0u8; 2];
            self.take(&mut x, None, "header CRC")?;
            let stored = u16::from_le_bytes(x);
            if stored != want {
                let m = format!(
                    "header CRC-16 mismatch: the header says {stored:04x}, its bytes give {want:04x}"
                );
                return Err(self.fail(bad, &m));
            }
        }
        Ok(())
    }

    /// Reads and checks the trailer against what was inflated.
    fn trailer(&mut self) -> io::Result<()> {
        let mut t = [0u8; 8];
        self.take(&mut t, None, "trailer")?;
        let stored_crc = u32::from_le_bytes([t[0], t[1], t[2], t[3]]);
        let stored_len = u32::from_le_bytes([t[4], t[5], t[6], t[7]]);
        let actual_len = self.amount;
        if stored_len != actual_len {
            let m = format!(
                "ISIZE mismatch: the trailer says {stored_len} bytes, the member inflates to {actual_len} (mod 2^32)"
            );
            return Err(self.fail(io::ErrorKind::InvalidData, &m));
        }
        if stored_crc != self.crc.clone().finalize() {
            let m = format!(
                "CRC-32 mismatch: the trailer says {stored_crc:08x}, the inflated data does not match"
            );
            return Err(self.fail(io::ErrorKind::InvalidData, &m));
        }
        Ok(())
    }

    /// The current member ended and verified: go on with the next, or stop at the end or at
    /// bytes that are not a member. False when there is nothing more to read.
    fn next_member(&mut self) -> io::Result<bool> {
        self.status.borrow_mut().members += 1;
        self.part = Part::Done;
        let pos = self.pos;
        let rest = self.src.fill_buf()?;
        let magic = match rest {
            [] => return Ok(false),
            [0x1f] => true,
            [a, b, ..] => *a == 0x1f && *b == 0x8b,
            _ => false,
        };
        if !magic {
            let len = match self.len {
                Some(total) => total.saturating_sub(pos),
                // Count what is left without keeping it.
                None => io::copy(&mut self.src, &mut io::sink())?,
            };
            self.status.borrow_mut().trailing = Some((pos, len));
            return Ok(false);
        }
        self.member += 1;
        self.start = pos;
        self.crc.reset();
        self.amount = 0;
        self.inflate.get_or_insert_with(take_inflate).reset(false);
        self.part = Part::Header;
        Ok(true)
    }

    /// Inflates into `buf`: `Ok(0)` means the deflate stream of the member ended (or no
    /// progress could be made, which is an error).
    fn body(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let input = match self.src.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    self.part = Part::Done;
                    return Err(e);
                }
            };
            let eof = input.is_empty();
            let inf = self.inflate.get_or_insert_with(take_inflate);
            let (in0, out0) = (inf.total_in(), inf.total_out());
            let r = inf.decompress(input, buf, FlushDecompress::None);
            let used = (inf.total_in() - in0) as usize;
            let n = (inf.total_out() - out0) as usize;
            self.src.consume(used);
            self.pos += used as u64;
            self.crc.update(&buf[..n]);
            self.amount = self.amount.wrapping_add(n as u32);
            let err = match r {
                Ok(Status::StreamEnd) => {
                    self.part = Part::Trailer;
                    return Ok(n);
                }
                Ok(_) if n > 0 => return Ok(n),
                Ok(_) if used > 0 => continue,
                Ok(_) if eof => self.fail(
                    io::ErrorKind::UnexpectedEof,
                    "the file ends inside the compressed data",
                ),
                Ok(_) => self.fail(io::ErrorKind::InvalidData, "the inflater made no progress"),
                Err(e) => self.fail(
                    io::ErrorKind::InvalidData,
                    &format!("corrupt deflate stream: {e}"),
                ),
            };
            // What was inflated before the damage is delivered first; the error comes next.
            if n > 0 {
                self.pending = Some(err);
                return Ok(n);
            }
            return Err(err);
        }
    }
}

impl<R: BufRead> Read for Members<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        if let Some(e) = self.pending.take() {
            return Err(e);
        }
        loop {
            match self.part {
                Part::Done => return Ok(0),
                Part::Header => {
                    self.header()?;
                    self.part = Part::Body;
                }
                Part::Body => {
                    let n = self.body(buf)?;
                    if n > 0 {
                        return Ok(n);
                    }
                }
                Part::Trailer => {
                    self.trailer()?;
                    if !self.next_member()? {
                        return Ok(0);
                    }
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

    /// A thread's inflate state is reused from reader to reader: after one dropped midway
    /// or failed on corrupt data, the next still reads its file whole and right.
    #[test]
    fn a_reused_inflate_state_starts_afresh() {
        let data: Vec<u8> = (0..200_000u32)
            .flat_map(|i| (i % 61).to_le_bytes())
            .collect();
        let good = gz(&data);
        let mut bad = good.clone();
        let mid = bad.len() / 2;
        bad[mid..mid + 64].fill(0xA5);
        std::thread::spawn(move || {
            assert!(read_all(&bad).0.is_err());
            assert_eq!(read_all(&good).0.unwrap(), data);
            let (mut m, _) = Members::new(&good[..], None);
            let mut part = [0u8; 1000];
            m.read_exact(&mut part).unwrap();
            drop(m);
            assert_eq!(read_all(&good).0.unwrap(), data);
        })
        .join()
        .unwrap();
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

    /// A member written by hand: header with every optional field and a header CRC.
    fn full_member(data: &[u8], good_hcrc: bool) -> Vec<u8> {
        let mut h = vec![
            0x1f,
            0x8b,
            8,
            FHCRC | FEXTRA | FNAME | FCOMMENT,
            0,
            0,
            0,
            0,
            0,
            3,
        ];
        h.extend_from_slice(&[4, 0, b'R', b'P', 0, 0]);
        h.extend_from_slice(b"rank-0.json\0a comment\0");
        let mut c = Crc::new();
        c.update(&h);
        let mut hc = (c.sum() & 0xffff) as u16;
        if !good_hcrc {
            hc ^= 1;
        }
        h.extend_from_slice(&hc.to_le_bytes());
        let mut e = flate2::write::DeflateEncoder::new(h, flate2::Compression::fast());
        e.write_all(data).unwrap();
        let mut b = e.finish().unwrap();
        let mut c = Crc::new();
        c.update(data);
        b.extend_from_slice(&c.sum().to_le_bytes());
        b.extend_from_slice(&(data.len() as u32).to_le_bytes());
        b
    }

    #[test]
    fn optional_header_fields_are_read_and_the_header_crc_checked() {
        let b = full_member(b"payload", true);
        let (r, st) = read_all(&b);
        assert_eq!(r.unwrap(), b"payload");
        assert_eq!(st.members, 1);
        let e = read_all(&full_member(b"payload", false)).0.unwrap_err();
        assert!(e.to_string().contains("header CRC-16 mismatch"), "{e}");
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
    }

    #[test]
    fn a_cut_member_is_unexpected_eof_wherever_it_is_cut() {
        let b = gz(&vec![b'x'; 5000]);
        for cut in [5, 12, b.len() / 2, b.len() - 3] {
            let e = read_all(&b[..cut]).0.unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof, "cut at {cut}: {e}");
            assert!(e.to_string().starts_with("gzip member 1"), "{e}");
        }
    }

    /// Reads with buffers of `size` bytes; what came before the error, and the error.
    fn read_in(b: &[u8], size: usize) -> (Vec<u8>, io::Error) {
        let (mut m, _) = Members::new(b, Some(b.len() as u64));
        let mut out = Vec::new();
        let mut buf = vec![0u8; size];
        loop {
            match m.read(&mut buf) {
                Ok(0) => panic!("no error"),
                Ok(n) => out.extend_from_slice(&buf[..n]),
                Err(e) => return (out, e),
            }
        }
    }

    #[test]
    fn bytes_inflated_before_corrupt_data_are_delivered_whatever_the_buffer() {
        // Stored (uncompressed) deflate blocks, so the damage point is known: a block header
        // with the reserved type 3 after the first block.
        let data: Vec<u8> = (0..3000u32).map(|i| (i % 251) as u8).collect();
        let mut b = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3];
        b.push(0); // BFINAL 0, BTYPE 00 (stored)
        b.extend_from_slice(&(3000u16).to_le_bytes());
        b.extend_from_slice(&(!3000u16).to_le_bytes());
        b.extend_from_slice(&data);
        b.push(0b111); // BFINAL 1, BTYPE 11: reserved, an error
        b.extend_from_slice(&[0; 16]);
        for size in [1, 7, 64, 4096, 1 << 20] {
            let (out, e) = read_in(&b, size);
            assert_eq!(out, data, "buffer of {size}");
            assert!(e.to_string().contains("corrupt deflate stream"), "{e}");
            assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        }
    }
}
