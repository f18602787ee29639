//! `rankprof compare`: arguments → [`CompareOptions`], the comparison, the report on stdout
//! (and `-o`), exit code 0 pass / 1 regression / 4 inconclusive (`--inconclusive` maps it);
//! `--power`: the detection table of a baseline.

use std::path::PathBuf;

use anyhow::{bail, Result};

use crate::cli::{CompareArgs, CompareFormat};
use crate::compare::diff::Decision;
use crate::compare::{compare, power_of, CompareOptions, Comparison, Inconclusive};
use crate::exit;
use crate::report::Format;
use crate::trace::write::writer::write_atomic_bytes;

/// The baselines (first, then the others) and CURRENT from the positionals and `--baseline`:
/// without `--baseline`, BASELINE CURRENT; with it, a lone positional is CURRENT, two are one
/// more baseline and CURRENT, and with no positional the last `--baseline` path is CURRENT
/// (`--baseline a b c CURRENT`: the option takes every path after it). `--power` takes
/// baselines only.
fn paths(a: &CompareArgs) -> Result<(Vec<PathBuf>, PathBuf)> {
    let mut base: Vec<PathBuf> = a.baseline.iter().cloned().collect();
    let mut more = a.baselines.clone();
    if a.power {
        base.extend(a.current.clone());
        base.extend(more);
        return Ok((base, PathBuf::new()));
    }
    let current = match (&a.current, base.pop()) {
        (Some(c), Some(b)) => {
            base.push(b);
            c.clone()
        }
        (None, Some(lone)) if !more.is_empty() => lone,
        (None, None) if more.len() >= 2 => more.pop().unwrap_or_default(),
        (None, None) => bail!(
            "compare: CURRENT missing: give the baselines and then CURRENT \
             (`compare --baseline a b c CURRENT`, or `compare CURRENT --baseline a b c`)"
        ),
        _ => bail!("compare: CURRENT missing (compare BASELINE CURRENT)"),
    };
    base.extend(more);
    Ok((base, current))
}

/// The library's options from the command line.
pub(crate) fn options(a: &CompareArgs) -> Result<CompareOptions> {
    let (base, current) = paths(a)?;
    let Some((first, more)) = base.split_first() else {
        bail!("compare: no baseline");
    };
    Ok(CompareOptions {
        baseline: first.clone(),
        current,
        more_baselines: more.to_vec(),
        max_regression: a.max_regression,
        max_imbalance: a.max_imbalance,
        max_slowdown: a.max_slowdown,
        min_time_us: a.min_time_us,
        normalize: a.normalize,
        allow_new_kernels: a.allow_new_kernels,
        basis: a.basis,
        top_n: a.top_n,
        profile_id: a.profile_id.clone(),
        stage: a.stage.clone(),
        jobs: a.jobs,
        gate: a.gate,
    })
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
    let opts = options(args)?;
    if args.power {
        return power(args, &opts);
    }
    let out = compare(&opts)?;
    if let Some(path) = &args.output {
        if let Ok(o) = std::fs::canonicalize(path) {
            let mut all = out.inputs.clone();
            all.push(opts.baseline.clone());
            all.push(opts.current.clone());
            all.extend(opts.more_baselines.iter().cloned());
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
    Ok(code(&out.comparison, args.inconclusive))
}

/// The exit code of a judged comparison.
fn code(c: &Comparison, policy: Inconclusive) -> i32 {
    match (c.decision, policy) {
        (Decision::Regression, _) => exit::FAILED,
        (Decision::NoChange, _) | (Decision::Inconclusive, Inconclusive::Pass) => exit::OK,
        (Decision::Inconclusive, Inconclusive::Fail) => exit::FAILED,
        (Decision::Inconclusive, Inconclusive::Code) => exit::INCONCLUSIVE,
    }
}

/// `--power`: the detection table on stdout (and `-o`), in --format; exit 0.
fn power(args: &CompareArgs, opts: &CompareOptions) -> Result<i32> {
    let p = power_of(opts)?;
    let text = match format(args.format, args.json) {
        Format::Json => serde_json::to_string_pretty(&p)? + "\n",
        Format::Markdown => crate::report::compare::power_markdown(&p),
        _ => crate::report::compare::power_table(&p),
    };
    print!("{text}");
    if let Some(o) = &args.output {
        write_atomic_bytes(o, text.as_bytes())?;
        eprintln!("wrote {}", o.display());
    }
    Ok(exit::OK)
}
