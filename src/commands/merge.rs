//! `rankprof merge` / `merge-traces`: arguments → [`MergeOptions`], one merge per profile
//! found, a few lines per profile on stdout (or, with `--format json|csv|markdown`, the result
//! records), the exit code.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context, Result};

use crate::analyze::reduce::path::ideal::IDEAL_KEPT;
use crate::analyze::reduce::path::whatif::TRUSTED_ERROR_PCT;
use crate::analyze::{analyze, Analysis, AnalyzeOptions};
use crate::cli::MergeArgs;
use crate::exit;
use crate::merge::{
    filter, gather_with, merge_group, Align, MergeOptions, MergeResult, TraceFormat,
};
use crate::report::merged::{MergeReport, Merged};
use crate::report::Format;
use crate::trace::discover::split_run;
use crate::trace::write::overlay::Overlay;
use crate::trace::Group;

/// The library's options from the command line.
pub(crate) fn options(a: &MergeArgs) -> Result<MergeOptions> {
    let o = MergeOptions {
        align: a.align,
        ranks: a.ranks.as_deref().map(filter::parse_ranks).transpose()?,
        window: a.window.as_deref().map(filter::parse_window).transpose()?,
        steps: a.steps.as_deref().map(filter::parse_steps).transpose()?,
        drop_cat: a.drop_cat.clone(),
        gpu_only: a.gpu_only,
        strict: a.strict,
        level: a.level,
        overlays: Vec::new(),
        clock_offsets: None,
        trace_format: trace_format(a)?,
    };
    o.validate()?;
    Ok(o)
}

/// The merged file's encoding: `--trace-format`, else what `-o`'s extension says (`.pftrace`),
/// else JSON; `--trace-format json` with `-o x.pftrace` is refused.
fn trace_format(a: &MergeArgs) -> Result<TraceFormat> {
    let by_name = a.output.as_deref().and_then(TraceFormat::from_path);
    match (a.trace_format, by_name) {
        (Some(TraceFormat::Json), Some(TraceFormat::Perfetto)) => bail!(
            "-o {} names a Perfetto trace but --trace-format json was given; \
             name it .trace.json.gz or leave out --trace-format",
            a.output.as_deref().unwrap_or(Path::new("")).display()
        ),
        (Some(f), _) => Ok(f),
        (None, found) => Ok(found.unwrap_or_default()),
    }
}

