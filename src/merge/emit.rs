//! The output of one event as the merge writes it, piece by piece (a key, a separator, a
//! value): each piece copied from the event's text is one short copy of a fixed width, not a
//! call of `memcpy`.
//!
//! An event is written as a few dozen pieces of a few bytes each; `Vec::extend_from_slice`
//! checks the capacity and calls `memcpy` for each, which costs more than the bytes moved.
//! [`Emit::piece`] keeps [`SLACK`] bytes of room past the end of what is written, and when
//! the piece is a short part of the event's text with [`WIDE`] readable bytes from its start,
//! copies those [`WIDE`] bytes into the room and counts only the piece's length: the bytes
//! past it are overwritten by the next piece or left past the vector's length.

/// How many bytes a short piece is copied as.
pub(super) const WIDE: usize = 32;

/// Room kept past the end of what is written: a wide copy and a separator on each side.
const SLACK: usize = WIDE + 8;

/// One event's output, appended to `out`; `raw` is the event's text, which pieces are
/// usually slices of.
///
/// (Keeping the length and the buffer's address here instead, to hold them in registers, was
/// tried: the writer's frame is full, they went to the stack, +7 % of the writer's
/// instructions.)
pub(super) struct Emit<'o, 'r> {
    out: &'o mut Vec<u8>,
    raw: &'r [u8],
}

impl<'o, 'r> Emit<'o, 'r> {
    /// Starts an event's output at the end of `out`, with room for `raw` and some more.
    pub(super) fn new(out: &'o mut Vec<u8>, raw: &'r [u8]) -> Self {
        out.reserve(raw.len() + 2 * SLACK);
        Emit { out, raw }
    }

    /// Calls `f` with the vector itself, for writers that take one (numbers).
    #[inline]
    pub(super) fn with_vec<T>(&mut self, f: impl FnOnce(&mut Vec<u8>) -> T) -> T {
        f(self.out)
    }

    /// How long `out` is with what is written.
    #[inline]
    pub(super) fn len(&self) -> usize {
        self.out.len()
    }

    /// Takes back what was written past `len` (a length [`Emit::len`] gave).
    #[inline]
    pub(super) fn truncate(&mut self, len: usize) {
        self.out.truncate(len);
    }

    /// Appends `v` in decimal (`itoa`'s digits).
    #[inline]
    pub(super) fn int(&mut self, v: i64) {
        self.out
            .extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
    }

    /// Appends one byte.
    #[inline]
    pub(super) fn byte(&mut self, c: u8) {
        self.out.push(c);
    }

    /// Appends `s`: when it is a short slice of the event's text, as one wide copy.
    #[inline]
    pub(super) fn piece(&mut self, s: &[u8]) {
        // Where `s` starts in the event's text, if it does: the bytes read are `s`'s own
        // followed by the text's next ones (an address inside `raw` is `raw`'s byte).
        let off = (s.as_ptr() as usize).wrapping_sub(self.raw.as_ptr() as usize);
        match self.raw.get(off..off.wrapping_add(WIDE)) {
            Some(wide) if s.len() <= WIDE => self.wide(wide, s.len()),
            _ => long(self.out, s),
        }
    }

    /// Appends `padded` but its last [`WIDE`] bytes, which are there to spare (a label).
    #[inline]
    pub(super) fn padded(&mut self, padded: &[u8]) {
        let n = padded.len().saturating_sub(WIDE);
        match padded.get(..WIDE) {
            Some(wide) if n <= WIDE => self.wide(wide, n),
            _ => long(self.out, &padded[..n]),
        }
    }

    /// Copies all of `wide` into the room past `out`'s length and keeps its first `n` bytes.
    #[inline(always)]
    fn wide(&mut self, wide: &[u8], n: usize) {
        debug_assert!(n <= WIDE);
        self.room();
        let len = self.out.len();
        let (lo, hi) = halves(wide);
        // SAFETY: `room` leaves at least `SLACK >= WIDE` bytes of the buffer past `len`, so
        // the `WIDE` bytes written stay inside it (and off `wide`, the event's text or a
        // label, which the borrows keep apart from `out`); the length then grows by
        // `n <= WIDE` of those bytes, all written.
        unsafe {
            let dst = self.out.as_mut_ptr().add(len);
            dst.cast::<u128>().write_unaligned(lo);
            dst.add(16).cast::<u128>().write_unaligned(hi);
            self.out.set_len(len + n);
        }
    }

    /// Makes sure at least `SLACK` bytes of the buffer lie past the length.
    #[inline(always)]
    fn room(&mut self) {
        if self.out.capacity() - self.out.len() < SLACK {
            self.out.reserve(SLACK);
        }
    }
}

/// A wide copy's bytes as two 16-byte integers rather than a copy of 32 bytes, which the
/// compiler would merge with [`long`]'s into one call of `memcpy` of either length.
#[inline(always)]
fn halves(wide: &[u8]) -> (u128, u128) {
    debug_assert!(wide.len() == WIDE);
    let lo = u128::from_le_bytes(wide[..16].try_into().unwrap_or_default());
    let hi = u128::from_le_bytes(wide[16..WIDE].try_into().unwrap_or_default());
    (lo, hi)
}

/// Appends a piece too long for one wide copy, or not from the event's text.
#[cold]
#[inline(never)]
fn long(out: &mut Vec<u8>, s: &[u8]) {
    out.extend_from_slice(s);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every slice of a text, written as a piece, is the slice; so is any other slice, and a
    /// run of pieces is their concatenation, whatever the buffer held before.
    #[test]
    fn pieces_are_their_bytes() {
        let raw: Vec<u8> = (0..100u8).map(|i| b'a' + i % 26).collect();
        let other = b"0123456789".repeat(5);
        for a in 0..raw.len() {
            for b in a..raw.len() {
                let mut out = b"xy".to_vec();
                let mut e = Emit::new(&mut out, &raw);
                e.piece(&raw[a..b]);
                e.byte(b',');
                e.piece(&other[..(b - a) % other.len()]);
                e.piece(&raw[b..]);
                let mut want = b"xy".to_vec();
                want.extend_from_slice(&raw[a..b]);
                want.push(b',');
                want.extend_from_slice(&other[..(b - a) % other.len()]);
                want.extend_from_slice(&raw[b..]);
                assert_eq!(out, want, "{a}..{b}");
            }
        }
    }

    /// Room is kept however the vector grows between pieces.
    #[test]
    fn room_survives_other_writers() {
        let raw = b"\"k\":12345678901234567890,\"name\":\"v\"".to_vec();
        let mut out = Vec::new();
        let mut e = Emit::new(&mut out, &raw);
        let mut want = Vec::new();
        for i in 0..2_000 {
            e.piece(&raw[i % 7..]);
            e.with_vec(|v| v.extend_from_slice(&[b'z'; 100][..i % 100]));
            want.extend_from_slice(&raw[i % 7..]);
            want.extend_from_slice(&[b'z'; 100][..i % 100]);
        }
        assert_eq!(out, want);
    }
}
