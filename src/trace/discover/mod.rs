//! Discovery of rank files and their identity.
//!
//! A profile directory holds one trace per rank, named by the framework that wrote it:
//!
//! - SGLang: `[{prefix}-]{profile_id}-TP-{tp}[-DP-{dp}][-PP-{pp}][-EP-{ep}][-{STAGE}].trace.json.gz`,
//!   a dimension only when its size is > 1, STAGE ∈ EXTEND, DECODE, prefill, decode (up to
//!   0.5.1: `1`, `2`, `ForwardMode.EXTEND`, `ForwardMode.DECODE`, read as EXTEND, DECODE);
//! - vLLM: `[{prefix}_]dp{d}_pp{p}_tp{t}_dcp{c}_ep{e}_rank{r}.{ns}.pt.trace.json[.gz]` (MoE
//!   models), `[{prefix}_]rank{r}.{ns}.pt.trace.json[.gz]` (dense models: no EP group; with
//!   DP > 1 the ranks come from the heads, `dense_dp`), the older
//!   `{instance}-rank-{r}.{ns}.pt.trace.json[.gz]`; frontend `*.async_llm.*` traces are
//!   skipped; `capture_traces/graph_capture_rank_0.{ns}.pt.trace.json.gz` (CUDA-graph
//!   capture at start-up) is kept as a profile of its own, with a note, as SGLang's
//!   `graph_capture_profile/cuda_graph_capture-{runner}-TP-{tp}.json.gz` is, one per runner;
//! - training runs, torch's `tensorboard_trace_handler` names
//!   `{worker_name}.{stamp}.pt.trace.json[.gz]` (`worker{r}_step_12`, `rank_{r}`, torch's own
//!   `{host}_{pid}`, …): one profile per worker-name pattern and run of close stamps, ranks
//!   from the names checked against `distributedInfo` ([`handler`]);
//! - generic `…rank-N…`, `…rank_N…`, `…workerN…` `.json[.gz]` (torchtitan, verl);
//! - Nsight Systems SQLite exports (`*.sqlite`): the generic names above, and `NAME_N` /
//!   `NAME-N` (N of at most 4 digits: `nsys profile -o NAME_%q{RANK}`); nsys's own `reportN`
//!   and `%h_%p` names are ranked as unnamed files are; their reports (`*.nsys-rep`) alike, read
//!   through an export ([`crate::trace::read::nsys::export`]), except beside their own export;
//!   an export holding several GPUs, each owned by a process of its own, is a profile of one
//!   rank per GPU ([`nsys_gpus`]);
//! - otherwise `distributedInfo.rank` from the file's header, otherwise file order (warned;
//!   `discover/unnamed.rs`).
//!
//! `--rank-from` ([`RankFrom`]) overrides where ranks come from (`rank_from.rs`); files named
//! on the command line are one profile ([`discover_given`]); one run split into one-rank
//! profiles is told apart ([`split_run`]).
//!
//! Files stamped one by one (vLLM's `.{ns}`, SGLang 0.4's `{time.time()}-TP-{tp}`) are put
//! into the profiling sessions that wrote them (`discover/sessions.rs`).
//!
//! Names win over `distributedInfo.rank`: with DP > 1 it repeats across replicas (it is the
//! rank inside the TP group). Files are grouped by (directory, profile id, stage); `merged-*`
//! files are never picked up ([`merged`]).
//!
//! The parts, bottom up: [`rankfile`] (a rank file and how its rank was found), [`names`] (what a
//! file name says), [`grid`] (where ranks sit in the parallel grid), [`merged`] (merged traces'
//! names and mark), [`group`] (a profile's rank files in order), [`listing`] (the candidate
//! files, safe directory walks), then `sessions.rs`, `dense_dp.rs` and `unnamed.rs` (the
//! cases above), [`handler`] and [`given`], and here the grouping itself ([`discover`],
//! [`discover_files`]).
//! Outside this folder it uses [`crate::trace::rankid`] and, of [`crate::trace::read`], only
//! `read_head` (a file's header: `unnamed.rs`, `dense_dp.rs`, [`merged`]), the GPUs of an
//! Nsight Systems report (`nsys_gpus.rs`) and `open.rs`'s words
//! for a file's kind ([`listing`]).

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

mod dense_dp;
pub(crate) mod given;
pub(crate) mod grid;
pub(crate) mod group;
pub(crate) mod handler;
pub(crate) mod handler_names;
pub mod listing;
pub(crate) mod merged;
pub mod names;
mod nsys_gpus;
mod rank_from;
pub mod rankfile;
mod sessions;
mod unnamed;

use crate::trace::rankid::RankId;
pub use given::split_run;
use group::{finish_group, shown_dir, Group};
use listing::list_dir;
use merged::MERGED_PREFIX;
use names::{is_trace_name, parse_name, Parsed};
use rankfile::rank_file;
pub use rankfile::RankFrom;
use sessions::GroupKey;

/// What discovery found, plus notes about files it skipped or had to guess.
#[derive(Clone, Debug, Default)]
pub struct Discovery {
    pub groups: Vec<Group>,
    pub notes: Vec<String>,
}

