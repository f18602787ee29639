//! NCCL's own NVTX ranges (domain `NCCL`) as the size and communicator of the NCCL kernels
//! they launched: a pre-pass over an export, before the kernels are read.
//!
//! NCCL (2.19 on) pushes one range per API call in the NVTX domain `NCCL`, named after the
//! function (`ncclAllReduce`, …), with a binary payload whose layout is a registered schema
//! (NVIDIA/nccl `src/include/nvtx_payload_schemas.h`): entries `NCCL communicator ID`
//! (`uint64`, NVTX entry type 18) and `Message size [bytes]` (`size_t`, type 22). An export
//! holds the domain's name as an `NVTX_EVENTS` row of `eventType` 75, the payload as
//! `NVTX_EVENTS.binaryData` and the schemas in `NVTX_PAYLOAD_SCHEMAS` /
//! `NVTX_PAYLOAD_SCHEMA_ENTRIES`. The blob's layout is not documented by NVIDIA: it is read as
//! a third-party reader (GindaChen/nsys-ai) decodes it, a 32-byte little-endian header
//! (domainId u32, u32, schemaId u32, u32, payloadSize u64, totalSize u64) and then the struct,
//! and only where it validates: the header's domain and schema are the range's and a schema
//! of `NVTX_PAYLOAD_SCHEMAS`, its payload size is that schema's, the blob holds it, and the
//! entries lie inside it. Anything else is not used (never a guessed size), with a note.
//!
//! Each NCCL kernel (by `correlationId`, within its process) goes to the innermost NCCL range
//! on its launching thread that encloses its launch (the runtime call of the same
//! `correlationId`): two ordered queries (the ranges, the launches, both by thread and start)
//! swept together, so what is kept is one small entry per NCCL kernel and the open ranges of
//! one thread. All-reduce, broadcast, reduce, send and receive give the size (in = out);
//! all-gather and reduce-scatter give only the communicator (NCCL records one rank's share);
//! a grouped collective, launched in `ncclGroupEnd` outside its call's range, gets nothing.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use rusqlite::{Connection, Row};

use super::rows::int;
use super::schema::{ident, Schema, KERNEL, KERNEL_NAMES, NVTX, RUNTIME, STRINGS};
use super::scope::{Found, Nccl};

pub(crate) const SCHEMAS: &str = "NVTX_PAYLOAD_SCHEMAS";
pub(crate) const ENTRIES: &str = "NVTX_PAYLOAD_SCHEMA_ENTRIES";
/// The entries read, by name (`nvtx_payload_schemas.h`).
const COMM: &str = "NCCL communicator ID";
const SIZE: &str = "Message size [bytes]";
/// NVTX payload entry types (`nvToolsExtPayload.h`): `uint64`, `size_t`.
const TYPE_UINT64: i64 = 18;
const TYPE_SIZE: i64 = 22;
/// The blob's header ahead of the struct (third-party layout: see the module documentation).
const HEADER: usize = 32;
/// Open ranges kept per thread (push/pop ranges nest; a deeper stack keeps its innermost).
const MAX_DEPTH: usize = 64;

/// Where a payload's struct entries lie, per (domain, schema).
#[derive(Clone, Copy, Debug)]
struct Layout {
    size: u64,
    comm: Option<u64>,
    bytes: Option<u64>,
}

/// How a call's size reads ([`op_kind`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    /// The payload's size is the whole message (in = out).
    Whole,
    /// One rank's share (all-gather, reduce-scatter): the communicator only.
    Share,
    /// Not a collective (`ncclGroupEnd`, `ncclCommInitRank`, …).
    Other,
}

fn op_kind(name: &str) -> Op {
    match name {
        "ncclAllReduce" | "ncclBroadcast" | "ncclReduce" | "ncclSend" | "ncclRecv" => Op::Whole,
        "ncclAllGather" | "ncclReduceScatter" => Op::Share,
        _ => Op::Other,
    }
}

