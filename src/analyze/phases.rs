//! The two phases of an analysis. **Read** (the map): plan the inputs, read each file in
//! parallel into its rank results ([`Read`]: per file, its ranks, its [`FileInfo`] and notes).
//! **Reduce**: put the files in rank order, name the ranks missing from the grid and the
//! unreadable ones, give ranks that lost their base time the common base, refuse a rank seen
//! twice, and run the cross-rank analysis. `analyze` runs both in one process; `--save-partial`
//! writes the read phase of some ranks to a file ([`super::partial`]) and `--from-partials`
//! runs the reduce over several such files: the same code either way.
//!
//! The read phase runs the stages of [`super::collect`] per file; the reduce runs the
//! cross-rank analysis ([`super::cross`]: [`super::reduce`] then [`super::explain`]) over the
//! ranks kept and builds the [`Analysis`] and its saved summary.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use rayon::prelude::*;
use regex::Regex;
use serde::{Deserialize, Serialize};

use super::classes::Classifier;
use super::collect::collector::Config;
use super::collect::plan::{plan, read_input, FileInfo, FileResult, Found};
use super::collect::rank::RankResult;
use super::collect::snapshot::{read_snapshots, snapshot_paths, SnapshotFile};
use super::collect::spill;
use super::model::Analysis;
use super::options::{AnalyzeOptions, RankSel};
use super::rankset;
use crate::trace::{self, RankId};

/// What the read phase found: every input file's ranks, before anything across ranks.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Read {
    pub profile_id: String,
    pub stage: Option<String>,
    /// Notes of the planning (the listing, the discovery).
    pub plan_notes: Vec<String>,
    /// The rank of every rank file planned (empty for a merged trace), for the ranks missing
    /// from the grid.
    pub grid: Vec<RankId>,
    /// The input is one merged trace (its ranks recovered from pid labels).
    pub merged: bool,
    /// The files in rank order.
    pub files: Vec<FileRead>,
    /// The memory snapshots (`*.pickle`) beside the traces.
    #[serde(default)]
    pub snapshots: Vec<SnapshotFile>,
}

/// One input file after the read phase.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FileRead {
    /// The rank the plan gave the file (its sort key orders files across partials).
    pub id: RankId,
    pub info: FileInfo,
    pub notes: Vec<String>,
    /// Its rank(s): one for a rank file, several for a merged trace, none when unreadable.
    pub ranks: Vec<RankResult>,
}

impl FileRead {
    /// The order of files in an analysis: the plan's (rank, then path).
    pub(crate) fn order(a: &FileRead, b: &FileRead) -> std::cmp::Ordering {
        a.id.sort_key()
            .cmp(&b.id.sort_key())
            .then_with(|| Path::new(&a.info.path).cmp(Path::new(&b.info.path)))
    }
}

/// The kernel class rules `--classes` names (with the text of the file, which a partial
/// carries), or the built-in ones.
pub fn rules(args: &AnalyzeOptions) -> Result<(Classifier, Option<String>)> {
    match &args.classes {
        Some(p) => {
            let text = std::fs::read_to_string(p)
                .with_context(|| format!("cannot read class rules {}", p.display()))?;
            let c = Classifier::from_toml(&text)
                .with_context(|| format!("class rules {}", p.display()))?;
            Ok((c, Some(text)))
        }
        None => Ok((Classifier::default(), None)),
    }
}

