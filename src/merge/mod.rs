//! `merge-traces` / `rankprof merge`: every rank's trace into one Perfetto-ready file per
//! profile (and stage), streamed and compressed in parallel, never held in memory.
//!
//! Per group: each rank is read and written into its own compressed piece
//! ([`rank::write_rank`]), ranks in parallel; the pieces, a head and a tail with the merged
//! top-level keys make one gzip file, renamed into place. One read per rank, as a rule: the
//! `--steps` windows are found while writing; only `--align first-step` needs a scan pass
//! first, and a rank is read again only when its clock shift or `--steps` window turned out
//! different from what its first write assumed ([`steps`] says why and when).
//!
//! With `--align base` (the default) the common base `min(baseTimeNanoseconds)` is only known
//! once every file has been read (Kineto writes the key after the events). The write pass
//! assumes every rank already sits on the common base (true whenever the bases are equal, as
//! they usually are) and re-runs only the ranks for which that turned out wrong.
//!
//! A rank whose file cannot be read at all (missing, a dangling symlink, not a regular file) is
//! left out, named in the result and in the output's `ranks` list (`"unreadable": "<why>"`),
//! and makes the result damaged (exit 3); the merge fails only when no rank can be read, or
//! when writing fails. The temporary pieces live in a `.rankprof-merge-<pid>-*` directory that
//! SIGINT/SIGTERM removes ([`crate::trace::write::cleanup`]); ones over a day old, left by a run
//! that was killed outright, are removed when a merge starts.

pub(crate) mod align;
// not API: for tests
#[doc(hidden)]
pub mod args;
mod emit;
pub(crate) mod filter;
mod memory;
mod output;
mod pass;
pub(crate) mod perfetto;
pub(crate) mod rank;
mod rewrite;
pub(crate) mod steps;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::exit::Outcome;
use crate::trace::discover::{discover_given, discover_with, RankFrom};
use crate::trace::write::cleanup;
use crate::trace::write::overlay::Overlay;
use crate::trace::{Discovery, Group, Ns};

pub use align::Align;
use pass::Ranks;

/// Merge settings, independent of the command line.
#[derive(Clone, Debug)]
pub struct MergeOptions {
    pub align: Align,
    pub ranks: Option<Vec<usize>>,
    /// In output `ts` units.
    pub window: Option<(Ns, Ns)>,
    pub steps: Option<(u64, u64)>,
    pub drop_cat: Vec<String>,
    pub gpu_only: bool,
    pub strict: bool,
    pub level: u32,
    /// Annotations to draw on extra tracks per rank (`--critical-path`, `--what-if`), each its
    /// own process per rank; times on the common clock, so only with [`Align::Base`] (or
    /// [`Align::Collectives`], the analysis' clock).
    pub overlays: Vec<std::sync::Arc<Overlay>>,
    /// With [`Align::Collectives`]: each rank's clock offset by label (what to subtract), from
    /// the analysis.
    pub clock_offsets: Option<std::sync::Arc<Vec<(String, Ns)>>>,
    /// What the merged file is: Chrome JSON (gzip) or Perfetto protobuf ([`perfetto`]).
    pub trace_format: TraceFormat,
}

/// The merged file's encoding.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum TraceFormat {
    /// Chrome JSON, gzip-compressed (`.trace.json.gz`): every viewer reads it.
    #[default]
    Json,
    /// Perfetto's protobuf `Trace` (`.pftrace`): a tenth of the JSON's size, ranks in order,
    /// for ui.perfetto.dev and trace_processor.
    Perfetto,
}

impl TraceFormat {
    /// The format an output path asks for by its extension: `.pftrace` (or `.perfetto-trace`),
    /// gzipped or not (`.pftrace.gz`), is Perfetto, anything else says nothing.
    pub fn from_path(p: &Path) -> Option<TraceFormat> {
        let name = p.file_name()?.to_str()?;
        let name = name.strip_suffix(".gz").unwrap_or(name);
        (name.ends_with(".pftrace") || name.ends_with(".perfetto-trace"))
            .then_some(TraceFormat::Perfetto)
    }
}

impl Default for MergeOptions {
    /// The command line's defaults.
    fn default() -> Self {
        MergeOptions {
            align: Align::Base,
            ranks: None,
            window: None,
            steps: None,
            drop_cat: Vec::new(),
            gpu_only: false,
            strict: false,
            level: 1,
            overlays: Vec::new(),
            clock_offsets: None,
            trace_format: TraceFormat::Json,
        }
    }
}

