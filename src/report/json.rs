//! `analyze --format json`: the whole [`Analysis`] as one pretty-printed JSON document whose
//! lists are lists of flat records (the tidy tables of [`super::tidy`]).
//!
//! [`write`] streams it: the document without its per-step lists (`steps.rows`,
//! `steps.by_rank`, `attribution.per_step`: one record per step, or per step and rank) and
//! without `kernels_by_rank` (one record per kernel and rank) is a small `serde_json::Value`
//! ([`shell`]); those lists are written record by record where the shell holds an empty
//! placeholder, through the same serializer and pretty formatter. Memory stays that of the
//! shell and one record, whatever the number of steps and kernels, and the bytes are
//! those of [`flat_json`], the same document built whole (kept as the reference the tests
//! compare with, and for callers that want a `Value`).

use std::io::Write;

use anyhow::Result;
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::{Map, Value};

use super::tidy;
use crate::analyze::explain::attribution::Attribution;
use crate::analyze::reduce::steps::StepTable;
use crate::analyze::Analysis;

/// Writes the analysis as JSON (a trailing newline included) to `w`, the per-step lists record
/// by record. Same bytes as `serde_json::to_string_pretty(&flat_json(a)?)? + "\n"`.
pub(crate) fn write(a: &Analysis, w: impl Write) -> Result<()> {
    let v = shell(a)?;
    let mut w = std::io::BufWriter::with_capacity(1 << 16, w);
    serde_json::to_writer_pretty(
        &mut w,
        &Node {
            v: &v,
            a,
            top: None,
        },
    )?;
    w.write_all(b"\n")?;
    w.flush()?;
    Ok(())
}

/// The analysis as one JSON value with every list a list of flat records: the serialized
/// analysis, with its nested lists replaced by the tidy tables (`classes`, `kernels` +
/// `kernels_by_rank`, `steps.rows` + `steps.by_rank`, `collectives.worlds`, `files[].ranks`
/// joined by commas). Objects (`verdict`, `steps`, `collectives`, `depth`) and flat lists keep
/// their fields. Built whole: its size grows with the number of steps (see [`write`]).
pub fn flat_json(a: &Analysis) -> Result<Value> {
    let mut v = serde_json::to_value(a)?;
    reshape(a, &mut v);
    if let Some(o) = v.as_object_mut() {
        o.insert(
            "kernels_by_rank".into(),
            Value::Array(kernel_rank_records(a).collect()),
        );
    }
    if let Some(st) = v.get_mut("steps").and_then(Value::as_object_mut) {
        let steps = a.steps.rows.iter().map(|r| step_record(&a.steps, r));
        st.insert("rows".into(), Value::Array(steps.collect()));
        let by_rank = step_rank_records(&a.steps).collect();
        st.insert("by_rank".into(), Value::Array(by_rank));
    }
    if let Some(at) = v.get_mut("attribution").and_then(Value::as_object_mut) {
        // One record per step and rank instead of a list per figure.
        let rows = work_records(&a.attribution).collect();
        at.insert("per_step".into(), Value::Array(rows));
    }
    Ok(v)
}

