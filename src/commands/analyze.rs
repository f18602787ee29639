//! `rankprof analyze` / `analyze-profile`: arguments → [`AnalyzeOptions`], the analysis, the
//! report on stdout in the chosen format, the files asked for (HTML, tidy CSVs, Parquet, summary), the exit
//! code.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};

use crate::analyze::reduce::groups::Dim;
use crate::analyze::{analyze_found, partial, summary, Analysis, AnalyzeOptions, Found, RankSel};
use crate::cli::{AnalyzeArgs, ColorArg, GroupByArg, ViewArg};
use crate::exit;
use crate::report::analysis::AnalysisReport;
use crate::report::groups::View;
use crate::trace::write::writer::write_atomic_bytes;

/// The library's options from the command line.
pub(crate) fn options(a: &AnalyzeArgs) -> AnalyzeOptions {
    let (profile_dir, files) = super::inputs(&a.profile_dir, &a.files);
    AnalyzeOptions {
        profile_dir,
        files,
        rank: a.rank.as_deref().map(RankSel::parse),
        profile_id: a.profile_id.clone(),
        stage: a.stage.clone(),
        rank_from: super::rank_from(a.rank_from),
        top_n: a.top_n,
        step_marker: a.step_marker.clone(),
        threshold: a.threshold,
        classes: a.classes.clone(),
        summary_kernels: a.summary_kernels,
        jobs: a.jobs,
        keep_partial: a.keep_partial,
        align: a.align == crate::cli::AlignArg::Collectives,
        ideal_timeline: false,
        waiters: false,
    }
}

fn view(v: ViewArg) -> View {
    match v {
        ViewArg::Auto => View::Auto,
        ViewArg::Ranks => View::Ranks,
        ViewArg::Grouped => View::Grouped,
    }
}

fn dim(g: GroupByArg) -> Dim {
    match g {
        GroupByArg::Dp => Dim::Dp,
        GroupByArg::Tp => Dim::Tp,
        GroupByArg::Pp => Dim::Pp,
        GroupByArg::Ep => Dim::Ep,
        GroupByArg::Node => Dim::Node,
    }
}

/// Whether the terminal report is coloured: `--color`; `auto` is stdout on a terminal and
/// `NO_COLOR` unset or empty (https://no-color.org).
fn color(c: ColorArg) -> bool {
    use std::io::IsTerminal;
    match c {
        ColorArg::Always => true,
        ColorArg::Never => false,
        ColorArg::Auto => {
            std::io::stdout().is_terminal()
                && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
        }
    }
}

/// Analyzes, prints, writes the requested files. Exit code: OK, or PARTIAL when an input was
/// damaged.
pub(crate) fn run(args: &AnalyzeArgs) -> Result<i32> {
    // Before anything is discovered: discovery reads reports through their exports.
    crate::trace::read::nsys::export::keep_exports(args.keep_sqlite);
    if args.parquet.is_some() && !cfg!(feature = "parquet") {
        bail!("--parquet needs Parquet support: rebuild with `cargo build --release --features parquet`");
    }
    let format = super::format(args.format, args.json);
    if args.quiet && format != crate::report::Format::Terminal {
        bail!("--quiet prints the verdict as text: drop it, or drop --format/--json");
    }
    let opts = options(args);
    // Found once: which stages the profile has, then (when it is one) what it reads.
    let found = if args.save_partial.is_none() && args.from_partials.is_empty() {
        let found = crate::analyze::find(&opts)?;
        let stages = found.stages(&opts);
        if !stages.is_empty() {
            return by_stage(args, format, &found, &stages);
        }
        Some(found)
    } else {
        None
    };
    for (flag, out) in [
        ("--html", &args.html),
        ("--save-summary", &args.save_summary),
        ("--save-partial", &args.save_partial),
    ] {
        if let Some(o) = out {
            super::check_output_file(flag, o)?;
        }
    }
    for (flag, dir) in [("--csv-dir", &args.csv_dir), ("--parquet", &args.parquet)] {
        if let Some(d) = dir {
            super::make_output_dir(flag, d)?;
        }
    }
    if let Some(path) = &args.save_partial {
        return save_partial(args, &opts, path);
    }
    // Not found only for `--from-partials` (`--save-partial` returned above).
    let a = match found {
        Some(found) => analyze_found(&opts, found)?,
        None => partial::analyze_partials(&args.from_partials, &opts)?,
    };
    refuse_to_overwrite_inputs(args, &a)?;
    for n in &a.notes {
        eprintln!("{}", crate::report::note(n));
    }
    let report = AnalysisReport {
        analysis: &a,
        view: view(args.view),
        group_by: args.group_by.map(dim),
        color: color(args.color),
        quiet: args.quiet,
    };
    crate::report::print(&report, format)?;
    if let Some(dir) = &args.csv_dir {
        let files = crate::report::tidy::write_csv_dir(&a, dir)?;
        eprintln!("wrote {} CSV files into {}", files.len(), dir.display());
    }
    if let Some(path) = &args.html {
        let html = crate::report::html::render_view(&a, view(args.view), args.group_by.map(dim));
        write_atomic_bytes(path, html.as_bytes())?;
        eprintln!("wrote {}", path.display());
    }
    if let Some(dir) = &args.parquet {
        let files = crate::report::parquet::write(&a, dir)?;
        eprintln!("wrote {} Parquet files into {}", files, dir.display());
    }
    if let Some(path) = &args.save_summary {
        let s = a.summary.as_ref().context("no summary was built")?;
        let text = summary::to_json(s)?;
        write_atomic_bytes(path, text.as_bytes())?;
        eprintln!("wrote {} ({} bytes)", path.display(), text.len());
    }
    Ok(if a.damaged { exit::PARTIAL } else { exit::OK })
}

