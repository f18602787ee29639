//! `rankprof analyze` / `analyze-profile`: is the load balanced across ranks, and if not, which
//! rank, which kernels, and from which step on?
//!
//! The pipeline:
//!
//! 1. **Inputs**: a profile directory, a list of rank files, or one merged trace (its ranks are
//!    recovered from the `[TP01-DP01] …` labels merged pids carry). Only regular files are
//!    read; a rank file that cannot be read at all is left out and named
//!    ([`FileInfo::unreadable`], a note), and the analysis is partial.
//! 2. **One pass per file, ranks in parallel** (rayon, `-j`): the [`collect`] module sees each
//!    event once through the reader's callback and keeps per-name aggregates, compact
//!    intervals, step annotations and collectives. [`rank::finish`] turns that into the rank's
//!    small results in the same worker and drops the intervals.
//! 3. **Across ranks**: the rank summary ([`busy`]), kernel classes and top kernels
//!    ([`classes`], [`kernels`]), the per-step table and the onset ([`steps`]), matched
//!    collectives ([`collectives`]) and the [`verdict`] on top. [`summary`] is the small JSON
//!    digest for `compare`.
//! 4. **Output** through [`crate::report`]: terminal tables, JSON / CSV / markdown, HTML,
//!    Parquet.
//!
//! ```no_run
//! let args = rankprof::cli::AnalyzeArgs {
//!     profile_dir: Some("/tmp/profiles".into()),
//!     ..Default::default()
//! };
//! let a = rankprof::analyze::analyze(&args).unwrap();
//! for line in &a.verdict.lines {
//!     println!("{line}");
//! }
//! ```

pub mod busy;
pub mod classes;
pub mod collect;
pub mod collectives;
pub mod kernels;
pub mod rank;
pub mod steps;
pub mod summary;
pub mod verdict;

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use rayon::prelude::*;
use regex::Regex;
use serde::{Deserialize, Serialize};

use crate::cli::{AnalyzeArgs, ReportFormat};
use crate::commands::exit;
use crate::trace::{self, Id, RankId};
use busy::RankSummary;
use classes::Classifier;
use collect::{Collector, Config, FxMap};
use collectives::CollectiveReport;
use kernels::{ClassTable, KernelRow};
use rank::{RankResult, StreamRow};
use steps::{StepFig, StepTable};
use verdict::Verdict;

pub use summary::{load_summary, Summary};

/// How one input file was read.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FileInfo {
    pub path: String,
    pub events: u64,
    /// Decompressed bytes.
    pub bytes: u64,
    pub gzip: bool,
    pub damaged: bool,
    /// Ranks this file gave (one, or several for a merged trace).
    pub ranks: Vec<String>,
    /// Why the file could not be read at all (`reading <path>: <OS error>`); its rank is left
    /// out of the analysis (and `damaged` is set).
    #[serde(default)]
    pub unreadable: Option<String>,
}

/// One rank in depth (`--rank N`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RankDepth {
    pub rank: String,
    pub summary: RankSummary,
    pub classes: Vec<DepthClass>,
    pub kernels: Vec<DepthKernel>,
    pub streams: Vec<StreamRow>,
    pub step_source: String,
    pub steps: Vec<StepFig>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DepthClass {
    pub class: String,
    pub total_ns: i64,
    /// Share of the rank's summed op time, percent.
    pub pct: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DepthKernel {
    pub name: String,
    pub short: String,
    pub class: String,
    pub kind: String,
    pub total_ns: i64,
    pub count: u64,
    pub mean_ns: f64,
    pub min_ns: i64,
    pub max_ns: i64,
    /// Share of the rank's summed op time, percent.
    pub pct: f64,
}

/// The whole report of one profile.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Analysis {
    pub profile_id: String,
    pub stage: Option<String>,
    pub files: Vec<FileInfo>,
    /// `gpu` (every rank has GPU ops), `cpu` (none has: CPU-only traces) or `mixed`.
    pub source: String,
    pub threshold_pct: f64,
    pub verdict: Verdict,
    pub ranks: Vec<RankSummary>,
    pub classes: ClassTable,
    pub kernels: Vec<KernelRow>,
    pub steps: StepTable,
    pub collectives: CollectiveReport,
    pub depth: Option<RankDepth>,
    pub notes: Vec<String>,
    /// Some input was damaged: figures cover what could be read.
    pub damaged: bool,
    #[serde(skip)]
    pub summary: Option<Summary>,
}