/// One open range: its end and what its kernels get (`None`: the payload did not validate).
struct Open {
    end: i64,
    op: Op,
    got: Option<Found>,
}

/// Counts for the note.
#[derive(Default)]
struct Counts {
    kernels: usize,
    sized: usize,
    share: usize,
    outside: usize,
    invalid: usize,
}

/// The NCCL domain's ids, the blob's layouts and the pre-pass's SQL need these columns.
fn columns_ok(s: &Schema) -> bool {
    let need = |t: &str, cs: &[&str]| cs.iter().all(|c| s.column(t, c).is_some());
    need(
        NVTX,
        &[
            "start",
            "end",
            "eventType",
            "domainId",
            "globalTid",
            "binaryData",
        ],
    ) && need(SCHEMAS, &["domainId", "schemaId", "payloadSize"])
        && need(ENTRIES, &["domainId", "schemaId", "name", "type", "offset"])
        && need(RUNTIME, &["start", "globalTid", "correlationId"])
        && need(KERNEL, &["correlationId", "globalPid"])
}

/// The NVTX text expression and its join (`n` the events' alias).
fn nvtx_text(s: &Schema) -> Option<(String, String)> {
    let join = format!(" LEFT JOIN {} AS t ON t.id = n.textId", ident(STRINGS));
    match (
        s.column(NVTX, "text").is_some(),
        s.column(NVTX, "textId").is_some() && s.strings(),
    ) {
        (true, true) => Some(("COALESCE(n.text, t.value)".into(), join)),
        (true, false) => Some(("n.text".into(), String::new())),
        (false, true) => Some(("t.value".into(), join)),
        (false, false) => None,
    }
}

/// Reads the NCCL ranges of an export (`gpu_filter`: ` AND …` on the kernels, alias `k`, of
/// the GPU read). `None`: the export has no NCCL domain (nothing to say).
pub(super) fn read(path: &Path, conn: &Connection, s: &Schema, gpu_filter: &str) -> Option<Nccl> {
    if s.column(NVTX, "domainId").is_none() || s.column(NVTX, "eventType").is_none() {
        return None;
    }
    let (text, join) = nvtx_text(s)?;
    let domains: Vec<i64> = {
        let sql = format!(
            "SELECT DISTINCT n.domainId FROM {} AS n{join} WHERE n.eventType = 75 AND {text} = 'NCCL'",
            ident(NVTX)
        );
        let mut st = conn.prepare(&sql).ok()?;
        let mut rows = st.query([]).ok()?;
        let mut v = Vec::new();
        while let Ok(Some(r)) = rows.next() {
            v.extend(int(r, 0));
        }
        v
    };
    if domains.is_empty() {
        return None;
    }
    let p = path.display();
    let mut out = Nccl::default();
    if !columns_ok(s) {
        out.said.push(format!(
            "{p}: the export has NCCL's NVTX domain but not what its ranges' payloads are read \
             from ({NVTX}.binaryData, {SCHEMAS}, {ENTRIES}, the kernels' globalPid and the \
             launches' correlationId): NCCL kernels have no size (export with a recent Nsight \
             Systems, `nsys profile --trace=cuda,nvtx`)"
        ));
        return Some(out);
    }
    match sweep(conn, s, &domains, &text, &join, gpu_filter, &mut out) {
        Ok(c) => out.said.extend(counts_said(&p.to_string(), &c)),
        Err(e) => {
            out.by_kernel.clear();
            out.said.push(format!(
                "{p}: reading NCCL's NVTX ranges failed ({e}): NCCL kernels have no size"
            ));
        }
    }
    Some(out)
}

