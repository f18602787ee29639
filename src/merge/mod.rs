//! `merge-traces` / `rankprof merge`: every rank's trace into one Perfetto-ready file per
//! profile (and stage), streamed and compressed in parallel, never held in memory.
//!
//! Per group: (optionally) a scan pass finds each rank's steps; each rank is then read and
//! written into its own compressed piece ([`rank::write_rank`]), ranks in parallel; the pieces,
//! a head and a tail with the merged top-level keys make one gzip file, renamed into place.
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
//! SIGINT/SIGTERM removes ([`crate::trace::cleanup`]); ones over a day old, left by a run that
//! was killed outright, are removed when a merge starts.
//!
//! (Over ~500 lines: merge orchestration plus the merged trace's head and tail.)

pub mod align;
pub mod filter;
pub mod rank;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use rayon::prelude::*;

use crate::trace::writer::{piece_from_bytes, write_gzip, Piece};
use crate::trace::{cleanup, discover, discover_files, Discovery, Group, Ns, ReadReport};

pub use align::Align;
use align::RankClock;
use filter::Filter;
use rank::{RankError, RankJob, RankOut, ScanInfo};

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
    /// Ranks re-read because their clock shift was not known in advance.
    pub redone: usize,
}

impl MergeResult {
    pub fn damaged(&self) -> bool {
        self.ranks.iter().any(|r| r.damaged)
    }

