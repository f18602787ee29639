//! `rankprof ls DIR`: the profiles found in a directory — profile id, stage, ranks found and
//! missing, file sizes, and (with `--count`) event counts and any damage.

use anyhow::{Context, Result};
use rayon::prelude::*;

use crate::cli::LsArgs;
use crate::exit;
use crate::trace::discover::Naming;
use crate::trace::{discover, read_trace, Group};

pub fn run(args: &LsArgs) -> Result<i32> {
    let d = discover(&args.dir, args.recursive)
        .with_context(|| format!("reading {}", args.dir.display()))?;
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
    // (events, notes, damaged or unreadable)
    let counts: Vec<Option<(u64, Vec<String>, bool)>> = if count {
        g.files
            .par_iter()
            .map(|f| match read_trace(&f.path, |_| {}) {
                Ok(r) => Some((r.events, r.notes(), r.is_damaged())),
                Err(e) => Some((0, vec![format!("unreadable: reading {e}")], true)),
            })
            .collect()
    } else {
        vec![None; g.files.len()]
    };
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
