//! `rankprof merge` / `merge-traces`: arguments → [`MergeOptions`], one merge per profile
//! found, a few lines per profile on stdout (or, with `--format json|csv|markdown`, the result
//! records), the exit code.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};

use crate::cli::{MergeArgs, ReportFormat};
use crate::exit;
use crate::merge::{filter, gather, merge_group, MergeOptions, MergeResult};
use crate::report::tidy::{f, i, s, Tidy, Val};
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
    let target = output_target(args.output.as_deref())?;
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
    let format = if args.json {
        ReportFormat::Json
    } else {
        args.format
    };
    // A default name another writer's merged trace holds (SGLang's own) is left to it.
    let outs: Vec<PathBuf> = d
        .groups
        .iter()
        .map(|g| {
            let (out, note) = match &target {
                Target::Beside => g.merged_path(&g.dir),
                Target::Dir(dir) => g.merged_path(dir),
                Target::File(f) => (f.to_path_buf(), None),
            };
            if let Some(n) = note {
                eprintln!("note: {n}");
            }
            out
        })
        .collect();
    // Profiles of the same id in several folders (`-r` over per-step folders) would write
    // one file into `-o DIR`: the later would replace the earlier.
    for (k, out) in outs.iter().enumerate() {
        if let Some(j) = outs[..k].iter().position(|o| o == out) {
            bail!(
                "-o {}: the profiles in {} and {} would both be written as {}; \
                 leave out -o to write each beside its ranks",
                args.output.as_deref().unwrap_or(Path::new(".")).display(),
                d.groups[j].dir.display(),
                d.groups[k].dir.display(),
                out.display()
            );
        }
    }
    let mut code = exit::OK;
    let mut records = Records::new();
    for (g, out) in d.groups.iter().zip(&outs) {
        let t = Instant::now();
        let res = pool.install(|| merge_group(g, out, &opts))?;
        let secs = t.elapsed().as_secs_f64();
        if format == ReportFormat::Table {
            print_result(g, &res, secs);
        } else {
            records.add(g, &res, secs);
        }
        code = code.max(res.exit_code());
    }
    if format != ReportFormat::Table {
        print!("{}", records.render(format, &d.notes)?);
    }
    Ok(code)
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
        return Ok(Target::Dir(o));
    }
    if slash {
        bail!("-o {}: no such directory", o.display());
    }
    super::check_output_file("-o", o)?;
    Ok(Target::File(o))
}

/// The merge results as records: one row per profile (output path, ranks, events, …) and one
/// per rank (events written, filtered out, clock shift, notes, unreadable).
struct Records {
    profiles: Tidy,
    ranks: Tidy,
}

impl Records {
    fn new() -> Records {
        Records {
            profiles: Tidy::new(
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
            ),
            ranks: Tidy::new(
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
            ),
        }
    }

    fn add(&mut self, g: &Group, res: &MergeResult, secs: f64) {
        let stage = g.stage.as_deref().map_or(Val::Null, s);
        self.profiles.rows.push(vec![
            s(&g.profile_id),
            stage.clone(),
            res.output
                .as_ref()
                .map_or(Val::Null, |p| s(p.display().to_string())),
            i(res.ranks.len() as i64),
            i(res.events),
            i(res.bytes_in),
            i(res.uncompressed_out),
            f(secs),
            s(res.damaged().to_string()),
            i(res.exit_code()),
            s(res.notes.join("; ")),
        ]);
        for r in &res.ranks {
            self.ranks.rows.push(vec![
                s(&g.profile_id),
                stage.clone(),
                s(&r.label),
                i(r.read),
                i(r.written),
                i(r.dropped),
                i(r.shift.0),
                s(r.damaged.to_string()),
                r.stopped_early.as_deref().map_or(Val::Null, s),
                r.unreadable.as_deref().map_or(Val::Null, s),
                s(r.notes.join("; ")),
                s(r.path.display().to_string()),
            ]);
        }
    }

    /// JSON: `{profiles, ranks, notes}`; CSV: the ranks table; markdown: both tables.
    fn render(&self, format: ReportFormat, notes: &[String]) -> Result<String> {
        Ok(match format {
            ReportFormat::Json => {
                let v = serde_json::json!({"profiles": self.profiles.records(),
                    "ranks": self.ranks.records(), "notes": notes});
                serde_json::to_string_pretty(&v)? + "\n"
            }
            ReportFormat::Csv => self.ranks.csv(),
            _ => format!(
                "# rankprof merge\n\n## Profiles\n\n{}\n## Ranks\n\n{}",
                self.profiles.markdown(),
                self.ranks.markdown()
            ),
        })
    }
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