impl MergeOptions {
    /// Rejects settings no merge can honour.
    pub fn validate(&self) -> Result<()> {
        if self.level > 9 {
            bail!("--level must be 0 to 9");
        }
        Ok(())
    }
}

/// One rank's line in the merge result.
#[derive(Debug, Clone)]
pub struct RankSummary {
    pub label: String,
    pub path: PathBuf,
    pub read: u64,
    pub written: u64,
    pub dropped: u64,
    pub added: u64,
    pub shift: Ns,
    pub base_ns: Option<i64>,
    pub notes: Vec<String>,
    /// Damaged, or unreadable.
    pub damaged: bool,
    /// Where and why the rank's file stops early or is corrupt
    /// ([`crate::trace::ReadReport::stopped_early`]): its events past that point are not in
    /// the output. `None` for a complete rank (events skipped one by one are in `notes`).
    pub stopped_early: Option<String>,
    /// Why the rank's file could not be read at all (`reading <path>: <OS error>`); the rank
    /// is left out of the output and listed in its `ranks` as unreadable.
    pub unreadable: Option<String>,
}

/// What merging one group did.
#[derive(Debug, Clone)]
pub struct MergeResult {
    /// `None` when `--strict` refused to write.
    pub output: Option<PathBuf>,
    pub ranks: Vec<RankSummary>,
    pub events: u64,
    pub bytes_in: u64,
    pub uncompressed_out: u64,
    pub base_ns: Option<i64>,
    pub notes: Vec<String>,
    /// Ranks re-read because their clock shift or `--steps` window was not known in advance.
    pub redone: usize,
    /// What the output is.
    pub trace_format: TraceFormat,
}

impl MergeResult {
    pub fn damaged(&self) -> bool {
        self.ranks.iter().any(|r| r.damaged)
    }

    /// Ok; partial when a damaged rank was merged as far as it could be read; failed when
    /// `strict` refused to write.
    pub fn outcome(&self) -> Outcome {
        match (self.damaged(), self.output.is_some()) {
            (false, _) => Outcome::Ok,
            (true, true) => Outcome::Partial,
            (true, false) => Outcome::Failed,
        }
    }
}

/// Finds the groups named by the arguments.
pub fn gather(
    profile_dir: Option<&Path>,
    files: &[PathBuf],
    recursive: bool,
    profile_id: Option<&str>,
    stage: Option<&str>,
) -> Result<Discovery> {
    gather_with(
        profile_dir,
        files,
        recursive,
        profile_id,
        stage,
        RankFrom::Auto,
    )
}

/// [`gather`] with the ranks taken from where `rank_from` says. The files named are one
/// profile (per stage) unless a rank repeats among them ([`discover_given`]).
pub fn gather_with(
    profile_dir: Option<&Path>,
    files: &[PathBuf],
    recursive: bool,
    profile_id: Option<&str>,
    stage: Option<&str>,
    rank_from: RankFrom,
) -> Result<Discovery> {
    let mut d = match profile_dir {
        Some(dir) => discover_with(dir, recursive, rank_from)
            .with_context(|| format!("reading {}", dir.display()))?,
        None => Discovery::default(),
    };
    if !files.is_empty() {
        let listed = crate::trace::discover::listing::list_files(files)?;
        let more = discover_given(&listed.files, rank_from, profile_id, stage)
            .map_err(|e| anyhow::anyhow!(e))?;
        d.groups.extend(more.groups);
        d.notes.extend(listed.notes);
        d.notes.extend(more.notes);
    }
    if profile_dir.is_none() && files.is_empty() {
        bail!("give --profile-dir DIR or trace files");
    }
    d.select(profile_id, stage);
    if d.groups.is_empty() {
        let mut msg = String::from("no rank traces found");
        if let Some(dir) = profile_dir {
            msg += &format!(" in {}", dir.display());
        }
        if let Some(id) = profile_id {
            msg += &format!(" for profile id {id}");
        }
        for n in &d.notes {
            msg += &format!("\n  {n}");
        }
        bail!(msg);
    }
    Ok(d)
}

