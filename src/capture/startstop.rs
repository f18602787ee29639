//! `capture start` and `capture stop` on their own (the first and middle steps of
//! [`super::session::run`]): start or stop every server's profiler at once; `start` writes the
//! session record ([`super::record`]) that a later `stop` reads to know `num_steps` were asked.

use anyhow::Result;
use serde::Serialize;

use super::calls::{self, WorkerRow};
use super::http::Http;
use super::options::{StartOptions, StopOptions};
use super::profiler::Dirs;
use super::record::{self, SessionRecord};
use super::session::{dialect_for, each_worker, secs, start_one, stop_one};
use super::workers;
use crate::exit;

/// The result of `capture start` / `capture stop`.
#[derive(Clone, Debug, Serialize)]
pub struct Outcome {
    pub command: &'static str,
    pub router: Option<String>,
    pub workers: Vec<WorkerRow>,
    pub notes: Vec<String>,
    /// How it ended (serialized as its exit code).
    #[serde(rename = "exit_code")]
    pub outcome: exit::Outcome,
}

/// `capture start`.
pub fn start(a: &StartOptions) -> Result<Outcome> {
    let http = Http::for_targets(&a.targets);
    let found = workers::resolve(&http, &a.targets)?;
    let dirs = Dirs::new(&a.profile)?;
    let rows = each_worker(&found.workers, "start", &a.targets, |w| {
        start_one(&http, w, &a.targets, &a.profile, &dirs)
    });
    let mut notes = found.notes;
    let started: Vec<String> = rows
        .iter()
        .filter(|r| r.start.as_ref().is_some_and(|c| c.ok))
        .map(|r| r.url.clone())
        .collect();
    if !started.is_empty() {
        let base = dirs.vllm.clone(); // the absolute --output-dir
        let rec = SessionRecord::new(
            found.router.clone(),
            started,
            a.profile.num_steps,
            base,
            a.profile.step,
        );
        notes.extend(record::save(&rec, &a.targets, a.state_dir.as_deref()));
    }
    Ok(Outcome {
        command: "capture start",
        router: found.router,
        outcome: calls::outcome(&rows),
        workers: rows,
        notes,
    })
}

/// `capture stop`.
pub fn stop(a: &StopOptions) -> Result<Outcome> {
    let http = Http::for_targets(&a.targets);
    let found = workers::resolve(&http, &a.targets)?;
    let probe_timeout = secs(a.targets.timeout);
    let dirs = Dirs::default();
    let mut notes = found.notes;
    let rec = record::find(a.output_dir.as_deref(), &a.targets, a.state_dir.as_deref());
    if let Some(f) = &rec {
        notes.push(format!(
            "session record {} (capture start {} s ago{})",
            f.path.display(),
            f.age.as_secs(),
            f.record
                .num_steps
                .map(|n| format!(", num_steps {n}"))
                .unwrap_or_default()
        ));
    } else if let Some(d) = &a.output_dir {
        notes.push(format!(
            "no session record in {} (missing, unreadable or over a day old)",
            d.display()
        ));
    }
    let rows = each_worker(&found.workers, "stop", &a.targets, |w| {
        let mut row = WorkerRow::new(w);
        if dialect_for(&http, &mut row, a.targets.backend, probe_timeout).is_some() {
            // --num-steps on stop wins; else what start recorded for this server.
            let auto_stop = a
                .num_steps
                .or_else(|| rec.as_ref().and_then(|f| f.num_steps_for(&w.url)));
            stop_one(
                &http,
                &mut row,
                a.targets.backend,
                auto_stop,
                secs(a.stop_timeout),
                &dirs,
            );
        }
        row
    });
    Ok(Outcome {
        command: "capture stop",
        router: found.router,
        outcome: calls::outcome(&rows),
        workers: rows,
        notes,
    })
}
