//! `rankprof compare BASELINE CURRENT`: a performance regression gate for CI.
//!
//! Each side is a profile directory, a trace file (one rank's or a merged one) or a summary
//! saved by `analyze --save-summary`; [`load`] turns it into an analysis
//! [`Summary`](crate::analyze::summary::Summary) (traces are analyzed in-process, the same
//! analysis `analyze` runs). [`diff`] measures baseline / current / delta / delta % for the
//! job, every rank, every kernel class (over all ranks and on each rank), the top kernels, the
//! kernels that appeared or vanished ([`normalize`] matches renamed template instances with
//! `--normalize`) and the imbalance. [`gate`] judges the rows against `--max-regression`,
//! `--max-imbalance` and `--min-time-us`; [`render`] prints a terminal table, markdown for a PR
//! comment, or JSON.
//!
//! Times are per-step medians when both sides have steps (one slow step does not fail a run),
//! else whole-profile totals; the report says which. Exit codes: 0 no regression, 1
//! regression, 2 usage or input error (unreadable or damaged input).
//!
//! ```no_run
//! let args = rankprof::cli::CompareArgs {
//!     baseline: "baseline.summary.json".into(),
//!     current: "/tmp/profiles".into(),
//!     ..Default::default()
//! };
//! let c = rankprof::compare::compare(&args).unwrap();
//! for f in &c.failures {
//!     println!("{}", f.message);
//! }
//! std::process::exit(if c.passed { 0 } else { 1 });
//! ```

pub mod diff;
pub mod gate;
pub mod load;
pub mod normalize;
pub mod render;

use std::path::PathBuf;

use anyhow::{bail, Result};

use crate::cli::{CompareArgs, CompareFormat};
use crate::commands::exit;
pub use diff::Comparison;

/// Loads both sides, measures and judges, without printing anything (the notes of analyzed
/// traces are left out; `run` prints them on stderr).
pub fn compare(args: &CompareArgs) -> Result<Comparison> {
    let (c, _, _) = compare_with_notes(args)?;
    Ok(c)
}

/// A comparison, the notes of the analyses, and every file read.
type Compared = (Comparison, Vec<String>, Vec<PathBuf>);

fn compare_with_notes(args: &CompareArgs) -> Result<Compared> {
    let base = load::load(&args.baseline, "baseline", args)?;
    let cur = load::load(&args.current, "current", args)?;
    let opts = diff::Options {
        basis: args.basis,
        normalize: args.normalize,
        top_n: args.top_n,
        thresholds: diff::Thresholds {
            max_regression_pct: args.max_regression,
            max_imbalance: args.max_imbalance,
            min_time_ns: (args.min_time_us * 1e3).round() as i64,
            new_kernels_fail: !args.allow_new_kernels,
        },
    };
    let mut c = diff::build(&base.summary, &cur.summary, base.info, cur.info, &opts)?;
    gate::apply(&mut c);
    let mut notes = base.notes;
    notes.extend(cur.notes);
    let mut inputs = base.inputs;
    inputs.extend(cur.inputs);
    Ok((c, notes, inputs))
}

/// The report in the format asked for.
pub fn render(c: &Comparison, format: CompareFormat) -> Result<String> {
    Ok(match format {
        CompareFormat::Table => render::table(c),
        CompareFormat::Markdown => render::markdown(c),
        CompareFormat::Json => render::json(c)?,
    })
}

/// Compares, prints, writes `-o`; exit code 0 pass, 1 regression (errors: 2, by the caller).
pub fn run(args: &CompareArgs) -> Result<i32> {
    let (c, notes, inputs) = compare_with_notes(args)?;
    if let Some(out) = &args.output {
        if let Ok(o) = std::fs::canonicalize(out) {
            let mut all = inputs;
            all.push(args.baseline.clone());
            all.push(args.current.clone());
            if all
                .iter()
                .any(|i| std::fs::canonicalize(i).is_ok_and(|i| i == o))
            {
                bail!("-o {}: is an input; choose another file", out.display());
            }
        }
    }
    for n in &notes {
        eprintln!("note: {n}");
    }
    let text = render(&c, args.format)?;
    print!("{text}");
    if let Some(out) = &args.output {
        crate::report::formats::write_atomic(out, text.as_bytes())?;
        eprintln!("wrote {}", out.display());
    }
    Ok(if c.passed { exit::OK } else { exit::FAILED })
}
