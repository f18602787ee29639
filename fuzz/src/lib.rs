//! Helpers shared by the fuzz targets.

use serde::de::IgnoredAny;

/// Checks that `text` is one JSON value by the grammar (RFC 8259), as serde_json reads it:
/// raw control bytes, bad escapes and bad numbers are errors. Lone `\uD800` surrogate escapes
/// are grammatical JSON (and what browsers' `JSON.parse` accepts), so they are not checked
/// here (`IgnoredAny` skips strings without decoding them); nor is the nesting depth.
pub fn check_json(text: &[u8]) -> Result<(), serde_json::Error> {
    let mut de = serde_json::Deserializer::from_slice(text);
    de.disable_recursion_limit();
    serde::Deserialize::deserialize(&mut de).map(|_: IgnoredAny| ())?;
    de.end()
}