impl Analysis {
    /// Every note of the report: inputs, steps, collectives.
    pub fn all_notes(&self) -> Vec<&String> {
        self.notes
            .iter()
            .chain(&self.steps.notes)
            .chain(&self.collectives.notes)
            .collect()
    }
}

/// Analyzes, prints, writes the requested files. Exit code: OK, or PARTIAL when an input was
/// damaged.
pub fn run(args: &AnalyzeArgs) -> Result<i32> {
    if args.parquet.is_some() && !cfg!(feature = "parquet") {
        bail!("--parquet needs Parquet support: rebuild with `cargo build --release --features parquet`");
    }
    let a = analyze(args)?;
    refuse_to_overwrite_inputs(args, &a)?;
    for n in &a.notes {
        eprintln!("note: {n}");
    }
    let text = match args.format {
        ReportFormat::Table => crate::report::tables::render(&a),
        ReportFormat::Json => crate::report::formats::json(&a)?,
        ReportFormat::Csv => crate::report::formats::csv(&a),
        ReportFormat::Markdown => crate::report::formats::markdown(&a),
    };
    print!("{text}");
    if let Some(path) = &args.html {
        crate::report::formats::write_atomic(path, crate::report::html::render(&a).as_bytes())?;
        eprintln!("wrote {}", path.display());
    }
    if let Some(dir) = &args.parquet {
        let files = crate::report::parquet::write(&a, dir)?;
        eprintln!("wrote {} Parquet files into {}", files, dir.display());
    }
    if let Some(path) = &args.save_summary {
        let s = a.summary.as_ref().context("no summary was built")?;
        let text = summary::to_json(s)?;
        crate::report::formats::write_atomic(path, text.as_bytes())?;
        eprintln!("wrote {} ({} bytes)", path.display(), text.len());
    }
    Ok(if a.damaged { exit::PARTIAL } else { exit::OK })
}

/// Output files must never replace an input trace.
fn refuse_to_overwrite_inputs(args: &AnalyzeArgs, a: &Analysis) -> Result<()> {
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

/// One file to read, with the rank it holds (a merged trace may hold several).
#[derive(Debug, Clone)]
struct Input {
    path: PathBuf,
    label: String,
    id: RankId,
}

struct Plan {
    profile_id: String,
    stage: Option<String>,
    inputs: Vec<Input>,
    notes: Vec<String>,
}

fn is_trace_name(p: &Path) -> bool {
    p.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.ends_with(".json") || n.ends_with(".json.gz"))
}

fn is_merged_name(p: &Path) -> bool {
    p.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with("merged-"))
}

fn strip_brackets(label: &str) -> String {
    label
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string()
}

