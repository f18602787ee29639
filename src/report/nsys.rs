//! What `rankprof nsys` shows: the sessions `nsys sessions list` gave ([`SessionList`]), or
//! what `nsys start`/`stop` did to each chosen session ([`Acted`]), as a table fitted to the
//! terminal, or as JSON (`{"sessions": …}`; `{"action", "sessions", "exit_code"}`), CSV or
//! markdown.

use std::io::Write;

use anyhow::Result;
use comfy_table::{presets::UTF8_FULL_CONDENSED, ContentArrangement};
use serde_json::json;

use super::table::{s, Markdown, Table};
use super::Render;
use crate::capture::nsys::{Done, Session};

/// The sessions of `nsys sessions list`.
pub(crate) struct SessionList<'a>(pub(crate) &'a [Session]);

/// What `nsys start` or `nsys stop` did to each chosen session, and the exit code it makes.
pub(crate) struct Acted<'a> {
    pub(crate) action: &'static str,
    pub(crate) done: &'a [Done],
    pub(crate) exit_code: i32,
}

impl SessionList<'_> {
    fn table(&self) -> Table {
        let mut t = Table::data("sessions", &["id", "time", "state", "launch", "name"]);
        for x in self.0 {
            t.rows.push(vec![
                s(&x.id),
                s(&x.time),
                s(&x.state),
                s(&x.launch),
                s(&x.name),
            ]);
        }
        t.title = "nsys sessions".into();
        t
    }
}

impl Acted<'_> {
    fn table(&self) -> Table {
        let mut t = Table::data(
            "sessions",
            &["session", "state before", "nsys", "result", "output"],
        );
        let action = self.action;
        for d in self.done {
            t.rows.push(vec![
                s(format!("{} {}", d.session.id, d.session.name)),
                s(&d.session.state),
                s(match (d.timed_out, d.exit) {
                    (true, _) => format!("{action} killed (timeout)"),
                    (false, Some(c)) => format!("{action} exit {c}"),
                    (false, None) => format!("{action} exit signal"),
                }),
                s(if d.ok { "ok" } else { "FAILED" }),
                s(&d.output),
            ]);
        }
        t.title = format!("nsys {action}");
        t
    }
}

/// The table as the terminal draws it (fitted to its width by the content arrangement).
fn drawn(t: &Table) -> comfy_table::Table {
    let mut ct = comfy_table::Table::new();
    ct.load_preset(UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_width(super::terminal::width());
    ct.set_header(t.columns.iter());
    for r in &t.rows {
        ct.add_row(r.iter().map(|c| c.show()));
    }
    ct
}

impl Render for SessionList<'_> {
    fn terminal(&self, w: &mut dyn Write) -> Result<()> {
        if self.0.is_empty() {
            writeln!(w, "no nsys sessions")?;
        } else {
            writeln!(w, "{}", drawn(&self.table()))?;
        }
        Ok(())
    }
    fn json(&self, w: &mut dyn Write) -> Result<()> {
        super::write_json(&json!({ "sessions": self.0 }), w)
    }
    fn csv(&self, w: &mut dyn Write) -> Result<()> {
        Ok(super::table::write_csv(&self.table(), w)?)
    }
    fn markdown(&self, w: &mut dyn Write) -> Result<()> {
        Ok(super::table::write_markdown(
            &self.table(),
            Markdown::Plain,
            w,
        )?)
    }
}

impl Render for Acted<'_> {
    fn terminal(&self, w: &mut dyn Write) -> Result<()> {
        writeln!(w, "{}", drawn(&self.table()))?;
        Ok(())
    }
    fn json(&self, w: &mut dyn Write) -> Result<()> {
        super::write_json(
            &json!({ "action": self.action, "sessions": self.done, "exit_code": self.exit_code }),
            w,
        )
    }
    fn csv(&self, w: &mut dyn Write) -> Result<()> {
        Ok(super::table::write_csv(&self.table(), w)?)
    }
    fn markdown(&self, w: &mut dyn Write) -> Result<()> {
        Ok(super::table::write_markdown(
            &self.table(),
            Markdown::Plain,
            w,
        )?)
    }
}
