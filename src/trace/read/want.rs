//! Which events a reader hands over ([`super::reader::Nested::SkimOnly`]): what a consumer
//! wants ([`Want`]) and what that makes of an event ([`Want::pick`], [`Pick`]). The peek that
//! decides it from an event's first bytes, so the others are skimmed whole (#14), is in
//! `peek.rs` ([`Want::peek`]).
//!
//! A consumer such as analyze reads only some kinds of events: complete events (`ph` `X`) of a
//! few categories. A Kineto trace is a third flow events (`ph` `s`/`f`), and profiles taken
//! with Python stacks are mostly `python_function`; decoding their fields (times, ids, UTF-8)
//! is work nobody reads. Kineto writes `ph` first and, for complete events, `cat` second
//! (`libkineto`'s `output_json.cpp`), so [`Want::peek`] reads those two values where they stand and
//! the reader skims an unwanted event a block at a time ([`super::skim::skip_nested`]): its
//! brackets, strings and control bytes are checked, its tokens are not, and it is counted in
//! [`super::damage::ReadReport::events`] but not handed over.
//!
//! What is handed over does not depend on the layout: an event whose first keys are not `ph`
//! (and `cat`, and `name`), or one the skim declines, is scanned and decoded in full and then
//! filtered by its decoded `ph`, `cat` and `name` ([`Want::pick`], on the same raw text the
//! peek reads). The only difference is for an event with a key twice (JSON leaves its meaning
//! open; Kineto writes none): the peek takes the first `ph`/`cat`/`name`, the decoder the
//! last.
//!
//! A merged trace is read whole from its first event whose `pid` carries a rank label
//! (`"[TP00-DP00] 0"`, as `rankprof merge` writes them, metadata first): a consumer that
//! splits it by label then sees every event of every label, and its per-label counts stay
//! exact.
//!
//! **By name.** A consumer may also test a complete event's raw `name` ([`Want::names`]):
//! Kineto writes it third, so [`Want::peek`] reads it in place too when the `cat` is one the
//! test looks at. The test is told whether the trace's header, before the events, lists a
//! device (`deviceProperties` not empty,
//! [`Header::lists_devices`](super::damage::Header::lists_devices)):
//! analyze drops a GPU trace's CPU op totals, so with devices listed it skims every CPU op
//! whose name it will not read. A trace whose header lists devices but which holds no GPU op
//! (a CPU-only profile taken on a GPU machine) must then be read again with
//! [`Want::trust_devices`] off; [`super::damage::ReadReport::narrowed`] counts the events that rule
//! skimmed (`analyze::plan` does this).

use super::event::Event;
use super::swar::same_bytes;
use super::value::Id;

/// A test on a complete event's `cat` and `name` (both raw, as written; `name` is only asked
/// for the categories in [`Want::named_cats`]); `devices`: the header lists a device. False:
/// the event is not handed over.
pub(crate) type NameTest = fn(cat: &[u8], name: &[u8], devices: bool) -> bool;

/// For a complete event that [`Want::names`] keeps while the header lists devices: the key
/// (with its quotes, as written) its text must hold to be handed over, or `None` (handed
/// over as it is). A consumer that reads such an event only for one `args` member, looked up
/// as written ([`super::args::find_in_args`]), loses nothing when an event without that key
/// in its text is skimmed: analyze's GEMM CPU ops in a trace taken without `record_shapes`
/// (no `Input Dims`), 65 k of a synthetic rank's 500 k events.
pub(crate) type NeedTest = fn(cat: &[u8], name: &[u8]) -> Option<&'static [u8]>;

/// A [`NeedTest`] that asks for no key.
pub(crate) fn no_needs(_: &[u8], _: &[u8]) -> Option<&'static [u8]> {
    None
}

/// The events a consumer reads.
#[derive(Clone, Copy, Debug)]
pub struct Want {
    /// The `ph` values (first byte) handed over.
    pub ph: &'static [u8],
    /// For complete events (`ph` `X`): the `cat` values handed over, as written (escapes not
    /// decoded).
    pub complete_cats: &'static [&'static str],
    /// The complete events' categories whose `name` is tested by [`Want::names`].
    pub named_cats: &'static [&'static str],
    /// Every complete event's `name` is tested by [`Want::names`], whatever its category
    /// (`complete_cats` and `named_cats` are then not consulted): for a consumer that looks
    /// for names in any category, such as merge's steps ([`super::steps::may_be_step`]).
    pub every_cat_named: bool,
    /// The name test.
    pub names: NameTest,
    /// Whether `names` is told what the header says of devices (off: always told none).
    pub trust_devices: bool,
    /// Named categories (`(category, prefix)`) whose name test turns down every name that
    /// does not start with the prefix (raw; no quote, backslash or control byte in it): such
    /// an event is [`Pick::Skip`] from its name's first bytes, the rest of the name skimmed,
    /// not read (analyze's `python_function` waits: a profile with Python stacks is mostly
    /// such events, with long names).
    pub name_prefixes: &'static [(&'static str, &'static str)],
    /// The key a kept event's text must hold when the header lists devices ([`NeedTest`]):
    /// without it the event is [`Pick::Narrowed`] (a trace whose header lists devices but
    /// that holds no GPU op is read again without the rule).
    pub needs: NeedTest,
}

/// What [`Want`] makes of an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pick {
    /// Handed over.
    Keep,
    /// Not handed over.
    Skip,
    /// Not handed over because the header lists devices: it would be with none listed.
    Narrowed,
    /// Handed over when the event's text holds this key (with its quotes, as written:
    /// [`Want::needs`]), else [`Pick::Narrowed`] ([`Pick::given`] decides).
    Needs(&'static [u8]),
}