fn counts_said(p: &str, c: &Counts) -> Vec<String> {
    let mut said = vec![format!(
        "{p}: NCCL's NVTX ranges (domain NCCL): {} of {} NCCL kernels got their size and \
         communicator from their call's range (`In`/`Out msg nelems` as bytes, `dtype` Byte; \
         `Process Group Name` nccl:<communicator ID>); {} all-gather/reduce-scatter kernels \
         their communicator only (NCCL records one rank's share, not the message); {} launched \
         outside a collective's range (grouped collectives, launched in ncclGroupEnd) nothing",
        c.sized, c.kernels, c.share, c.outside
    )];
    if c.invalid > 0 {
        said.push(format!(
            "{p}: {} NCCL kernels' range payloads did not validate (the blob's header does not \
             name the range's domain and a schema of {SCHEMAS} with its payload size, the blob \
             is shorter, or the schema lacks the `{SIZE}` entry as size_t): not used, those \
             kernels have no size (the blob's layout is not documented by NVIDIA; this reader \
             follows a third party's)",
            c.invalid
        ));
    }
    said
}

/// The layouts of the NCCL domains' payload schemas.
fn layouts(conn: &Connection, list: &str) -> rusqlite::Result<HashMap<(i64, i64), Layout>> {
    let mut out = HashMap::new();
    let sql = format!(
        "SELECT domainId, schemaId, payloadSize FROM {} WHERE domainId IN ({list})",
        ident(SCHEMAS)
    );
    let mut st = conn.prepare(&sql)?;
    let mut rows = st.query([])?;
    while let Some(r) = rows.next()? {
        if let (Some(d), Some(id), Some(size)) = (int(r, 0), int(r, 1), int(r, 2)) {
            if let Ok(size) = u64::try_from(size) {
                let l = Layout {
                    size,
                    comm: None,
                    bytes: None,
                };
                out.insert((d, id), l);
            }
        }
    }
    let sql = format!(
        "SELECT domainId, schemaId, name, type, \"offset\" FROM {} WHERE domainId IN ({list})",
        ident(ENTRIES)
    );
    let mut st = conn.prepare(&sql)?;
    let mut rows = st.query([])?;
    while let Some(r) = rows.next()? {
        let (Some(d), Some(id), Some(ty), Some(off)) = (int(r, 0), int(r, 1), int(r, 3), int(r, 4))
        else {
            continue;
        };
        let name = super::rows::text(r, 2);
        let Some(l) = out.get_mut(&(d, id)) else {
            continue;
        };
        // An entry of 8 bytes inside the struct (size_t: 64-bit hosts).
        let off = u64::try_from(off)
            .ok()
            .filter(|o| o.saturating_add(8) <= l.size);
        match (&*name, ty) {
            (COMM, TYPE_UINT64) => l.comm = off,
            (SIZE, TYPE_SIZE) => l.bytes = off,
            _ => {}
        }
    }
    Ok(out)
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// A range's payload decoded, where it validates (see the module documentation).
fn decode(blob: &[u8], domain: i64, layouts: &HashMap<(i64, i64), Layout>) -> Option<Found> {
    let dom = u32_at(blob, 0)?;
    let schema = u32_at(blob, 8)?;
    let size = u64_at(blob, 16)?;
    if i64::from(dom) != domain {
        return None;
    }
    let l = layouts.get(&(domain, i64::from(schema)))?;
    let struct_len = usize::try_from(l.size).ok()?;
    if size != l.size || blob.len() < HEADER.checked_add(struct_len)? {
        return None;
    }
    let body = &blob[HEADER..HEADER + struct_len];
    let at = |o: u64| usize::try_from(o).ok().and_then(|o| u64_at(body, o));
    let bytes = at(l.bytes?)?;
    Some(Found {
        comm: l.comm.and_then(at),
        bytes: Some(bytes),
    })
}

/// The pre-pass: ranges and launches swept together, thread by thread.
fn sweep(
    conn: &Connection,
    s: &Schema,
    domains: &[i64],
    text: &str,
    join: &str,
    gpu_filter: &str,
    out: &mut Nccl,
) -> rusqlite::Result<Counts> {
    let list = domains
        .iter()
        .map(|d| d.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    let layouts = layouts(conn, &list)?;
    let ranges_sql = format!(
        "SELECT n.globalTid, n.start, n.\"end\", {text}, n.domainId, n.binaryData FROM {} AS n\
         {join} WHERE n.eventType = 59 AND n.domainId IN ({list}) AND n.\"end\" IS NOT NULL \
         AND n.globalTid IS NOT NULL ORDER BY n.globalTid, n.start",
        ident(NVTX)
    );
    let Some(launches_sql) = launches_sql(s, gpu_filter) else {
        return Ok(Counts::default());
    };
    let mut rst = conn.prepare(&ranges_sql)?;
    let mut lst = conn.prepare(&launches_sql)?;
    let mut launches = lst.query([])?;
    let mut open = Opened::new(rst.query([])?);
    let mut c = Counts::default();
    let mut seen: HashSet<(i64, i64)> = HashSet::new();
    while let Some(l) = launches.next()? {
        let (Some(tid), Some(t), Some(corr), Some(gpid)) =
            (int(l, 0), int(l, 1), int(l, 2), int(l, 3))
        else {
            continue;
        };
        if !seen.insert((gpid, corr)) {
            continue; // one launch per kernel
        }
        c.kernels += 1;
        let enclosing = open.innermost_at(tid, t, &layouts)?;
        if let Some(f) = c.take(enclosing) {
            out.by_kernel.insert((gpid, corr), f);
        }
    }
    Ok(c)
}

/// The query of the NCCL kernels' launches (runtime calls joined to their kernels, by thread
/// and start); `None` when the export names no kernel.
fn launches_sql(s: &Schema, gpu_filter: &str) -> Option<String> {
    let name_col = s.first_of(KERNEL, KERNEL_NAMES).unwrap_or("demangledName");
    let name = s.name_expr(KERNEL, "k", name_col, "s")?;
    Some(format!(
        "SELECT r.globalTid, r.start, r.correlationId, k.globalPid FROM {} AS r JOIN {} AS k \
         ON k.correlationId = r.correlationId AND k.globalPid = ((r.globalTid >> 24) << 24){} \
         WHERE {} LIKE 'nccl%' AND r.globalTid IS NOT NULL{gpu_filter} \
         ORDER BY r.globalTid, r.start",
        ident(RUNTIME),
        ident(KERNEL),
        name.join,
        name.expr
    ))
}

/// The NCCL ranges open on one thread as the launches go by in (thread, start) order.
struct Opened<'r> {
    ranges: rusqlite::Rows<'r>,
    /// The next range not yet opened: (thread, start, range).
    next: Option<(i64, i64, Open)>,
    done: bool,
    stack: Vec<Open>,
    thread: Option<i64>,
}

impl<'r> Opened<'r> {
    fn new(ranges: rusqlite::Rows<'r>) -> Self {
        Opened {
            ranges,
            next: None,
            done: false,
            stack: Vec::new(),
            thread: None,
        }
    }

    /// The innermost range of thread `tid` open at time `t` (the launches come in (thread,
    /// start) order): every range of the thread that starts by `t` is opened, those ended
    /// before it closed.
    fn innermost_at(
        &mut self,
        tid: i64,
        t: i64,
        layouts: &HashMap<(i64, i64), Layout>,
    ) -> rusqlite::Result<Option<&Open>> {
        if self.thread != Some(tid) {
            self.stack.clear();
            self.thread = Some(tid);
        }
        loop {
            if self.next.is_none() && !self.done {
                match self.ranges.next()? {
                    Some(r) => self.next = opened(r, layouts),
                    None => self.done = true,
                }
                if self.next.is_none() && !self.done {
                    continue; // a row without times
                }
            }
            match self.next.take() {
                Some((rt, rs, o)) if rt < tid || (rt == tid && rs <= t) => {
                    if rt == tid {
                        self.push(rs, o);
                    }
                }
                keep => {
                    self.next = keep;
                    break;
                }
            }
        }
        while self.stack.last().is_some_and(|top| top.end < t) {
            self.stack.pop();
        }
        Ok(self.stack.last())
    }

    /// A range starting at `start` opened: those it does not nest in are closed, and the
    /// outermost dropped beyond [`MAX_DEPTH`].
    fn push(&mut self, start: i64, o: Open) {
        while self.stack.last().is_some_and(|top| top.end < start) {
            self.stack.pop();
        }
        if self.stack.len() >= MAX_DEPTH {
            self.stack.remove(0);
        }
        self.stack.push(o);
    }
}

/// A range row read as (thread, start, range), its payload decoded for a collective's call;
/// `None` for a row without times.
fn opened(r: &Row<'_>, layouts: &HashMap<(i64, i64), Layout>) -> Option<(i64, i64, Open)> {
    let (tid, start, end) = (int(r, 0)?, int(r, 1)?, int(r, 2)?);
    let name = super::rows::text(r, 3);
    let op = op_kind(&name);
    let got = match (
        op,
        int(r, 4),
        r.get_ref(5).ok().and_then(|v| v.as_blob().ok()),
    ) {
        (Op::Other, ..) => None,
        (_, Some(d), Some(b)) => decode(b, d, layouts),
        _ => None,
    };
    Some((tid, start, Open { end, op, got }))
}

impl Counts {
    /// A kernel launched in `enclosing` (its innermost open NCCL range) counted; what it is
    /// given: the whole payload for a whole-message call, the communicator only for one
    /// rank's share, nothing outside a collective's range or with a payload not read.
    fn take(&mut self, enclosing: Option<&Open>) -> Option<Found> {
        match enclosing {
            Some(Open {
                op: Op::Whole | Op::Share,
                got: None,
                ..
            }) => {
                self.invalid += 1;
                None
            }
            Some(Open {
                op: Op::Whole,
                got: Some(f),
                ..
            }) => {
                self.sized += 1;
                Some(*f)
            }
            Some(Open {
                op: Op::Share,
                got: Some(f),
                ..
            }) => {
                self.share += 1;
                Some(Found { bytes: None, ..*f })
            }
            _ => {
                self.outside += 1;
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blob(dom: u32, schema: u32, size: u64, body: &[u8]) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend(dom.to_le_bytes());
        b.extend(0u32.to_le_bytes());
        b.extend(schema.to_le_bytes());
        b.extend(0u32.to_le_bytes());
        b.extend(size.to_le_bytes());
        b.extend((HEADER as u64 + size).to_le_bytes());
        b.extend(body);
        b
    }

    #[test]
    fn nccl_payloads_decode_only_where_they_validate() {
        let mut l = HashMap::new();
        l.insert(
            (7, 0x10),
            Layout {
                size: 24,
                comm: Some(0),
                bytes: Some(8),
            },
        );
        let mut body = Vec::new();
        body.extend(0xABCDu64.to_le_bytes());
        body.extend(4096u64.to_le_bytes());
        body.extend(0u64.to_le_bytes());
        let ok = blob(7, 0x10, 24, &body);
        assert_eq!(
            decode(&ok, 7, &l),
            Some(Found {
                comm: Some(0xABCD),
                bytes: Some(4096)
            })
        );
        // Wrong payload size, domain or schema; a short blob: not used.
        assert_eq!(decode(&blob(7, 0x10, 16, &body), 7, &l), None);
        assert_eq!(decode(&ok, 8, &l), None);
        assert_eq!(decode(&blob(7, 0x11, 24, &body), 7, &l), None);
        assert_eq!(decode(&ok[..ok.len() - 1], 7, &l), None);
        assert_eq!(decode(&ok[..10], 7, &l), None);
        // No size entry: not used.
        l.insert(
            (7, 0x10),
            Layout {
                size: 24,
                comm: Some(0),
                bytes: None,
            },
        );
        assert_eq!(decode(&ok, 7, &l), None);
        assert_eq!(op_kind("ncclAllGather"), Op::Share);
        assert_eq!(op_kind("ncclGroupEnd"), Op::Other);
    }
}
