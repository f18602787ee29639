//! Nsight Systems SQLite exports (`nsys export --type sqlite`) read as rank traces: each row
//! becomes the [`Event`] Kineto would have written for it, handed to the same callback as the
//! JSON reader's, so every consumer (analyze's collector above all) reads an export as it
//! reads a Kineto trace.
//!
//! | export table | event (`cat`, `name`, `pid`/`tid`, `args`) |
//! | --- | --- |
//! | `CUPTI_ACTIVITY_KIND_KERNEL` | `kernel`, the demangled name, device / stream, `device`, `stream`, `correlation`, `grid`, `block` |
//! | `CUPTI_ACTIVITY_KIND_MEMCPY` | `gpu_memcpy`, `Memcpy HtoD` …, device / stream, `device`, `stream`, `correlation`, `bytes` |
//! | `CUPTI_ACTIVITY_KIND_MEMSET` | `gpu_memset`, `Memset`, device / stream, as above |
//! | `CUPTI_ACTIVITY_KIND_RUNTIME` | `cuda_runtime`, the call without its `_v7000` suffix, pid / tid, `correlation` (the launch side of a kernel) |
//! | `NVTX_EVENTS` (push/pop and start/end ranges) | `user_annotation`, the range's text, pid / tid |
//!
//! An NCCL kernel launched inside NCCL's own NVTX range of its call also gets that call's size
//! (`In msg nelems`, `Out msg nelems`, `dtype` `Byte`) and communicator (`Process Group Name`
//! `nccl:<id>`), as Kineto gives them ([`nccl`]).
//!
//! Times: the export's nanoseconds from the session start, written as Kineto's relative `ts`
//! (µs, three decimals: exact); the session start (`TARGET_INFO_SESSION_START_TIME.utcEpochNs`)
//! is the header's `base_time_ns`, as Kineto's `baseTimeNanoseconds`. Without it the times stay
//! relative and the ranks are aligned as Kineto traces that lost their base are. The header
//! lists the GPUs (`TARGET_INFO_GPU`) as `deviceProperties`.
//!
//! For the readers that take every event (merge), also the processes' and threads' names and
//! the launch arrows a viewer draws ([`viewer`]). A report holding several GPUs, each used by
//! one process, is read one GPU at a time: a rank's path names its GPU (`node.sqlite#gpu3`,
//! [`devices`]), and only that GPU's rows and its process's are read (of a process driving
//! several GPUs, the runtime calls that launched this GPU's work and the NVTX ranges of the
//! threads that launched onto it, [`devices::Shared`]).
//!
//! Streamed ([`rows`]): each table is read through one prepared statement, row by row, in the export's
//! own order (the collector sorts what it keeps: no `ORDER BY`, so SQLite sorts nothing, but for
//! [`nccl`]'s pre-pass over NCCL's ranges and launches, by thread and start); names
//! come through a `LEFT JOIN` on `StringIds` (its primary key), never a table in memory. Only
//! the rows the consumer's [`Want`] takes are formatted. The columns are picked by name after
//! asking the export ([`schema`]); what cannot be read is refused, naming the missing table or
//! column.

pub(crate) mod devices;
pub(crate) mod export;
mod nccl;
mod rows;
pub(crate) mod schema;
mod scope;
mod viewer;

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::io::{self, Read};
use std::path::Path;

use rusqlite::{Connection, OpenFlags};

use super::damage::{Header, ReadReport};
use super::event::Event;
use super::open::open_regular;
use super::want::Want;
use rows::{int, push_str, text, Rows};
use schema::{ident, Schema, KNOWN_GOOD};

/// The first bytes of every SQLite 3 database.
const MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// Whether the file name says Nsight Systems export (`*.sqlite`, or one GPU of one:
/// [`devices::device_path`]).
pub(crate) fn is_nsys_name(name: &str) -> bool {
    name.ends_with(".sqlite")
        || devices::split_name(name).is_some_and(|(file, _)| file.ends_with(".sqlite"))
}

/// Whether `path` names an export (`*.sqlite`).
pub(crate) fn is_nsys_path(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(is_nsys_name)
}

fn invalid(path: &Path, msg: impl std::fmt::Display) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("{}: {msg}", path.display()),
    )
}

fn sql_err<'a>(path: &'a Path, what: &'a str) -> impl Fn(rusqlite::Error) -> io::Error + 'a {
    move |e| {
        invalid(
            path,
            format!("reading {what} of the Nsight Systems export failed: {e} ({KNOWN_GOOD})"),
        )
    }
}

