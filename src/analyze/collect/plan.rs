//! Input planning: which files an analysis reads (a directory's rank files, a list, or one
//! merged trace) and the rank each holds; then reading one file into its rank result(s) — a
//! merged trace is split back into its ranks by the `[TP01-DP01] …` labels of its pids — and
//! how reading it went ([`FileInfo`], which the report lists per file).

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::collector::{Collector, Config, FxMap};
use super::rank::{self, RankResult};
use crate::analyze::classes::Classifier;
use crate::analyze::options::AnalyzeOptions;
use crate::trace::{self, Id, RankId};

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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unreadable: Option<String>,
    /// Why reading stopped before the end of the document (`truncated at byte N`, …), when
    /// it did: the rank's figures cover only what came before, and it is left out of the
    /// comparison unless asked for ([`AnalyzeOptions::keep_partial`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_early: Option<String>,
}

/// One file to read, with the rank it holds (a merged trace may hold several).
#[derive(Debug, Clone)]
pub(in crate::analyze) struct Input {
    pub path: PathBuf,
    pub label: String,
    pub id: RankId,
}

pub(in crate::analyze) struct Plan {
    pub profile_id: String,
    pub stage: Option<String>,
    pub inputs: Vec<Input>,
    pub notes: Vec<String>,
    /// The rank of every rank file the plan found (none for a merged trace): the reduce
    /// names the ranks missing from their grid.
    pub grid: Vec<RankId>,
}

/// What discovery found for `args`' inputs, before a profile is chosen: the rank files' groups,
/// the merged traces, and the listing's notes. Found once per command ([`find`]): asking
/// which stages a profile has ([`Found::stages`]) and planning the read ([`plan`]) share it,
/// so that a directory of 1,024 rank files is listed and named once, not twice.
#[derive(Debug, Clone)]
pub struct Found {
    disc: trace::discover::Discovery,
    merged: Vec<PathBuf>,
    notes: Vec<String>,
}

/// Lists and names the files `args` give ([`Found`]).
pub fn find(args: &AnalyzeOptions) -> Result<Found> {
    let mut ranks: Vec<PathBuf> = Vec::new();
    let mut merged: Vec<PathBuf> = Vec::new();
    // Regular files only; unreadable rank files kept (reported later); see trace::discover.
    let mut listing = trace::discover::listing::Listing::default();
    if let Some(dir) = &args.profile_dir {
        listing = trace::discover::listing::list_dir(dir, false)
            .with_context(|| format!("cannot read directory {}", dir.display()))?;
    }
    let given = trace::discover::listing::list_files(&args.files)?;
    listing.notes.extend(given.notes);
    for p in listing.files.into_iter().chain(given.files) {
        if !trace::discover::names::is_trace_path(&p) {
            continue;
        }
        if trace::is_merged_trace(&p) {
            merged.push(p);
        } else {
            ranks.push(p);
        }
    }
    if args.profile_dir.is_none() && args.files.is_empty() {
        bail!("nothing to analyze: give --profile-dir DIR or trace files");
    }
    // Files named without a directory are one profile (per stage) unless a rank repeats.
    let disc = if args.profile_dir.is_none() {
        trace::discover::discover_given(
            &ranks,
            args.rank_from,
            args.profile_id.as_deref(),
            args.stage.as_deref(),
        )
        .map_err(|e| anyhow::anyhow!(e))?
    } else {
        trace::discover::discover_files_with(&ranks, args.rank_from)
    };
    Ok(Found {
        disc,
        merged,
        notes: listing.notes,
    })
}

/// The stages of a by-stage profile (SGLang's `profile_by_stage`: one file per rank and stage,
/// `…-TP-0-EXTEND`, `…-TP-0-DECODE`) when `args` names no stage and its inputs are one
/// profile split by stage only, in name order; empty otherwise. Each stage is analyzed on its
/// own (a rank's two files are not two ranks), as merge merges each.
pub fn stages(args: &AnalyzeOptions) -> Result<Vec<String>> {
    Ok(find(args)?.stages(args))
}

impl Found {
    /// [`stages`] from what was found.
    pub fn stages(&self, args: &AnalyzeOptions) -> Vec<String> {
        if args.stage.is_some() {
            return Vec::new();
        }
        let mut disc = self.disc.clone();
        disc.select(args.profile_id.as_deref(), None);
        stages_of(&disc)
    }
}

/// The stages of the groups `disc` selected, when they are one profile split by stage only.
fn stages_of(disc: &trace::discover::Discovery) -> Vec<String> {
    let one_id = disc.groups.iter().all(|g| {
        disc.groups
            .first()
            .is_some_and(|f| f.profile_id == g.profile_id)
    });
    let mut st: Vec<String> = disc.groups.iter().filter_map(|g| g.stage.clone()).collect();
    if disc.groups.len() < 2 || !one_id || st.len() < disc.groups.len() {
        return Vec::new();
    }
    st.sort();
    st.dedup();
    st
}