/// The read phase over the files `args` name (`found`: what [`super::find`] found for them); with
/// `shard = (k, n)`, only the k-th of n contiguous slices of the planned files (1-based), for
/// one map task of a driver.
pub fn read(
    args: &AnalyzeOptions,
    found: Found,
    classifier: &Classifier,
    shard: Option<(usize, usize)>,
) -> Result<Read> {
    let marker = match &args.step_marker {
        Some(m) => Some(
            Regex::new(m).with_context(|| format!("--step-marker {m:?} is not a valid regex"))?,
        ),
        None => None,
    };
    let mut plan = plan(args, found)?;
    if let Some((k, n)) = shard {
        if n == 0 || k == 0 || k > n {
            bail!("--shard {k}/{n}: K must be 1 to N");
        }
        let len = plan.inputs.len();
        let (lo, hi) = ((k - 1) * len / n, k * len / n);
        plan.inputs = plan.inputs[lo..hi].to_vec();
        plan.grid = plan.inputs.iter().map(|i| i.id.clone()).collect();
    }
    // `--rank` names the rank the drill-down is about; every rank is read (its peers are the
    // comparison). One file may hold several ranks (a merged trace, also one renamed): the
    // name is checked among them once it is read.
    let single = plan.inputs.len() == 1;
    let named_merged = single && trace::is_merged_trace(&plan.inputs[0].path);
    if let (Some(sel), false) = (&args.rank, single) {
        let labels: Vec<&str> = plan.inputs.iter().map(|i| i.label.as_str()).collect();
        let n = match sel {
            RankSel::Index(n) => *n,
            RankSel::Label(_) => labels.iter().position(|l| sel.names(l)).with_context(|| {
                format!(
                    "--rank {sel}: no such rank; the profile's ranks: {}",
                    rankset::compact(&labels)
                )
            })?,
        };
        if n >= plan.inputs.len() {
            bail!(
                "--rank {n}: the profile has {} (0-{})",
                crate::analyze::explain::measure::count(plan.inputs.len(), "rank"),
                plan.inputs.len().saturating_sub(1)
            );
        }
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(args.jobs.unwrap_or(0))
        .build()
        .context("cannot start worker threads")?;
    let in_flight = pool.current_num_threads().min(plan.inputs.len());
    let cfg = Config {
        classes: classifier,
        step_marker: marker.as_ref(),
        spool_cap: spill::cap_for(in_flight),
    };
    let custom = marker.is_some();
    let read: Vec<Result<FileResult>> = pool.install(|| {
        plan.inputs
            .par_iter()
            .map(|i| read_input(i, &cfg, classifier, custom))
            .collect()
    });
    let snapshots = pool.install(|| read_snapshots(&snapshot_paths(args)));
    let mut files = Vec::new();
    for (input, r) in plan.inputs.iter().zip(read) {
        files.push(match r {
            Ok((ranks, info, notes)) => FileRead {
                id: input.id.clone(),
                info,
                notes,
                ranks,
            },
            // The file could not be opened: its rank is left out, named, and the result is
            // partial (only read_trace's open fails; damage inside a file is not an error).
            Err(e) => {
                let why = format!("reading {}", e.root_cause());
                FileRead {
                    id: input.id.clone(),
                    notes: vec![format!(
                        "rank {} is unreadable and left out: {why}",
                        input.label
                    )],
                    info: FileInfo {
                        path: input.path.display().to_string(),
                        events: 0,
                        bytes: 0,
                        gzip: false,
                        damaged: true,
                        ranks: vec![input.label.clone()],
                        unreadable: Some(why),
                        stopped_early: None,
                    },
                    ranks: Vec::new(),
                }
            }
        });
    }
    let merged = named_merged || (single && files.iter().map(|f| f.ranks.len()).sum::<usize>() > 1);
    if let (Some(sel), true) = (&args.rank, single) {
        check_rank(&files, sel)?;
    }
    Ok(Read {
        profile_id: plan.profile_id,
        stage: plan.stage,
        plan_notes: plan.notes,
        grid: plan.grid,
        merged,
        files,
        snapshots,
    })
}

/// The ranks whose data stops early (their file truncated, invalid JSON, a broken gzip
/// stream; or, in a merged trace, their file when it was merged): what was read covers only
/// part of their profile, so their work compares low and would make a complete rank look slow.
/// While a complete rank remains they are taken out of `results` (unless `keep`); either way
/// the returned line, the report's first, names them, the file, the damage and its byte offset;
/// returned with it, those names alone (`TP02 (file: damage)`, [`Analysis::stopped_early`]).
fn partial_ranks(results: &mut Vec<RankResult>, keep: bool) -> Option<(String, String)> {
    // A file that is not a trace has no figures at all: left out even with `keep`.
    let not_trace = |why: &str| why.starts_with(crate::trace::read::damage::NOT_A_TRACE);
    // (file name, why) → ranks, in rank order.
    let mut groups: Vec<((String, &str), Vec<&str>)> = Vec::new();
    for r in results.iter() {
        let Some(why) = r.stopped_early.as_deref() else {
            continue;
        };
        let file = r.path.file_name().map_or_else(
            || r.path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        let key = (file, why);
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, ranks)) => ranks.push(&r.label),
            None => groups.push((key, vec![&r.label])),
        }
    }
    if groups.is_empty() {
        return None;
    }
    let partial: usize = groups.iter().map(|(_, r)| r.len()).sum();
    let complete = results.len() - partial;
    let named_of = |gs: &[&((String, &str), Vec<&str>)]| {
        gs.iter()
            .map(|((file, why), ranks)| format!("{} ({file}: {why})", rankset::compact(ranks)))
            .collect::<Vec<_>>()
            .join("; ")
    };
    let all: Vec<_> = groups.iter().collect();
    let named = named_of(&all);
    let (no_trace, read): (Vec<_>, Vec<_>) =
        groups.iter().partition(|((_, why), _)| not_trace(why));
    let count =
        |gs: &[&((String, &str), Vec<&str>)]| gs.iter().map(|(_, r)| r.len()).sum::<usize>();
    let (its, them) = if count(&read) == 1 {
        ("its", "it")
    } else {
        ("their", "them")
    };
    let mut parts = Vec::new();
    if !no_trace.is_empty() && complete > 0 {
        parts.push(format!(
            "Left out of the comparison: {}: no trace to compare.",
            named_of(&no_trace)
        ));
    }
    let caution = keep || complete == 0;
    let read_named = named_of(if complete > 0 { &read } else { &all });
    if !read_named.is_empty() {
        parts.push(if caution {
            format!(
                "Caution: {read_named}: {its} figures cover only what could be read and compare \
                 low against complete ranks."
            )
        } else {
            format!(
                "Left out of the comparison: {read_named}: {its} figures would cover only what \
                 could be read (--keep-partial compares {them} anyway)."
            )
        });
    }
    if complete > 0 {
        results.retain(|r| {
            r.stopped_early
                .as_deref()
                .is_none_or(|why| keep && !not_trace(why))
        });
    }
    Some((named, parts.join(" ")))
}

