//! vLLM's dense-model names under data parallelism: each replica counts `rank{r}` from 0.
//!
//! A dense model's workers make no expert-parallel group, so vLLM names their traces
//! `[prefix_]rank{r}.{ns}.pt.trace.json.gz` with the worker's own rank
//! (`get_worker_rank_suffix(global_rank=self.rank)`, `vllm/v1/worker/gpu_worker.py`), which
//! counts inside one data-parallel replica: with DP > 1 every replica writes a `rank0`. The
//! process group, and so Kineto's `distributedInfo.rank`, is offset by the replica
//! (`init_distributed_environment`: `data_parallel_rank × world_size + rank`), so the file head
//! tells the replicas apart where the names cannot. Read only when a rank number repeats among
//! one profile's files (several replicas, or several sessions in one folder).

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use super::group::shown_dir;
use super::names::Parsed;
use super::rankfile::Naming;
use crate::trace::read::reader::read_head;

/// When the dense vLLM files of one profile repeat a rank number and every file's head has a
/// `distributedInfo.rank` that is not always the name's, that rank (global across the replicas)
/// becomes the file's rank, with a note. Otherwise (several sessions of one replica, a head
/// that cannot be read or has no rank) the names stand.
pub(super) fn global_ranks(dir: &Path, files: &mut [(Parsed, PathBuf)], notes: &mut Vec<String>) {
    let dense = |p: &Parsed| p.naming == Naming::Vllm && p.id.tp.is_none() && p.id.rank.is_some();
    if !files.iter().all(|(p, _)| dense(p)) {
        return;
    }
    let mut seen = HashSet::new();
    if files.iter().all(|(p, _)| seen.insert(p.id.rank)) {
        return;
    }
    let mut global = Vec::with_capacity(files.len());
    for (_, path) in files.iter() {
        let head = read_head(path).ok().flatten();
        match head.and_then(|h| h.distributed_rank()) {
            Some(g) => match u32::try_from(g) {
                Ok(g) => global.push(g),
                Err(_) => return,
            },
            None => return,
        }
    }
    if files
        .iter()
        .zip(&global)
        .all(|((p, _), g)| p.id.rank == Some(*g))
    {
        return;
    }
    for ((p, _), g) in files.iter_mut().zip(global) {
        p.id.rank = Some(g);
    }
    notes.push(format!(
        "{}: vLLM's rank{{r}} names repeat across data-parallel replicas (a dense model counts \
         ranks inside each replica); ranks taken from distributedInfo.rank, global across them",
        shown_dir(dir)
    ));
}
