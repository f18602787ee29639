//! The reader's read windows: their default size ([`CHUNK`]), and one spare per thread (#14):
//! reading 1,024 small ranks one after another then zeroes (and maps, page by page) one window
//! per thread, not one per file. The compressed input is buffered the same way ([`Input`]):
//! a fresh 256 KiB buffer per file cost 1,024 small ranks ~17,000 page faults (~3 % of
//! `analyze`'s CPU on the bench's `many` set).

use std::cell::RefCell;
use std::io::{self, BufRead, Read};

/// The default read window.
pub const CHUNK: usize = 1 << 20;

thread_local! {
    /// The last read window this thread used.
    static SPARE: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
    /// The last input buffer this thread used ([`Input`]).
    static SPARE_INPUT: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// The input buffer's size.
pub(super) const INPUT: usize = 1 << 18;

/// Windows larger than this (grown for one huge event) are not kept.
const SPARE_MAX: usize = 4 * CHUNK;

/// A buffer of `len` bytes (their values unspecified: only what the reader writes is read).
pub(super) fn take(len: usize) -> Vec<u8> {
    let mut v = SPARE.with(|s| std::mem::take(&mut *s.borrow_mut()));
    if v.len() < len {
        v = vec![0; len];
    }
    v.truncate(len);
    v
}

/// Keeps `v` as this thread's spare if it is the largest not over [`SPARE_MAX`].
pub(super) fn give_back(v: Vec<u8>) {
    if v.capacity() <= SPARE_MAX {
        SPARE.with(|s| {
            let mut s = s.borrow_mut();
            if v.capacity() > s.capacity() {
                *s = v;
            }
        });
    }
}

/// A buffered reader (as `std::io::BufReader`) whose buffer is this thread's spare, given back
/// when it is dropped.
pub(super) struct Input<R> {
    inner: R,
    buf: Vec<u8>,
    pos: usize,
    filled: usize,
}

impl<R: Read> Input<R> {
    pub(super) fn new(inner: R) -> Self {
        let mut buf = SPARE_INPUT.with(|s| std::mem::take(&mut *s.borrow_mut()));
        if buf.len() != INPUT {
            buf = vec![0; INPUT];
        }
        Input {
            inner,
            buf,
            pos: 0,
            filled: 0,
        }
    }
}

impl<R> Drop for Input<R> {
    fn drop(&mut self) {
        let buf = std::mem::take(&mut self.buf);
        SPARE_INPUT.with(|s| *s.borrow_mut() = buf);
    }
}

impl<R: Read> Read for Input<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        // A read at least as large as the buffer bypasses it, as `BufReader`'s does.
        if self.pos == self.filled && out.len() >= self.buf.len() {
            return self.inner.read(out);
        }
        let rest = self.fill_buf()?;
        let n = rest.len().min(out.len());
        out[..n].copy_from_slice(&rest[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl<R: Read> BufRead for Input<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        if self.pos >= self.filled {
            self.filled = self.inner.read(&mut self.buf)?;
            self.pos = 0;
        }
        Ok(&self.buf[self.pos..self.filled])
    }

    fn consume(&mut self, n: usize) {
        self.pos = (self.pos + n).min(self.filled);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whatever the reads' sizes, the bytes come out in order and whole, and the buffer is
    /// the next reader's.
    #[test]
    fn input_reads_every_byte_in_order() {
        let data: Vec<u8> = (0..700_000u32).map(|i| (i * 7 % 251) as u8).collect();
        for step in [1usize, 4096, INPUT - 1, INPUT, INPUT + 3] {
            let mut r = Input::new(&data[..]);
            let mut out = Vec::new();
            let mut chunk = vec![0u8; step];
            loop {
                let n = r.read(&mut chunk).unwrap();
                if n == 0 {
                    break;
                }
                out.extend_from_slice(&chunk[..n]);
            }
            assert_eq!(out, data, "reads of {step}");
        }
        let mut r = Input::new(&data[..10]);
        assert_eq!(r.fill_buf().unwrap(), &data[..10]);
        r.consume(4);
        assert_eq!(r.fill_buf().unwrap(), &data[4..10]);
    }
}