impl Discovery {
    /// Keeps only the groups of one profile id (exact, or as the part after a prefix).
    pub fn select(&mut self, profile_id: Option<&str>, stage: Option<&str>) {
        if let Some(id) = profile_id {
            self.groups.retain(|g| {
                g.profile_id == id
                    || g.profile_id.ends_with(&format!("-{id}"))
                    || g.profile_id.ends_with(&format!("_{id}"))
            });
        }
        if let Some(st) = stage {
            self.groups.retain(|g| {
                g.stage
                    .as_deref()
                    .is_some_and(|s| s.eq_ignore_ascii_case(st))
            });
        }
    }
}

/// Finds the rank files under `dir` (and its subdirectories with `recursive`).
pub fn discover(dir: &Path, recursive: bool) -> io::Result<Discovery> {
    discover_with(dir, recursive, RankFrom::Auto)
}

/// [`discover`] with the ranks taken from where `rank_from` says.
pub(crate) fn discover_with(
    dir: &Path,
    recursive: bool,
    rank_from: RankFrom,
) -> io::Result<Discovery> {
    let listing = list_dir(dir, recursive)?;
    let mut d = discover_files_with(&listing.files, rank_from);
    d.notes.splice(0..0, listing.notes);
    Ok(d)
}

/// The files named on the command line (already listed): one profile per stage unless a rank
/// repeats among them (then the profiles discovery found, with a note), after `profile_id`
/// and `stage` chose among what discovery found.
pub fn discover_given(
    paths: &[PathBuf],
    rank_from: RankFrom,
    profile_id: Option<&str>,
    stage: Option<&str>,
) -> Result<Discovery, String> {
    let mut d = discover_files_with(paths, rank_from);
    d.select(profile_id, stage);
    // The note on a split run is void once the files are joined.
    d.notes.retain(|n| !n.contains("profiles of one rank each"));
    let renumber = rank_from == RankFrom::Order;
    given::join_given(&mut d.groups, renumber, &mut d.notes)?;
    if renumber {
        rank_from::apply(&mut d.groups, rank_from, &mut d.notes);
    }
    Ok(d)
}

/// One profile's ranks spread over several directories (one per node, or files listed from
/// several places) make one group when no rank appears twice among them, kept under the first
/// directory; otherwise each directory keeps its own group (the same profile id in per-step
/// folders, or two sessions).
fn join_split_profiles(
    by_key: BTreeMap<GroupKey, Vec<(Parsed, PathBuf)>>,
) -> BTreeMap<GroupKey, Vec<(Parsed, PathBuf)>> {
    type Dirs = Vec<(PathBuf, Vec<(Parsed, PathBuf)>)>;
    let mut by_profile: BTreeMap<(String, Option<String>), Dirs> = BTreeMap::new();
    for ((dir, key, stage), files) in by_key {
        by_profile
            .entry((key, stage))
            .or_default()
            .push((dir, files));
    }
    let mut out = BTreeMap::new();
    for ((key, stage), dirs) in by_profile {
        let mut ids: Vec<&RankId> = dirs
            .iter()
            .flat_map(|(_, f)| f.iter().map(|(p, _)| &p.id))
            .collect();
        let n = ids.len();
        ids.sort_unstable();
        ids.dedup();
        if dirs.len() > 1 && ids.len() == n {
            let dir = dirs[0].0.clone();
            let all = dirs.into_iter().flat_map(|(_, f)| f).collect();
            out.insert((dir, key, stage), all);
        } else {
            for (dir, f) in dirs {
                out.insert((dir, key.clone(), stage.clone()), f);
            }
        }
    }
    out
}

/// Groups the given files by profile and stage, with rank identities.
pub fn discover_files(paths: &[PathBuf]) -> Discovery {
    discover_files_with(paths, RankFrom::Auto)
}

