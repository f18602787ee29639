//! `rankprof merge` / `merge-traces`: arguments → [`MergeOptions`], one merge per profile
//! found, a few lines per profile on stdout, the exit code.

use std::time::Instant;

use anyhow::{bail, Context, Result};

use crate::cli::MergeArgs;
use crate::exit;
use crate::merge::{filter, gather, merge_group, MergeOptions, MergeResult};
use crate::trace::{Group, Ns};

/// The library's options from the command line.
pub fn options(a: &MergeArgs) -> Result<MergeOptions> {
    let o = MergeOptions {
        align: a.align,
        ranks: a.ranks.as_deref().map(filter::parse_ranks).transpose()?,
        window: a.window.as_deref().map(filter::parse_window).transpose()?,
        steps: a.steps.as_deref().map(filter::parse_steps).transpose()?,
        drop_cat: a.drop_cat.clone(),
        gpu_only: a.gpu_only,
        strict: a.strict,
        level: a.level,
    };
    o.validate()?;
    Ok(o)
}

pub fn run(args: &MergeArgs) -> Result<i32> {
    let opts = options(args)?;
    let d = gather(
        args.profile_dir.as_deref(),
        &args.files,
        args.recursive,
        args.profile_id.as_deref(),
        args.stage.as_deref(),
    )?;
    for n in &d.notes {
        eprintln!("note: {n}");
    }
    if args.output.is_some() && d.groups.len() > 1 {
        let ids: Vec<_> = d.groups.iter().map(|g| g.merged_name()).collect();
        bail!(
            "-o names one file but {} profiles were found ({}); pick one with --profile-id/--stage",
            d.groups.len(),
            ids.join(", ")
        );
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(args.jobs.unwrap_or(0))
        .build()
        .context("starting worker threads")?;
    let mut code = exit::OK;
    for g in &d.groups {
        let out = args
            .output
            .clone()
            .unwrap_or_else(|| g.dir.join(g.merged_name()));
        let t = Instant::now();
        let res = pool.install(|| merge_group(g, &out, &opts))?;
        print_result(g, &res, t.elapsed().as_secs_f64());
        code = code.max(res.exit_code());
    }
    Ok(code)
}

/// The lines `merge` prints for one profile.
pub fn print_result(g: &Group, res: &MergeResult, secs: f64) {
    let stage = g
        .stage
        .as_deref()
        .map(|s| format!(" stage {s}"))
        .unwrap_or_default();
    println!("profile {}{stage}: {} ranks", g.profile_id, res.ranks.len());
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
        println!(
            "  {:<14} {:>10} events{filt}{shift}  {}",
            r.label,
            r.written,
            r.path
                .file_name()
                .map(|n| n.to_string_lossy())
                .unwrap_or_default()
        );
        for n in &r.notes {
            println!("    ! {n}");
        }
    }
    for n in &res.notes {
        println!("  note: {n}");
    }
    match &res.output {
        Some(p) => println!(
            "  -> {}: {} events, {:.1} MB in, {:.1} MB JSON out, {:.2} s ({:.0} MB/s)",
            p.display(),
            res.events,
            res.bytes_in as f64 / 1e6,
            res.uncompressed_out as f64 / 1e6,
            secs,
            res.bytes_in as f64 / 1e6 / secs.max(1e-9)
        ),
        None => println!("  -> nothing written: a rank is damaged and --strict is set"),
    }
    if res.damaged() && res.output.is_some() {
        println!("  PARTIAL: damaged ranks were merged as far as they could be read (exit code 3)");
    }
}