/// Finds the files to read: rank files win over a merged trace in the same directory.
fn plan(args: &AnalyzeArgs) -> Result<Plan> {
    let mut ranks: Vec<PathBuf> = Vec::new();
    let mut merged: Vec<PathBuf> = Vec::new();
    // Regular files only; unreadable rank files kept (reported later); see trace::discover.
    let mut listing = trace::discover::Listing::default();
    if let Some(dir) = &args.profile_dir {
        listing = trace::discover::list_dir(dir, false)
            .with_context(|| format!("cannot read directory {}", dir.display()))?;
    }
    let given = trace::discover::list_files(&args.files)?;
    listing.notes.extend(given.notes);
    for p in listing.files.into_iter().chain(given.files) {
        if !is_trace_name(&p) {
            continue;
        }
        if is_merged_name(&p) {
            merged.push(p);
        } else {
            ranks.push(p);
        }
    }
    if args.profile_dir.is_none() && args.files.is_empty() {
        bail!("nothing to analyze: give --profile-dir DIR or trace files");
    }
    let mut disc = trace::discover_files(&ranks);
    disc.select(args.profile_id.as_deref(), args.stage.as_deref());
    let mut notes: Vec<String> = listing.notes;
    notes.extend(
        disc.notes
            .iter()
            .filter(|n| !n.contains("a merged trace"))
            .cloned(),
    );
    match disc.groups.len() {
        1 => {
            let g = disc.groups.remove(0);
            let missing = g.missing();
            if !missing.is_empty() {
                notes.push(format!(
                    "ranks missing from the grid: {}",
                    missing.join(", ")
                ));
            }
            Ok(Plan {
                profile_id: g.profile_id,
                stage: g.stage,
                inputs: g
                    .files
                    .into_iter()
                    .map(|f| Input {
                        path: f.path,
                        label: strip_brackets(&f.label),
                        id: f.id,
                    })
                    .collect(),
                notes,
            })
        }
        0 => {
            let want = |p: &Path| {
                let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
                args.profile_id
                    .as_deref()
                    .is_none_or(|id| name.contains(id))
                    && args.stage.as_deref().is_none_or(|st| name.contains(st))
            };
            let picked: Vec<PathBuf> = merged.into_iter().filter(|p| want(p)).collect();
            match picked.len() {
                0 => bail!("no rank traces found (looked for *.json / *.json.gz rank files and merged-*.trace.json.gz)"),
                1 => {
                    let p = picked[0].clone();
                    let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("merged");
                    let id = name
                        .trim_start_matches("merged-")
                        .trim_end_matches(".gz")
                        .trim_end_matches(".json")
                        .trim_end_matches(".trace")
                        .to_string();
                    Ok(Plan {
                        profile_id: id,
                        stage: args.stage.clone(),
                        inputs: vec![Input {
                            path: p,
                            label: "RANK00".into(),
                            id: RankId::default(),
                        }],
                        notes,
                    })
                }
                _ => bail!(
                    "{} merged traces found ({}); choose one with --profile-id or give the file",
                    picked.len(),
                    picked.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
                ),
            }
        }
        _ => {
            let list: Vec<String> = disc
                .groups
                .iter()
                .map(|g| match &g.stage {
                    Some(s) => format!("{} (stage {s}, {} ranks)", g.profile_id, g.files.len()),
                    None => format!("{} ({} ranks)", g.profile_id, g.files.len()),
                })
                .collect();
            bail!(
                "{} profiles found: {}; choose one with --profile-id and/or --stage",
                list.len(),
                list.join(", ")
            )
        }
    }
}

/// Parses a merged-trace label such as `TP01-DP01` or `RANK03`.
fn parse_label(label: &str) -> RankId {
    let mut id = RankId::default();
    for part in label.split('-') {
        let digits = part.trim_start_matches(|c: char| c.is_ascii_alphabetic());
        let key = &part[..part.len() - digits.len()];
        let v: Option<u32> = digits.parse().ok();
        match key.to_ascii_uppercase().as_str() {
            "TP" => id.tp = v,
            "DP" => id.dp = v,
            "PP" => id.pp = v,
            "EP" => id.ep = v,
            "DCP" => id.dcp = v,
            "RANK" => id.rank = v,
            _ => {}
        }
    }
    id
}

/// The rank(s) of one file, how reading it went, and notes.
type FileResult = (Vec<RankResult>, FileInfo, Vec<String>);

