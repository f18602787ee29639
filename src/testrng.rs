//! The unit tests' deterministic generator: Marsaglia's xorshift64 (13, 7, 17), one definition
//! for the tests that make varied inputs from a fixed seed (the same sequence from the same
//! seed as the copies of it they each carried).

/// Advances `s` (not zero) and answers its new value.
pub(crate) fn xorshift(s: &mut u64) -> u64 {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    *s
}