/// The clock offset to take off a rank (its label, `[TP00]` or `TP00`) under
/// [`Align::Collectives`]; zero otherwise or when the analysis found none.
fn clock_offset(opts: &MergeOptions, label: &str) -> Ns {
    let bare = |l: &str| l.trim_start_matches('[').trim_end_matches(']').to_string();
    let me = bare(label);
    opts.clock_offsets
        .as_ref()
        .filter(|_| opts.align == Align::Collectives)
        .and_then(|v| v.iter().find(|(l, _)| bare(l) == me).map(|x| x.1))
        .unwrap_or(Ns::ZERO)
}

/// Merges one group into `out`: choose the ranks, scan (when the plan needs steps first), write
/// every rank's piece with its assumed shift, re-write the ranks whose shift or `--steps`
/// window turned out different, then the notes and the output ([`output`]).
pub fn merge_group(g: &Group, out: &Path, opts: &MergeOptions) -> Result<MergeResult> {
    let chosen = choose(g, opts)?;
    let out_abs = absolute(out);
    for f in &g.files {
        if absolute(&f.path) == out_abs {
            bail!("refusing to overwrite the input {}", f.path.display());
        }
    }
    let dir = out_abs
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    let mut notes = Vec::new();
    // What an earlier merge killed without a chance to clean up (SIGKILL, a crash) left behind.
    let stale = cleanup::remove_stale(&dir, cleanup::MERGE_TMP_PREFIX, cleanup::STALE_AGE);
    if !stale.is_empty() {
        notes.push(format!(
            "removed {} stale temporary directories ({}*, over a day old) in {}",
            stale.len(),
            cleanup::MERGE_TMP_PREFIX,
            dir.display()
        ));
    }
    // Registered before it exists: SIGINT/SIGTERM at any point removes it.
    let tmp_prefix = format!("{}{}-", cleanup::MERGE_TMP_PREFIX, std::process::id());
    let _registered = cleanup::register(&dir, &tmp_prefix, true);
    let tmp = tempfile::Builder::new()
        .prefix(&tmp_prefix)
        .tempdir_in(&dir)
        .with_context(|| format!("creating a temporary directory in {}", dir.display()))?;

    // A `.pftrace.gz`'s ranks are compressed each on its own thread, as the JSON's are.
    let gzip = out.extension().is_some_and(|e| e == "gz");
    let raw_pieces = opts.trace_format == TraceFormat::Perfetto && !gzip;
    let mut ranks = Ranks::new(g, opts, chosen, tmp.path().to_path_buf(), raw_pieces);
    let first_shifts = ranks.scan();
    ranks.write_pass(&ranks.live(), &first_shifts, "writing the merged trace")?;
    let live = ranks.live();
    if live.is_empty() {
        let mut msg = format!(
            "no rank of profile {} could be read; nothing written",
            g.profile_id
        );
        for (&i, u) in ranks.chosen.iter().zip(&ranks.unreadable) {
            msg += &format!("\n  {}: {}", g.files[i].label, u.as_deref().unwrap_or("?"));
        }
        bail!(msg);
    }
    ranks.settle_after_write(&mut notes);
    if let Some(why) = ranks.not_one_run(&live) {
        bail!(why);
    }
    let alignment = align::plan(opts.align, &ranks.written_clocks(&live));
    let mut shifts = vec![Ns::ZERO; ranks.chosen.len()];
    for (&k, &s) in live.iter().zip(&alignment.shifts) {
        shifts[k] = s - clock_offset(opts, &g.files[ranks.chosen[k]].label);
    }
    let redo: Vec<usize> = live
        .iter()
        .copied()
        .filter(|&k| {
            ranks.outs[k]
                .as_ref()
                .is_some_and(|o| o.shift != shifts[k] || !o.window_held)
                || ranks.window_changed[k]
        })
        .collect();
    ranks.write_pass(
        &redo,
        &shifts,
        "rewriting ranks with their clock shift or window",
    )?;

    let summaries = ranks.summaries();
    for &p in &alignment.assumed_base {
        notes.push(format!(
            "{} has no baseTimeNanoseconds (Kineto writes it after the events: the file is cut short?) \
             and relative times: given the common base",
            g.files[ranks.chosen[live[p]]].label
        ));
    }
    clock_notes(&summaries, opts.align, alignment.base_ns, &mut notes);
    let (extra, extra_events) = extras(g, opts, &alignment, &ranks, &mut notes);
    let outs = || ranks.outs.iter().flatten();
    let mut result = MergeResult {
        output: None,
        events: outs().map(|o| o.written + o.added).sum::<u64>() + extra_events,
        bytes_in: outs().map(|o| o.report.bytes).sum(),
        uncompressed_out: 0,
        base_ns: alignment.base_ns,
        ranks: summaries,
        notes,
        redone: redo.len(),
        trace_format: opts.trace_format,
    };
    if opts.strict && result.damaged() {
        return Ok(result);
    }
    result.uncompressed_out = match opts.trace_format {
        TraceFormat::Json => {
            let tail = output::tail_json(g, &ranks.entries(), &alignment, out)?;
            let pieces = ranks.outs.into_iter().flatten().map(|o| o.piece).collect();
            output::write(out, opts.level, pieces, &extra, &tail)?
        }
        TraceFormat::Perfetto => {
            perfetto_notes(g, &ranks, &mut result.notes);
            let tail = perfetto_extras(g, &ranks, &extra);
            write_perfetto(g, out, &ranks, &tail, gzip.then_some(opts.level))?
        }
    };
    result.output = Some(out.to_path_buf());
    Ok(result)
}

