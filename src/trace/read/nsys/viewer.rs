//! What a trace viewer needs of an export beyond its rows, written as Kineto writes it, for the
//! readers that take every event (merge, `ls`; a [`crate::trace::read::want::Want`] reader such
//! as analyze gets none of it):
//!
//! - the processes' and threads' names: per GPU a process (pid = the device, as Kineto's)
//!   named and labelled `GPU N`, its streams named `stream N`; per host process its name
//!   (`PROCESSES.name`) labelled `CPU`, its threads `thread TID (NAME)` (`ThreadNames`), with
//!   `process_sort_index`/`thread_sort_index` metadata;
//! - the flow arrows from each launch to what it launched (`cat` `ac2g`, `id` the
//!   `correlationId`): an `s` on the runtime call, an `f` bound to the enclosing slice
//!   (`bp` `e`) on the kernel, memcpy or memset. Each end is written from its own row: a row
//!   is given its end only when the other table holds the other end (an `IN` subquery, which
//!   SQLite answers from one index it builds, on disk when large), so every arrow has both
//!   ends and no table is held in memory here.
//!
//! The names come from `SELECT DISTINCT` over the tables read: one entry per device, stream
//! and thread, never per row.

use std::fmt::Write as _;
use std::io;

use super::rows::{int, push_str, text, Rows};
use super::schema::{self, ident, KERNEL, MEMCPY, MEMSET, RUNTIME};
use crate::trace::read::damage::ReadReport;
use crate::trace::read::event::Event;

/// The tables of GPU work a launch leads to.
const GPU_TABLES: [&str; 3] = [KERNEL, MEMCPY, MEMSET];

