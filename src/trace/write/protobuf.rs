//! A small protobuf wire writer: varints, length-delimited fields, fixed64, doubles — the
//! few encodings a Perfetto `Trace` needs ([`crate::merge`]'s `.pftrace` output).
//!
//! Hand-written rather than generated (prost, protoc): the merge encodes tens of millions of
//! small messages straight into its output buffer, with no intermediate struct per event, and
//! the build needs no `protoc` nor Perfetto's `.proto` files. Field numbers are the callers'
//! (taken from Perfetto's published protos, `protos/perfetto/trace/…`).

/// Wire types.
const VARINT: u64 = 0;
const FIXED64: u64 = 1;
const LEN: u64 = 2;

/// Appends `v` as a base-128 varint (7 bits a byte, low first, high bit set on all but the last).
#[inline]
pub(crate) fn varint(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push((v as u8) | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

/// Appends a field's key: its number and wire type.
#[inline]
fn key(buf: &mut Vec<u8>, field: u32, wire: u64) {
    varint(buf, (u64::from(field) << 3) | wire);
}

/// An unsigned (`uint32`/`uint64`, or an enum) field.
#[inline]
pub(crate) fn uint(buf: &mut Vec<u8>, field: u32, v: u64) {
    key(buf, field, VARINT);
    varint(buf, v);
}

/// A signed `int32`/`int64` field (two's complement: a negative value takes ten bytes).
#[inline]
pub(crate) fn int(buf: &mut Vec<u8>, field: u32, v: i64) {
    uint(buf, field, v as u64);
}

/// A `bool` field.
#[inline]
pub(crate) fn boolean(buf: &mut Vec<u8>, field: u32, v: bool) {
    uint(buf, field, u64::from(v));
}

/// A `fixed64` field.
#[inline]
pub(crate) fn fixed64(buf: &mut Vec<u8>, field: u32, v: u64) {
    key(buf, field, FIXED64);
    buf.extend_from_slice(&v.to_le_bytes());
}

/// A `double` field.
#[inline]
pub(crate) fn double(buf: &mut Vec<u8>, field: u32, v: f64) {
    key(buf, field, FIXED64);
    buf.extend_from_slice(&v.to_le_bytes());
}

/// A `bytes` or `string` field.
#[inline]
pub(crate) fn bytes(buf: &mut Vec<u8>, field: u32, v: &[u8]) {
    key(buf, field, LEN);
    varint(buf, v.len() as u64);
    buf.extend_from_slice(v);
}

/// An embedded message: `body` appends its fields to `buf`, and its length is put in front
/// of them. One byte is kept for the length, which a body under 128 bytes fits; a longer
/// one moves its own bytes up by the few more its length takes (nothing is allocated: the
/// merge writes tens of millions of these).
#[inline]
pub(crate) fn message(buf: &mut Vec<u8>, field: u32, body: impl FnOnce(&mut Vec<u8>)) {
    key(buf, field, LEN);
    let at = buf.len();
    buf.push(0);
    body(buf);
    let len = buf.len() - at - 1;
    if len < 0x80 {
        buf[at] = len as u8;
        return;
    }
    let mut head = [0u8; 10];
    let n = varint_into(&mut head, len as u64);
    let end = buf.len();
    buf.resize(end + n - 1, 0);
    buf.copy_within(at + 1..end, at + n);
    buf[at..at + n].copy_from_slice(&head[..n]);
}

/// `v` as a varint ([`varint`]) into `out`; how many bytes it took. (A second loop, not
/// `varint` through a stack buffer: `varint` is the merge's hottest call, on one-byte values.)
#[inline]
fn varint_into(out: &mut [u8; 10], mut v: u64) -> usize {
    let mut i = 0;
    while v >= 0x80 {
        out[i] = (v as u8) | 0x80;
        v >>= 7;
        i += 1;
    }
    out[i] = v as u8;
    i + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The protobuf documentation's examples, and the edges of each varint length.
    #[test]
    fn varints_are_the_known_bytes() {
        let cases: &[(u64, &[u8])] = &[
            (0, &[0x00]),
            (1, &[0x01]),
            (127, &[0x7f]),
            (128, &[0x80, 0x01]),
            (150, &[0x96, 0x01]),
            (300, &[0xac, 0x02]),
            (16_383, &[0xff, 0x7f]),
            (16_384, &[0x80, 0x80, 0x01]),
            (
                u64::MAX,
                &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01],
            ),
        ];
        for &(v, want) in cases {
            let mut b = Vec::new();
            varint(&mut b, v);
            assert_eq!(b, want, "{v}");
        }
    }

    /// `int32 a = 1; a = 150` is `08 96 01`; `string b = 2; b = "testing"` is
    /// `12 07 74 65 73 74 69 6e 67`; a message `c = 3` holding the first is `1a 03 08 96 01`
    /// (the protobuf encoding guide's examples); -1 is ten bytes.
    #[test]
    fn fields_are_the_known_bytes() {
        let mut b = Vec::new();
        uint(&mut b, 1, 150);
        assert_eq!(b, [0x08, 0x96, 0x01]);
        let mut b = Vec::new();
        bytes(&mut b, 2, b"testing");
        assert_eq!(b, [0x12, 0x07, b't', b'e', b's', b't', b'i', b'n', b'g']);
        let mut b = Vec::new();
        message(&mut b, 3, |m| uint(m, 1, 150));
        assert_eq!(b, [0x1a, 0x03, 0x08, 0x96, 0x01]);
        let mut b = Vec::new();
        int(&mut b, 1, -1);
        assert_eq!(b.len(), 11);
        assert_eq!(b[10], 0x01);
        let mut b = Vec::new();
        fixed64(&mut b, 47, 0x0102_0304_0506_0708);
        assert_eq!(b, [0xf9, 0x02, 8, 7, 6, 5, 4, 3, 2, 1]);
        let mut b = Vec::new();
        double(&mut b, 5, 1.5);
        assert_eq!(b[0], 0x29);
        assert_eq!(&b[1..], 1.5f64.to_le_bytes());
        let mut b = Vec::new();
        boolean(&mut b, 2, true);
        assert_eq!(b, [0x10, 0x01]);
    }

    /// A message longer than 127 bytes gets a two-byte length, its body unmoved otherwise.
    #[test]
    fn long_messages_get_long_lengths() {
        let mut b = vec![0xaa];
        message(&mut b, 1, |m| bytes(m, 2, &[7u8; 200]));
        assert_eq!(&b[..4], [0xaa, 0x0a, 0xcb, 0x01]);
        assert_eq!(&b[4..7], [0x12, 0xc8, 0x01]);
        assert_eq!(b.len(), 4 + 203);
    }

    /// At each varint length's edge, nested or not, a message is its key, its body's length
    /// and its body, as written separately.
    #[test]
    fn lengths_at_the_edges() {
        for n in [
            0usize, 1, 124, 125, 126, 127, 128, 16_380, 16_381, 16_384, 2_097_152,
        ] {
            let body = |m: &mut Vec<u8>| bytes(m, 2, &vec![3u8; n]);
            let mut inner = Vec::new();
            body(&mut inner);
            let mut want = vec![0x55, 0x0a];
            varint(&mut want, inner.len() as u64);
            want.extend_from_slice(&inner);
            let mut got = vec![0x55];
            message(&mut got, 1, body);
            assert_eq!(got, want, "{n}");
            // The same inside another message, after a field.
            let mut outer_body = Vec::new();
            uint(&mut outer_body, 1, 9);
            outer_body.extend_from_slice(&want[1..]);
            let mut want2 = vec![0x1a];
            varint(&mut want2, outer_body.len() as u64);
            want2.extend_from_slice(&outer_body);
            let mut got2 = Vec::new();
            message(&mut got2, 3, |o| {
                uint(o, 1, 9);
                message(o, 1, body);
            });
            assert_eq!(got2, want2, "nested {n}");
        }
    }
}