/// What a merge adds after the ranks: a `rankprof watch` timeline beside the traces, its
/// polls inside this trace's time span as load counter tracks ([`crate::load::evidence`]),
/// and the `--critical-path` and `--what-if` overlays; as JSON events (a `.pftrace` encodes
/// them in turn, [`perfetto::extras`]). Its events and how many.
fn extras(
    g: &Group,
    opts: &MergeOptions,
    alignment: &align::Alignment,
    ranks: &Ranks<'_>,
    notes: &mut Vec<String>,
) -> (Vec<u8>, u64) {
    let load = crate::load::evidence::for_merge(
        &g.dir,
        alignment.base_ns,
        output::output_span(&ranks.outs, opts.window),
    );
    notes.extend(load.notes);
    let mut extra = load.json;
    let mut extra_events = load.events;
    for ov in &opts.overlays {
        let (json, n) = overlay_events(g, ov, opts.align, alignment.base_ns, notes);
        if !json.is_empty() {
            if !extra.is_empty() {
                extra.extend_from_slice(b",\n");
            }
            extra.extend_from_slice(&json);
            extra_events += n;
        }
    }
    (extra, extra_events)
}

/// The merge's extras ([`extras`], JSON) as `.pftrace` packets, on the tracks of the ranks
/// they belong to.
fn perfetto_extras(g: &Group, ranks: &Ranks<'_>, extra: &[u8]) -> Vec<u8> {
    let live: Vec<(String, usize)> = ranks
        .outs
        .iter()
        .zip(&ranks.chosen)
        .filter(|(o, _)| o.is_some())
        .map(|(_, &i)| {
            let label = g.files[i]
                .label
                .trim_start_matches('[')
                .trim_end_matches(']');
            (label.to_string(), i)
        })
        .collect();
    perfetto::extras::encode(extra, &live, g.files.len()).bytes
}

/// Writes the merged `.pftrace`: the ranks' descriptors and pieces, in rank order, then
/// `tail`, the extras; gzipped at level `gzip` when given (`.pftrace.gz`).
fn write_perfetto(
    g: &Group,
    out: &Path,
    ranks: &Ranks<'_>,
    tail: &[u8],
    gzip: Option<u32>,
) -> Result<u64> {
    let parts: Vec<perfetto::RankPart<'_>> = ranks
        .outs
        .iter()
        .flatten()
        .filter_map(|o| {
            let pf = o.perfetto.as_ref()?;
            Some(perfetto::RankPart {
                head: &pf.head,
                events: &o.piece,
            })
        })
        .collect();
    let title = match &g.stage {
        Some(st) => format!("rankprof merge {} {st}", g.profile_id),
        None => format!("rankprof merge {}", g.profile_id),
    };
    Ok(perfetto::write_file(out, &title, &parts, tail, gzip)?)
}