/// `--rank` on one file, which may hold several ranks (a merged trace): the rank must be among
/// them. A file read as no rank at all (unreadable) is left for the reduce to report.
fn check_rank(files: &[FileRead], sel: &RankSel) -> Result<()> {
    let total: usize = files.iter().map(|f| f.ranks.len()).sum();
    if total == 0 {
        return Ok(());
    }
    let n = match sel {
        RankSel::Index(n) => *n,
        RankSel::Label(_) => {
            let labels: Vec<&str> = files
                .iter()
                .flat_map(|f| f.ranks.iter().map(|r| r.label.as_str()))
                .collect();
            labels.iter().position(|l| sel.names(l)).with_context(|| {
                format!(
                    "--rank {sel}: no such rank; the trace's ranks: {}",
                    rankset::compact(&labels)
                )
            })?
        }
    };
    if n >= total {
        let ranks = if total == 1 { "rank" } else { "ranks" };
        bail!(
            "--rank {n}: the trace has {total} {ranks} (0-{})",
            total - 1
        );
    }
    Ok(())
}

/// The reduce phase: every rank of `read` across ranks, into the report.
pub fn reduce(read: Read, classifier: &Classifier, args: &AnalyzeOptions) -> Result<Analysis> {
    let threshold = args.threshold / 100.0;
    let (snapshots, snapshot_notes) = attach_snapshots(&read);
    let mut notes = read.plan_notes;
    notes.extend(snapshot_notes);
    let missing = trace::discover::grid::missing_in(&read.grid);
    if !missing.is_empty() {
        notes.push(format!(
            "ranks missing from the grid: {}",
            missing.join(", ")
        ));
    }
    let mut results: Vec<RankResult> = Vec::new();
    let mut files = Vec::new();
    let mut dirs: Vec<PathBuf> = Vec::new();
    for f in read.files {
        results.extend(f.ranks);
        notes.extend(f.notes);
        // Each directory once: the onset evidence lists each directory it is given.
        if let Some(d) = Path::new(&f.info.path).parent() {
            if !dirs.iter().any(|l| l == d) {
                dirs.push(d.to_path_buf());
            }
        }
        files.push(f.info);
    }
    let unreadable: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let why = f.unreadable.as_ref()?;
            Some(format!("{}: {why}", f.ranks.join(", ")))
        })
        .collect();
    if results.is_empty() && !unreadable.is_empty() {
        bail!(
            "no rank of profile {} could be read:\n  {}",
            read.profile_id,
            unreadable.join("\n  ")
        );
    }
    // `--rank N` is the N-th rank read: named by its label before a rank is left out.
    let by_label;
    let args = match &args.rank {
        Some(sel @ RankSel::Index(_)) => match super::cross::selected(&results, sel) {
            Some(i) => {
                by_label = AnalyzeOptions {
                    rank: Some(RankSel::Label(results[i].label.clone())),
                    ..args.clone()
                };
                &by_label
            }
            None => args,
        },
        _ => args,
    };
    let partial_line = partial_ranks(&mut results, args.keep_partial);
    // A rank cut short before Kineto wrote its baseTimeNanoseconds (after the events) has
    // relative times: it gets the common base of the others, as `merge` does.
    if let Some(common) = results.iter().filter_map(|r| r.base_ns).min() {
        for r in results.iter_mut().filter(|r| r.lost_base) {
            r.add_base(common);
            notes.push(format!(
                "rank {} has no baseTimeNanoseconds (the file is cut short?) and relative times: \
                 given the common base",
                r.label
            ));
        }
    }
    check_ranks(&results, &read.profile_id, &mut notes)?;
    // A rank of a merged trace whose file stopped early when merged: partial data too.
    let damaged = files.iter().any(|f| f.damaged) || partial_line.is_some();
    // Where the step times start (as the step table counts them), to place the onset in time.
    let origin = results
        .iter()
        .filter_map(|r| r.steps.first().map(|s| s.start_ns.get()))
        .min();
    let mut a = super::cross::cross_rank(
        results,
        classifier,
        args,
        threshold,
        &read.profile_id,
        read.stage.as_deref(),
    )?;
    if read.merged {
        a.merged_trace = files.first().map(|f| f.path.clone());
    }
    a.files = files;
    a.verdict
        .lines
        .extend(super::explain::snapshot::lines(&snapshots, threshold));
    a.snapshots = snapshots;
    a.notes.splice(0..0, notes);
    a.damaged = damaged;
    if let Some((named, line)) = partial_line {
        a.verdict.lines.insert(0, line);
        a.stopped_early = Some(named);
    }
    // A `rankprof watch` timeline beside the traces says what the load was at the onset.
    if let (Some(o), Some(origin)) = (&a.steps.onset, origin) {
        let at = origin + (o.t_ms * 1e6).round() as i64;
        a.notes.extend(crate::load::evidence::onset_note(
            &dirs, at, &o.step, o.t_ms, &o.rank_id,
        ));
    }
    Ok(a)
}

