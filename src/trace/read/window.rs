//! The reader's read windows: their default size ([`CHUNK`]), and one spare per thread (#14):
//! reading 1,024 small ranks one after another then zeroes (and maps, page by page) one window
//! per thread, not one per file.

use std::cell::RefCell;

/// The default read window.
pub const CHUNK: usize = 1 << 20;

thread_local! {
    /// The last read window this thread used.
    static SPARE: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

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
