//! Machine and document formats of the analysis: JSON (the whole [`Analysis`], times in ns),
//! CSV (every table, each after a `# name: title` line), markdown (headings and pipe tables),
//! and atomic file writing (temp file + rename) shared by every writer.

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};

use super::tables::{sections, Cell};
use crate::analyze::Analysis;

pub fn json(a: &Analysis) -> Result<String> {
    Ok(serde_json::to_string_pretty(a)? + "\n")
}

fn csv_field(s: &str) -> String {
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

fn md_cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

pub fn markdown(a: &Analysis) -> String {
    let mut s = format!("# rankprof analyze: {}", a.profile_id);
    if let Some(st) = &a.stage {
        s.push_str(&format!(" (stage {st})"));
    }
    s.push_str("\n\n");
    for l in &a.verdict.lines {
        s.push_str(&format!("- {}\n", md_cell(l)));
    }
    s.push('\n');
    for t in sections(a).iter().filter(|t| t.name != "verdict") {
        s.push_str(&format!("## {}\n\n", md_cell(&t.title)));
        s.push_str(&format!(
            "| {} |\n",
            t.columns
                .iter()
                .map(|c| md_cell(c))
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
        for row in &t.rows {
            s.push_str(&format!(
                "| {} |\n",
                row.iter()
                    .map(|c| md_cell(&c.show()))
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
            s.push_str(&format!("- {}\n", md_cell(n)));
        }
    }
    s
}

/// Writes `bytes` to `path` through a temporary file in the same directory and a rename, so
/// readers never see a half-written file.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let name = path
        .file_name()
        .with_context(|| format!("{}: not a file name", path.display()))?
        .to_string_lossy()
        .to_string();
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let res = (|| -> std::io::Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if let Err(e) = res {
        let _ = std::fs::remove_file(&tmp);
        return Err(e).with_context(|| format!("cannot write {}", path.display()));
    }
    Ok(())
}