/// Reads an export, handing `on_event` the events `want` takes (all with `None`).
///
/// `Err`: the file cannot be opened, is not an SQLite database, or lacks what the kernels are
/// read from (the message names the missing table or column and the releases known to work).
pub(crate) fn read_nsys(
    path: &Path,
    want: Option<Want>,
    mut on_event: impl FnMut(&Event<'_>),
) -> io::Result<ReadReport> {
    let (file, device) = devices::split_path(path);
    let (conn, schema, len) = open_export(&file)?;
    let select = match device {
        Some(d) => Some(devices::select(&conn, &schema, d).ok_or_else(|| {
            invalid(
                path,
                format!("no kernel of GPU {d} with its process (globalPid) in the export"),
            )
        })?),
        None => None,
    };
    let mut report = ReadReport::new(path, false);
    report.bytes = len;
    let mut r = Rows {
        path,
        conn: &conn,
        schema: &schema,
        want,
        buf: String::with_capacity(512),
        fields: Vec::with_capacity(16),
        devices_seen: BTreeSet::new(),
        defaulted: Vec::new(),
        viewer: want.is_none(),
        select,
        nccl: None,
    };
    let (header, version) = head(&file, &conn, &schema, device);
    let start = header.base_time_ns;
    report.header = header;
    report.devices = report.header.lists_devices();
    let mut said = vec![format!(
        "{}: an Nsight Systems SQLite export{}{}; times {}",
        path.display(),
        version.map(|v| format!(" ({v})")).unwrap_or_default(),
        r.select
            .as_ref()
            .map(|s| format!(
                ", GPU {} and its process {} (a report holding several GPUs, one rank each)",
                s.device,
                (s.global_pid >> 24) & 0xFF_FFFF
            ))
            .unwrap_or_default(),
        if start.is_some() {
            "from the session start (TARGET_INFO_SESSION_START_TIME.utcEpochNs)"
        } else {
            "relative to an unknown session start (no TARGET_INFO_SESSION_START_TIME): \
             aligned as traces without a base time are"
        }
    )];
    if let Some(s) = &r.select {
        if let Some(sh) = &s.shared {
            said.push(format!(
                "{}: {}",
                path.display(),
                sh.said(s.device, (s.global_pid >> 24) & 0xFF_FFFF)
            ));
        }
    }
    r.nccl = nccl::read(path, &conn, &schema, &r.gpu_filter(schema::KERNEL, "k"));
    if let Some(n) = &mut r.nccl {
        said.append(&mut n.said);
    }
    r.metadata(&mut report, &mut |e| on_event(e))?;
    r.runtime(&mut report, &mut on_event)?;
    r.nvtx(&mut report, &mut on_event)?;
    r.copies(&mut report, &mut on_event, false)?;
    r.copies(&mut report, &mut on_event, true)?;
    r.kernels(&mut report, &mut on_event)?;
    if r.devices_seen.len() > 1 {
        said.push(format!(
            "{}: kernels of {} GPUs (devices {}) read as one rank: a report is read as one \
             rank per GPU only when each GPU's kernels come from one process (a GPU shared by \
             processes cannot be split); to read each rank on its own, profile one report per rank (`nsys profile \
             -o NAME_%q{{RANK}}`)",
            path.display(),
            r.devices_seen.len(),
            r.devices_seen
                .iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if !r.defaulted.is_empty() {
        said.push(format!(
            "{}: columns missing from the export, read as absent: {}",
            path.display(),
            r.defaulted.join(", ")
        ));
    }
    report.said = said;
    Ok(report)
}

/// Opens an export read-only and reads its layout; refuses what is not an SQLite database or
/// lacks what the kernels are read from. With the file's size.
fn open_export(path: &Path) -> io::Result<(Connection, Schema, u64)> {
    let (mut file, len) = open_regular(path)?;
    let mut magic = [0u8; 16];
    if file.read_exact(&mut magic).is_err() || &magic != MAGIC {
        return Err(invalid(
            path,
            "not an SQLite database: a `.sqlite` rank file must be an Nsight Systems export \
             (`nsys export --type sqlite -o NAME NAME.nsys-rep`)",
        ));
    }
    drop(file);
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(sql_err(path, "the database"))?;
    let schema = Schema::read(&conn).map_err(sql_err(path, "the tables"))?;
    if let Some(why) = schema.refusal() {
        return Err(invalid(
            path,
            format!("cannot read this Nsight Systems export: {why} ({KNOWN_GOOD})"),
        ));
    }
    Ok((conn, schema, len))
}

/// The header of an export (its GPUs as `deviceProperties`, its session start as
/// `base_time_ns`), and its version in words.
fn head(
    path: &Path,
    conn: &Connection,
    schema: &Schema,
    device: Option<i64>,
) -> (Header, Option<String>) {
    let header = Header {
        object_form: true,
        base_time_ns: session_start(conn, schema),
        device_properties: device
            .and_then(|d| gpus(conn, schema, Some(d)))
            .or_else(|| gpus(conn, schema, None)),
        distributed_info: device.and_then(|_| world(path)),
        ..Header::default()
    };
    (header, version(conn, schema))
}

/// One GPU of a report read one rank per GPU: the report's GPUs are its world, as Kineto's
/// `distributedInfo` (`{"world_size": N}`, N the GPUs its kernels ran on) says it; several
/// reports of one profile are then matched each within itself, as DP replicas are
/// (`analyze::reduce::collectives::worlds`), not against each other's unrelated collectives.
fn world(path: &Path) -> Option<String> {
    let n = devices::gpu_count(path)?;
    Some(format!("{{\"world_size\": {n}}}"))
}

/// [`super::reader::read_head`] for an export: its header, without reading its rows; `Err`
/// as [`read_nsys`]'s.
pub(crate) fn read_head(path: &Path) -> io::Result<Option<Header>> {
    let (file, device) = devices::split_path(path);
    let (conn, schema, _) = open_export(&file)?;
    Ok(Some(head(&file, &conn, &schema, device).0))
}

/// The export's versions as `META_DATA_EXPORT` names them (`EXPORT_PRODUCT_VERSION 2024.6.2.25,
/// EXPORT_SCHEMA_VERSION 3.16.1`), without their parts (`EXPORT_SCHEMA_VERSION_MAJOR`, …).
fn version(conn: &Connection, s: &Schema) -> Option<String> {
    if s.column(schema::META, "name").is_none() || s.column(schema::META, "value").is_none() {
        return None;
    }
    let mut st = conn
        .prepare(&format!(
            "SELECT name, value FROM {} WHERE name LIKE '%VERSION%' \
             AND name NOT LIKE '%VERSION\\_%' ESCAPE '\\'",
            ident(schema::META)
        ))
        .ok()?;
    let mut rows = st.query([]).ok()?;
    let mut out = Vec::new();
    while let Ok(Some(r)) = rows.next() {
        out.push(format!("{} {}", text(r, 0), text(r, 1)));
    }
    (!out.is_empty()).then(|| out.join(", "))
}

/// `TARGET_INFO_SESSION_START_TIME.utcEpochNs`.
pub(super) fn session_start(conn: &Connection, s: &Schema) -> Option<i64> {
    s.column(schema::SESSION_START, "utcEpochNs")?;
    let sql = format!(
        "SELECT utcEpochNs FROM {} LIMIT 1",
        ident(schema::SESSION_START)
    );
    conn.query_row(&sql, [], |r| Ok(int(r, 0)))
        .ok()
        .flatten()
        .filter(|&v| v > 0)
}

/// `TARGET_INFO_GPU` as Kineto's `deviceProperties` (`[{"id": …, "name": …}]`): all, or
/// only GPU `device`.
fn gpus(conn: &Connection, s: &Schema, device: Option<i64>) -> Option<String> {
    s.column(schema::GPUS, "name")?;
    let id = s.first_of(schema::GPUS, &["cuDevice", "id"])?;
    let only = device
        .map(|d| format!(" WHERE {} = {d}", ident(id)))
        .unwrap_or_default();
    let sql = format!(
        "SELECT {}, name FROM {}{only}",
        ident(id),
        ident(schema::GPUS)
    );
    let mut st = conn.prepare(&sql).ok()?;
    let mut rows = st.query([]).ok()?;
    let mut out = String::from("[");
    let mut n = 0;
    while let Ok(Some(r)) = rows.next() {
        if n > 0 {
            out.push_str(", ");
        }
        let _ = write!(out, "{{\"id\": {}, \"name\": ", int(r, 0).unwrap_or(n));
        push_str(&mut out, &text(r, 1));
        out.push('}');
        n += 1;
    }
    out.push(']');
    (n > 0).then_some(out)
}