/// Notes on what the Perfetto encoding left out of each rank.
fn perfetto_notes(g: &Group, ranks: &Ranks<'_>, notes: &mut Vec<String>) {
    for (k, o) in ranks.outs.iter().enumerate() {
        let Some(st) = o
            .as_ref()
            .and_then(|o| o.perfetto.as_ref())
            .map(|p| &p.stats)
        else {
            continue;
        };
        let label = &g.files[ranks.chosen[k]].label;
        if st.unbound_flows > 0 {
            notes.push(format!(
                "{label}: {} flow events not just after a slice of their thread were left out",
                st.unbound_flows
            ));
        }
        if !st.skipped.is_empty() {
            let kinds: Vec<String> = st
                .skipped
                .iter()
                .map(|(ph, n)| format!("{n} '{ph}'"))
                .collect();
            notes.push(format!(
                "{label}: events of kinds the .pftrace does not hold were left out: {}",
                kinds.join(", ")
            ));
        }
    }
}

/// An overlay's slices (the critical path's, the ideal timeline's) as events on each rank's
/// track (with a note of how many), when the ranks are on the common clock; else a note that
/// they are not drawn.
fn overlay_events(
    g: &Group,
    ov: &Overlay,
    align: Align,
    base_ns: Option<i64>,
    notes: &mut Vec<String>,
) -> (Vec<u8>, u64) {
    if !matches!(align, Align::Base | Align::Collectives) {
        notes.push(format!(
            "{}: its tracks are on the common clock and need --align base; not drawn",
            ov.track
        ));
        return (Vec::new(), 0);
    }
    let mut missing = Vec::new();
    let sort_base = |label: &str| {
        g.files
            .iter()
            .find(|f| f.label.trim_start_matches('[').trim_end_matches(']') == label)
            .map(|f| f.id.sort_index_base())
    };
    let (json, n) = ov.events(sort_base, base_ns.unwrap_or(0), &mut missing);
    if !json.is_empty() {
        notes.push(format!(
            "{}: {} slices on the ranks' \"{}\" tracks",
            ov.track,
            ov.slices.len() - missing.len().min(ov.slices.len()),
            ov.track
        ));
    }
    if !missing.is_empty() {
        notes.push(format!(
            "{}: no rank {} in this merge; its slices are left out",
            ov.track,
            missing.join(", ")
        ));
    }
    (json, n)
}

/// The ranks `--ranks` names (indices into the group), or all.
fn choose(g: &Group, opts: &MergeOptions) -> Result<Vec<usize>> {
    let n = g.files.len();
    match &opts.ranks {
        Some(r) => {
            if let Some(bad) = r.iter().find(|&&i| i >= n) {
                bail!(
                    "--ranks: rank {bad} does not exist ({} has ranks 0-{})",
                    g.profile_id,
                    n.saturating_sub(1)
                );
            }
            Ok(r.clone())
        }
        None => Ok((0..n).collect()),
    }
}

/// Notes on the ranks' clocks (different bases kept apart, bases missing) and on the ranks
/// left out.
fn clock_notes(
    ranks: &[RankSummary],
    align: Align,
    common_base: Option<i64>,
    notes: &mut Vec<String>,
) {
    let bases: BTreeSet<_> = ranks
        .iter()
        .filter(|r| r.unreadable.is_none())
        .map(|r| r.base_ns)
        .collect();
    if align == Align::None && bases.len() > 1 {
        notes.push(
            "ranks have different baseTimeNanoseconds and --align none keeps them apart".into(),
        );
    }
    if bases.contains(&None) && bases.len() > 1 && align != Align::None && common_base.is_none() {
        notes.push(
            "some ranks lack baseTimeNanoseconds: all ranks were put on absolute time".into(),
        );
    }
    let unread = ranks.iter().filter(|r| r.unreadable.is_some()).count();
    if unread > 0 {
        notes.push(format!(
            "{unread} of {} rank{} could not be read and {} left out (listed in the output's \"ranks\" as unreadable)",
            ranks.len(),
            if ranks.len() == 1 { "" } else { "s" },
            if unread == 1 { "is" } else { "are" }
        ));
    }
}

fn absolute(p: &Path) -> PathBuf {
    if let Ok(c) = std::fs::canonicalize(p) {
        return c;
    }
    // The output may not exist yet: resolve its directory.
    let parent = p
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let dir = std::fs::canonicalize(parent).unwrap_or_else(|_| parent.to_path_buf());
    dir.join(p.file_name().unwrap_or_default())
}