/// Reads one file and returns its rank(s).
fn read_input(
    input: &Input,
    cfg: &Config<'_>,
    classes: &Classifier,
    custom: bool,
) -> Result<FileResult> {
    let mut own = Collector::new(cfg);
    let mut labeled: Vec<(String, Collector<'_>)> = Vec::new();
    let mut index: FxMap<String, usize> = FxMap::default();
    let mut last: Option<(String, usize)> = None;
    let report = trace::read_trace(&input.path, |ev| {
        if let Id::Str(s) = ev.pid {
            let raw = s.raw();
            if raw.starts_with('[') {
                if let Some(end) = raw.find(']') {
                    let lab = &raw[1..end];
                    let i = match &last {
                        Some((l, i)) if l == lab => *i,
                        _ => {
                            let i = match index.get(lab) {
                                Some(&i) => i,
                                None => {
                                    labeled.push((lab.to_string(), Collector::new(cfg)));
                                    index.insert(lab.to_string(), labeled.len() - 1);
                                    labeled.len() - 1
                                }
                            };
                            last = Some((lab.to_string(), i));
                            i
                        }
                    };
                    labeled[i].1.on_event(ev);
                    return;
                }
            }
        }
        own.on_event(ev);
    })
    .with_context(|| format!("cannot read {}", input.path.display()))?;
    let mut notes = report.notes();
    let path_s = input.path.display().to_string();
    let results: Vec<RankResult> = if labeled.is_empty() {
        vec![rank::finish(
            own,
            &report.header,
            input.label.clone(),
            input.id.clone(),
            input.path.clone(),
            classes,
            custom,
        )]
    } else {
        if own.events > 0 {
            notes.push(format!(
                "{path_s}: a merged trace; {} events without a rank label were left out",
                own.events
            ));
        }
        let mut v: Vec<RankResult> = labeled
            .into_par_iter()
            .map(|(lab, c)| {
                let id = parse_label(&lab);
                rank::finish(
                    c,
                    &report.header,
                    lab,
                    id,
                    input.path.clone(),
                    classes,
                    custom,
                )
            })
            .collect();
        v.sort_by(|a, b| {
            a.id.sort_key()
                .cmp(&b.id.sort_key())
                .then(a.label.cmp(&b.label))
        });
        v
    };
    let info = FileInfo {
        path: path_s,
        events: report.events,
        bytes: report.bytes,
        gzip: report.gzip,
        damaged: report.is_damaged(),
        ranks: results.iter().map(|r| r.label.clone()).collect(),
        unreadable: None,
    };
    Ok((results, info, notes))
}

/// Reads and analyzes a profile as `args` say, without printing anything.
pub fn analyze(args: &AnalyzeArgs) -> Result<Analysis> {
    let classifier = match &args.classes {
        Some(p) => Classifier::from_toml_file(p)?,
        None => Classifier::default(),
    };
    let marker = match &args.step_marker {
        Some(m) => Some(
            Regex::new(m).with_context(|| format!("--step-marker {m:?} is not a valid regex"))?,
        ),
        None => None,
    };
    let threshold = args.threshold / 100.0;
    let mut plan = plan(args)?;
    let merged_input = plan.inputs.len() == 1 && is_merged_name(&plan.inputs[0].path);
    if let (Some(n), false) = (args.rank, merged_input) {
        if n >= plan.inputs.len() {
            bail!(
                "--rank {n}: the profile has {} ranks (0-{})",
                plan.inputs.len(),
                plan.inputs.len().saturating_sub(1)
            );
        }
        plan.inputs = vec![plan.inputs[n].clone()];
    }
    let cfg = Config {
        classes: &classifier,
        step_marker: marker.as_ref(),
    };
    let custom = marker.is_some();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(args.jobs.unwrap_or(0))
        .build()
        .context("cannot start worker threads")?;
    let read: Vec<Result<FileResult>> = pool.install(|| {
        plan.inputs
            .par_iter()
            .map(|i| read_input(i, &cfg, &classifier, custom))
            .collect()
    });
    let mut results = Vec::new();
    let mut files = Vec::new();
    let mut notes = std::mem::take(&mut plan.notes);
    let mut unreadable = Vec::new();
    for (input, r) in plan.inputs.iter().zip(read) {
        match r {
            Ok((rs, info, n)) => {
                results.extend(rs);
                files.push(info);
                notes.extend(n);
            }
            // The file could not be opened: its rank is left out, named, and the result is
            // partial (only read_trace's open fails; damage inside a file is not an error).
            Err(e) => {
                let why = format!("reading {}", e.root_cause());
                notes.push(format!(
                    "rank {} is unreadable and left out: {why}",
                    input.label
                ));
                unreadable.push(format!("{}: {why}", input.label));
                files.push(FileInfo {
                    path: input.path.display().to_string(),
                    events: 0,
                    bytes: 0,
                    gzip: false,
                    damaged: true,
                    ranks: vec![input.label.clone()],
                    unreadable: Some(why),
                });
            }
        }
    }
    if results.is_empty() && !unreadable.is_empty() {
        bail!(
            "no rank of profile {} could be read:\n  {}",
            plan.profile_id,
            unreadable.join("\n  ")
        );
    }
    if let Some(n) = args.rank {
        if results.len() > 1 {
            if n >= results.len() {
                bail!(
                    "--rank {n}: the trace has {} ranks (0-{})",
                    results.len(),
                    results.len() - 1
                );
            }
            results = vec![results.swap_remove(n)];
        }
    }
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
    let mut seen = std::collections::BTreeSet::new();
    for r in &results {
        if !seen.insert(r.label.clone()) {
            bail!("rank {} appears twice in the input", r.label);
        }
        if r.summary.kernels == 0 && r.summary.busy_ns == 0 {
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
            cpu.join(", ")
        ));
    }
    let damaged = files.iter().any(|f| f.damaged);
    let mut a = cross_rank(
        results,
        &classifier,
        args,
        threshold,
        &plan.profile_id,
        plan.stage.as_deref(),
    );
    a.files = files;
    a.notes.splice(0..0, notes);
    a.damaged = damaged;
    Ok(a)
}

