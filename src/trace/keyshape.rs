//! The key stretches the peek reads (#14): from after an event's `{` to the opening quote of
//! its `ph` value, and from the end of one value to the opening quote of the next
//! (`, "cat": "`, `, "name": "`), each remembered as last seen. A writer puts the same bytes
//! there in every event (Kineto's `output_json.cpp`: `"ph": "`, `, "cat": "`, `, "name": "`),
//! so one masked 16-byte compare stands for what [`super::want`]'s `key_body` does there: the
//! whitespace skips, the `,` before the key, the key's compare, the `:` and the `"`.
//!
//! Why this is exact: what `key_body` (with the `,` before it) answers from a place depends on
//! the bytes from there to the value's opening quote alone, and a stretch is remembered only
//! as that walk accepted it, for one key: the same bytes at another place give the same key
//! position and value start. A stretch over 16 bytes (deep indentation) is not remembered;
//! fewer than 16 bytes left in the window, or other bytes, take the walk, which then records
//! what it found (alike with [`super::memo`], the scanner's memo of the stretches between
//! values).

/// One remembered stretch: up to 16 bytes compared under a mask, the key's offset in it.
#[derive(Clone, Copy, Default)]
pub struct Shape {
    bytes: u128,
    mask: u128,
    /// The stretch's length; 0 while nothing is remembered.
    len: u8,
    /// Where the key's opening quote is, from the stretch's start.
    key: u8,
}

impl Shape {
    /// Where the key (its opening quote) and the value's body start from `b[at]`: the
    /// remembered stretch's answer when the bytes there are that stretch, else `walk`'s,
    /// which is then remembered.
    #[inline(always)]
    pub fn or_walk(
        &mut self,
        b: &[u8],
        at: usize,
        walk: impl FnOnce() -> Option<(usize, usize)>,
    ) -> Option<(usize, usize)> {
        if let Some(hit) = self.hit(b, at) {
            return Some(hit);
        }
        let (key, body) = walk()?;
        self.record(b, at, key, body);
        Some((key, body))
    }

    /// Where the key (its opening quote) and the value's body start, when the bytes from
    /// `b[at]` are the remembered stretch.
    #[inline(always)]
    fn hit(&self, b: &[u8], at: usize) -> Option<(usize, usize)> {
        let w: [u8; 16] = b.get(at..at + 16)?.try_into().ok()?;
        let same = (u128::from_le_bytes(w) ^ self.bytes) & self.mask == 0;
        (same & (self.len != 0)).then(|| (at + usize::from(self.key), at + usize::from(self.len)))
    }

    /// Remembers `b[at..body]` (a stretch the walk accepted: its key's quote at `b[key]`, the
    /// value's body from `b[body]`), when it fits.
    #[inline]
    fn record(&mut self, b: &[u8], at: usize, key: usize, body: usize) {
        let len = body - at;
        if len > 16 {
            return;
        }
        let mut bytes = [0u8; 16];
        bytes[..len].copy_from_slice(&b[at..body]);
        let mut mask = [0u8; 16];
        mask[..len].fill(0xFF);
        *self = Shape {
            bytes: u128::from_le_bytes(bytes),
            mask: u128::from_le_bytes(mask),
            len: len as u8,
            key: (key - at) as u8,
        };
    }
}

/// The three stretches of one reader's peek.
#[derive(Clone, Copy, Default)]
pub struct KeyShapes {
    /// From after the `{` to the `ph` value.
    pub ph: Shape,
    /// From after the `ph` value to the `cat` value.
    pub cat: Shape,
    /// From after the `cat` value to the `name` value.
    pub name: Shape,
}