impl Rows<'_> {
    /// Whether the runtime calls are read (the launch side of the arrows).
    pub(super) fn runtime_read(&self) -> bool {
        let s = self.schema;
        let t = RUNTIME;
        s.column(t, "start").is_some()
            && s.column(t, "end").is_some()
            && s.first_of(t, &["nameId", "name"])
                .is_some_and(|c| s.name_expr(t, "r", c, "s").is_some())
    }

    /// A GPU table whose rows are read and carry a correlation.
    fn gpu_correlated(&self, t: &str) -> bool {
        let s = self.schema;
        s.column(t, "start").is_some()
            && s.column(t, "end").is_some()
            && s.column(t, "correlationId").is_some()
    }

    /// For a runtime row (alias `r`): the SQL of a column true when some kernel, memcpy or
    /// memset read has its `correlationId` (the row gets an arrow's start), or `NULL`.
    pub(super) fn launch_flow_col(&self) -> String {
        let parts: Vec<String> = GPU_TABLES
            .iter()
            .filter(|t| self.gpu_correlated(t))
            .map(|t| {
                format!(
                    "SELECT g.correlationId FROM {} AS g WHERE g.start IS NOT NULL AND \
                     g.\"end\" IS NOT NULL AND g.correlationId IS NOT NULL{}",
                    ident(t),
                    self.gpu_filter(t, "g")
                )
            })
            .collect();
        if !self.viewer
            || parts.is_empty()
            || self.schema.column(RUNTIME, "correlationId").is_none()
        {
            return "NULL".into();
        }
        format!("(r.correlationId IN ({}))", parts.join(" UNION ALL "))
    }

    /// For a row of GPU table `t` (alias `alias`): the SQL of a column true when a runtime call
    /// read has its `correlationId` (the row gets an arrow's finish), or `NULL`.
    pub(super) fn work_flow_col(&self, t: &str, alias: &str) -> String {
        if !self.viewer
            || !self.gpu_correlated(t)
            || !self.runtime_read()
            || self.schema.column(RUNTIME, "correlationId").is_none()
        {
            return "NULL".into();
        }
        format!(
            "({alias}.correlationId IN (SELECT h.correlationId FROM {} AS h WHERE h.start IS \
             NOT NULL AND h.\"end\" IS NOT NULL AND h.correlationId IS NOT NULL{}))",
            ident(RUNTIME),
            self.host_filter(RUNTIME, "h")
        )
    }

    /// Writes one metadata event (`ph` `M`) and hands it over.
    fn meta(
        &mut self,
        report: &mut ReadReport,
        on_event: &mut dyn FnMut(&Event<'_>),
        name: &str,
        pid: i64,
        tid: i64,
        arg: (&str, Result<&str, i64>),
    ) {
        let b = &mut self.buf;
        b.clear();
        let _ = write!(
            b,
            "{{\"name\": \"{name}\", \"ph\": \"M\", \"pid\": {pid}, \"tid\": {tid}, \"args\": {{\"{}\": ",
            arg.0
        );
        match arg.1 {
            Ok(s) => push_str(b, s),
            Err(n) => {
                let _ = write!(b, "{n}");
            }
        }
        b.push_str("}}");
        self.hand_dyn(report, on_event);
    }

    /// The processes' and threads' names and sort indices (see the module's words).
    pub(super) fn metadata(
        &mut self,
        report: &mut ReadReport,
        on_event: &mut dyn FnMut(&Event<'_>),
    ) -> io::Result<()> {
        if !self.viewer {
            return Ok(());
        }
        let s = self.schema;
        let parts: Vec<String> = GPU_TABLES
            .iter()
            .filter(|t| s.column(t, "start").is_some() && s.column(t, "end").is_some())
            .map(|t| {
                let col = |c: &str| {
                    if s.column(t, c).is_some() {
                        format!("g.{}", ident(c))
                    } else {
                        "0".into()
                    }
                };
                format!(
                    "SELECT DISTINCT {}, {} FROM {} AS g WHERE 1{}",
                    col("deviceId"),
                    col("streamId"),
                    ident(t),
                    self.gpu_filter(t, "g")
                )
            })
            .collect();
        let sql = format!("{} ORDER BY 1, 2", parts.join(" UNION "));
        let mut streams: Vec<(i64, i64)> = Vec::new();
        self.query("the GPUs' streams", &sql, |row| {
            streams.push((int(row, 0).unwrap_or(0), int(row, 1).unwrap_or(0)));
        })?;
        let mut last = None;
        for (dev, stream) in streams {
            if last != Some(dev) {
                let label = format!("GPU {dev}");
                self.meta(
                    report,
                    on_event,
                    "process_name",
                    dev,
                    0,
                    ("name", Ok(&label)),
                );
                self.meta(
                    report,
                    on_event,
                    "process_labels",
                    dev,
                    0,
                    ("labels", Ok(&label)),
                );
                self.meta(
                    report,
                    on_event,
                    "process_sort_index",
                    dev,
                    0,
                    ("sort_index", Err(dev)),
                );
                last = Some(dev);
            }
            let name = format!("stream {stream}");
            self.meta(
                report,
                on_event,
                "thread_name",
                dev,
                stream,
                ("name", Ok(&name)),
            );
            self.meta(
                report,
                on_event,
                "thread_sort_index",
                dev,
                stream,
                ("sort_index", Err(stream)),
            );
        }
        self.host_metadata(report, on_event)
    }

    /// The host processes and threads of the runtime calls and NVTX ranges read.
    fn host_metadata(
        &mut self,
        report: &mut ReadReport,
        on_event: &mut dyn FnMut(&Event<'_>),
    ) -> io::Result<()> {
        let s = self.schema;
        let mut parts = Vec::new();
        if self.runtime_read() && s.column(RUNTIME, "globalTid").is_some() {
            parts.push(format!(
                "SELECT DISTINCT h.globalTid AS g FROM {} AS h WHERE 1{}",
                ident(RUNTIME),
                self.host_filter(RUNTIME, "h")
            ));
        }
        let t = schema::NVTX;
        if s.column(t, "start").is_some()
            && s.column(t, "end").is_some()
            && s.column(t, "globalTid").is_some()
        {
            parts.push(format!(
                "SELECT DISTINCT h.globalTid AS g FROM {} AS h WHERE h.\"end\" IS NOT NULL{}",
                ident(t),
                self.host_filter(t, "h")
            ));
        }
        if parts.is_empty() {
            return Ok(());
        }
        let thread_name = if s.column("ThreadNames", "globalTid").is_some()
            && s.column("ThreadNames", "nameId").is_some()
            && s.strings()
        {
            "(SELECT v.value FROM ThreadNames AS n JOIN StringIds AS v ON v.id = n.nameId \
             WHERE n.globalTid = t.g LIMIT 1)"
        } else {
            "NULL"
        };
        let process_name = if s.column("PROCESSES", "globalPid").is_some()
            && s.column("PROCESSES", "name").is_some()
        {
            "(SELECT p.name FROM PROCESSES AS p WHERE p.globalPid = ((t.g >> 24) << 24) LIMIT 1)"
        } else {
            "NULL"
        };
        let sql = format!(
            "SELECT t.g, {thread_name}, {process_name} FROM ({}) AS t WHERE t.g IS NOT NULL \
             ORDER BY 1",
            parts.join(" UNION ")
        );
        let mut threads: Vec<(i64, String, String)> = Vec::new();
        self.query("the host threads", &sql, |row| {
            if let Some(g) = int(row, 0) {
                threads.push((g, text(row, 1).into_owned(), text(row, 2).into_owned()));
            }
        })?;
        let mut last = None;
        for (g, tname, pname) in threads {
            let (pid, tid) = super::rows::pid_tid(g);
            if last != Some(pid) {
                let name = if pname.is_empty() {
                    format!("process {pid}")
                } else {
                    pname
                };
                self.meta(
                    report,
                    on_event,
                    "process_name",
                    pid,
                    0,
                    ("name", Ok(&name)),
                );
                self.meta(
                    report,
                    on_event,
                    "process_labels",
                    pid,
                    0,
                    ("labels", Ok("CPU")),
                );
                self.meta(
                    report,
                    on_event,
                    "process_sort_index",
                    pid,
                    0,
                    ("sort_index", Err(pid)),
                );
                last = Some(pid);
            }
            let name = if tname.is_empty() {
                format!("thread {tid}")
            } else {
                format!("thread {tid} ({tname})")
            };
            self.meta(
                report,
                on_event,
                "thread_name",
                pid,
                tid,
                ("name", Ok(&name)),
            );
            self.meta(
                report,
                on_event,
                "thread_sort_index",
                pid,
                tid,
                ("sort_index", Err(tid)),
            );
        }
        Ok(())
    }

    /// Runs `sql`, calling `each` per row (small results: names, not rows).
    fn query(
        &self,
        what: &str,
        sql: &str,
        mut each: impl FnMut(&rusqlite::Row<'_>),
    ) -> io::Result<()> {
        let err = super::sql_err(self.path, what);
        let mut st = self.conn.prepare(sql).map_err(&err)?;
        let mut rows = st.query([]).map_err(&err)?;
        while let Some(row) = rows.next().map_err(&err)? {
            each(row);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::rows::push_flow;

    #[test]
    fn flows_as_kineto() {
        let mut b = String::new();
        push_flow(&mut b, false, 57541, 2910249, 2919752, 1_500);
        assert_eq!(
            b,
            r#"{"ph": "s", "id": 57541, "pid": 2910249, "tid": 2919752, "ts": 1.500, "cat": "ac2g", "name": "ac2g"}"#
        );
        b.clear();
        push_flow(&mut b, true, 57541, 0, 7, 2_000);
        assert_eq!(
            b,
            r#"{"ph": "f", "id": 57541, "pid": 0, "tid": 7, "ts": 2.000, "cat": "ac2g", "name": "ac2g", "bp": "e"}"#
        );
    }
}
