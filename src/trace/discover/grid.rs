//! Where a profile's ranks sit in its parallel grid: the ranks absent from the TP × DP × PP
//! grid its files span (SGLang's DP attention numbered apart), and which dimensions a group's
//! labels show.

use std::collections::{HashMap, HashSet};

use super::rankfile::{Naming, RankFile};
use crate::trace::rankid::{label_of, RankId, Shown};

/// Ranks absent from the full TP × DP × PP grid spanned by `ids`, as labels; without TP, the
/// global ranks absent from 0..max. EP is left out of the grid: it splits the TP group (each TP
/// rank has one EP rank), it is not a dimension of its own. The order of `ids` does not matter.
pub(crate) fn missing_in(ids: &[RankId]) -> Vec<String> {
    missing_shown(ids, Shown::present())
}

/// [`missing_in`], labelled with the dimensions `shown` (as the group's own labels are).
pub(super) fn missing_shown(ids: &[RankId], shown: Shown) -> Vec<String> {
    let max = |f: fn(&RankId) -> Option<u32>| ids.iter().filter_map(f).max();
    let (Some(tp), dp, pp) = (max(|r| r.tp), max(|r| r.dp), max(|r| r.pp)) else {
        return missing_global(ids);
    };
    let mut out = Vec::new();
    // SGLang's DP attention numbers TP over every DP rank (`TP-5-DP-1`): the grid is TP × PP,
    // each TP index with the DP index it was written with.
    let dp_attention = dp_attention(ids);
    let dps = if dp_attention { 0 } else { dp.unwrap_or(0) };
    for d in 0..=dps {
        for p in 0..=pp.unwrap_or(0) {
            for t in 0..=tp {
                let found = ids.iter().any(|r| {
                    r.tp == Some(t)
                        && (dp_attention || r.dp.unwrap_or(0) == d)
                        && r.pp.unwrap_or(0) == p
                });
                if !found {
                    let id = RankId {
                        tp: Some(t),
                        // Under DP attention a missing rank's DP index is not known.
                        dp: dp.filter(|_| !dp_attention).map(|_| d),
                        pp: pp.map(|_| p),
                        ..Default::default()
                    };
                    out.push(label_of(&id, shown));
                }
            }
        }
    }
    out
}

/// SGLang DP attention: more than one DP index, and no TP index (per PP stage) written with two
/// of them (`TP-0-DP-0`, `TP-1-DP-0`, `TP-2-DP-1`, … rather than `TP-0-DP-0`, `TP-0-DP-1`).
fn dp_attention(ids: &[RankId]) -> bool {
    let mut dp_of: HashMap<(Option<u32>, u32), Option<u32>> = HashMap::new();
    let mut dps = HashSet::new();
    for r in ids {
        let Some(tp) = r.tp else { continue };
        dps.insert(r.dp);
        if dp_of.insert((r.pp, tp), r.dp).is_some_and(|d| d != r.dp) {
            return false;
        }
    }
    dps.len() > 1
}

fn missing_global(ids: &[RankId]) -> Vec<String> {
    let ranks: Vec<u32> = ids.iter().filter_map(|r| r.rank).collect();
    let Some(&max) = ranks.iter().max() else {
        return Vec::new();
    };
    (0..=max)
        .filter(|r| !ranks.contains(r))
        .map(|r| format!("[RANK{r:02}]"))
        .collect()
}

/// The dimensions a group's labels show: all it has, but for vLLM, which names every
/// dimension even of size 1, only those that vary (TP at least).
pub(super) fn shown_of(files: &[RankFile]) -> Shown {
    let vllm = files
        .iter()
        .any(|f| f.naming == Naming::Vllm && f.id.tp.is_some());
    if !vllm {
        return Shown::present();
    }
    let varies = |f: fn(&RankId) -> Option<u32>| {
        let mut v: Vec<_> = files.iter().map(|r| f(&r.id)).collect();
        v.sort_unstable();
        v.dedup();
        v.len() > 1
    };
    let (dp, pp, ep, dcp) = (
        varies(|r| r.dp),
        varies(|r| r.pp),
        varies(|r| r.ep),
        varies(|r| r.dcp),
    );
    Shown {
        tp: varies(|r| r.tp) || !(dp || pp || ep || dcp),
        dp,
        pp,
        ep,
        dcp,
    }
}
