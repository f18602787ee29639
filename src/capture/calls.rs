//! What happened to each server a capture spoke to: one [`WorkerRow`] per server (url,
//! backend, each [`Call`] — probe, start, stop — with its HTTP status, time and hint), and the
//! outcome that follows from the rows. `crate::report::capture` shows them.

use serde::Serialize;

use super::dialect::Dialect;
use super::http::Answer;
use super::workers::Worker;
use crate::exit::Outcome;

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

/// Ok when every server did what was asked, failed when any did not.
pub(crate) fn outcome(rows: &[WorkerRow]) -> Outcome {
    if rows.iter().all(WorkerRow::ok) {
        Outcome::Ok
    } else {
        Outcome::Failed
    }
}