/// [`flat_json`] with its streamed lists left empty, built without serializing them.
pub fn shell(a: &Analysis) -> Result<Value> {
    // Every field named (no `..`): a field added to the analysis must be added here too.
    let Analysis {
        profile_id,
        stage,
        files,
        source,
        threshold_pct,
        verdict,
        ranks,
        classes: _,
        kernels: _,
        steps,
        collectives,
        path,
        attribution,
        ep,
        memory,
        snapshots,
        depth,
        drill,
        groups,
        notes,
        clocks,
        damaged,
        stopped_early,
        merged_trace,
        summary: _,
    } = a;
    let StepTable {
        source: steps_source,
        basis,
        ranks: steps_ranks,
        rows: _,
        onset,
        notes: steps_notes,
        peers: _,
    } = steps;
    let Attribution {
        unit,
        source: work_source,
        same_work_pct,
        threshold_pct: work_threshold_pct,
        ranks: work_ranks,
        records,
        per_step: _,
    } = attribution;
    let empty = || Value::Array(Vec::new());
    let mut st = Map::new();
    st.insert("source".into(), to(steps_source)?);
    st.insert("basis".into(), to(basis)?);
    st.insert("ranks".into(), to(steps_ranks)?);
    st.insert("rows".into(), empty());
    st.insert("by_rank".into(), empty());
    st.insert("onset".into(), to(onset)?);
    st.insert("notes".into(), to(steps_notes)?);
    let mut at = Map::new();
    at.insert("unit".into(), to(unit)?);
    at.insert("source".into(), to(work_source)?);
    at.insert("same_work_pct".into(), to(same_work_pct)?);
    at.insert("threshold_pct".into(), to(work_threshold_pct)?);
    at.insert("ranks".into(), to(work_ranks)?);
    at.insert("records".into(), to(records)?);
    at.insert("per_step".into(), empty());
    let mut o = Map::new();
    o.insert("profile_id".into(), to(profile_id)?);
    o.insert("stage".into(), to(stage)?);
    o.insert("files".into(), to(files)?);
    o.insert("source".into(), to(source)?);
    o.insert("threshold_pct".into(), to(threshold_pct)?);
    o.insert("verdict".into(), to(verdict)?);
    o.insert("ranks".into(), to(ranks)?);
    o.insert("steps".into(), Value::Object(st));
    o.insert("collectives".into(), to(collectives)?);
    o.insert("path".into(), to(path)?);
    o.insert("attribution".into(), Value::Object(at));
    o.insert("ep".into(), to(ep)?);
    if !memory.is_empty() {
        o.insert("memory".into(), Value::Array(Vec::new())); // filled by [`reshape`]
    }
    if !snapshots.is_empty() {
        o.insert("snapshots".into(), to(snapshots)?);
    }
    o.insert("depth".into(), to(depth)?);
    if drill.is_some() {
        o.insert("drill".into(), to(drill)?);
    }
    o.insert("groups".into(), to(groups)?);
    o.insert("notes".into(), to(notes)?);
    if !clocks.is_empty() {
        o.insert("clocks".into(), to(clocks)?);
    }
    o.insert("damaged".into(), to(damaged)?);
    if stopped_early.is_some() {
        o.insert("stopped_early".into(), to(stopped_early)?);
    }
    if merged_trace.is_some() {
        o.insert("merged_trace".into(), to(merged_trace)?);
    }
    let mut v = Value::Object(o);
    reshape(a, &mut v);
    // Streamed by [`Node`] like the per-step lists: a row per kernel and rank.
    if let Some(o) = v.as_object_mut() {
        o.insert("kernels_by_rank".into(), Value::Array(Vec::new()));
    }
    Ok(v)
}

fn to<T: Serialize>(v: &T) -> serde_json::Result<Value> {
    serde_json::to_value(v)
}

/// Everything [`flat_json`] changes in the serialized analysis but the lists [`write`] streams
/// (the per-step lists and `kernels_by_rank`).
fn reshape(a: &Analysis, v: &mut Value) {
    let records = |t: super::table::Table| t.records();
    if let Some(o) = v.as_object_mut() {
        // The class table's scalars, kept beside its flat records.
        let c = &a.classes;
        o.insert(
            "unclassified".into(),
            serde_json::json!({
                "pct": c.unclassified_pct,
                "by_rank": c.ranks.iter().zip(&c.unclassified_rank_pct)
                    .map(|(r, p)| serde_json::json!({"rank": r, "pct": p}))
                    .collect::<Vec<_>>(),
            }),
        );
        o.insert("classes".into(), records(tidy::classes(a)));
        o.insert("kernels".into(), records(tidy::kernels(a)));
        if !a.memory.is_empty() {
            o.insert("memory".into(), records(tidy::memory_ranks(a)));
        }
        if let Some(files) = o.get_mut("files").and_then(Value::as_array_mut) {
            for (file, info) in files.iter_mut().zip(&a.files) {
                file["ranks"] = Value::String(info.ranks.join(","));
            }
        }
    }
    if let Some(at) = v.get_mut("attribution").and_then(Value::as_object_mut) {
        if let Some(recs) = at.get_mut("records").and_then(Value::as_array_mut) {
            for (rec, r) in recs.iter_mut().zip(&a.attribution.records) {
                rec["peers"] = Value::String(r.peers.join(","));
            }
        }
    }
    if let Some(co) = v.get_mut("collectives").and_then(Value::as_object_mut) {
        let worlds = tidy::collectives(a)
            .into_iter()
            .find(|t| t.name == "collectives_worlds")
            .map_or(Value::Array(Vec::new()), records);
        co.insert("worlds".into(), worlds);
    }
    if let Some(g) = v.get_mut("groups").and_then(Value::as_object_mut) {
        g.insert("dims".into(), records(super::groups::tidy(a)));
        g.remove("work_ns");
        g.remove("vs_peers_pct");
        let classes = a.classes.classes.iter().zip(&a.groups.classes);
        let classes: Vec<Value> = classes
            .map(|(c, d)| {
                let mut r = serde_json::to_value(d).unwrap_or_default();
                r["class"] = Value::String(c.clone());
                r
            })
            .collect();
        g.insert("classes".into(), Value::Array(classes));
        if let Some(grid) = &a.groups.grid {
            let mut cells = Vec::new();
            for (row, line) in grid.rows.iter().zip(&grid.cells) {
                for (col, r) in grid.cols.iter().zip(line) {
                    if let Some((i, r)) = r.and_then(|i| a.ranks.get(i).map(|r| (i, r))) {
                        let dev = a.groups.vs_peers_pct.get(i).copied().unwrap_or(0.0);
                        cells.push(serde_json::json!({
                            "row": row, "col": col, "rank": r.figures.rank, "vs_peers_pct": dev
                        }));
                    }
                }
            }
            g.insert("grid".into(), Value::Array(cells));
        }
    }
}