impl Pick {
    /// What a [`Pick::Needs`] becomes for an event whose whole text is `ev` (the others stay
    /// as they are).
    #[inline]
    pub(crate) fn given(self, ev: &[u8]) -> Pick {
        match self {
            Pick::Needs(key) if holds(ev, key) => Pick::Keep,
            Pick::Needs(_) => Pick::Narrowed,
            p => p,
        }
    }
}

/// Whether `key` occurs in `ev`: searched by its second byte (a key's first letter, rarer in
/// a trace than its quote), without building a searcher per event.
#[inline]
fn holds(ev: &[u8], key: &[u8]) -> bool {
    match key {
        [] => true,
        [c] => memchr::memchr(*c, ev).is_some(),
        [q, rest @ ..] => memchr::memchr_iter(rest[0], ev)
            .any(|p| p > 0 && ev[p - 1] == *q && ev[p..].starts_with(rest)),
    }
}

#[cfg(test)]
/// A name test that keeps every name.
pub(crate) fn every_name(_: &[u8], _: &[u8], _: bool) -> bool {
    true
}

impl Want {
    /// What becomes of an event with this `ph` (first byte), `cat` and `name` (raw);
    /// `devices`: the header lists a device.
    #[inline]
    pub fn pick(&self, ph: u8, cat: &[u8], name: &[u8], devices: bool) -> Pick {
        self.by_ph(ph)
            .or_else(|| self.by_cat(cat))
            .or_else(|| self.by_prefix(cat, name))
            .unwrap_or_else(|| self.by_name(cat, name, devices))
    }

    /// `Some` when `ph` decides: not wanted, or wanted and not a complete event.
    #[inline]
    pub(super) fn by_ph(&self, ph: u8) -> Option<Pick> {
        if !self.ph.contains(&ph) {
            Some(Pick::Skip)
        } else {
            (ph != b'X').then_some(Pick::Keep)
        }
    }

    /// For a complete event: `Some` when its `cat` decides, `None` when its name must.
    #[inline]
    pub(super) fn by_cat(&self, cat: &[u8]) -> Option<Pick> {
        if self.every_cat_named {
            return None;
        }
        let listed = |cats: &[&str]| cats.iter().any(|c| same_bytes(c.as_bytes(), cat));
        if !listed(self.complete_cats) {
            Some(Pick::Skip)
        } else {
            (!listed(self.named_cats)).then_some(Pick::Keep)
        }
    }

    /// The prefix every name of a complete event of category `cat` must start with to be
    /// handed over ([`Want::name_prefixes`]).
    #[inline]
    pub(super) fn prefix_of(&self, cat: &[u8]) -> Option<&'static [u8]> {
        self.name_prefixes
            .iter()
            .find(|(c, _)| same_bytes(c.as_bytes(), cat))
            .map(|(_, p)| p.as_bytes())
    }

    /// For a complete event of a named category: `Some(Skip)` when its name does not start
    /// with its category's prefix; `None` when the name test must decide.
    #[inline]
    fn by_prefix(&self, cat: &[u8], name: &[u8]) -> Option<Pick> {
        let prefix = self.prefix_of(cat)?;
        (!name.starts_with(prefix)).then_some(Pick::Skip)
    }

    #[inline]
    pub(super) fn by_name(&self, cat: &[u8], name: &[u8], devices: bool) -> Pick {
        let devices = devices && self.trust_devices;
        if (self.names)(cat, name, devices) {
            match (self.needs)(cat, name) {
                Some(key) if devices => Pick::Needs(key),
                _ => Pick::Keep,
            }
        } else if devices && (self.names)(cat, name, false) {
            Pick::Narrowed
        } else {
            Pick::Skip
        }
    }
}

/// Whether `ev`'s `pid` carries a merged trace's rank label (`"[label] pid"`): from it on the
/// reader hands over every event.
pub(crate) fn labeled(ev: &Event<'_>) -> bool {
    matches!(ev.pid, Id::Str(s) if s.raw().starts_with('['))
}

#[cfg(test)]
mod tests {
    use super::{holds, Pick};

    #[test]
    fn holds_finds_a_key_where_a_plain_search_does() {
        let key = b"\"Input Dims\"";
        let texts: [&[u8]; 7] = [
            b"",
            b"\"Input Dims\"",
            b"{\"args\": {\"Input Dims\": [[1]]}}",
            b"Input Dims\"",
            b"\"Input Dim\"s \"IInput Dims\"",
            b"{\"name\": \"x\\\"Input Dims\\\"\"}",
            b"III\"I\"In\"Input Dims",
        ];
        for t in texts {
            let plain = t.windows(key.len()).any(|w| w == key);
            assert_eq!(holds(t, key), plain, "{}", String::from_utf8_lossy(t));
        }
        assert!(holds(b"", b""));
        assert!(holds(b"x\"", b"\""));
        assert!(!holds(b"x", b"\""));
    }

    #[test]
    fn a_pick_that_needs_a_key_is_kept_only_with_it() {
        let k = Pick::Needs(b"\"In msg nelems\"");
        assert_eq!(k.given(b"{\"args\": {\"In msg nelems\": 4}}"), Pick::Keep);
        assert_eq!(k.given(b"{\"args\": {\"Ev Idx\": 4}}"), Pick::Narrowed);
        assert_eq!(Pick::Skip.given(b"\"In msg nelems\""), Pick::Skip);
        assert_eq!(Pick::Keep.given(b""), Pick::Keep);
    }
}
