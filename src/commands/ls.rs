//! `rankprof ls DIR`: the profiles found in a directory — profile id, stage, ranks found and
//! missing, file sizes, and (with `--count`) event counts and any damage; as text, or as
//! JSON / CSV / markdown records (`--format`).

use anyhow::{Context, Result};
use rayon::prelude::*;
use serde_json::json;

use crate::cli::{LsArgs, ReportFormat};
use crate::exit;
use crate::report::tidy::{i, s, Tidy, Val};
use crate::trace::discover::rankfile::Naming;
use crate::trace::{discover, read_trace, Group};

/// (events, notes, damaged or unreadable) of one file, with `--count`.
type Count = Option<(u64, Vec<String>, bool)>;

pub fn run(args: &LsArgs) -> Result<i32> {
    let format = if args.json {
        ReportFormat::Json
    } else {
        args.format
    };
    let d = discover(&args.dir, args.recursive)
        .with_context(|| format!("reading {}", args.dir.display()))?;
    if format != ReportFormat::Table {
        return print_records(args, &d, format);
    }
    for n in &d.notes {
        println!("note: {n}");
    }
    if d.groups.is_empty() {
        println!("no rank traces found in {}", args.dir.display());
        return Ok(exit::USAGE);
    }
    let mut code = exit::OK;
    for g in &d.groups {
        if !print_group(g, args.count) {
            code = exit::PARTIAL;
        }
    }
    Ok(code)
}

/// The listing as records: a `profiles` table (one row per profile) and a `files` table (one
/// row per rank file). CSV prints the files table (the profile's columns are on every row).
fn print_records(args: &LsArgs, d: &crate::trace::Discovery, format: ReportFormat) -> Result<i32> {
    let mut profiles = Tidy::new(
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
    let mut files = Tidy::new(
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
    let mut code = if d.groups.is_empty() {
        exit::USAGE
    } else {
        exit::OK
    };
    for g in &d.groups {
        let stage = g.stage.as_deref().map_or(Val::Null, s);
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
        for (n, (f, c)) in g.files.iter().zip(counts(g, args.count)).enumerate() {
            let damaged = c.as_ref().is_some_and(|(_, _, d)| *d);
            if damaged {
                code = exit::PARTIAL;
            }
            files.rows.push(vec![
                dir.clone(),
                s(&g.profile_id),
                stage.clone(),
                i(n as i64),
                s(&f.label),
                i(f.size),
                c.as_ref().map_or(Val::Null, |(e, _, _)| i(*e)),
                c.as_ref().map_or(Val::Null, |_| s(damaged.to_string())),
                s(c.map(|(_, notes, _)| notes.join("; ")).unwrap_or_default()),
                s(f.path.display().to_string()),
            ]);
        }
    }
    match format {
        ReportFormat::Json => {
            let v = json!({"dir": args.dir, "notes": d.notes, "profiles": profiles.records(),
                           "files": files.records()});
            println!("{}", serde_json::to_string_pretty(&v)?);
        }
        ReportFormat::Csv => print!("{}", files.csv()),
        _ => {
            println!("# rankprof ls {}\n", args.dir.display());
            for n in &d.notes {
                println!("- note: {}", crate::report::text::md_text(n));
            }
            println!(
                "\n## Profiles\n\n{}\n## Files\n\n{}",
                profiles.markdown(),
                files.markdown()
            );
        }
    }
    Ok(code)
}

/// Each file's events, notes and damage (read in parallel), or `None`s without `--count`.
fn counts(g: &Group, count: bool) -> Vec<Count> {
    if !count {
        return vec![None; g.files.len()];
    }
    g.files
        .par_iter()
        .map(|f| match read_trace(&f.path, |_| {}) {
            Ok(r) => Some((r.events, r.notes(), r.is_damaged())),
            Err(e) => Some((0, vec![format!("unreadable: reading {e}")], true)),
        })
        .collect()
}

fn naming(n: Naming) -> &'static str {
    match n {
        Naming::Sglang => "SGLang names",
        Naming::Vllm => "vLLM names",
        Naming::Generic => "rank in names",
        Naming::DistributedInfo => "ranks from distributedInfo",
        Naming::FileOrder => "ranks in file order (no rank in names or headers)",
    }
}

fn mb(b: u64) -> String {
    format!("{:.1} MB", b as f64 / 1e6)
}

/// Prints one group; false when a file is damaged.
fn print_group(g: &Group, count: bool) -> bool {
    let total: u64 = g.files.iter().map(|f| f.size).sum();
    let stage = g
        .stage
        .as_deref()
        .map(|s| format!(", stage {s}"))
        .unwrap_or_default();
    let how = g.files.first().map(|f| naming(f.naming)).unwrap_or("");
    println!(
        "{}: profile {}{stage}: {} ranks, {} ({how})",
        g.dir.display(),
        g.profile_id,
        g.files.len(),
        mb(total)
    );
    let counts = counts(g, count);
    let mut ok = true;
    for (i, (f, c)) in g.files.iter().zip(&counts).enumerate() {
        let name = f
            .path
            .file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default();
        let events = c
            .as_ref()
            .map(|(n, _, _)| format!("{n:>10} events"))
            .unwrap_or_default();
        println!(
            "  {i:>3}  {:<16} {:>10}  {events}  {name}",
            f.label,
            mb(f.size)
        );
        if let Some((_, notes, damaged)) = c {
            ok &= !damaged;
            for n in notes {
                println!("       ! {n}");
            }
        }
    }
    let missing = g.missing();
    match missing.len() {
        0 => {}
        n if n <= 16 => println!("  missing: {}", missing.join(" ")),
        n => println!(
            "  missing: {n} ranks below the highest found ({} …)",
            missing[..8].join(" ")
        ),
    }
    ok
}