fn step_record(st: &StepTable, r: &crate::analyze::reduce::steps::StepRow) -> Value {
    super::table::record(tidy::STEPS, &tidy::steps_row(st, r))
}

fn step_rank_records(st: &StepTable) -> impl Iterator<Item = Value> + '_ {
    st.rows.iter().flat_map(move |r| {
        (0..st.ranks.len()).map(move |x| {
            super::table::record(tidy::STEPS_BY_RANK, &tidy::steps_by_rank_row(st, r, x))
        })
    })
}

fn kernel_rank_records(a: &Analysis) -> impl Iterator<Item = Value> + '_ {
    tidy::kernels_by_rank_rows(a).map(|row| super::table::record(tidy::KERNELS_BY_RANK, &row))
}

fn work_records(at: &Attribution) -> impl Iterator<Item = Value> + '_ {
    at.per_step.iter().flat_map(move |s| {
        at.ranks
            .iter()
            .enumerate()
            .map(move |(i, r)| tidy::work_record(s, i, &r.rank))
    })
}

/// A list written record by record: the per-step lists and `kernels_by_rank`.
#[derive(Clone, Copy)]
enum Bulk {
    Steps,
    StepsByRank,
    Work,
    KernelsByRank,
}

impl Bulk {
    /// The list the shell leaves empty at key `key` of the top-level object `top` (`None`:
    /// of the document itself).
    fn at(top: Option<&str>, key: &str) -> Option<Bulk> {
        match (top, key) {
            (Some("steps"), "rows") => Some(Bulk::Steps),
            (Some("steps"), "by_rank") => Some(Bulk::StepsByRank),
            (Some("attribution"), "per_step") => Some(Bulk::Work),
            (None, "kernels_by_rank") => Some(Bulk::KernelsByRank),
            _ => None,
        }
    }
}

/// A list serialized from its items, one at a time.
struct Records<I>(std::cell::Cell<Option<I>>);

impl<I: Iterator<Item = Value>> Serialize for Records<I> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        // No length announced: an empty list is `[]` either way.
        let mut seq = s.serialize_seq(None)?;
        for v in self.0.take().into_iter().flatten() {
            seq.serialize_element(&v)?;
        }
        seq.end()
    }
}

fn records<I: Iterator<Item = Value>>(it: I) -> Records<I> {
    Records(std::cell::Cell::new(Some(it)))
}

/// The shell, serialized as it is but for the [`Bulk`] lists, which are streamed.
struct Node<'a> {
    v: &'a Value,
    a: &'a Analysis,
    /// The top-level key this value sits under (`None`: the document itself).
    top: Option<&'a str>,
}

impl Serialize for Node<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let Value::Object(m) = self.v else {
            return self.v.serialize(s);
        };
        let a = self.a;
        let mut map = s.serialize_map(Some(m.len()))?;
        for (k, v) in m {
            match Bulk::at(self.top, k) {
                None if self.top.is_none() => {
                    map.serialize_entry(k, &Node { v, a, top: Some(k) })?
                }
                None => map.serialize_entry(k, v)?,
                Some(Bulk::Steps) => {
                    let st = &a.steps;
                    let it = st.rows.iter().map(|r| step_record(st, r));
                    map.serialize_entry(k, &records(it))?
                }
                Some(Bulk::StepsByRank) => {
                    map.serialize_entry(k, &records(step_rank_records(&a.steps)))?
                }
                Some(Bulk::Work) => {
                    map.serialize_entry(k, &records(work_records(&a.attribution)))?
                }
                Some(Bulk::KernelsByRank) => {
                    map.serialize_entry(k, &records(kernel_rank_records(a)))?
                }
            }
        }
        map.end()
    }
}
