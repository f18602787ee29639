//! Each export table's rows as the events Kineto would have written for them (`kernel`,
//! `gpu_memcpy`/`gpu_memset`, `cuda_runtime`, `user_annotation`), one prepared statement per
//! table, row by row; [`super::read_nsys`] runs them in turn.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::io;
use std::path::Path;

use rusqlite::types::ValueRef;
use rusqlite::{Connection, Row};

use super::schema::{self, ident, Schema, KERNEL, KERNEL_NAMES};
use super::scope::{Nccl, Select};
use super::sql_err;
use crate::trace::read::damage::ReadReport;
use crate::trace::read::event::{scan_event, Event};
use crate::trace::read::json::Field;
use crate::trace::read::want::{Pick, Want};

/// What reading the rows needs.
pub(super) struct Rows<'a> {
    pub(super) path: &'a Path,
    pub(super) conn: &'a Connection,
    pub(super) schema: &'a Schema,
    pub(super) want: Option<Want>,
    /// The event being written (reused).
    pub(super) buf: String,
    pub(super) fields: Vec<Field>,
    /// The `deviceId`s of the kernels.
    pub(super) devices_seen: BTreeSet<i64>,
    /// `TABLE.column` read as absent.
    pub(super) defaulted: Vec<String>,
    /// Whether to write what a viewer needs besides the rows: names and flow arrows
    /// ([`super::viewer`]); for the readers that take every event.
    pub(super) viewer: bool,
    /// The one GPU of a report holding several read as this rank ([`super::devices`]).
    pub(super) select: Option<Select>,
    /// The NCCL kernels' sizes and communicators from NCCL's NVTX ranges ([`super::nccl`]).
    pub(super) nccl: Option<Nccl>,
}

/// A cell as an integer (`None`: NULL or not a number).
pub(super) fn int(row: &Row<'_>, i: usize) -> Option<i64> {
    match row.get_ref(i).ok()? {
        ValueRef::Integer(v) => Some(v),
        ValueRef::Real(v) if v.is_finite() => Some(v as i64),
        ValueRef::Text(t) => std::str::from_utf8(t).ok()?.trim().parse().ok(),
        _ => None,
    }
}

/// A cell as text (`""`: NULL).
pub(super) fn text<'r>(row: &'r Row<'_>, i: usize) -> std::borrow::Cow<'r, str> {
    match row.get_ref(i) {
        Ok(ValueRef::Text(t)) => String::from_utf8_lossy(t),
        Ok(ValueRef::Integer(v)) => v.to_string().into(),
        _ => "".into(),
    }
}

/// Nanoseconds as Kineto's microseconds with three decimals (exact).
pub(super) fn push_us(buf: &mut String, ns: i64) {
    let sign = if ns < 0 { "-" } else { "" };
    let a = ns.unsigned_abs();
    let _ = write!(buf, "{sign}{}.{:03}", a / 1000, a % 1000);
}

/// A JSON string (quoted, escaped).
pub(super) fn push_str(buf: &mut String, s: &str) {
    buf.push('"');
    for c in s.chars() {
        match c {
            '"' => buf.push_str("\\\""),
            '\\' => buf.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(buf, "\\u{:04x}", c as u32);
            }
            c => buf.push(c),
        }
    }
    buf.push('"');
}

/// Appends Kineto's flow event: the start (`s`, on the launch) or the finish (`f`, on the GPU
/// work, bound to the slice it falls in) of arrow `corr`.
pub(super) fn push_flow(buf: &mut String, finish: bool, corr: i64, pid: i64, tid: i64, ns: i64) {
    let ph = if finish { 'f' } else { 's' };
    let _ = write!(
        buf,
        "{{\"ph\": \"{ph}\", \"id\": {corr}, \"pid\": {pid}, \"tid\": {tid}, \"ts\": "
    );
    push_us(buf, ns);
    buf.push_str(", \"cat\": \"ac2g\", \"name\": \"ac2g\"");
    if finish {
        buf.push_str(", \"bp\": \"e\"");
    }
    buf.push('}');
}

/// `cudaLaunchKernel_v7000` → `cudaLaunchKernel`: Kineto's names carry no API version.
fn runtime_name(name: &str) -> &str {
    match name.rsplit_once("_v") {
        Some((base, v)) if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) => base,
        _ => name,
    }
}