pub(crate) fn run(args: &MergeArgs) -> Result<i32> {
    let opts = options(args)?;
    crate::trace::read::nsys::export::keep_exports(args.keep_sqlite);
    // -o is checked before the work (discovery exports Nsight Systems reports).
    let target = output_target(args.output.as_deref())?;
    let (profile_dir, files) = super::inputs(&args.profile_dir, &args.files);
    let d = gather_with(
        profile_dir.as_deref(),
        &files,
        args.recursive,
        args.profile_id.as_deref(),
        args.stage.as_deref(),
        super::rank_from(args.rank_from),
    )?;
    // One run split into one-rank profiles would be merged into as many one-rank "merged"
    // traces: refused, with the ways out (discovery's note says it).
    if let Some(split) = split_run(&d.groups) {
        bail!("nothing merged: {split}");
    }
    for n in &d.notes {
        eprintln!("{}", crate::report::note(n));
    }
    if matches!(target, Target::File(_)) && d.groups.len() > 1 {
        let ids: Vec<_> = d.groups.iter().map(|g| g.merged_name()).collect();
        bail!(
            "-o names one file but {} profiles were found ({}); pick one with --profile-id/--stage, \
             or give -o an existing directory to write each there",
            d.groups.len(),
            ids.join(", ")
        );
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(args.jobs.unwrap_or(0))
        .build()
        .context("starting worker threads")?;
    let format = super::format(args.format, args.json);
    let outs = output_paths(&d.groups, &target, opts.trace_format);
    check_outputs(args, &d.groups, &outs, &target)?;
    let mut code = exit::OK;
    let mut done = Vec::new();
    for (g, out) in d.groups.iter().zip(&outs) {
        let t = Instant::now();
        let mut opts = opts.clone();
        if args.critical_path || args.what_if || opts.align == Align::Collectives {
            let a = pool.install(|| analyzed(g, args.what_if));
            let drawn = Drawn {
                critical_path: args.critical_path,
                what_if: args.what_if,
            };
            from_analysis(g, a.as_ref(), drawn, &mut opts);
        }
        let res = pool.install(|| merge_group(g, out, &opts))?;
        let secs = t.elapsed().as_secs_f64();
        // Each profile's lines as soon as it is merged; the other formats are one document.
        if format == Format::Terminal {
            let one = MergeReport {
                merged: vec![merged(g, &res, secs)],
                notes: &d.notes,
            };
            crate::report::print(&one, format)?;
        }
        code = exit::worst(code, res.outcome().code());
        done.push((g, res, secs));
    }
    if format != Format::Terminal {
        let all = MergeReport {
            merged: done
                .iter()
                .map(|(g, res, secs)| merged(g, res, *secs))
                .collect(),
            notes: &d.notes,
        };
        crate::report::print(&all, format)?;
    }
    Ok(code)
}

/// Where each profile's merged trace goes. A default name another writer's merged trace holds
/// (SGLang's own) is left to it, with a note.
fn output_paths(groups: &[Group], target: &Target, format: TraceFormat) -> Vec<PathBuf> {
    groups
        .iter()
        .map(|g| {
            let (out, note) = match target {
                Target::Beside => g.merged_path(&g.dir),
                Target::Dir(dir) => g.merged_path(dir),
                Target::File(f) => return f.to_path_buf(),
            };
            if format == TraceFormat::Perfetto {
                // The Perfetto file's default name: merged-<id>[-<stage>].pftrace.
                let name = g.merged_name().replace(".trace.json.gz", ".pftrace");
                return out.with_file_name(name);
            }
            if let Some(n) = note {
                eprintln!("{}", crate::report::note(&n));
            }
            out
        })
        .collect()
}

/// Before any rank is read: every output folder is written in (the merged file and its
/// temporary pieces), so a read-only trace folder (NFS, a shared archive) fails now, with the
/// fix; and no two profiles go to one file (profiles of one id in several folders, `-r` over
/// per-step folders, into `-o DIR`: the later would replace the earlier).
fn check_outputs(
    args: &MergeArgs,
    groups: &[Group],
    outs: &[PathBuf],
    target: &Target,
) -> Result<()> {
    if matches!(target, Target::Beside) {
        let mut seen: Vec<&Path> = Vec::new();
        for g in groups {
            if !seen.contains(&g.dir.as_path()) {
                seen.push(&g.dir);
                super::probe_dir(
                    &format!("merging {}", g.merged_name()),
                    &g.dir,
                    "write the merged trace elsewhere with -o DIR",
                )?;
            }
        }
    }
    for (k, out) in outs.iter().enumerate() {
        if let Some(j) = outs[..k].iter().position(|o| o == out) {
            bail!(
                "-o {}: the profiles in {} and {} would both be written as {}; \
                 leave out -o to write each beside its ranks",
                args.output.as_deref().unwrap_or(Path::new(".")).display(),
                groups[j].dir.display(),
                groups[k].dir.display(),
                out.display()
            );
        }
    }
    Ok(())
}

/// The overlays the command line asks for.
#[derive(Clone, Copy)]
struct Drawn {
    critical_path: bool,
    what_if: bool,
}

/// What the merge takes from the group's analysis: the critical path's tracks
/// (`--critical-path`), the ideal timeline's (`--what-if`) and, with `--align collectives`,
/// each rank's clock offset (noted).
fn from_analysis(g: &Group, a: Option<&Analysis>, drawn: Drawn, opts: &mut MergeOptions) {
    if drawn.critical_path {
        opts.overlays.extend(a.and_then(|a| overlay(g, a)));
    }
    if drawn.what_if {
        opts.overlays.extend(a.and_then(|a| ideal_overlay(g, a)));
    }
    let Some(a) = a.filter(|_| opts.align == Align::Collectives) else {
        return;
    };
    opts.clock_offsets = Some(Arc::new(
        a.clocks
            .iter()
            .map(|c| (c.rank.clone(), c.offset_ns))
            .collect(),
    ));
    for c in &a.clocks {
        eprintln!(
            "note: {}: clock of {} moved by {:+.3} ms (its collectives end that much off its world's; spread {:.1} µs)",
            g.merged_name(),
            c.rank,
            -c.offset_ns.get() as f64 / 1e6,
            c.spread_ns.get() as f64 / 1e3
        );
    }
}

/// The analysis of the group's ranks (for the critical path's tracks, the clock offsets of
/// `--align collectives` and, with `ideal_timeline` (`--what-if`), the ideal timeline), or
/// `None` (said on stderr) when they cannot be analyzed: the merge goes on without it.
fn analyzed(g: &Group, ideal_timeline: bool) -> Option<Analysis> {
    let opts = AnalyzeOptions {
        files: g.files.iter().map(|f| f.path.clone()).collect(),
        ideal_timeline,
        waiters: true,
        ..Default::default()
    };
    match analyze(&opts) {
        Ok(a) => Some(a),
        Err(e) => {
            eprintln!(
                "note: {}: cannot analyze ({e:#}); merged without its critical path, what-if or clock offsets",
                g.merged_name()
            );
            None
        }
    }
}

/// The critical path of the group's ranks as merged-trace tracks, or `None` (said on stderr)
/// when no collective matched.
fn overlay(g: &Group, a: &Analysis) -> Option<Arc<Overlay>> {
    if a.path.collectives > 0 {
        return Some(Arc::new(a.path.overlay()));
    }
    eprintln!(
        "note: {}: no collective matched across ranks, so no critical path to draw",
        g.merged_name()
    );
    None
}

/// The what-if's ideal timeline of the group's ranks as merged-trace tracks, or `None` (said
/// on stderr) when there is none to draw: no collective matched, or none in a step. Said too:
/// a replay not to be trusted (drawn all the same), and steps left out past the kept records.
fn ideal_overlay(g: &Group, a: &Analysis) -> Option<Arc<Overlay>> {
    let name = g.merged_name();
    let w = &a.path.what_if;
    if a.path.collectives == 0 {
        eprintln!("note: {name}: no collective matched across ranks, so no what-if to draw");
        return None;
    }
    if w.timeline.steps.is_empty() {
        eprintln!(
            "note: {name}: no step was replayed in full (the what-if needs the step table's steps and a collective before each rank's first), so no ideal timeline to draw"
        );
        return None;
    }
    if !w.trusted() {
        eprintln!(
            "note: {name}: the what-if replays the recording only within {:.1} % (over {TRUSTED_ERROR_PCT} %): its ideal timeline is drawn but not to be trusted",
            w.error_pct
        );
    }
    if w.timeline.left_out > 0 {
        let drawn = w.timeline.steps.len();
        eprintln!(
            "note: {name}: the ideal track holds the first {drawn} steps (of {}; it keeps at most {IDEAL_KEPT} collective members)",
            drawn + w.timeline.left_out
        );
    }
    Some(Arc::new(w.timeline.overlay()))
}

/// Where `-o` sends the merged traces.
enum Target<'a> {
    /// No `-o`: each beside its rank files, under its default name.
    Beside,
    /// `-o DIR`, an existing directory: each in it, under its default name.
    Dir(&'a Path),
    /// `-o FILE`: the one profile's merged trace.
    File(&'a Path),
}

/// Reads `-o` before any rank is read, so that an output that cannot be written is said at
/// once rather than after the merge: an existing directory (or a path ending in `/`) holds
/// the merged traces under their default names; otherwise it names the file, whose directory
/// must exist.
fn output_target(output: Option<&Path>) -> Result<Target<'_>> {
    let Some(o) = output else {
        return Ok(Target::Beside);
    };
    let shown = o.as_os_str().to_string_lossy();
    let slash = shown.ends_with('/') || shown.ends_with(std::path::MAIN_SEPARATOR);
    if o.is_dir() {
        super::probe_dir(
            &format!("-o {}", o.display()),
            o,
            "name a writable directory",
        )?;
        return Ok(Target::Dir(o));
    }
    if slash {
        bail!("-o {}: no such directory", o.display());
    }
    super::check_output_file("-o", o)?;
    Ok(Target::File(o))
}

/// One profile's merge as the report shows it.
pub(crate) fn merged<'a>(g: &'a Group, res: &'a MergeResult, secs: f64) -> Merged<'a> {
    Merged {
        group: g,
        result: res,
        secs,
        exit_code: res.outcome().code(),
    }
}
