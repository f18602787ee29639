//! Machine and document formats of the analysis: JSON (the whole [`Analysis`], times in ns),
//! CSV (every table, each after a `# name: title` line), markdown (headings and pipe tables),
//! and atomic file writing (temp file + rename) shared by every writer.

use std::io::Write;

use anyhow::Result;

use super::table::Markdown;
use super::tables::sections;
use super::text::md_text;
use crate::analyze::Analysis;

/// The analysis as JSON, every list a list of flat records (see [`super::json`], which
/// streams the same bytes to a writer).
pub fn json(a: &Analysis) -> Result<String> {
    let mut out = Vec::new();
    super::json::write(a, &mut out)?;
    Ok(String::from_utf8(out)?)
}

/// Every table, each preceded by `# name: title` and followed by a blank line.
pub fn csv(a: &Analysis) -> String {
    let mut out = Vec::new();
    // Writing to a Vec cannot fail; the text is UTF-8 by construction.
    let _ = write_csv(a, &mut out);
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// [`csv`] written to `w` line by line (the document is never held whole).
pub(crate) fn write_csv(a: &Analysis, w: impl Write) -> Result<()> {
    let mut w = std::io::BufWriter::with_capacity(1 << 16, w);
    for t in sections(a) {
        writeln!(w, "# {}: {}", t.name, t.title)?;
        super::table::write_csv(&t, &mut w)?;
        writeln!(w)?;
    }
    w.flush()?;
    Ok(())
}

pub fn markdown(a: &Analysis) -> String {
    let mut out = Vec::new();
    // Writing to a Vec cannot fail.
    let _ = write_markdown(a, &mut out);
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// [`markdown`] written to `w` line by line.
pub(crate) fn write_markdown(a: &Analysis, w: impl Write) -> Result<()> {
    let mut w = std::io::BufWriter::with_capacity(1 << 16, w);
    write!(w, "# rankprof analyze: {}", a.profile_id)?;
    if let Some(st) = &a.stage {
        write!(w, " (stage {st})")?;
    }
    w.write_all(b"\n\n")?;
    for l in &a.verdict.lines {
        writeln!(w, "- {}", md_text(l))?;
    }
    writeln!(w)?;
    for t in sections(a).iter().filter(|t| t.name != "verdict") {
        write!(w, "## {}\n\n", md_text(&t.title))?;
        super::table::write_markdown(t, Markdown::Report, &mut w)?;
        writeln!(w)?;
    }
    let notes = a.all_notes();
    if !notes.is_empty() {
        w.write_all(b"## Notes\n\n")?;
        for n in notes {
            writeln!(w, "- {}", md_text(n))?;
        }
    }
    w.flush()?;
    Ok(())
}
