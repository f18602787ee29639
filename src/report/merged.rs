//! `rankprof merge`: what each merge did — per profile a few lines (ranks, events, clock
//! shifts, notes, where the merged trace went) for a person, or two record tables (`profiles`,
//! `ranks`) in JSON, CSV or markdown.

use std::io::Write;

use anyhow::Result;

use super::table::{b, f, i, markdown, s, Cell, Markdown, Table};
use super::Render;
use crate::merge::MergeResult;
use crate::trace::{Group, Ns};

/// One profile's merge: the group, its result, the seconds it took, and the exit code the
/// command gives it.
pub(crate) struct Merged<'a> {
    pub(crate) group: &'a Group,
    pub(crate) result: &'a MergeResult,
    pub(crate) secs: f64,
    pub(crate) exit_code: i32,
}

/// The merges of one command, and the notes of the discovery.
pub(crate) struct MergeReport<'a> {
    pub(crate) merged: Vec<Merged<'a>>,
    pub(crate) notes: &'a [String],
}

impl MergeReport<'_> {
    fn tables(&self) -> (Table, Table) {
        let mut profiles = Table::data(
            "profiles",
            &[
                "profile_id",
                "stage",
                "output",
                "ranks",
                "events",
                "bytes_in",
                "json_bytes_out",
                "seconds",
                "damaged",
                "exit_code",
                "notes",
            ],
        );
        let mut ranks = Table::data(
            "ranks",
            &[
                "profile_id",
                "stage",
                "rank",
                "events_read",
                "events_written",
                "events_filtered",
                "clock_shift_ns",
                "damaged",
                "stopped_early",
                "unreadable",
                "notes",
                "path",
            ],
        );
        for m in &self.merged {
            let (g, res) = (m.group, m.result);
            let stage = g.stage.as_deref().map_or(Cell::Empty, s);
            profiles.rows.push(vec![
                s(&g.profile_id),
                stage.clone(),
                res.output
                    .as_ref()
                    .map_or(Cell::Empty, |p| s(p.display().to_string())),
                i(res.ranks.len() as i64),
                i(res.events),
                i(res.bytes_in),
                i(res.uncompressed_out),
                f(m.secs),
                b(res.damaged()),
                i(m.exit_code),
                s(res.notes.join("; ")),
            ]);
            for r in &res.ranks {
                ranks.rows.push(vec![
                    s(&g.profile_id),
                    stage.clone(),
                    s(&r.label),
                    i(r.read),
                    i(r.written),
                    i(r.dropped),
                    i(r.shift.get()),
                    b(r.damaged),
                    r.stopped_early.as_deref().map_or(Cell::Empty, s),
                    r.unreadable.as_deref().map_or(Cell::Empty, s),
                    s(r.notes.join("; ")),
                    s(r.path.display().to_string()),
                ]);
            }
        }
        (profiles, ranks)
    }
}

impl Render for MergeReport<'_> {
    fn terminal(&self, w: &mut dyn Write) -> Result<()> {
        for m in &self.merged {
            write_merged(w, m.group, m.result, m.secs)?;
        }
        Ok(())
    }

    /// `{profiles, ranks, notes}`.
    fn json(&self, w: &mut dyn Write) -> Result<()> {
        let (profiles, ranks) = self.tables();
        let v = serde_json::json!({"profiles": profiles.records(),
            "ranks": ranks.records(), "notes": self.notes});
        super::write_json(&v, w)
    }

    /// The ranks table.
    fn csv(&self, w: &mut dyn Write) -> Result<()> {
        let (_, ranks) = self.tables();
        super::table::write_csv(&ranks, w)?;
        Ok(())
    }

    fn markdown(&self, w: &mut dyn Write) -> Result<()> {
        let (profiles, ranks) = self.tables();
        write!(
            w,
            "# rankprof merge\n\n## Profiles\n\n{}\n## Ranks\n\n{}",
            markdown(&profiles, Markdown::Plain),
            markdown(&ranks, Markdown::Plain)
        )?;
        Ok(())
    }
}

/// The lines `merge` prints for one profile.
pub(crate) fn write_merged(
    w: &mut dyn Write,
    g: &Group,
    res: &MergeResult,
    secs: f64,
) -> Result<()> {
    let stage = g
        .stage
        .as_deref()
        .map(|s| format!(" stage {s}"))
        .unwrap_or_default();
    writeln!(
        w,
        "profile {}{stage}: {} rank{}",
        g.profile_id,
        res.ranks.len(),
        if res.ranks.len() == 1 { "" } else { "s" }
    )?;
    for r in &res.ranks {
        let shift = if r.shift == Ns::ZERO {
            String::new()
        } else {
            format!("  clock {:+.3} µs", r.shift.as_us())
        };
        let filt = if r.dropped > 0 {
            format!("  ({} filtered out)", r.dropped)
        } else {
            String::new()
        };
        writeln!(
            w,
            "  {:<14} {:>10} events{filt}{shift}  {}",
            r.label,
            r.written,
            r.path
                .file_name()
                .map(|n| n.to_string_lossy())
                .unwrap_or_default()
        )?;
        for n in &r.notes {
            writeln!(w, "    ! {n}")?;
        }
    }
    for n in &res.notes {
        writeln!(w, "  note: {n}")?;
    }
    match &res.output {
        Some(p) => writeln!(
            w,
            "  -> {}: {} events, {} in, {} {} out, {:.2} s ({:.0} MB/s)",
            p.display(),
            res.events,
            super::text::size(res.bytes_in),
            super::text::size(res.uncompressed_out),
            match res.trace_format {
                crate::merge::TraceFormat::Perfetto => "protobuf",
                crate::merge::TraceFormat::Json => "JSON",
            },
            secs,
            res.bytes_in as f64 / 1e6 / secs.max(1e-9)
        )?,
        None => writeln!(
            w,
            "  -> nothing written: a rank is damaged and --strict is set"
        )?,
    }
    if res.damaged() && res.output.is_some() {
        writeln!(
            w,
            "  PARTIAL: damaged ranks were merged as far as they could be read (exit code 3)"
        )?;
    }
    Ok(())
}