/// Finds the files to read: rank files win over a merged trace in the same directory.
pub(in crate::analyze) fn plan(args: &AnalyzeOptions, found: Found) -> Result<Plan> {
    let Found {
        mut disc,
        merged,
        notes: listing_notes,
    } = found;
    let mut profiles: Vec<String> = Vec::new();
    for g in &disc.groups {
        if !profiles.contains(&g.profile_id) {
            profiles.push(g.profile_id.clone());
        }
    }
    disc.select(args.profile_id.as_deref(), args.stage.as_deref());
    let mut notes: Vec<String> = listing_notes;
    notes.extend(
        disc.notes
            .iter()
            .filter(|n| !n.contains("a merged trace"))
            .cloned(),
    );
    match disc.groups.len() {
        1 => {
            let g = disc.groups.remove(0);
            refuse_mixed(&g.files)?;
            Ok(Plan {
                grid: g.files.iter().map(|f| f.id.clone()).collect(),
                profile_id: g.profile_id,
                stage: g.stage,
                inputs: g
                    .files
                    .into_iter()
                    .map(|f| Input {
                        label: f.id_label(),
                        path: f.path,
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
                0 if !profiles.is_empty() => bail!(
                    "no profile {}{} here; the profiles are: {} (choose one with --profile-id; \
                     `rankprof ls` lists them)",
                    args.profile_id.as_deref().unwrap_or(""),
                    args.stage
                        .as_deref()
                        .map(|s| format!(" with stage {s}"))
                        .unwrap_or_default(),
                    profiles.join(", ")
                ),
                0 => bail!("no rank traces found (looked for *.json / *.json.gz rank files, Nsight Systems exports *.sqlite, reports *.nsys-rep and merged-*.trace.json.gz)"),
                1 => {
                    let p = picked[0].clone();
                    let id = trace::discover::merged::merged_profile_id(&p);
                    Ok(Plan {
                        grid: Vec::new(),
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
                .map(|g| {
                    let n = g.files.len();
                    let ranks = format!("{n} rank{}", if n == 1 { "" } else { "s" });
                    match &g.stage {
                        Some(s) => format!("{} (stage {s}, {ranks})", g.profile_id),
                        None => format!("{} ({ranks})", g.profile_id),
                    }
                })
                .collect();
            let split = trace::discover::split_run(&disc.groups)
                .map(|s| format!("\n{s}"))
                .unwrap_or_default();
            bail!(
                "{} profiles found: {}; choose one with --profile-id and/or --stage{split}",
                list.len(),
                list.join(", ")
            )
        }
    }
}

/// One profile's ranks are all Kineto traces or all Nsight Systems exports (`*.sqlite`) and
/// reports (`*.nsys-rep`): the
/// two kinds of one run would count every rank twice.
fn refuse_mixed(files: &[trace::RankFile]) -> Result<()> {
    let is_nsys =
        |p: &Path| trace::read::nsys::is_nsys_path(p) || trace::read::nsys::export::is_rep_path(p);
    let nsys: Vec<&trace::RankFile> = files.iter().filter(|f| is_nsys(&f.path)).collect();
    if !nsys.is_empty() && nsys.len() < files.len() {
        let one = |f: Option<&&trace::RankFile>| {
            f.map(|f| f.path.display().to_string()).unwrap_or_default()
        };
        let json = files.iter().find(|f| !is_nsys(&f.path));
        bail!(
            "one profile mixes Nsight Systems exports ({} of {} files, e.g. {}) with Kineto \
             traces (e.g. {}): analyze one kind at a time (give its files, or move the other \
             kind to another folder)",
            nsys.len(),
            files.len(),
            one(nsys.first()),
            one(json.as_ref())
        );
    }
    Ok(())
}

/// The rank(s) of one file, how reading it went, and notes.
pub(in crate::analyze) type FileResult = (Vec<RankResult>, FileInfo, Vec<String>);

/// What one read of a file gives: the unlabeled rank, the labeled ones of a merged trace, and
/// how reading went.
struct Collected<'c> {
    own: Collector<'c>,
    labeled: Vec<(String, Collector<'c>)>,
    report: trace::ReadReport,
}

/// Reads one file into its collectors, handing over only what `want` names.
fn collect<'c>(input: &Input, cfg: &'c Config<'c>, want: trace::Want) -> Result<Collected<'c>> {
    let mut own = Collector::new(cfg);
    let mut labeled: Vec<(String, Collector<'_>)> = Vec::new();
    let mut index: FxMap<String, usize> = FxMap::default();
    let mut last: Option<(String, usize)> = None;
    // The reader hands over only the events the collector reads ([`super::names::WANT`]).
    // Those it skips are counted in `report.events` and belong to the unlabeled rank (`own`):
    // a merged trace is handed over whole from its first labeled event (its metadata comes
    // first), so no event of a labeled rank is skipped.
    let mut handed = 0u64;
    let report = trace::read_trace_with(&input.path, trace::Nested::SkimOnly(want), |ev| {
        handed += 1;
        if let Id::Str(s) = ev.pid {
            let raw = s.raw();
            if raw.starts_with(crate::load::evidence::PID_PREFIX) {
                return; // load counters `rankprof watch` added to a merged trace: not a rank
            }
            if raw.starts_with('[') {
                if let Some(end) = raw.find(']') {
                    let lab = &raw[1..end];
                    let i = match &last {
                        Some((l, i)) if l == lab => *i,
                        _ => {
                            let i = match index.get(lab) {
                                Some(&i) => i,
                                None => {
                                    labeled.push((lab.to_string(), Collector::labeled(cfg)));
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
    own.events += report.events.saturating_sub(handed);
    Ok(Collected {
        own,
        labeled,
        report,
    })
}

/// Reads one file and returns its rank(s).
pub(in crate::analyze) fn read_input(
    input: &Input,
    cfg: &Config<'_>,
    classes: &Classifier,
    custom: bool,
) -> Result<FileResult> {
    let mut read = collect(input, cfg, super::names::WANT)?;
    if read.report.narrowed > 0 && read.own.gpu.is_empty() {
        // The header lists devices, so CPU ops were skimmed as a GPU trace's are; but the
        // trace holds no GPU op (a CPU-only profile taken on a GPU machine): its CPU ops are
        // its data. Read it again with all of them ([`super::names::names_read`]).
        let every_cpu_op = trace::Want {
            trust_devices: false,
            ..super::names::WANT
        };
        read = collect(input, cfg, every_cpu_op)?;
    }
    if read.labeled.is_empty() && read.own.memory.has_peaks() {
        super::memory::find_peak_ops(&input.path, &mut read.own.memory)?;
    }
    let Collected {
        own,
        labeled,
        report,
    } = read;
    let mut notes = report.notes();
    let path_s = input.path.display().to_string();
    let merged = !labeled.is_empty();
    let mut results: Vec<RankResult> = if labeled.is_empty() {
        vec![rank::finish(
            own,
            &report.header,
            input.label.clone(),
            input.id.clone(),
            input.path.clone(),
            classes,
            custom,
        )?]
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
                let id = RankId::from_label(&lab);
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
            .collect::<Result<_>>()?;
        v.sort_by(|a, b| {
            a.id.sort_key()
                .cmp(&b.id.sort_key())
                .then(a.label.cmp(&b.label))
        });
        v
    };
    match report.stopped_early() {
        Some(why) => results
            .iter_mut()
            .for_each(|r| r.stopped_early = Some(why.clone())),
        None if merged => {
            for (label, why) in merged_stopped_early(&report.header) {
                let r = results.iter_mut().find(|r| bare(&r.label) == bare(&label));
                if let Some(r) = r {
                    r.stopped_early = Some(why);
                }
            }
        }
        None => {}
    }
    let info = FileInfo {
        path: path_s,
        events: report.events,
        bytes: report.bytes,
        gzip: report.gzip,
        damaged: report.is_damaged(),
        ranks: results.iter().map(|r| r.label.clone()).collect(),
        unreadable: None,
        stopped_early: report.stopped_early(),
    };
    Ok((results, info, notes))
}

/// The ranks of a merged trace whose files stopped early when it was merged (its `ranks`
/// list, written by [`crate::merge`]): label and `merged from FILE, <why>`.
fn merged_stopped_early(h: &trace::Header) -> Vec<(String, String)> {
    let Some((_, raw)) = h.other.iter().find(|(k, _)| k == "ranks") else {
        return Vec::new();
    };
    let Ok(serde_json::Value::Array(list)) = serde_json::from_str(raw) else {
        return Vec::new();
    };
    list.iter()
        .filter_map(|r| {
            let label = r.get("label")?.as_str()?;
            let why = r.get("stopped_early")?.as_str()?;
            let file = r.get("file").and_then(|f| f.as_str()).unwrap_or("its file");
            Some((label.to_string(), format!("merged from {file}, {why}")))
        })
        .collect()
}

/// A rank label without the brackets a merged trace's pids carry: `[TP01]` → `TP01`.
fn bare(label: &str) -> &str {
    label.trim_start_matches('[').trim_end_matches(']')
}