/// [`discover_files`] with the ranks taken from where `rank_from` says.
pub fn discover_files_with(paths: &[PathBuf], rank_from: RankFrom) -> Discovery {
    let mut d = Discovery::default();
    // `x.nsys-rep` beside its export `x.sqlite` is one rank: the export's.
    let (paths, reports) = crate::trace::read::nsys::export::prefer_exports(paths);
    d.notes.extend(reports);
    let paths = &paths[..];
    export_reports(paths);
    // (dir, naming, key, stage) -> files
    let mut by_key: BTreeMap<GroupKey, Vec<(Parsed, PathBuf)>> = BTreeMap::new();
    let mut unnamed: BTreeMap<PathBuf, Vec<PathBuf>> = BTreeMap::new();
    let mut stamped: BTreeMap<PathBuf, Vec<(handler_names::HandlerName, PathBuf)>> =
        BTreeMap::new();
    let mut sglang_captures: BTreeMap<PathBuf, usize> = BTreeMap::new();
    let mut gpu_groups = Vec::new();
    for path in paths {
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        if !is_trace_name(name) {
            continue;
        }
        if name.starts_with(MERGED_PREFIX) {
            d.notes.push(format!(
                "{}: a merged trace, not a rank file; skipped",
                path.display()
            ));
            continue;
        }
        if name.contains(".async_llm.") {
            d.notes.push(format!(
                "{}: a vLLM frontend (async_llm) trace, not a rank; skipped",
                path.display()
            ));
            continue;
        }
        if name.starts_with("graph_capture_rank_") {
            // `torch_profiler_dir/capture_traces/`, `capture_torch_profiler` in vLLM's
            // `--profiler-config` (`gpu_model_runner.py`): a profile of its own, kept.
            d.notes.push(format!(
                "{}: vLLM's CUDA-graph capture trace (written at start-up, local rank 0 only), \
                 not a serving profile: listed as a profile of its own",
                path.display()
            ));
        }
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        if name.starts_with("cuda_graph_capture-") {
            *sglang_captures.entry(dir.clone()).or_default() += 1;
        }
        if crate::trace::read::nsys::is_nsys_name(name)
            || crate::trace::read::nsys::export::is_rep_name(name)
        {
            if let Some(g) = nsys_gpus::split(path, &mut d.notes) {
                gpu_groups.push(g);
                continue;
            }
        }
        match parse_name(name) {
            Some(p) => by_key
                .entry((dir, p.key.clone(), p.stage.clone()))
                .or_default()
                .push((p, path.clone())),
            None => match handler_names::parse(name) {
                Some(h) => stamped.entry(dir).or_default().push((h, path.clone())),
                None => unnamed.entry(dir).or_default().push(path.clone()),
            },
        }
    }
    for (dir, n) in sglang_captures {
        d.notes.push(format!(
            "{}: {n} SGLang CUDA-graph capture trace(s) (cuda_graph_capture-*, written at \
             start-up), not a serving profile: listed as a profile of their own per runner",
            shown_dir(&dir)
        ));
    }
    sessions::join_sglang_stamps(&mut by_key, &mut d.notes);
    for ((dir, key, stage), mut files) in join_split_profiles(by_key) {
        dense_dp::global_ranks(&dir, &mut files, &mut d.notes);
        files.sort_by(|a, b| a.0.ns.cmp(&b.0.ns).then(a.1.cmp(&b.1)));
        // vLLM writes a time stamp per file: one session holds each rank once.
        let sessions = sessions::split(files, |f| f.0.ns, |f| &f.0.id);
        let n = sessions.len();
        for s in sessions {
            let profile_id = match (n > 1, s.first().and_then(|f| f.0.ns)) {
                (true, Some(ns)) => format!("{key}.{ns}"),
                _ => key.clone(),
            };
            let files = s
                .into_iter()
                .map(|(p, path)| rank_file(path, p.id, p.naming))
                .collect();
            d.groups
                .push(finish_group(dir.clone(), profile_id, stage.clone(), files));
        }
    }
    note_stageless_beside_stages(&d.groups, &mut d.notes);
    for (dir, paths) in unnamed {
        d.groups.extend(unnamed::groups(dir, paths, &mut d.notes));
    }
    d.groups.extend(nsys_gpus::groups(gpu_groups, &mut d.notes));
    rank_from::apply(&mut d.groups, rank_from, &mut d.notes);
    for (dir, files) in stamped {
        let mut groups = handler::groups(&dir, files, rank_from, &mut d.notes);
        if rank_from == RankFrom::Order {
            rank_from::apply(&mut groups, rank_from, &mut d.notes);
        }
        d.groups.extend(groups);
    }
    if let Some(n) = split_run(&d.groups) {
        d.notes.push(n);
    }
    d
}

/// Reports are read through their exports (their heads, their GPUs: `nsys_gpus`): all
/// exported at once, in parallel, before discovery reads them one by one (cached for the
/// readers).
fn export_reports(paths: &[PathBuf]) {
    use rayon::prelude::*;
    let reports: Vec<&PathBuf> = paths
        .iter()
        .filter(|p| crate::trace::read::nsys::export::is_rep_path(p))
        .collect();
    if reports.len() > 1 {
        reports.par_iter().for_each(|p| {
            let _ = crate::trace::read::nsys::export::export(p);
        });
    }
}

/// A by-stage SGLang profile stopped by hand (`/stop_profile` before `num_steps` ended each
/// stage; `capture run --profile-by-stage` with `--requests` or `--duration` does this) writes
/// the stage still open without a stage suffix (`_stop_profile()` with no stage, in
/// `profiler_manager.py`): a stage-less group beside stage groups of the same id is that window.
fn note_stageless_beside_stages(groups: &[Group], notes: &mut Vec<String>) {
    for g in groups.iter().filter(|g| g.stage.is_none()) {
        let staged: Vec<&str> = groups
            .iter()
            .filter(|s| s.dir == g.dir && s.profile_id == g.profile_id)
            .filter_map(|s| s.stage.as_deref())
            .collect();
        if !staged.is_empty() {
            notes.push(format!(
                "{}: profile {} has files without a stage beside its {} files: SGLang writes \
                 the stage still open when a by-stage profile is stopped by hand without a \
                 stage suffix; they are listed as a profile of their own",
                shown_dir(&g.dir),
                g.profile_id,
                staged.join("/")
            ));
        }
    }
}
