//! The one output layer: every command writes what it found through here, and nothing here
//! computes a figure — every number comes from a library's result type.
//!
//! - [`Format`] is the one list of stdout formats; [`Render`] is what a result must be able to
//!   do to be printed (one method per format, so a new format is a compile error until every
//!   renderer handles it); [`write()`] is the one entry point.
//! - [`table`] is the one table model (typed cells) and its CSV, markdown and JSON forms; the
//!   terminal draws it ([`terminal`]) and Parquet writes it ([`parquet`]).
//! - The renderers, one per result: the analysis ([`analysis`]: its tables in [`tables`],
//!   [`attribution`], [`collective_tables`], [`groups`], [`tidy`] (the explaining tables' tidy forms in
//!   [`tidy_explain`]), one rank's drill-down in
//!   [`drill`]; JSON streamed by [`json`];
//!   CSV and markdown in [`formats`]; HTML in [`html`], its lane chart in [`html_lanes`]), a comparison ([`compare`]), a listing
//!   of rank files ([`listing`]), merge results ([`merged`]), capture outcomes ([`capture`]) and
//!   the live view of `watch` ([`watch`]); shared text helpers in [`text`].

pub mod analysis;
pub(crate) mod attribution;
// not API: for tests
#[doc(hidden)]
pub mod capture;
pub(crate) mod collective_tables;
// not API: for tests
#[doc(hidden)]
pub mod compare;
pub(crate) mod critical_path;
pub(crate) mod drill;
// not API: for tests
#[doc(hidden)]
pub mod formats;
// not API: for tests
#[doc(hidden)]
pub mod groups;
pub mod html;
pub(crate) mod html_grid;
pub(crate) mod html_lanes;
// not API: for tests
#[doc(hidden)]
pub mod json;
pub(crate) mod listing;
pub(crate) mod merged;
pub(crate) mod nsys;
pub(crate) mod parquet;
pub(crate) mod table;
pub(crate) mod tables;
// not API: for tests
#[doc(hidden)]
pub mod terminal;
pub(crate) mod text;
pub(crate) mod tidy;
pub(crate) mod tidy_explain;
pub(crate) mod watch;

use std::io::Write;

use anyhow::Result;

/// The formats a result is written in on stdout (every command's `--format`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Text for a person: tables drawn to the terminal's width.
    Terminal,
    /// One JSON document.
    Json,
    /// CSV: the result's tables, each after a `# name: title` line where there are several.
    Csv,
    /// GitHub-flavoured markdown.
    Markdown,
}

/// A result that can be written in every [`Format`]. Each method writes the whole document.
pub trait Render {
    fn terminal(&self, w: &mut dyn Write) -> Result<()>;
    fn json(&self, w: &mut dyn Write) -> Result<()>;
    fn csv(&self, w: &mut dyn Write) -> Result<()>;
    fn markdown(&self, w: &mut dyn Write) -> Result<()>;
}

/// Writes `r` in `format` to `w`; terminal text with every line fitted to the terminal's
/// width ([`terminal::width`], [`text::fit`]).
pub fn write(r: &dyn Render, format: Format, w: &mut dyn Write) -> Result<()> {
    match format {
        Format::Terminal => {
            let mut buf = Vec::new();
            r.terminal(&mut buf)?;
            let text = String::from_utf8_lossy(&buf);
            w.write_all(text::fit(&text, terminal::width() as usize).as_bytes())?;
            Ok(())
        }
        Format::Json => r.json(w),
        Format::Csv => r.csv(w),
        Format::Markdown => r.markdown(w),
    }
}

/// Writes `r` in `format` to stdout.
pub fn print(r: &dyn Render, format: Format) -> Result<()> {
    let mut out = std::io::stdout().lock();
    write(r, format, &mut out)?;
    out.flush()?;
    Ok(())
}

/// A note for stderr (`note: …`), wrapped to the terminal's width.
pub fn note(n: &str) -> String {
    text::fit(&format!("note: {n}"), terminal::width() as usize)
}

/// `v` as pretty JSON and a line break.
pub(crate) fn write_json(v: &impl serde::Serialize, w: &mut dyn Write) -> Result<()> {
    serde_json::to_writer_pretty(&mut *w, v)?;
    writeln!(w)?;
    Ok(())
}
