//! A rank's collectives in a partial, both ways, never held whole: written as key → list of
//! (name, start, end, and the segment before it when known) streamed from the store through a [`Cursor`], and read back record by
//! record into a spool that [`RankColls::build_in`] sorts into a new store.

use std::cell::RefCell;

use serde::ser::{SerializeMap, SerializeSeq, SerializeStruct};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::{mem_records, Coll, Cursor, RankColls};
use crate::analyze::collect::collector::CollEv;
use crate::analyze::collect::collector::BLOCKING;
use crate::analyze::collect::segments::NO_PREV;
use crate::analyze::collect::spill::Spool;

/// One collective borrowed for writing.
#[derive(Serialize)]
struct CollRef<'a> {
    name: &'a str,
    start: i64,
    end: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    prev_end: Option<i64>,
    #[serde(skip_serializing_if = "is_zero")]
    busy: i64,
    #[serde(skip_serializing_if = "is_zero")]
    pre: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    bytes: Option<u64>,
    #[serde(skip_serializing_if = "is_false")]
    from_step: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    waited: Option<i64>,
    #[serde(skip_serializing_if = "is_false")]
    overlapped: bool,
}

fn is_false(x: &bool) -> bool {
    !*x
}

fn is_zero(x: &i64) -> bool {
    *x == 0
}

/// One key's list, written from a cursor shared by the keys in order.
struct List<'a, 'b> {
    c: &'a RankColls,
    cur: &'b RefCell<Cursor<'a>>,
    n: usize,
}

impl Serialize for List<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.n))?;
        for _ in 0..self.n {
            let r = self
                .cur
                .borrow_mut()
                .next_rec()
                .map_err(serde::ser::Error::custom)?
                .ok_or_else(|| serde::ser::Error::custom("collectives cut short"))?;
            seq.serialize_element(&CollRef {
                name: self.c.name(r.name),
                start: r.start,
                end: r.end,
                prev_end: (r.prev_end != NO_PREV).then_some(r.prev_end),
                busy: r.busy,
                pre: r.pre,
                bytes: (r.bytes > 0).then_some(r.bytes),
                from_step: r.from_step,
                waited: (r.waited != BLOCKING).then_some(r.waited),
                overlapped: r.overlapped,
            })?;
        }
        seq.end()
    }
}

struct ByKey<'a>(&'a RankColls);

impl Serialize for ByKey<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let c = self.0;
        let cur = RefCell::new(c.cursor());
        let mut m = s.serialize_map(Some(c.keys.len()))?;
        for (k, &n) in c.keys.iter().zip(&c.counts) {
            m.serialize_entry(k, &List { c, cur: &cur, n })?;
        }
        m.end()
    }
}

impl Serialize for RankColls {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("RankColls", 1)?;
        st.serialize_field("by_key", &ByKey(self))?;
        st.end()
    }
}

/// A partial's collectives as they are read: each record goes to a spool (bounded memory) with
/// its key's position in the file and its name's id; [`RankColls::build_in`] then sorts them
/// into the store. Each key's list is in start order in the file, and records keep that order
/// (their `seq` is the file order), so the store is the one `RankColls::from_map` (tests) builds.
#[derive(Default)]
struct Incoming {
    labels: Vec<String>,
    names: Vec<String>,
    ids: std::collections::HashMap<String, u32>,
    evs: Spool<CollEv>,
    seq: u32,
}

impl Incoming {
    fn push(&mut self, key: u32, c: Coll) {
        let (prev_end, busy, pre) = c.segment();
        let name = match self.ids.get(&c.name) {
            Some(&id) => id,
            None => {
                let id = self.names.len() as u32;
                self.ids.insert(c.name.clone(), id);
                self.names.push(c.name);
                id
            }
        };
        self.evs.push(CollEv {
            key,
            name,
            seq: self.seq,
            start: c.start,
            end: c.end,
            prev_end,
            busy,
            pre,
            bytes: c.bytes.unwrap_or(0),
            from_step: c.from_step,
            waited: c.waited.unwrap_or(BLOCKING),
            overlapped: c.overlapped,
        });
        self.seq = self.seq.wrapping_add(1);
    }
}

/// `by_key`: key → list of collectives, each list fed to [`Incoming`] as it is read.
struct ByKeySeed<'a>(&'a mut Incoming);

impl<'de> serde::de::DeserializeSeed<'de> for ByKeySeed<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> serde::de::Visitor<'de> for ByKeySeed<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a map of collective lists")
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(
        self,
        mut m: A,
    ) -> std::result::Result<(), A::Error> {
        while let Some(k) = m.next_key::<String>()? {
            let key = self.0.labels.len() as u32;
            self.0.labels.push(k);
            m.next_value_seed(ListSeed(&mut *self.0, key))?;
        }
        Ok(())
    }
}

/// One key's list, fed to [`Incoming`].
struct ListSeed<'a>(&'a mut Incoming, u32);

impl<'de> serde::de::DeserializeSeed<'de> for ListSeed<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> serde::de::Visitor<'de> for ListSeed<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a list of collectives")
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(
        self,
        mut s: A,
    ) -> std::result::Result<(), A::Error> {
        while let Some(c) = s.next_element::<Coll>()? {
            self.0.push(self.1, c);
        }
        Ok(())
    }
}

/// The partial's `{"by_key": …}` object.
struct WireVisitor;

impl<'de> serde::de::Visitor<'de> for WireVisitor {
    type Value = RankColls;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("collectives by key")
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(
        self,
        mut m: A,
    ) -> std::result::Result<RankColls, A::Error> {
        let mut inc = Incoming::default();
        let mut seen = false;
        while let Some(k) = m.next_key::<String>()? {
            if k == "by_key" {
                m.next_value_seed(ByKeySeed(&mut inc))?;
                seen = true;
            } else {
                m.next_value::<serde::de::IgnoredAny>()?;
            }
        }
        if !seen {
            return Err(serde::de::Error::missing_field("by_key"));
        }
        let Incoming {
            labels, names, evs, ..
        } = inc;
        RankColls::build_in(evs, &labels, names, 0, mem_records()).map_err(serde::de::Error::custom)
    }
}

impl<'de> Deserialize<'de> for RankColls {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        d.deserialize_struct("RankColls", &["by_key"], WireVisitor)
    }
}
