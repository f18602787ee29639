//! The merged file itself: the head (with rankprof's mark,
//! [`crate::trace::discover::merged::head`]), the ranks' compressed pieces and any load counter
//! tracks, and the tail that carries the merged top-level keys (`ranks`, `deviceProperties`,
//! `distributedInfo`, `baseTimeNanoseconds`), written as one gzip file renamed into place.

use std::path::Path;

use anyhow::Result;

use super::align;
use super::rank::RankOut;
use crate::trace::write::writer::{piece_from_bytes, write_gzip, Piece};
use crate::trace::{Group, Ns};

/// Writes the merged trace to `out`: the head, the ranks' pieces in order (empty ones
/// skipped), `load_json` (counter events, may be empty), then `tail` ([`tail_json`]). Returns
/// the uncompressed size.
pub(super) fn write(
    out: &Path,
    level: u32,
    pieces_in: Vec<Piece>,
    load_json: &[u8],
    tail: &str,
) -> Result<u64> {
    let mut pieces: Vec<Piece> = vec![piece_from_bytes(
        crate::trace::discover::merged::head().as_bytes(),
        level,
        false,
    )?];
    // The separator between ranks, compressed once: a deflate state is ~300 KB to set up.
    let sep = piece_from_bytes(b",\n", level, false)?;
    let mut any = false;
    for p in pieces_in {
        if p.len == 0 {
            continue;
        }
        if any {
            pieces.push(sep.clone());
        }
        any = true;
        pieces.push(p);
    }
    if !load_json.is_empty() {
        if any {
            pieces.push(sep);
        }
        pieces.push(piece_from_bytes(load_json, level, false)?);
    }
    pieces.push(piece_from_bytes(tail.as_bytes(), level, true)?);
    Ok(write_gzip(out, &pieces)?)
}

/// The merged trace's time span in output `ts` (ns): the earliest event start and the latest
/// event end over the ranks read, cut to `--window`.
pub(super) fn output_span(
    outs: &[Option<RankOut>],
    window: Option<(Ns, Ns)>,
) -> Option<(i64, i64)> {
    let lo = outs
        .iter()
        .flatten()
        .filter_map(|o| o.min_ts.map(|t| t.get() + o.shift.get()))
        .min()?;
    let hi = outs
        .iter()
        .flatten()
        .filter_map(|o| o.max_ts.map(|t| t.get() + o.shift.get()))
        .max()?;
    Some(match window {
        Some((a, b)) => (lo.max(a.get()), hi.min(b.get())),
        None => (lo, hi),
    })
}

/// The merged document's keys after `traceEvents`. `ranks`: every chosen rank (its index in
/// the group) with its pass, or why it could not be read.
pub(super) fn tail_json(
    g: &Group,
    ranks_in: &[(usize, Result<&RankOut, &str>)],
    alignment: &align::Alignment,
    out: &Path,
) -> Result<String> {
    use serde_json::{json, Map, Value};
    let mut devices: Vec<Value> = Vec::new();
    let mut ranks = Vec::new();
    for &(i, o) in ranks_in {
        let f = &g.files[i];
        let o = match o {
            Ok(o) => o,
            Err(why) => {
                ranks.push(json!({
                    "label": f.label,
                    "file": f.path.file_name().map(|n| n.to_string_lossy().into_owned()),
                    "index": i,
                    "tp": f.id.tp, "dp": f.id.dp, "pp": f.id.pp, "ep": f.id.ep, "rank": f.id.rank,
                    "baseTimeNanoseconds": null,
                    "clock_shift_ns": null,
                    "events": 0,
                    "damaged": true,
                    "unreadable": why,
                    "distributedInfo": null,
                }));
                continue;
            }
        };
        let h = &o.report.header;
        if let Some(raw) = &h.device_properties {
            if let Ok(Value::Array(list)) = serde_json::from_str::<Value>(raw) {
                for d in list {
                    if !devices.contains(&d) {
                        devices.push(d);
                    }
                }
            }
        }
        let dist: Value = h
            .distributed_info
            .as_deref()
            .and_then(|s| serde_json::from_str(s).ok())
            .unwrap_or(Value::Null);
        ranks.push(json!({
            "label": f.label,
            "file": f.path.file_name().map(|n| n.to_string_lossy().into_owned()),
            "index": i,
            "tp": f.id.tp, "dp": f.id.dp, "pp": f.id.pp, "ep": f.id.ep, "rank": f.id.rank,
            "baseTimeNanoseconds": h.base_time_ns,
            "clock_shift_ns": o.shift.get(),
            "events": o.written,
            "damaged": o.report.is_damaged(),
            "stopped_early": o.report.stopped_early(),
            "unreadable": null,
            "distributedInfo": dist,
        }));
    }
    let first = ranks_in
        .iter()
        .find_map(|(_, o)| o.as_ref().ok())
        .map(|o| &o.report.header);
    let mut top = Map::new();
    top.insert(
        "schemaVersion".into(),
        json!(first.and_then(|h| h.schema_version).unwrap_or(1)),
    );
    if !devices.is_empty() {
        top.insert("deviceProperties".into(), Value::Array(devices));
    }
    if let Some(d) = first
        .and_then(|h| h.distributed_info.as_deref())
        .and_then(|s| serde_json::from_str::<Value>(s).ok())
    {
        top.insert("distributedInfo".into(), d);
    }
    top.insert("ranks".into(), Value::Array(ranks));
    top.insert(
        "traceName".into(),
        json!(out.file_name().map(|n| n.to_string_lossy().into_owned())),
    );
    top.insert(
        "displayTimeUnit".into(),
        json!(first
            .and_then(|h| h.display_time_unit.clone())
            .unwrap_or_else(|| "ms".into())),
    );
    if let Some(b) = alignment.base_ns {
        top.insert("baseTimeNanoseconds".into(), json!(b));
    }
    let body = serde_json::to_string(&Value::Object(top))?;
    // `{...}` -> `\n],\n...}`: the keys follow the event array inside the same object.
    let inner = body.strip_prefix('{').unwrap_or(&body);
    Ok(format!("\n],\n{inner}\n"))
}
