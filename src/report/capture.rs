//! What `capture` shows: one row per server (url, backend, HTTP status of start and stop,
//! time, result, hint) as a table; for `capture run` also the load sent, the traces collected
//! and what merge and analyze made of them; or the whole outcome as JSON.

use std::io::Write;

use anyhow::Result;
use comfy_table::{presets::UTF8_FULL_CONDENSED, ContentArrangement};

use super::analysis::AnalysisReport;
use super::table::{s, Markdown, Table};
use super::Render;
use crate::capture::calls::{Call, WorkerRow};
use crate::capture::dialect::Dialect;
use crate::capture::session::RunOutcome;
use crate::capture::startstop::Outcome;

fn cell(c: &Option<Call>) -> String {
    c.as_ref().map_or_else(|| "-".into(), Call::shown)
}

/// The per-server rows as a table.
pub(crate) fn workers(rows: &[WorkerRow]) -> Table {
    let mut t = Table::data(
        "workers",
        &[
            "worker", "type", "backend", "start", "stop", "time ms", "result", "hint",
        ],
    );
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
        t.rows.push(vec![
            s(url),
            s(r.worker_type.clone().unwrap_or_else(|| "-".into())),
            s(r.backend.map_or("?", Dialect::name)),
            s(if r.probe.is_some() && r.start.is_none() {
                format!("probe {}", cell(&r.probe))
            } else {
                cell(&r.start)
            }),
            s(cell(&r.stop)),
            s(ms.join(" / ")),
            s(if r.ok() { "ok" } else { "FAILED" }),
            s(r.hint()),
        ]);
    }
    t.title = "Workers".into();
    t
}

/// The per-server table as the terminal draws it.
pub fn table(rows: &[WorkerRow]) -> comfy_table::Table {
    let t = workers(rows);
    let mut ct = comfy_table::Table::new();
    ct.load_preset(UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Dynamic);
    ct.set_header(t.columns.iter());
    for r in &t.rows {
        ct.add_row(r.iter().map(|c| c.show()));
    }
    ct
}

/// The table, how many servers did what was asked, and the notes.
fn write_human(w: &mut dyn Write, rows: &[WorkerRow], notes: &[String]) -> Result<()> {
    writeln!(w, "{}", table(rows))?;
    let failed = rows.iter().filter(|r| !r.ok()).count();
    writeln!(w, "{} of {} workers ok", rows.len() - failed, rows.len())?;
    for n in notes {
        writeln!(w, "note: {n}")?;
    }
    Ok(())
}

/// The workers table and the notes as markdown.
fn write_markdown(
    w: &mut dyn Write,
    title: &str,
    rows: &[WorkerRow],
    notes: &[String],
) -> Result<()> {
    writeln!(w, "# rankprof {title}\n")?;
    super::table::write_markdown(&workers(rows), Markdown::Plain, w)?;
    if !notes.is_empty() {
        writeln!(w, "\n## Notes\n")?;
        for n in notes {
            writeln!(w, "- {}", super::text::md_text(n))?;
        }
    }
    Ok(())
}

/// An outcome as JSON, keys in alphabetical order (through a JSON value, as it always was).
fn write_json(o: &impl serde::Serialize, w: &mut dyn Write) -> Result<()> {
    super::write_json(&serde_json::to_value(o)?, w)
}

/// The workers table as CSV (both outcomes' CSV form).
fn write_csv(w: &mut dyn Write, rows: &[WorkerRow]) -> Result<()> {
    super::table::write_csv(&workers(rows), w)?;
    Ok(())
}

/// `capture start` / `capture stop`.
impl Render for Outcome {
    fn terminal(&self, w: &mut dyn Write) -> Result<()> {
        write_human(w, &self.workers, &self.notes)
    }

    fn json(&self, w: &mut dyn Write) -> Result<()> {
        write_json(self, w)
    }

    fn csv(&self, w: &mut dyn Write) -> Result<()> {
        write_csv(w, &self.workers)
    }

    fn markdown(&self, w: &mut dyn Write) -> Result<()> {
        write_markdown(w, self.command, &self.workers, &self.notes)
    }
}

/// `capture run`: what merge and analyze printed for the traces, then the workers, the load,
/// the traces and the notes.
impl Render for RunOutcome {
    fn terminal(&self, w: &mut dyn Write) -> Result<()> {
        if let Some(pp) = &self.post {
            for r in &pp.runs {
                if let Ok(res) = &r.merge {
                    super::merged::write_merged(w, &r.group, res, r.merge_secs)?;
                }
            }
            for a in pp.analyses() {
                AnalysisReport::new(a).terminal(w)?;
            }
        }
        write_human(w, &self.workers, &[])?;
        if let Some(l) = &self.load {
            writeln!(
                w,
                "load: {} requests, {} ok, {} failed, {:.1} s",
                l.sent,
                l.ok,
                l.failed,
                l.ms as f64 / 1e3
            )?;
        }
        for f in &self.traces {
            writeln!(
                w,
                "traces: {}, {} in {}{}",
                crate::analyze::explain::measure::count(f.files.len(), "file"),
                super::text::size(f.bytes()),
                f.dir.display(),
                if f.complete { "" } else { " (incomplete)" }
            )?;
        }
        if let Some(pp) = &self.post {
            for m in &pp.merged {
                writeln!(w, "merged: {}", m.display())?;
            }
        }
        for n in &self.notes {
            writeln!(w, "note: {n}")?;
        }
        Ok(())
    }

    fn json(&self, w: &mut dyn Write) -> Result<()> {
        write_json(self, w)
    }

    fn csv(&self, w: &mut dyn Write) -> Result<()> {
        write_csv(w, &self.workers)
    }

    fn markdown(&self, w: &mut dyn Write) -> Result<()> {
        write_markdown(w, self.command, &self.workers, &self.notes)
    }
}
