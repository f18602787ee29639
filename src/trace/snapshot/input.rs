//! The bytes of a snapshot, read through a window of [`WINDOW`] bytes with the offset of each
//! byte in the (decompressed) stream: what a damage report names. Nothing here reads more than
//! a window at a time, so a 1 GB snapshot costs one window of memory.

use std::io::{self, Read};

/// The read window (and the largest string kept whole; longer ones are skipped).
pub(crate) const WINDOW: usize = 1 << 20;

/// Why reading stopped before the pickle's `STOP`.
#[derive(Debug)]
pub(crate) enum Stop {
    /// The input ended at this offset.
    Eof(u64),
    /// Reading failed (a broken gzip member, an I/O error) at this offset.
    Io(io::Error, u64),
    /// The bytes are not a pickle the reader knows, at this offset.
    Bad(String, u64),
}

impl Stop {
    /// The damage in words, with the byte offset.
    pub(crate) fn describe(&self) -> String {
        match self {
            Stop::Eof(at) => format!("truncated at byte {at}"),
            Stop::Io(e, at) => format!("read error at byte {at}: {e}"),
            Stop::Bad(why, at) => format!("{why} at byte {at}"),
        }
    }
}

/// A byte source with a read window and offsets.
pub(crate) struct Input<R> {
    src: R,
    buf: Vec<u8>,
    pos: usize,
    end: usize,
    /// The offset of `buf[0]` in the stream.
    base: u64,
}

impl<R: Read> Input<R> {
    pub(crate) fn new(src: R) -> Self {
        Input {
            src,
            buf: vec![0; WINDOW],
            pos: 0,
            end: 0,
            base: 0,
        }
    }

    /// The offset of the next byte.
    pub(crate) fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    /// Makes `n` (≤ [`WINDOW`]) bytes available at `pos`, moving what is left to the front.
    #[cold]
    fn fill(&mut self, n: usize) -> Result<(), Stop> {
        self.buf.copy_within(self.pos..self.end, 0);
        self.base += self.pos as u64;
        self.end -= self.pos;
        self.pos = 0;
        while self.end < n {
            match self.src.read(&mut self.buf[self.end..]) {
                Ok(0) => return Err(Stop::Eof(self.base + self.end as u64)),
                Ok(k) => self.end += k,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Stop::Io(e, self.base + self.end as u64)),
            }
        }
        Ok(())
    }

    /// The next byte.
    #[inline]
    pub(crate) fn u8(&mut self) -> Result<u8, Stop> {
        if self.pos >= self.end {
            self.fill(1)?;
        }
        let b = self.buf[self.pos];
        self.pos += 1;
        Ok(b)
    }

    /// The next `n` (≤ [`WINDOW`]) bytes.
    #[inline]
    pub(crate) fn take(&mut self, n: usize) -> Result<&[u8], Stop> {
        if self.end - self.pos < n {
            if n > WINDOW {
                return Err(Stop::Bad(format!("a {n}-byte read"), self.offset()));
            }
            self.fill(n)?;
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    /// A little-endian unsigned integer of `N` bytes.
    #[inline]
    pub(crate) fn uint<const N: usize>(&mut self) -> Result<u64, Stop> {
        let b = self.take(N)?;
        let mut v = [0u8; 8];
        v[..N].copy_from_slice(b);
        Ok(u64::from_le_bytes(v))
    }

    /// Skips `n` bytes (any number: a string too long to keep).
    pub(crate) fn skip(&mut self, mut n: u64) -> Result<(), Stop> {
        while n > 0 {
            if self.pos >= self.end {
                self.fill(1)?;
            }
            let k = ((self.end - self.pos) as u64).min(n) as usize;
            self.pos += k;
            n -= k as u64;
        }
        Ok(())
    }

    /// The bytes up to the next `\n` (dropped), for the text opcodes (`GLOBAL`); at most a
    /// window.
    pub(crate) fn line(&mut self) -> Result<Vec<u8>, Stop> {
        let mut out = Vec::new();
        loop {
            let b = self.u8()?;
            if b == b'\n' {
                return Ok(out);
            }
            if out.len() >= WINDOW {
                return Err(Stop::Bad("a text line over 1 MiB".into(), self.offset()));
            }
            out.push(b);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_across_windows_and_names_the_end() {
        let data: Vec<u8> = (0..(WINDOW + 10)).map(|i| i as u8).collect();
        let mut inp = Input::new(&data[..]);
        inp.skip(WINDOW as u64 - 2).unwrap();
        assert_eq!(inp.take(4).unwrap(), &data[WINDOW - 2..WINDOW + 2]);
        assert_eq!(inp.offset(), WINDOW as u64 + 2);
        assert_eq!(
            inp.uint::<2>().unwrap(),
            u16::from_le_bytes([data[WINDOW + 2], data[WINDOW + 3]]) as u64
        );
        match inp.take(10) {
            Err(Stop::Eof(at)) => assert_eq!(at, WINDOW as u64 + 10),
            other => panic!("{other:?}"),
        }
    }
}