/// Groups ranks into worlds for collective matching.
fn worlds(results: &[RankResult]) -> (Vec<Vec<usize>>, Option<String>) {
    let n = results.len();
    let all = vec![(0..n).collect::<Vec<_>>()];
    let Some(ws) = results.iter().filter_map(|r| r.world_size).min() else {
        return (all, None);
    };
    if ws as usize >= n || ws < 1 || !results.iter().all(|r| r.id.dp.is_some()) {
        return (all, None);
    }
    let mut by_dp: std::collections::BTreeMap<u32, Vec<usize>> = std::collections::BTreeMap::new();
    for (i, r) in results.iter().enumerate() {
        by_dp.entry(r.id.dp.unwrap_or(0)).or_default().push(i);
    }
    if by_dp.values().all(|v| v.len() == ws as usize) {
        let w: Vec<Vec<usize>> = by_dp.into_values().collect();
        let note = format!(
            "the traces report a world of {ws} ranks: collectives are matched within each of the {} DP replicas",
            w.len()
        );
        (w, Some(note))
    } else {
        (
            all,
            Some(format!(
                "the traces report a world of {ws} ranks but {n} ranks were given; collectives are matched across all"
            )),
        )
    }
}

fn cross_rank(
    results: Vec<RankResult>,
    classifier: &Classifier,
    args: &AnalyzeArgs,
    threshold: f64,
    id: &str,
    stage: Option<&str>,
) -> Analysis {
    let labels: Vec<String> = results.iter().map(|r| r.label.clone()).collect();
    let class_names: Vec<String> = classifier.names().to_vec();
    let mut notes = Vec::new();

    let classes = ClassTable {
        classes: class_names.clone(),
        ranks: labels.clone(),
        ns: results.iter().map(|r| r.class_ns.clone()).collect(),
    };
    let ops: Vec<&[kernels::NameAgg]> = results.iter().map(|r| r.ops.as_slice()).collect();
    let top = kernels::top(&labels, &ops, &class_names, args.top_n);

    let step_source = results
        .first()
        .map(|r| r.step_source.clone())
        .unwrap_or_default();
    if results.iter().any(|r| r.step_source != step_source) {
        let s: Vec<String> = results
            .iter()
            .map(|r| format!("{} {}", r.label, r.step_source))
            .collect();
        notes.push(format!(
            "ranks found different step markers: {}",
            s.join(", ")
        ));
    }
    let basis = if results.iter().all(|r| !r.gpu) {
        "cpu"
    } else {
        "gpu"
    };
    let (w, wnote) = worlds(&results);
    notes.extend(wnote);
    let figs: Vec<&[StepFig]> = results.iter().map(|r| r.steps.as_slice()).collect();
    let steps = steps::table(&labels, &figs, &w, &step_source, basis, threshold);
    let step_class_ns: Vec<Vec<Vec<i64>>> = (0..results.len())
        .map(|r| {
            steps
                .rows
                .iter()
                .map(|row| results[r].steps[row.idx[r]].class_ns.clone())
                .collect()
        })
        .collect();

    let colls: Vec<collectives::RankColls> = results.iter().map(|r| r.colls.clone()).collect();
    let csource = if results.iter().all(|r| r.gpu) {
        "gpu"
    } else if results.iter().all(|r| !r.gpu) {
        "cpu"
    } else {
        "mixed"
    };
    let coll = collectives::analyze(&labels, &w, &colls, csource, args.top_n);

    let summaries: Vec<RankSummary> = results.iter().map(|r| r.summary.clone()).collect();
    let verdict = verdict::judge(&verdict::Input {
        summaries: &summaries,
        class_names: &class_names,
        comm_class: classifier.comm() as usize,
        class_ns: &classes.ns,
        step_class_ns: &step_class_ns,
        steps: &steps,
        collectives: &coll,
        threshold,
    });
    let summary = summary::build(
        id,
        stage,
        &results,
        &class_names,
        &steps,
        &verdict,
        args.summary_kernels,
    );
    let depth = (args.rank.is_some() && results.len() == 1)
        .then(|| depth(&results[0], &class_names, args.top_n));
    Analysis {
        profile_id: id.to_string(),
        stage: stage.map(String::from),
        files: Vec::new(),
        source: csource.to_string(),
        threshold_pct: args.threshold,
        verdict,
        ranks: summaries,
        classes,
        kernels: top,
        steps,
        collectives: coll,
        depth,
        notes,
        damaged: false,
        summary: Some(summary),
    }
}