    /// OK; PARTIAL when a damaged rank was merged as far as it could be read; FAILED when
    /// `strict` refused to write.
    pub fn exit_code(&self) -> i32 {
        match (self.damaged(), self.output.is_some()) {
            (false, _) => crate::exit::OK,
            (true, true) => crate::exit::PARTIAL,
            (true, false) => crate::exit::FAILED,
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
    let mut d = match profile_dir {
        Some(dir) => {
            discover(dir, recursive).with_context(|| format!("reading {}", dir.display()))?
        }
        None => Discovery::default(),
    };
    if !files.is_empty() {
        let listed = crate::trace::discover::list_files(files)?;
        let more = discover_files(&listed.files);
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

/// Merges one group into `out`.
// Long on purpose: the phases (choose ranks, scan, write pass, clock plan, re-run, tail,
// pieces) share per-rank state through closures; each phase is marked by a comment.
pub fn merge_group(g: &Group, out: &Path, opts: &MergeOptions) -> Result<MergeResult> {
    let n = g.files.len();
    let chosen: Vec<usize> = match &opts.ranks {
        Some(r) => {
            if let Some(bad) = r.iter().find(|&&i| i >= n) {
                bail!(
                    "--ranks: rank {bad} does not exist ({} has ranks 0-{})",
                    g.profile_id,
                    n.saturating_sub(1)
                );
            }
            r.clone()
        }
        None => (0..n).collect(),
    };
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

    // A rank whose file cannot be read (by k, the index into `chosen`) is left out and named.
    let mut unreadable: Vec<Option<String>> = vec![None; chosen.len()];
    // Scan first when the plan needs each rank's steps before writing.
    let need_scan = opts.align == Align::FirstStep || opts.steps.is_some();
    let scans: Vec<Option<ScanInfo>> = if need_scan {
        let found: Vec<std::io::Result<ScanInfo>> = chosen
            .par_iter()
            .map(|&i| rank::scan(&g.files[i]))
            .collect();
        found
            .into_iter()
            .enumerate()
            .map(|(k, r)| {
                r.map_err(|e| unreadable[k] = Some(format!("reading {e}")))
                    .ok()
            })
            .collect()
    } else {
        vec![None; chosen.len()]
    };
    let clock_of = |k: usize, report: Option<&ReadReport>, min_ts: Option<Ns>| RankClock {
        base_ns: report.and_then(|r| r.header.base_time_ns),
        first_step: scans[k].as_ref().and_then(|s| s.first_step()),
        min_ts,
    };
    let step_windows: Vec<Option<(Ns, Ns)>> = chosen
        .iter()
        .enumerate()
        .map(|(k, &i)| {
            let (a, b) = opts.steps?;
            let w = scans[k].as_ref().and_then(|s| s.window_of_steps(a, b));
            if w.is_none() && unreadable[k].is_none() {
                notes.push(format!(
                    "{}: no steps {a}:{b} found; rank kept whole",
                    g.files[i].label
                ));
            }
            w
        })
        .collect();
    let readable = |unreadable: &[Option<String>]| -> Vec<usize> {
        (0..chosen.len())
            .filter(|&k| unreadable[k].is_none())
            .collect()
    };
    let mut first_shifts = vec![Ns::ZERO; chosen.len()];
    if need_scan {
        let live = readable(&unreadable);
        let clocks: Vec<_> = live
            .iter()
            .map(|&k| {
                let s = scans[k].as_ref();
                clock_of(
                    k,
                    s.and_then(|s| s.report.as_ref()),
                    s.and_then(|s| s.min_ts),
                )
            })
            .collect();
        for (&k, &shift) in live.iter().zip(&align::plan(opts.align, &clocks).shifts) {
            first_shifts[k] = shift;
        }
    }

    let job = |k: usize, shift: Ns| {
        let i = chosen[k];
        let f = &g.files[i];
        let mut window = step_windows[k];
        if let Some((lo, hi)) = opts.window {
            // The window is in output units; the rank's own units are shifted back.
            let (lo, hi) = (lo - shift, hi - shift);
            window = Some(match window {
                Some((a, b)) => (a.max(lo), b.min(hi)),
                None => (lo, hi),
            });
        }
        RankJob {
            index: i,
            nranks: n,
            label: f.label.clone(),
            sort_base: f.id.sort_index_base(),
            path: f.path.clone(),
            shift,
            filter: Filter {
                drop_cat: opts.drop_cat.clone(),
                gpu_only: opts.gpu_only,
                window,
            },
            level: opts.level,
            piece_path: tmp.path().join(format!("rank-{i}.deflate")),
        }
    };
    // Runs the write pass of ranks `ks` with their shifts: an unreadable input marks its rank,
    // a failed write fails the merge.
    let run_pass = |ks: &[usize],
                    shift: &(dyn Fn(usize) -> Ns + Sync),
                    outs: &mut Vec<Option<RankOut>>,
                    unreadable: &mut Vec<Option<String>>,
                    what: &str|
     -> Result<()> {
        let bar = crate::progress::bar(ks.len() as u64, "merge");
        bar.set_message("ranks");
        let done: Vec<(usize, Result<RankOut, RankError>)> = ks
            .par_iter()
            .map(|&k| {
                let r = rank::write_rank(&job(k, shift(k)));
                bar.inc(1);
                (k, r)
            })
            .collect();
        bar.finish_and_clear();
        for (k, r) in done {
            match r {
                Ok(o) => outs[k] = Some(o),
                Err(RankError::Read(e)) => {
                    outs[k] = None;
                    unreadable[k] = Some(format!("reading {e}"));
                }
                Err(e @ RankError::Write(_)) => {
                    return Err(anyhow::Error::new(e).context(what.to_string()))
                }
            }
        }
        Ok(())
    };
    let mut outs: Vec<Option<RankOut>> = (0..chosen.len()).map(|_| None).collect();
    run_pass(
        &readable(&unreadable),
        &|k| first_shifts[k],
        &mut outs,
        &mut unreadable,
        "writing the merged trace",
    )?;
    let live = readable(&unreadable);
    if live.is_empty() {
        let mut msg = format!(
            "no rank of profile {} could be read; nothing written",
            g.profile_id
        );
        for (&i, u) in chosen.iter().zip(&unreadable) {
            msg += &format!("\n  {}: {}", g.files[i].label, u.as_deref().unwrap_or("?"));
        }
        bail!(msg);
    }
    let clocks: Vec<_> = live
        .iter()
        .map(|&k| {
            let o = outs[k].as_ref();
            clock_of(k, o.map(|o| &o.report), o.and_then(|o| o.min_ts))
        })
        .collect();
    let alignment = align::plan(opts.align, &clocks);
    let mut shifts = vec![Ns::ZERO; chosen.len()];
    for (&k, &s) in live.iter().zip(&alignment.shifts) {
        shifts[k] = s;
    }
    let redo: Vec<usize> = live
        .iter()
        .copied()
        .filter(|&k| outs[k].as_ref().is_some_and(|o| o.shift != shifts[k]))
        .collect();
    run_pass(
        &redo,
        &|k| shifts[k],
        &mut outs,
        &mut unreadable,
        "rewriting ranks with their clock shift",
    )?;

    let ranks: Vec<RankSummary> = chosen
        .iter()
        .enumerate()
        .map(|(k, &i)| match (&outs[k], &unreadable[k]) {
            (Some(o), _) => RankSummary {
                label: g.files[i].label.clone(),
                path: g.files[i].path.clone(),
                read: o.report.events,
                written: o.written,
                dropped: o.dropped,
                added: o.added,
                shift: o.shift,
                base_ns: o.report.header.base_time_ns,
                notes: o.report.notes(),
                damaged: o.report.is_damaged(),
                unreadable: None,
            },
            (None, u) => {
                let why = u.clone().unwrap_or_else(|| "reading failed".into());
                RankSummary {
                    label: g.files[i].label.clone(),
                    path: g.files[i].path.clone(),
                    read: 0,
                    written: 0,
                    dropped: 0,
                    added: 0,
                    shift: Ns::ZERO,
                    base_ns: None,
                    notes: vec![format!("unreadable, left out: {why}")],
                    damaged: true,
                    unreadable: Some(why),
                }
            }
        })
        .collect();
    for &p in &alignment.assumed_base {
        notes.push(format!(
            "{} has no baseTimeNanoseconds (Kineto writes it after the events: the file is cut short?) \
             and relative times: given the common base",
            g.files[chosen[live[p]]].label
        ));
    }
    let bases: BTreeSet<_> = ranks
        .iter()
        .filter(|r| r.unreadable.is_none())
        .map(|r| r.base_ns)
        .collect();
    if opts.align == Align::None && bases.len() > 1 {
        notes.push(
            "ranks have different baseTimeNanoseconds and --align none keeps them apart".into(),
        );
    }
    if bases.contains(&None)
        && bases.len() > 1
        && opts.align != Align::None
        && alignment.base_ns.is_none()
    {
        notes.push(
            "some ranks lack baseTimeNanoseconds: all ranks were put on absolute time".into(),
        );
    }
    let unread = ranks.iter().filter(|r| r.unreadable.is_some()).count();
    if unread > 0 {
        notes.push(format!(
            "{unread} of {} ranks could not be read and are left out (listed in the output's \"ranks\" as unreadable)",
            chosen.len()
        ));
    }
    // A `rankprof watch` timeline beside the traces: its polls inside this trace's time span
    // become load counter tracks, written after the ranks (crate::load::evidence).
    let load = crate::load::evidence::for_merge(
        &g.dir,
        alignment.base_ns,
        output_span(&outs, opts.window),
    );
    notes.extend(load.notes);
    let mut result = MergeResult {
        output: None,
        events: outs
            .iter()
            .flatten()
            .map(|o| o.written + o.added)
            .sum::<u64>()
            + load.events,
        bytes_in: outs.iter().flatten().map(|o| o.report.bytes).sum(),
        uncompressed_out: 0,
        base_ns: alignment.base_ns,
        ranks,
        notes,
        redone: redo.len(),
    };
    if opts.strict && result.damaged() {
        return Ok(result);
    }

    let entries: Vec<(usize, Result<&RankOut, &str>)> = chosen
        .iter()
        .enumerate()
        .map(|(k, &i)| {
            let r = match (&outs[k], &unreadable[k]) {
                (Some(o), _) => Ok(o),
                (None, u) => Err(u.as_deref().unwrap_or("reading failed")),
            };
            (i, r)
        })
        .collect();
    let tail = tail_json(g, &entries, &alignment, out)?;
    let mut pieces: Vec<Piece> = vec![piece_from_bytes(
        b"{\"traceEvents\":[\n",
        opts.level,
        false,
    )?];
    let mut any = false;
    for o in outs.into_iter().flatten() {
        if o.piece.len == 0 {
            continue;
        }
        if any {
            pieces.push(piece_from_bytes(b",\n", opts.level, false)?);
        }
        any = true;
        pieces.push(o.piece);
    }
    if !load.json.is_empty() {
        if any {
            pieces.push(piece_from_bytes(b",\n", opts.level, false)?);
        }
        pieces.push(piece_from_bytes(&load.json, opts.level, false)?);
    }
    pieces.push(piece_from_bytes(tail.as_bytes(), opts.level, true)?);
    result.uncompressed_out = write_gzip(out, &pieces)?;
    result.output = Some(out.to_path_buf());
    Ok(result)
}

/// The merged trace's time span in output `ts` (ns): the earliest event start and the latest
/// event end over the ranks read, cut to `--window`.
fn output_span(outs: &[Option<RankOut>], window: Option<(Ns, Ns)>) -> Option<(i64, i64)> {
    let lo = outs
        .iter()
        .flatten()
        .filter_map(|o| o.min_ts.map(|t| t.0 + o.shift.0))
        .min()?;
    let hi = outs
        .iter()
        .flatten()
        .filter_map(|o| o.max_ts.map(|t| t.0 + o.shift.0))
        .max()?;
    Some(match window {
        Some((a, b)) => (lo.max(a.0), hi.min(b.0)),
        None => (lo, hi),
    })
}

/// The merged document's keys after `traceEvents`. `ranks`: every chosen rank (its index in
/// the group) with its pass, or why it could not be read.
fn tail_json(
    g: &Group,
    ranks_in: &[(usize, Result<&RankOut, &str>)],
    alignment: &align::Alignment,
    out: &Path,
) -> Result<String> {
    use serde_json::{json, Map, Value};
    let mut devices: Vec<Value> = Vec::new();
    let mut ranks = Vec::new();
    for &(i, o) in ranks_in {
        let f = &g.files[i];
        let o = match o {
            Ok(o) => o,
            Err(why) => {
                ranks.push(json!({
                    "label": f.label,
                    "file": f.path.file_name().map(|n| n.to_string_lossy().into_owned()),
                    "index": i,
                    "tp": f.id.tp, "dp": f.id.dp, "pp": f.id.pp, "ep": f.id.ep, "rank": f.id.rank,
                    "baseTimeNanoseconds": null,
                    "clock_shift_ns": null,
                    "events": 0,
                    "damaged": true,
                    "unreadable": why,
                    "distributedInfo": null,
                }));
                continue;
            }
        };
        let h = &o.report.header;
        if let Some(raw) = &h.device_properties {
            if let Ok(Value::Array(list)) = serde_json::from_str::<Value>(raw) {
                for d in list {
                    if !devices.contains(&d) {
                        devices.push(d);
                    }
                }
            }
        }
        let dist: Value = h
            .distributed_info
            .as_deref()
            .and_then(|s| serde_json::from_str(s).ok())
            .unwrap_or(Value::Null);
        ranks.push(json!({
            "label": f.label,
            "file": f.path.file_name().map(|n| n.to_string_lossy().into_owned()),
            "index": i,
            "tp": f.id.tp, "dp": f.id.dp, "pp": f.id.pp, "ep": f.id.ep, "rank": f.id.rank,
            "baseTimeNanoseconds": h.base_time_ns,
            "clock_shift_ns": o.shift.0,
            "events": o.written,
            "damaged": o.report.is_damaged(),
            "unreadable": null,
            "distributedInfo": dist,
        }));
    }
    let first = ranks_in
        .iter()
        .find_map(|(_, o)| o.as_ref().ok())
        .map(|o| &o.report.header);
    let mut top = Map::new();
    top.insert(
        "schemaVersion".into(),
        json!(first.and_then(|h| h.schema_version).unwrap_or(1)),
    );
    if !devices.is_empty() {
        top.insert("deviceProperties".into(), Value::Array(devices));
    }
    if let Some(d) = first
        .and_then(|h| h.distributed_info.as_deref())
        .and_then(|s| serde_json::from_str::<Value>(s).ok())
    {
        top.insert("distributedInfo".into(), d);
    }
    top.insert("ranks".into(), Value::Array(ranks));
    top.insert(
        "traceName".into(),
        json!(out.file_name().map(|n| n.to_string_lossy().into_owned())),
    );
    top.insert(
        "displayTimeUnit".into(),
        json!(first
            .and_then(|h| h.display_time_unit.clone())
            .unwrap_or_else(|| "ms".into())),
    );
    if let Some(b) = alignment.base_ns {
        top.insert("baseTimeNanoseconds".into(), json!(b));
    }
    let body = serde_json::to_string(&Value::Object(top))?;
    // `{...}` -> `\n],\n...}`: the keys follow the event array inside the same object.
    let inner = body.strip_prefix('{').unwrap_or(&body);
    Ok(format!("\n],\n{inner}\n"))
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
