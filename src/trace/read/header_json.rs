//! The two header values analysis reads members of, `distributedInfo` and `deviceProperties`,
//! parsed into only those members. Each rank's header is read, and at 1,024 ranks building a
//! `serde_json::Value` of every device's dozen properties (three times a rank) was ~1.6 % of
//! analyze's instructions. Here the members kept are made `Value`s and read as a `Value` reads
//! them (`as_i64`, `as_str`; the last of a repeated key), the rest skipped unbuilt, so the
//! answers are those of the whole `Value`'s, which the tests check on odd texts.

use std::borrow::Cow;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

/// `distributedInfo`'s members that analysis reads.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Distributed {
    pub rank: Option<i64>,
    pub world_size: Option<i64>,
}

/// One entry of `deviceProperties`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Device {
    pub id: Option<i64>,
    pub name: Option<String>,
}

/// `rank` and `world_size` of `distributedInfo`'s text.
pub(super) fn distributed(raw: &str) -> Distributed {
    let mut de = serde_json::Deserializer::from_str(raw);
    let picked = Pick(["rank", "world_size"]).deserialize(&mut de);
    match picked.ok().flatten().filter(|_| de.end().is_ok()) {
        Some([rank, world_size]) => Distributed {
            rank: rank.as_ref().and_then(Value::as_i64),
            world_size: world_size.as_ref().and_then(Value::as_i64),
        },
        None => Distributed::default(),
    }
}

/// Each object in `deviceProperties`' text, with its `id` and `name`.
pub(super) fn devices(raw: &str) -> Vec<Device> {
    let mut de = serde_json::Deserializer::from_str(raw);
    let list = de.deserialize_any(Devices);
    match list.ok().filter(|_| de.end().is_ok()) {
        Some(list) => list
            .into_iter()
            .flatten()
            .map(|[id, name]| Device {
                id: id.as_ref().and_then(Value::as_i64),
                name: name.as_ref().and_then(Value::as_str).map(String::from),
            })
            .collect(),
        None => Vec::new(),
    }
}

/// The members named `0` of a JSON value, each as a `Value` (the last where a key repeats, as
/// a `Value`'s map keeps it); the others skipped without building them. `None`: the value is
/// not an object.
struct Pick<const N: usize>([&'static str; N]);

impl<'de, const N: usize> DeserializeSeed<'de> for Pick<N> {
    type Value = Option<[Option<Value>; N]>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, const N: usize> Visitor<'de> for Pick<N> {
    type Value = Option<[Option<Value>; N]>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Self::Value, A::Error> {
        let mut out: [Option<Value>; N] = std::array::from_fn(|_| None);
        while let Some(k) = m.next_key::<Cow<'de, str>>()? {
            match self.0.iter().position(|want| *want == k) {
                Some(i) => out[i] = Some(m.next_value()?),
                None => {
                    m.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Some(out))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<Self::Value, A::Error> {
        while s.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }
    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
}

/// `deviceProperties`: each entry's `id` and `name` where it is an object; `Err` when the
/// value is not a list.
struct Devices;

impl<'de> Visitor<'de> for Devices {
    type Value = Vec<Option<[Option<Value>; 2]>>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of devices")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<Self::Value, A::Error> {
        let mut out = Vec::new();
        while let Some(d) = s.next_element_seed(Pick(["id", "name"]))? {
            out.push(d);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lenient reading, written out on `Value` as it was before the typed parse.
    fn by_value_distributed(raw: &str) -> Distributed {
        let v: serde_json::Value = serde_json::from_str(raw).unwrap_or_default();
        Distributed {
            rank: v.get("rank").and_then(|x| x.as_i64()),
            world_size: v.get("world_size").and_then(|x| x.as_i64()),
        }
    }

    fn by_value_names(raw: &str) -> Vec<Option<String>> {
        let v: serde_json::Value = serde_json::from_str(raw).unwrap_or_default();
        v.as_array()
            .map(|a| {
                a.iter()
                    .filter(|d| d.is_object())
                    .map(|d| d.get("name").and_then(|n| n.as_str()).map(String::from))
                    .collect()
            })
            .unwrap_or_default()
    }

    #[test]
    fn distributed_answers_as_the_value_reading() {
        for raw in [
            r#"{"backend": "nccl", "rank": 3, "world_size": 8, "pg_config": [{"ranks": [0, 1]}]}"#,
            r#"{"rank": "3", "world_size": 8}"#,
            r#"{"rank": 3.0, "world_size": 8}"#,
            r#"{"rank": 1, "rank": 2}"#,
            r#"{"rank": null}"#,
            r#"{"rank": 18446744073709551615}"#,
            r#"[1, 2]"#,
            r#"{"rank": 1"#,
            "",
        ] {
            assert_eq!(distributed(raw), by_value_distributed(raw), "{raw}");
        }
        assert_eq!(
            distributed(r#"{"rank": 3, "world_size": 8, "x": {"y": [1]}}"#),
            Distributed {
                rank: Some(3),
                world_size: Some(8)
            }
        );
    }

    #[test]
    fn devices_answer_as_the_value_reading() {
        for raw in [
            r#"[{"id": 0, "name": "NVIDIA H100", "totalGlobalMem": 1, "x": [1, {"a": 2}]}, {"id": 1, "name": "B"}]"#,
            r#"[{"id": "0", "name": "A"}]"#,
            r#"[{"id": 0, "name": 5}]"#,
            r#"[{"id": 0, "name": "A", "name": "B"}]"#,
            r#"[{"id": 0, "name": "esc\"aped\u00e9"}]"#,
            r#"[1, {"id": 2, "name": "C"}, "x"]"#,
            r#"[{"id": null, "name": null}]"#,
            r#"{"id": 0, "name": "not a list"}"#,
            r#"[]"#,
            r#"[{"id": 0"#,
        ] {
            let got: Vec<Option<String>> = devices(raw).into_iter().map(|d| d.name).collect();
            assert_eq!(got, by_value_names(raw), "{raw}");
        }
        assert_eq!(
            devices(r#"[{"id": 7, "name": "A"}]"#),
            vec![Device {
                id: Some(7),
                name: Some("A".into())
            }]
        );
    }
}
