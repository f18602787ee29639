//! Files named by `torch.profiler.tensorboard_trace_handler(dir, worker_name)`:
//! `{worker_name}.{stamp}.pt.trace.json[.gz]`, one per rank, each stamped by its own rank
//! (read by [`super::handler_names`]), grouped into profiles ([`groups`]).
//!
//! Upstream, `torch/profiler/profiler.py` (`tensorboard_trace_handler`):
//! `f"{worker_name}.{time.time_ns()}.pt.trace.json"` (+ `.gz` with `use_gzip`), the stamp in
//! ns; torch 1.8–1.9 wrote `int(time.time() * 1000)`, in ms. Without a worker name it is
//! `f"{socket.gethostname()}_{os.getpid()}"`. Who writes which worker name:
//!
//! - torch's default `{host}_{pid}`: Megatron-LM `--use-pytorch-profiler`
//!   (`megatron/training/training.py`: `tensorboard_trace_handler(args.tensorboard_dir)`),
//!   slime (`slime/backends/megatron_utils/actor.py`, the same call, rank 0 only), the
//!   DeepSpeed tutorial (`docs/_tutorials/pytorch-profiler.md`), vLLM V0: the rank is only in
//!   the file's head (`distributedInfo.rank`);
//! - training scripts' own worker names: `worker{r}`, `rank{r}`, `rank_{r}`, `gpu{r}`,
//!   `node{n}_rank{r}`, `trainer_rank{r}_step_{s}`, `worker{r}_step_{s}`: the script's own
//!   (`worker_name='worker'+str(rank)` is Kineto's DDP example's,
//!   `pytorch/kineto` `tb_plugin/examples/resnet50_ddp_profiler.py`); a node index
//!   (`node{n}`) is a stable part, so one run's nodes make one profile;
//! - vLLM's own `rank{r}` / `dp…_rank{r}` names are read by [`super::names`] before this.
//!
//! (torchtitan, `torchtitan/tools/profiling.py`, exports `iteration_{n}/rank{r}_trace.json`
//! itself, and verl, `verl/utils/profiler/torch_profile.py`, `[{prefix}_]prof_rank-{r}.json.gz`
//! (before: `prof_start_{a}_end_{b}_rank_{r}.json`): one name per rank without a stamp, read by
//! [`super::names::parse_name`]'s generic rule.)
//!
//! Every rank's handler takes its stamp when its own trace is ready, after its own profiler
//! stopped and post-processed its events; ranks stop at the same step (their collectives keep
//! them within a step of each other) but post-process for very different times (seconds to
//! minutes for large traces), so one run's stamps spread over up to a few minutes. Files of one
//! worker-name pattern whose stamps lie within [`SPREAD_NS`] of the first are one run; a
//! rank seen again starts the next ([`super::sessions::split`]).
//!
//! The rank comes from the worker name, corroborated by the head's `distributedInfo` (`rank`,
//! `world_size`), which is the authority when they disagree (with a note);
//! [`RankFrom`] overrides that.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::group::{finish_group, shown_dir, Group};
use super::handler_names::HandlerName;
use super::rankfile::{rank_file, Naming, RankFile, RankFrom};
use crate::trace::rankid::RankId;
use crate::trace::read::reader::read_head;

/// How far apart (from the first) the stamps of one run's files may be: 10 minutes.
pub(crate) const SPREAD_NS: u128 = 600_000_000_000;

/// One file with what its name and its head say.
struct Found {
    path: PathBuf,
    name: HandlerName,
    /// `distributedInfo.world_size` from the head.
    world: Option<u32>,
    rank: Option<u32>,
    /// `rank` as an id, for [`super::sessions::split`].
    id: RankId,
    naming: Naming,
}