/// The snapshots of `read`, each given to its rank ([`super::explain::snapshot::attach`]).
fn attach_snapshots(read: &Read) -> (Vec<super::explain::snapshot::SnapshotRank>, Vec<String>) {
    let files: Vec<super::explain::snapshot::TraceFile<'_>> = read
        .files
        .iter()
        .map(|f| super::explain::snapshot::TraceFile {
            id: &f.id,
            path: &f.info.path,
            labels: &f.info.ranks,
        })
        .collect();
    super::explain::snapshot::attach(&read.snapshots, &files)
}

/// The ranks read are one profile: one run ([`super::runs`]), each rank once; notes for a
/// rank with nothing in it and for CPU-only ranks beside GPU ones.
fn check_ranks(results: &[RankResult], profile: &str, notes: &mut Vec<String>) -> Result<()> {
    if let Some(why) = super::runs::not_one_run(results, profile) {
        bail!("{why}");
    }
    let mut seen = std::collections::BTreeSet::new();
    for r in results {
        if !seen.insert(r.label.clone()) {
            bail!("rank {} appears twice in the input", r.label);
        }
        if r.summary.figures.kernels == 0 && r.summary.figures.busy_ns.get() == 0 {
            notes.push(format!(
                "rank {}: no GPU kernels and no CPU ops in {}",
                r.label,
                r.path.display()
            ));
        }
    }
    if results.iter().any(|r| r.gpu) && results.iter().any(|r| !r.gpu) {
        let cpu: Vec<&str> = results
            .iter()
            .filter(|r| !r.gpu)
            .map(|r| r.label.as_str())
            .collect();
        notes.push(format!(
            "ranks {} have no GPU events: their figures come from CPU ops and do not compare with the GPU ranks'",
            rankset::compact(&cpu)
        ));
    }
    Ok(())
}
