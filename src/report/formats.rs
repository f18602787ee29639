//! Machine and document formats of the analysis: JSON (the whole [`Analysis`], times in ns),
//! CSV (every table, each after a `# name: title` line), markdown (headings and pipe tables),
//! and atomic file writing (temp file + rename) shared by every writer.

use anyhow::Result;

use super::tables::{sections, Cell};
use super::text::{md_code, md_text};
use crate::analyze::Analysis;

/// The analysis as JSON, every list a list of flat records (see [`super::json`], which
/// streams the same bytes to a writer).
pub fn json(a: &Analysis) -> Result<String> {
    let mut out = Vec::new();
    super::json::write(a, &mut out)?;
    Ok(String::from_utf8(out)?)
}

pub(super) fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn csv_cell(c: &Cell) -> String {
    match c {
        // Full precision for machines.
        Cell::Num(v, _) if v.is_finite() => format!("{v}"),
        other => csv_field(&other.show()),
    }
}

/// Every table, each preceded by `# name: title` and followed by a blank line.
pub fn csv(a: &Analysis) -> String {
    let mut s = String::new();
    for t in sections(a) {
        s.push_str(&format!("# {}: {}\n", t.name, t.title));
        s.push_str(
            &t.columns
                .iter()
                .map(|c| csv_field(c))
                .collect::<Vec<_>>()
                .join(","),
        );
        s.push('\n');
        for row in &t.rows {
            s.push_str(&row.iter().map(csv_cell).collect::<Vec<_>>().join(","));
            s.push('\n');
        }
        s.push('\n');
    }
    s
}

pub fn markdown(a: &Analysis) -> String {
    let mut s = format!("# rankprof analyze: {}", a.profile_id);
    if let Some(st) = &a.stage {
        s.push_str(&format!(" (stage {st})"));
    }
    s.push_str("\n\n");
    for l in &a.verdict.lines {
        s.push_str(&format!("- {}\n", md_text(l)));
    }
    s.push('\n');
    for t in sections(a).iter().filter(|t| t.name != "verdict") {
        s.push_str(&format!("## {}\n\n", md_text(&t.title)));
        s.push_str(&format!(
            "| {} |\n",
            t.columns
                .iter()
                .map(|c| md_text(c))
                .collect::<Vec<_>>()
                .join(" | ")
        ));
        s.push_str(&format!(
            "|{}\n",
            t.rows
                .first()
                .unwrap_or(&vec![Cell::Empty; t.columns.len()])
                .iter()
                .map(|c| if matches!(c, Cell::Int(_) | Cell::Num(..)) {
                    "---:|"
                } else {
                    "---|"
                })
                .collect::<String>()
        ));
        // Kernel and op names as inline code (GitHub-safe), other text escaped.
        let code: Vec<bool> = t
            .columns
            .iter()
            .map(|c| matches!(c.as_str(), "kernel" | "name"))
            .collect();
        for row in &t.rows {
            s.push_str(&format!(
                "| {} |\n",
                row.iter()
                    .enumerate()
                    .map(|(i, c)| match c {
                        Cell::Text(v) if code.get(i).copied().unwrap_or(false) => md_code(v),
                        other => md_text(&other.show()),
                    })
                    .collect::<Vec<_>>()
                    .join(" | ")
            ));
        }
        s.push('\n');
    }
    let notes = a.all_notes();
    if !notes.is_empty() {
        s.push_str("## Notes\n\n");
        for n in notes {
            s.push_str(&format!("- {}\n", md_text(n)));
        }
    }
    s
}