/// CUPTI's `CUpti_ActivityMemcpyKind`, in Kineto's words.
fn copy_kind(k: Option<i64>) -> &'static str {
    match k {
        Some(1) => "HtoD",
        Some(2) => "DtoH",
        Some(3) => "HtoA",
        Some(4) => "AtoH",
        Some(5) => "AtoA",
        Some(6) => "AtoD",
        Some(7) => "DtoA",
        Some(8) => "DtoD",
        Some(9) => "HtoH",
        Some(10) => "PtoP",
        _ => "Unknown",
    }
}

/// A serialized `globalTid`/`globalPid` as (pid, tid): NVIDIA's documented packing
/// (`(globalTid >> 24) & 0xFFFFFF` is the pid, `globalTid & 0xFFFFFF` the tid).
pub(super) fn pid_tid(g: i64) -> (i64, i64) {
    ((g >> 24) & 0xFF_FFFF, g & 0xFF_FFFF)
}

impl Rows<'_> {
    /// The column `c` of `alias` (table `t`), or `dflt` (noted) when the export lacks it.
    fn col_or(&mut self, t: &str, alias: &str, c: &str, dflt: &str) -> String {
        if self.schema.column(t, c).is_some() {
            format!("{alias}.{}", ident(c))
        } else {
            self.defaulted.push(format!("{t}.{c}"));
            dflt.to_string()
        }
    }

    /// Whether the consumer takes a complete event of this `cat` and `name`.
    fn wanted(&self, report: &mut ReadReport, cat: &str, name: &str) -> bool {
        match self.want {
            None => true,
            Some(w) => match w.pick(b'X', cat.as_bytes(), name.as_bytes(), report.devices) {
                // No text to search here: handed over, the consumer looks the key up.
                Pick::Keep | Pick::Needs(_) => true,
                Pick::Skip => false,
                Pick::Narrowed => {
                    report.narrowed += 1;
                    false
                }
            },
        }
    }

    /// Scans `self.buf` as an event and hands it over.
    fn hand(&mut self, report: &mut ReadReport, on_event: &mut impl FnMut(&Event<'_>)) {
        let offset = report.events;
        match scan_event(self.buf.as_bytes(), &mut self.fields) {
            Ok(ev) => {
                let ev = Event { offset, ..ev };
                on_event(&ev);
            }
            // Cannot happen for what `push_*` write; counted as the JSON reader would.
            Err(e) => report.reject(offset, e.msg),
        }
    }

    /// Runs `sql` and calls `each` per row.
    fn each_row(
        &mut self,
        what: &str,
        sql: &str,
        report: &mut ReadReport,
        on_event: &mut impl FnMut(&Event<'_>),
        mut each: impl FnMut(&mut Self, &Row<'_>, &mut ReadReport, &mut dyn FnMut(&Event<'_>)),
    ) -> io::Result<()> {
        let path = self.path;
        let conn = self.conn;
        let mut st = conn.prepare(sql).map_err(sql_err(path, what))?;
        let mut rows = st.query([]).map_err(sql_err(path, what))?;
        while let Some(row) = rows.next().map_err(sql_err(path, what))? {
            each(self, row, report, on_event);
            report.events += 1;
        }
        Ok(())
    }

    pub(super) fn kernels(
        &mut self,
        report: &mut ReadReport,
        on_event: &mut impl FnMut(&Event<'_>),
    ) -> io::Result<()> {
        let t = KERNEL;
        let s = self.schema;
        let name_col = s.first_of(t, KERNEL_NAMES).unwrap_or("demangledName");
        let Some(name) = s.name_expr(t, "k", name_col, "s") else {
            return Ok(()); // refused before ([`Schema::refusal`])
        };
        let dev = self.col_or(t, "k", "deviceId", "0");
        let stream = self.col_or(t, "k", "streamId", "0");
        let corr = self.col_or(t, "k", "correlationId", "NULL");
        let dims = ["gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ"];
        let has_dims = dims.iter().all(|c| s.column(t, c).is_some());
        let dims_sql = if has_dims {
            dims.iter()
                .map(|c| format!(", k.{}", ident(c)))
                .collect::<String>()
        } else {
            String::new()
        };
        let flow = self.work_flow_col(t, "k");
        // The kernel's process, to look up what NCCL's ranges gave it.
        let nccl = self.nccl.as_ref().is_some_and(|n| !n.by_kernel.is_empty())
            && s.column(t, "globalPid").is_some();
        let gpid_at = if has_dims { 13 } else { 7 };
        let gpid_sql = if nccl { ", k.\"globalPid\"" } else { "" };
        let sql = format!(
            "SELECT k.start, k.\"end\", {dev}, {stream}, {corr}, {}, {flow}{dims_sql}{gpid_sql} \
             FROM {} AS k{} WHERE 1{}",
            name.expr,
            ident(t),
            name.join,
            self.gpu_filter(t, "k")
        );
        self.each_row(
            "kernels",
            &sql,
            report,
            on_event,
            |me, row, report, on_event| {
                let (Some(start), Some(end)) = (int(row, 0), int(row, 1)) else {
                    return;
                };
                let name = text(row, 5);
                if !me.wanted(report, "kernel", &name) {
                    return;
                }
                let dev = int(row, 2).unwrap_or(0);
                let stream = int(row, 3).unwrap_or(0);
                me.devices_seen.insert(dev);
                let b = &mut me.buf;
                b.clear();
                b.push_str("{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": ");
                push_str(b, &name);
                let _ = write!(b, ", \"pid\": {dev}, \"tid\": {stream}, \"ts\": ");
                push_us(b, start);
                b.push_str(", \"dur\": ");
                push_us(b, end.saturating_sub(start).max(0));
                let _ = write!(b, ", \"args\": {{\"device\": {dev}, \"stream\": {stream}");
                if let Some(c) = int(row, 4) {
                    let _ = write!(b, ", \"correlation\": {c}");
                }
                if has_dims {
                    let d: Vec<i64> = (7..13).map(|i| int(row, i).unwrap_or(0)).collect();
                    let _ = write!(
                        b,
                        ", \"grid\": [{}, {}, {}], \"block\": [{}, {}, {}]",
                        d[0], d[1], d[2], d[3], d[4], d[5]
                    );
                }
                if nccl {
                    me.push_nccl(row, gpid_at);
                }
                me.buf.push_str("}}");
                me.hand_dyn(report, on_event);
                me.flow_end(row, 6, 4, (dev, stream, start), report, on_event);
            },
        )
    }

    /// The args NCCL's range gave this kernel (column 4 its `correlationId`, `gpid_at` its
    /// `globalPid`): its size as `Byte` elements (the element count is the size in bytes) and
    /// its communicator as the process group.
    fn push_nccl(&mut self, row: &Row<'_>, gpid_at: usize) {
        let found = self.nccl.as_ref().and_then(|n| {
            n.by_kernel
                .get(&(int(row, gpid_at)?, int(row, 4)?))
                .copied()
        });
        let Some(f) = found else { return };
        let b = &mut self.buf;
        if let Some(n) = f.bytes {
            let _ = write!(
                b,
                ", \"In msg nelems\": {n}, \"Out msg nelems\": {n}, \"dtype\": \"Byte\""
            );
        }
        if let Some(c) = f.comm {
            let _ = write!(b, ", \"Process Group Name\": \"nccl:{c:x}\"");
        }
    }

    /// The finish of the arrow from this GPU row's launch, when column `flag` says the launch
    /// is read (`corr`: the correlation's column; `at`: device, stream, start).
    fn flow_end(
        &mut self,
        row: &Row<'_>,
        flag: usize,
        corr: usize,
        at: (i64, i64, i64),
        report: &mut ReadReport,
        on_event: &mut dyn FnMut(&Event<'_>),
    ) {
        if let (Some(1), Some(c)) = (int(row, flag), int(row, corr)) {
            self.buf.clear();
            push_flow(&mut self.buf, true, c, at.0, at.1, at.2);
            self.hand_dyn(report, on_event);
        }
    }

    /// Memcpy (`set` false) or memset rows.
    pub(super) fn copies(
        &mut self,
        report: &mut ReadReport,
        on_event: &mut impl FnMut(&Event<'_>),
        set: bool,
    ) -> io::Result<()> {
        let t = if set { schema::MEMSET } else { schema::MEMCPY };
        let s = self.schema;
        if s.column(t, "start").is_none() || s.column(t, "end").is_none() {
            return Ok(()); // no copies traced
        }
        let dev = self.col_or(t, "m", "deviceId", "0");
        let stream = self.col_or(t, "m", "streamId", "0");
        let corr = self.col_or(t, "m", "correlationId", "NULL");
        let bytes = self.col_or(t, "m", "bytes", "NULL");
        let kind = if set {
            "NULL".to_string()
        } else {
            self.col_or(t, "m", "copyKind", "NULL")
        };
        let flow = self.work_flow_col(t, "m");
        let sql = format!(
            "SELECT m.start, m.\"end\", {dev}, {stream}, {corr}, {bytes}, {kind}, {flow} FROM {} \
             AS m WHERE 1{}",
            ident(t),
            self.gpu_filter(t, "m")
        );
        let cat = if set { "gpu_memset" } else { "gpu_memcpy" };
        self.each_row(cat, &sql, report, on_event, |me, row, report, on_event| {
            let (Some(start), Some(end)) = (int(row, 0), int(row, 1)) else {
                return;
            };
            let name = if set {
                "Memset (Device)".to_string()
            } else {
                format!("Memcpy {}", copy_kind(int(row, 6)))
            };
            if !me.wanted(report, cat, &name) {
                return;
            }
            let dev = int(row, 2).unwrap_or(0);
            let stream = int(row, 3).unwrap_or(0);
            let b = &mut me.buf;
            b.clear();
            let _ = write!(b, "{{\"ph\": \"X\", \"cat\": \"{cat}\", \"name\": ");
            push_str(b, &name);
            let _ = write!(b, ", \"pid\": {dev}, \"tid\": {stream}, \"ts\": ");
            push_us(b, start);
            b.push_str(", \"dur\": ");
            push_us(b, end.saturating_sub(start).max(0));
            let _ = write!(b, ", \"args\": {{\"device\": {dev}, \"stream\": {stream}");
            if let Some(c) = int(row, 4) {
                let _ = write!(b, ", \"correlation\": {c}");
            }
            if let Some(n) = int(row, 5) {
                let _ = write!(b, ", \"bytes\": {n}");
            }
            b.push_str("}}");
            me.hand_dyn(report, on_event);
            me.flow_end(row, 7, 4, (dev, stream, start), report, on_event);
        })
    }

    /// CUDA runtime calls: the launch side of the kernels (by `correlationId`).
    pub(super) fn runtime(
        &mut self,
        report: &mut ReadReport,
        on_event: &mut impl FnMut(&Event<'_>),
    ) -> io::Result<()> {
        let t = schema::RUNTIME;
        let s = self.schema;
        if s.column(t, "start").is_none() || s.column(t, "end").is_none() {
            self.defaulted.push(format!(
                "{t} (no launches: kernels go to the step they ran in, not the one that \
                 launched them)"
            ));
            return Ok(());
        }
        let Some(name_col) = s.first_of(t, &["nameId", "name"]) else {
            self.defaulted.push(format!("{t}.nameId"));
            return Ok(());
        };
        let Some(name) = s.name_expr(t, "r", name_col, "s") else {
            self.defaulted
                .push(format!("{t}.nameId (no {})", schema::STRINGS));
            return Ok(());
        };
        let corr = self.col_or(t, "r", "correlationId", "NULL");
        let tid = self.col_or(t, "r", "globalTid", "0");
        let flow = self.launch_flow_col();
        let sql = format!(
            "SELECT r.start, r.\"end\", {corr}, {tid}, {}, {flow} FROM {} AS r{} WHERE 1{}",
            name.expr,
            ident(t),
            name.join,
            self.host_filter(t, "r")
        );
        self.each_row(
            "runtime calls",
            &sql,
            report,
            on_event,
            |me, row, report, on_event| {
                let (Some(start), Some(end)) = (int(row, 0), int(row, 1)) else {
                    return;
                };
                let full = text(row, 4);
                let name = runtime_name(&full);
                if !me.wanted(report, "cuda_runtime", name) {
                    return;
                }
                let (pid, tid) = pid_tid(int(row, 3).unwrap_or(0));
                let b = &mut me.buf;
                b.clear();
                b.push_str("{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": ");
                push_str(b, name);
                let _ = write!(b, ", \"pid\": {pid}, \"tid\": {tid}, \"ts\": ");
                push_us(b, start);
                b.push_str(", \"dur\": ");
                push_us(b, end.saturating_sub(start).max(0));
                b.push_str(", \"args\": {");
                if let Some(c) = int(row, 2) {
                    let _ = write!(b, "\"correlation\": {c}");
                }
                b.push_str("}}");
                me.hand_dyn(report, on_event);
                if let (Some(1), Some(c)) = (int(row, 5), int(row, 2)) {
                    me.buf.clear();
                    push_flow(&mut me.buf, false, c, pid, tid, start);
                    me.hand_dyn(report, on_event);
                }
            },
        )
    }

    /// NVTX push/pop and start/end ranges, as user annotations.
    pub(super) fn nvtx(
        &mut self,
        report: &mut ReadReport,
        on_event: &mut impl FnMut(&Event<'_>),
    ) -> io::Result<()> {
        let t = schema::NVTX;
        let s = self.schema;
        if s.column(t, "start").is_none() || s.column(t, "end").is_none() {
            return Ok(()); // no NVTX traced
        }
        let inline = s.column(t, "text").is_some();
        let by_id = s.column(t, "textId").is_some() && s.strings();
        let (name, join) = match (inline, by_id) {
            (true, true) => (
                "COALESCE(n.text, s.value)".to_string(),
                format!(
                    " LEFT JOIN {} AS s ON s.id = n.textId",
                    ident(schema::STRINGS)
                ),
            ),
            (true, false) => ("n.text".to_string(), String::new()),
            (false, true) => (
                "s.value".to_string(),
                format!(
                    " LEFT JOIN {} AS s ON s.id = n.textId",
                    ident(schema::STRINGS)
                ),
            ),
            (false, false) => {
                self.defaulted.push(format!("{t}.text and {t}.textId"));
                return Ok(());
            }
        };
        let tid = self.col_or(t, "n", "globalTid", "0");
        // 59: NvtxPushPopRange, 60: NvtxStartEndRange (`ENUM_NSYS_EVENT_TYPE`); marks have
        // no end.
        let ranges = if s.column(t, "eventType").is_some() {
            " AND n.eventType IN (59, 60)"
        } else {
            ""
        };
        let sql = format!(
            "SELECT n.start, n.\"end\", {tid}, {name} FROM {} AS n{join} \
             WHERE n.\"end\" IS NOT NULL AND n.\"end\" >= n.start{ranges}{}",
            ident(t),
            self.host_filter(t, "n")
        );
        self.each_row(
            "NVTX ranges",
            &sql,
            report,
            on_event,
            |me, row, report, on_event| {
                let (Some(start), Some(end)) = (int(row, 0), int(row, 1)) else {
                    return;
                };
                let name = text(row, 3);
                if !me.wanted(report, "user_annotation", &name) {
                    return;
                }
                let (pid, tid) = pid_tid(int(row, 2).unwrap_or(0));
                let b = &mut me.buf;
                b.clear();
                b.push_str("{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": ");
                push_str(b, &name);
                let _ = write!(b, ", \"pid\": {pid}, \"tid\": {tid}, \"ts\": ");
                push_us(b, start);
                b.push_str(", \"dur\": ");
                push_us(b, end - start);
                b.push('}');
                me.hand_dyn(report, on_event);
            },
        )
    }

    pub(super) fn hand_dyn(
        &mut self,
        report: &mut ReadReport,
        on_event: &mut dyn FnMut(&Event<'_>),
    ) {
        self.hand(report, &mut |e| on_event(e));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_as_kineto() {
        let mut b = String::new();
        push_us(&mut b, 1_234_567);
        b.push(' ');
        push_us(&mut b, 5);
        b.push(' ');
        push_us(&mut b, -1_500);
        assert_eq!(b, "1234.567 0.005 -1.500");
        let mut s = String::new();
        push_str(&mut s, "a\"b\\c\u{1}");
        assert_eq!(s, r#""a\"b\\c\u0001""#);
        assert_eq!(runtime_name("cudaLaunchKernel_v7000"), "cudaLaunchKernel");
        assert_eq!(runtime_name("cudaMemcpyAsync_v3020"), "cudaMemcpyAsync");
        assert_eq!(runtime_name("my_vfunc"), "my_vfunc");
        assert_eq!(runtime_name("cuda_v"), "cuda_v");
        assert_eq!(pid_tid((7 << 24) | 42), (7, 42));
        assert_eq!(copy_kind(Some(1)), "HtoD");
    }
}
