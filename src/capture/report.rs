//! What `capture` tells the user: one row per server (url, backend, HTTP status of start and
//! stop, time, hint), printed as a table or JSON, and the exit code that follows from the rows.

use std::io::{self, Write};

use comfy_table::{presets::UTF8_FULL_CONDENSED, ContentArrangement, Table};
use serde::Serialize;

use super::dialect::Dialect;
use super::fanout::Answer;
use super::workers::Worker;
use crate::exit;

/// One request to one server and what it meant.
#[derive(Clone, Debug, Serialize)]
pub struct Call {
    pub route: String,
    /// HTTP status, when there was an answer.
    pub status: Option<u16>,
    /// `refused`, `timeout`, `closed` or `error` when there was none.
    pub failure: Option<String>,
    pub ms: u64,
    pub ok: bool,
    /// Why it failed, or something worth knowing although it worked.
    pub note: String,
}

impl Call {
    /// A call built from an answer and the verdict on it (`ok`, `note`). An answer that did not
    /// arrive whole (no answer, a body cut short, timed out or too large) is a failure whatever
    /// the verdict on its status said, and its hint replaces the verdict's note.
    pub fn from_answer(route: &str, a: &Answer, ok: bool, note: String) -> Call {
        let (ok, note) = match a.failure_hint() {
            Some(hint) if ok || note.is_empty() || a.status.is_some() => (false, hint),
            _ => (ok && a.failure.is_none(), note),
        };
        Call {
            route: route.to_string(),
            status: a.status,
            failure: a.failure.as_ref().map(|f| f.word().to_string()),
            ms: a.elapsed.as_millis() as u64,
            ok,
            note,
        }
    }

    /// The status column: `200`, `500`, `refused`…
    pub fn shown(&self) -> String {
        match (self.status, &self.failure) {
            (Some(s), _) => s.to_string(),
            (None, Some(f)) => f.clone(),
            (None, None) => "-".into(),
        }
    }
}

/// Everything that happened to one server.
#[derive(Clone, Debug, Serialize)]
pub struct WorkerRow {
    pub url: String,
    pub worker_type: Option<String>,
    pub dp_ranks: Vec<u32>,
    pub backend: Option<Dialect>,
    /// Failed `--backend auto` probe (then there is no start/stop).
    pub probe: Option<Call>,
    pub start: Option<Call>,
    pub stop: Option<Call>,
}

impl WorkerRow {
    pub fn new(w: &Worker) -> Self {
        WorkerRow {
            url: w.url.clone(),
            worker_type: w.worker_type.clone(),
            dp_ranks: w.dp_ranks.clone(),
            backend: None,
            probe: None,
            start: None,
            stop: None,
        }
    }

    fn calls(&self) -> impl Iterator<Item = &Call> {
        self.probe
            .iter()
            .chain(self.start.iter())
            .chain(self.stop.iter())
    }

    /// No call failed (and at least one was made).
    pub fn ok(&self) -> bool {
        self.calls().next().is_some() && self.calls().all(|c| c.ok)
    }

    /// The note of the first failed call, otherwise every non-empty note.
    pub fn hint(&self) -> String {
        if let Some(c) = self.calls().find(|c| !c.ok) {
            return format!("{}: {}", c.route, c.note);
        }
        self.calls()
            .filter(|c| !c.note.is_empty())
            .map(|c| c.note.clone())
            .collect::<Vec<_>>()
            .join("; ")
    }

    /// The worker's profiler was (probably) started: stop it even if the start answer was lost
    /// (a timeout) or its 2xx body did not arrive whole.
    pub fn needs_stop(&self) -> bool {
        match &self.start {
            Some(c) => {
                c.ok || c.failure.as_deref() == Some("timeout")
                    || matches!(c.status, Some(200..=299))
            }
            None => false,
        }
    }
}

/// 0 when every server did what was asked, 1 when any failed.
pub fn exit_code(rows: &[WorkerRow]) -> i32 {
    if rows.iter().all(WorkerRow::ok) {
        exit::OK
    } else {
        exit::FAILED
    }
}

fn cell(c: &Option<Call>) -> String {
    c.as_ref().map_or_else(|| "-".into(), Call::shown)
}

/// The per-server table.
pub fn table(rows: &[WorkerRow]) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Dynamic);
    t.set_header(vec![
        "worker", "type", "backend", "start", "stop", "time ms", "result", "hint",
    ]);
    for r in rows {
        let mut url = r.url.clone();
        if !r.dp_ranks.is_empty() {
            let dps: Vec<String> = r.dp_ranks.iter().map(u32::to_string).collect();
            url.push_str(&format!(" (dp {})", dps.join(",")));
        }
        let ms: Vec<String> = [&r.probe, &r.start, &r.stop]
            .iter()
            .filter_map(|c| c.as_ref().map(|c| c.ms.to_string()))
            .collect();
        t.add_row(vec![
            url,
            r.worker_type.clone().unwrap_or_else(|| "-".into()),
            r.backend.map_or("?", Dialect::name).to_string(),
            if r.probe.is_some() && r.start.is_none() {
                format!("probe {}", cell(&r.probe))
            } else {
                cell(&r.start)
            },
            cell(&r.stop),
            ms.join(" / "),
            if r.ok() { "ok".into() } else { "FAILED".into() },
            r.hint(),
        ]);
    }
    t
}

/// Prints the table and the notes (stdout), or nothing when `json` (the caller prints JSON).
pub fn print_human(rows: &[WorkerRow], notes: &[String]) -> io::Result<()> {
    let mut out = io::stdout().lock();
    writeln!(out, "{}", table(rows))?;
    let failed = rows.iter().filter(|r| !r.ok()).count();
    writeln!(out, "{} of {} workers ok", rows.len() - failed, rows.len())?;
    for n in notes {
        writeln!(out, "note: {n}")?;
    }
    Ok(())
}

/// Prints one JSON document on stdout.
pub fn print_json(v: &serde_json::Value) -> io::Result<()> {
    let mut out = io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, v)?;
    writeln!(out)
}
