//! `rankprof compare`: arguments → [`CompareOptions`], the comparison, the report on stdout
//! (and `-o`), exit code 0 pass / 1 regression.

use anyhow::{bail, Result};

use crate::cli::{CompareArgs, CompareFormat};
use crate::compare::{compare, CompareOptions, Comparison};
use crate::exit;
use crate::report::Format;
use crate::trace::write::writer::write_atomic_bytes;

/// The library's options from the command line.
pub(crate) fn options(a: &CompareArgs) -> CompareOptions {
    CompareOptions {
        baseline: a.baseline.clone(),
        current: a.current.clone(),
        max_regression: a.max_regression,
        max_imbalance: a.max_imbalance,
        min_time_us: a.min_time_us,
        normalize: a.normalize,
        allow_new_kernels: a.allow_new_kernels,
        basis: a.basis,
        top_n: a.top_n,
        profile_id: a.profile_id.clone(),
        stage: a.stage.clone(),
        jobs: a.jobs,
    }
}

/// The report format of the command line.
fn format(f: CompareFormat, json: bool) -> Format {
    if json {
        return Format::Json;
    }
    match f {
        CompareFormat::Table => Format::Terminal,
        CompareFormat::Markdown => Format::Markdown,
        CompareFormat::Csv => Format::Csv,
        CompareFormat::Json => Format::Json,
    }
}

/// The report in the format asked for.
pub fn render(c: &Comparison, f: Format) -> Result<String> {
    let mut out = Vec::new();
    crate::report::write(c, f, &mut out)?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// Compares, prints, writes `-o`; exit code 0 pass, 1 regression (errors: 2, by the caller).
pub(crate) fn run(args: &CompareArgs) -> Result<i32> {
    if let Some(o) = &args.output {
        super::check_output_file("-o", o)?;
    }
    let format = format(args.format, args.json);
    if args.quiet && format != Format::Terminal {
        bail!("--quiet prints the verdict as text: drop it, or drop --format/--json");
    }
    let out = compare(&options(args))?;
    if let Some(path) = &args.output {
        if let Ok(o) = std::fs::canonicalize(path) {
            let mut all = out.inputs.clone();
            all.push(args.baseline.clone());
            all.push(args.current.clone());
            if all
                .iter()
                .any(|i| std::fs::canonicalize(i).is_ok_and(|i| i == o))
            {
                bail!("-o {}: is an input; choose another file", path.display());
            }
        }
    }
    for n in &out.notes {
        eprintln!("{}", crate::report::note(n));
    }
    let text = if args.quiet {
        crate::report::compare::quiet(&out.comparison)
    } else {
        render(&out.comparison, format)?
    };
    {
        use std::io::Write as _;
        let mut out = std::io::stdout().lock();
        out.write_all(text.as_bytes())?;
        out.flush()?;
    }
    if let Some(o) = &args.output {
        write_atomic_bytes(o, text.as_bytes())?;
        eprintln!("wrote {}", o.display());
    }
    Ok(if out.comparison.passed {
        exit::OK
    } else {
        exit::FAILED
    })
}
