//! `rankprof ls DIR`: arguments → the discovery (and, with `--count`, every file read once to
//! count its events and find damage), printed through [`crate::report::listing`], the exit
//! code (2 when nothing was found — said on stderr, with `-r` suggested when subfolders hold
//! traces — 3 when a counted file is damaged).

use anyhow::{Context, Result};
use rayon::prelude::*;

use crate::cli::LsArgs;
use crate::exit;
use crate::report::listing::{FileCount, Listing};
use crate::trace::discover::discover_with;
use crate::trace::{discover, read_trace, Group};

pub(crate) fn run(args: &LsArgs) -> Result<i32> {
    let format = super::format(args.format, args.json);
    let d = discover_with(&args.dir, args.recursive, super::rank_from(args.rank_from))
        .with_context(|| format!("reading {}", args.dir.display()))?;
    let listing = Listing {
        dir: &args.dir,
        discovery: &d,
        counts: d.groups.iter().map(|g| counts(g, args.count)).collect(),
    };
    crate::report::print(&listing, format)?;
    if d.groups.is_empty() {
        // Per-step folders (`rollout_step_3/…`) hold the traces of many runs: say so.
        let below = if args.recursive {
            0
        } else {
            discover(&args.dir, true).map_or(0, |r| r.groups.len())
        };
        let dir = args.dir.display();
        let hint = match below {
            0 => String::new(),
            1 => format!("; 1 profile is in its subfolders: rankprof ls -r {dir}"),
            n => format!("; {n} profiles are in its subfolders: rankprof ls -r {dir}"),
        };
        eprintln!("error: no rank traces found in {dir}{hint}");
    }
    Ok(if d.groups.is_empty() {
        exit::USAGE
    } else if listing.damaged() {
        exit::PARTIAL
    } else {
        exit::OK
    })
}

/// Each file's events, notes and damage (read in parallel), or `None`s without `--count`.
fn counts(g: &Group, count: bool) -> Vec<Option<FileCount>> {
    if !count {
        return vec![None; g.files.len()];
    }
    g.files
        .par_iter()
        .map(|f| match read_trace(&f.path, |_| {}) {
            Ok(r) => Some(FileCount {
                events: r.events,
                notes: r.notes(),
                damaged: r.is_damaged(),
            }),
            Err(e) => Some(FileCount {
                events: 0,
                notes: vec![format!("unreadable: reading {e}")],
                damaged: true,
            }),
        })
        .collect()
}