fn depth(r: &RankResult, class_names: &[String], top_n: usize) -> RankDepth {
    let sum: i64 = r.ops.iter().map(|o| o.agg.total).sum();
    let pct = |x: i64| busy::pct(x, sum);
    RankDepth {
        rank: r.label.clone(),
        summary: r.summary.clone(),
        classes: class_names
            .iter()
            .zip(&r.class_ns)
            .map(|(c, &t)| DepthClass {
                class: c.clone(),
                total_ns: t,
                pct: pct(t),
            })
            .collect(),
        kernels: r
            .ops
            .iter()
            .take(top_n)
            .map(|o| DepthKernel {
                name: o.name.clone(),
                short: kernels::short_name(&o.name),
                class: class_names
                    .get(o.agg.class as usize)
                    .cloned()
                    .unwrap_or_default(),
                kind: o.agg.kind.as_str().to_string(),
                total_ns: o.agg.total,
                count: o.agg.count,
                mean_ns: if o.agg.count > 0 {
                    o.agg.total as f64 / o.agg.count as f64
                } else {
                    0.0
                },
                min_ns: if o.agg.count > 0 { o.agg.min } else { 0 },
                max_ns: o.agg.max,
                pct: pct(o.agg.total),
            })
            .collect(),
        streams: r.streams.clone(),
        step_source: r.step_source.clone(),
        steps: r.steps.clone(),
    }
}