/// The profiles of `dir`'s handler-named files: by worker-name pattern (torch's `{host}_{pid}`
/// names together), then by stamps within [`SPREAD_NS`] of the first, then split where a rank
/// comes again. Ranks by `rank_from` (`Auto`: the head's, else the name's, noted where they
/// disagree); where they are missing or repeat inside a profile, file-name order (noted).
pub(super) fn groups(
    dir: &Path,
    files: Vec<(HandlerName, PathBuf)>,
    rank_from: RankFrom,
    notes: &mut Vec<String>,
) -> Vec<Group> {
    let mut by_pattern: BTreeMap<Option<String>, Vec<Found>> = BTreeMap::new();
    let mut disagree: Vec<String> = Vec::new();
    for (name, path) in files {
        let head = if rank_from == RankFrom::Name && name.rank.is_some() {
            None
        } else {
            match read_head(&path) {
                Ok(h) => h,
                Err(e) => {
                    notes.push(format!("{}: cannot read its head: {e}", path.display()));
                    None
                }
            }
        };
        let dist = head.as_ref().map(|h| h.distributed()).unwrap_or_default();
        let head_rank = dist.rank.and_then(|r| u32::try_from(r).ok());
        let world = dist.world_size.and_then(|r| u32::try_from(r).ok());
        let named = name.rank.as_ref().map(|r| r.rank);
        let (rank, naming) = match rank_from {
            RankFrom::Name => (named, Naming::Generic),
            RankFrom::DistributedInfo => (head_rank, Naming::DistributedInfo),
            RankFrom::Auto | RankFrom::Order => match (head_rank, named) {
                (Some(h), Some(n)) if h != n => {
                    disagree.push(format!(
                        "{} (name {n}, head {h})",
                        path.file_name().and_then(|s| s.to_str()).unwrap_or("?")
                    ));
                    (Some(h), Naming::DistributedInfo)
                }
                (_, Some(n)) => (Some(n), Naming::Generic),
                (Some(h), None) => (Some(h), Naming::DistributedInfo),
                (None, None) => (None, Naming::FileOrder),
            },
        };
        by_pattern
            .entry(name.rank.as_ref().map(|r| r.pattern.clone()))
            .or_default()
            .push(Found {
                path,
                name,
                world,
                rank,
                id: RankId {
                    rank,
                    ..Default::default()
                },
                naming,
            });
    }
    if !disagree.is_empty() {
        let n = disagree.len();
        disagree.truncate(3);
        notes.push(format!(
            "{}: the rank in {n} file name(s) differs from distributedInfo.rank in the head of \
             each file ({}{}); distributedInfo is the authority (--rank-from name: the names instead)",
            shown_dir(dir),
            disagree.join(", "),
            if n > 3 { ", …" } else { "" }
        ));
    }
    let mut out = Vec::new();
    for (pattern, mut found) in by_pattern {
        found.sort_by(|a, b| a.name.ns.cmp(&b.name.ns).then(a.path.cmp(&b.path)));
        let base = match &pattern {
            Some(_) => found
                .first()
                .and_then(|f| f.name.rank.as_ref())
                .map(|r| r.id.clone())
                .filter(|id| !id.is_empty()),
            None => None,
        }
        .unwrap_or_else(|| dir_name(dir));
        let mut runs: Vec<Vec<Found>> = Vec::new();
        for f in found {
            match runs.last_mut() {
                Some(r)
                    if r.first()
                        .is_some_and(|a| f.name.ns.saturating_sub(a.name.ns) <= SPREAD_NS) =>
                {
                    r.push(f)
                }
                _ => runs.push(vec![f]),
            }
        }
        let sessions: Vec<Vec<Found>> = runs
            .into_iter()
            .flat_map(|r| {
                // A file without a rank has no stamp here: it never repeats a rank.
                super::sessions::split(r, |f| f.rank.map(|_| f.name.ns), |f| &f.id)
            })
            .collect();
        let n = sessions.len();
        for s in sessions {
            let id = match s.first() {
                Some(f) if n > 1 => format!("{base}.{}", f.name.stamp),
                _ => base.clone(),
            };
            out.push(finish(dir, id, s, notes));
        }
    }
    out
}

/// One profile: ranks as found when each file has one and they are distinct, else file-name
/// order (noted); the world size of the heads checked against the ranks found.
fn finish(dir: &Path, id: String, mut files: Vec<Found>, notes: &mut Vec<String>) -> Group {
    let mut ranks: Vec<u32> = files.iter().filter_map(|f| f.rank).collect();
    ranks.sort_unstable();
    ranks.dedup();
    if ranks.len() != files.len() {
        if files.len() > 1 {
            notes.push(format!(
                "{}: profile {id}: {} trace files without distinct ranks in their names or \
                 heads; ranks given in file-name order",
                shown_dir(dir),
                files.len()
            ));
        }
        files.sort_by(|a, b| a.path.cmp(&b.path));
        for (i, f) in files.iter_mut().enumerate() {
            f.rank = Some(i as u32);
            f.naming = Naming::FileOrder;
        }
    }
    let worlds: Vec<u32> = files.iter().filter_map(|f| f.world).collect();
    if let Some(&w) = worlds.first() {
        if worlds.iter().all(|&x| x == w) && w as usize != files.len() && files.len() > 1 {
            notes.push(format!(
                "{}: profile {id} holds {} of the {w} ranks its heads name \
                 (distributedInfo.world_size)",
                shown_dir(dir),
                files.len()
            ));
        }
    }
    let files: Vec<RankFile> = files
        .into_iter()
        .map(|f| {
            rank_file(
                f.path,
                RankId {
                    rank: f.rank,
                    ..Default::default()
                },
                f.naming,
            )
        })
        .collect();
    finish_group(dir.to_path_buf(), id, None, files)
}

/// A directory's name (the current directory's for bare file names), else `trace`.
fn dir_name(dir: &Path) -> String {
    let here;
    let dir = if dir.as_os_str().is_empty() {
        here = std::env::current_dir().unwrap_or_default();
        &here
    } else {
        dir
    };
    dir.file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("trace")
        .to_string()
}