/// A by-stage profile (SGLang's `profile_by_stage`) without `--stage`: each stage analyzed
/// and printed on its own, in turn, as `merge` merges each. The files written per analysis
/// (and JSON/CSV, one document) hold one stage: those ask for `--stage`.
fn by_stage(
    args: &AnalyzeArgs,
    format: crate::report::Format,
    found: &Found,
    stages: &[String],
) -> Result<i32> {
    use crate::report::Format;
    let list = stages.join(", ");
    let one_doc = matches!(format, Format::Json | Format::Csv);
    if let Some(flag) = [
        (args.html.is_some(), "--html"),
        (args.save_summary.is_some(), "--save-summary"),
        (args.csv_dir.is_some(), "--csv-dir"),
        (args.parquet.is_some(), "--parquet"),
        (one_doc, "--format json/csv"),
    ]
    .iter()
    .find_map(|(on, f)| on.then_some(f))
    {
        bail!(
            "a by-stage profile (stages {list}): {flag} writes one stage; add --stage {} \
             (or run once per stage)",
            stages[0]
        );
    }
    eprintln!(
        "{}",
        crate::report::note(&format!(
            "a by-stage profile: each stage analyzed on its own ({list}); --stage picks one"
        ))
    );
    let mut code = exit::OK;
    for (i, st) in stages.iter().enumerate() {
        let mut opts = options(args);
        opts.stage = Some(st.clone());
        let a = analyze_found(&opts, found.clone())?;
        for n in &a.notes {
            eprintln!("{}", crate::report::note(n));
        }
        {
            use std::io::Write as _;
            let mut out = std::io::stdout().lock();
            if i > 0 {
                writeln!(out)?;
            }
            // The full report names its stage on its first line; the verdict alone does not.
            if args.quiet {
                writeln!(out, "Stage {st}:")?;
            }
        }
        let report = AnalysisReport {
            analysis: &a,
            view: view(args.view),
            group_by: args.group_by.map(dim),
            color: color(args.color),
            quiet: args.quiet,
        };
        crate::report::print(&report, format)?;
        if a.damaged {
            code = exit::PARTIAL;
        }
    }
    Ok(code)
}

/// `--save-partial`: the read phase of the ranks given, written to `path`; no report.
fn save_partial(args: &AnalyzeArgs, opts: &AnalyzeOptions, path: &std::path::Path) -> Result<i32> {
    let p = partial::read_partial(opts, args.shard)?;
    let inputs: Vec<PathBuf> = p
        .read
        .files
        .iter()
        .filter_map(|f| std::fs::canonicalize(&f.info.path).ok())
        .collect();
    if let Ok(c) = std::fs::canonicalize(path) {
        if inputs.contains(&c) {
            bail!(
                "{}: is an input trace; choose another output file",
                path.display()
            );
        }
    }
    let bytes = partial::write(path, &p)?;
    let damaged = p.read.files.iter().any(|f| f.info.damaged);
    for n in p
        .read
        .plan_notes
        .iter()
        .chain(p.read.files.iter().flat_map(|f| &f.notes))
    {
        eprintln!("{}", crate::report::note(n));
    }
    eprintln!(
        "wrote {} ({} of profile {}, {bytes} bytes)",
        path.display(),
        crate::analyze::explain::measure::count(p.ranks(), "rank"),
        p.read.profile_id
    );
    Ok(if damaged { exit::PARTIAL } else { exit::OK })
}

/// Output files must never replace an input trace.
fn refuse_to_overwrite_inputs(args: &AnalyzeArgs, a: &Analysis) -> Result<()> {
    if args.html.is_none() && args.save_summary.is_none() {
        // Nothing written: no input to resolve (1,024 ranks: a readlink and stat each).
        return Ok(());
    }
    let inputs: Vec<PathBuf> = a
        .files
        .iter()
        .filter_map(|f| std::fs::canonicalize(&f.path).ok())
        .collect();
    for out in [&args.html, &args.save_summary].into_iter().flatten() {
        if let Ok(c) = std::fs::canonicalize(out) {
            if inputs.contains(&c) {
                bail!(
                    "{}: is an input trace; choose another output file",
                    out.display()
                );
            }
        }
    }
    Ok(())
}
