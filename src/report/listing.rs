//! `rankprof ls`: the profiles found in a directory — profile id, stage, ranks found and
//! missing, file sizes, and (with `--count`) event counts and any damage — as text for a
//! person, or as two record tables (`profiles`, `files`) in JSON, CSV or markdown.

use std::io::Write;
use std::path::Path;

use anyhow::Result;
use serde_json::json;

use super::table::{b, i, markdown, s, Cell, Markdown, Table};
use super::Render;
use crate::trace::discover::rankfile::Naming;
use crate::trace::{Discovery, Group};

/// What `--count` found in one file.
#[derive(Clone, Debug)]
pub(crate) struct FileCount {
    pub(crate) events: u64,
    pub(crate) notes: Vec<String>,
    /// Damaged or unreadable.
    pub(crate) damaged: bool,
}

/// A discovery and, per group and file, what counting it found (`None` without `--count`).
pub(crate) struct Listing<'a> {
    pub(crate) dir: &'a Path,
    pub(crate) discovery: &'a Discovery,
    /// One list per group of `discovery`, one entry per file.
    pub(crate) counts: Vec<Vec<Option<FileCount>>>,
}

impl Listing<'_> {
    /// Whether a counted file is damaged.
    pub(crate) fn damaged(&self) -> bool {
        self.counts.iter().flatten().flatten().any(|c| c.damaged)
    }

    /// The `profiles` and `files` tables.
    fn tables(&self) -> (Table, Table) {
        let mut profiles = Table::data(
            "profiles",
            &[
                "dir",
                "profile_id",
                "stage",
                "naming",
                "ranks",
                "bytes",
                "missing",
            ],
        );
        let mut files = Table::data(
            "files",
            &[
                "dir",
                "profile_id",
                "stage",
                "index",
                "rank",
                "bytes",
                "events",
                "damaged",
                "notes",
                "path",
            ],
        );
        for (g, counts) in self.discovery.groups.iter().zip(&self.counts) {
            let stage = g.stage.as_deref().map_or(Cell::Empty, s);
            let dir = s(g.dir.display().to_string());
            profiles.rows.push(vec![
                dir.clone(),
                s(&g.profile_id),
                stage.clone(),
                s(g.files.first().map(|f| naming(f.naming)).unwrap_or("")),
                i(g.files.len() as i64),
                i(g.files.iter().map(|f| f.size).sum::<u64>()),
                s(g.missing().join(" ")),
            ]);
            for (n, (f, c)) in g.files.iter().zip(counts).enumerate() {
                files.rows.push(vec![
                    dir.clone(),
                    s(&g.profile_id),
                    stage.clone(),
                    i(n as i64),
                    s(&f.label),
                    i(f.size),
                    c.as_ref().map_or(Cell::Empty, |c| i(c.events)),
                    // Unknown (null) unless counted.
                    c.as_ref().map_or(Cell::Empty, |c| b(c.damaged)),
                    s(c.as_ref().map(|c| c.notes.join("; ")).unwrap_or_default()),
                    s(f.path.display().to_string()),
                ]);
            }
        }
        (profiles, files)
    }
}

impl Render for Listing<'_> {
    fn terminal(&self, w: &mut dyn Write) -> Result<()> {
        for n in &self.discovery.notes {
            writeln!(w, "note: {n}")?;
        }
        for (g, counts) in self.discovery.groups.iter().zip(&self.counts) {
            write_group(w, g, counts)?;
        }
        Ok(())
    }

    fn json(&self, w: &mut dyn Write) -> Result<()> {
        let (profiles, files) = self.tables();
        let v = json!({"dir": self.dir, "notes": self.discovery.notes,
                       "profiles": profiles.records(), "files": files.records()});
        super::write_json(&v, w)
    }

    /// The files table (the profile's columns are on every row).
    fn csv(&self, w: &mut dyn Write) -> Result<()> {
        let (_, files) = self.tables();
        super::table::write_csv(&files, w)?;
        Ok(())
    }

    fn markdown(&self, w: &mut dyn Write) -> Result<()> {
        let (profiles, files) = self.tables();
        writeln!(w, "# rankprof ls {}\n", self.dir.display())?;
        for n in &self.discovery.notes {
            writeln!(w, "- note: {}", super::text::md_text(n))?;
        }
        writeln!(
            w,
            "\n## Profiles\n\n{}\n## Files\n\n{}",
            markdown(&profiles, Markdown::Plain),
            markdown(&files, Markdown::Plain)
        )?;
        Ok(())
    }
}

fn naming(n: Naming) -> &'static str {
    match n {
        Naming::Sglang => "SGLang names",
        Naming::Vllm => "vLLM names",
        Naming::Generic => "rank in names",
        Naming::DistributedInfo => "ranks from distributedInfo",
        Naming::FileOrder => "ranks in file order (no rank in names or headers)",
        Naming::Gpu => "one rank per GPU of an Nsight Systems report",
    }
}

fn mb(b: u64) -> String {
    super::text::size(b)
}

/// One group as text.
fn write_group(w: &mut dyn Write, g: &Group, counts: &[Option<FileCount>]) -> Result<()> {
    let total: u64 = g.files.iter().map(|f| f.size).sum();
    let stage = g
        .stage
        .as_deref()
        .map(|s| format!(", stage {s}"))
        .unwrap_or_default();
    let how = g.files.first().map(|f| naming(f.naming)).unwrap_or("");
    writeln!(
        w,
        "{}: profile {}{stage}: {} rank{}, {} ({how})",
        g.dir.display(),
        g.profile_id,
        g.files.len(),
        if g.files.len() == 1 { "" } else { "s" },
        mb(total)
    )?;
    for (i, (f, c)) in g.files.iter().zip(counts).enumerate() {
        let name = f
            .path
            .file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default();
        let events = c
            .as_ref()
            .map(|c| format!("{:>10} events", c.events))
            .unwrap_or_default();
        writeln!(
            w,
            "  {i:>3}  {:<16} {:>10}  {events}  {name}",
            f.label,
            mb(f.size)
        )?;
        if let Some(c) = c {
            for n in &c.notes {
                writeln!(w, "       ! {n}")?;
            }
        }
    }
    let missing = g.missing();
    match missing.len() {
        0 => {}
        n if n <= 16 => writeln!(w, "  missing: {}", missing.join(" "))?,
        n => writeln!(
            w,
            "  missing: {n} ranks below the highest found ({} …)",
            missing[..8].join(" ")
        )?,
    }
    Ok(())
}
