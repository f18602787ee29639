//! MoE with expert parallelism (EP > 1): each EP rank's kernel time against its EP peers, split
//! into the three parts that tell *hot experts* from *waiting on the network*:
//!
//! - **dispatch/combine**: communication kernels whose names say `dispatch`, `combine` or
//!   all-to-all (`all_to_all`, `alltoall`: DeepEP normal and low-latency kernels, NCCL
//!   all-to-all). A rank that waits for a slow peer or a slow link spends it here.
//! - **expert GEMMs**: `moe`-class kernels other than routing (top-k gating, block alignment,
//!   sorting, and SGLang's `ep_scatter` / `ep_gather`, which permute tokens locally and are no
//!   expert GEMM): their time follows the tokens routed to the rank's experts.
//! - **the rest**: every other non-communication kernel (attention, dense GEMMs, routing, …).
//!
//! Routed tokens, when the trace has `record_shapes`: the token dimension of input 0 of the CPU
//! ops named `…fused_moe…` (their `Input Dims`), summed over the profile.
//!
//! EP peers: the other ranks of the same DP replica and PP stage that carry an EP index (the
//! file names say it) — of every DP rank under DP attention ([`ep_spans_dp`]); the typical peer is the median of each part. A rank is *balanced* when its
//! total is within the threshold of the peers'; otherwise the part with the largest excess over
//! the peers' median names the cause: **hot experts** (expert GEMMs), **slow dispatch/combine**
//! (the same expert GEMM time, more time in dispatch/combine: waiting on a peer or the network)
//! or **outside the MoE layers**.

use std::collections::{BTreeSet, HashMap};
use std::sync::OnceLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

use super::attribution::{Attribution, Cause};
use crate::analyze::classes::Classifier;
use crate::analyze::collect::ops::OpKind;
use crate::analyze::collect::rank::RankResult;
use crate::analyze::stats::{median, ratio};

/// One EP rank's parts, ns (and routed tokens when the trace has shapes).
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub struct EpParts {
    pub dispatch_ns: f64,
    pub expert_ns: f64,
    pub rest_ns: f64,
    pub routed_tokens: Option<f64>,
}

impl EpParts {
    pub(crate) fn total(&self) -> f64 {
        self.dispatch_ns + self.expert_ns + self.rest_ns
    }
}

/// One EP rank against its EP peers.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct EpRecord {
    pub rank: String,
    pub ep: u32,
    pub peers: Vec<String>,
    pub parts: EpParts,
    /// The peers' median of each part.
    pub peers_parts: EpParts,
    pub total_ratio: f64,
    pub dispatch_ratio: f64,
    pub expert_ratio: f64,
    pub rest_ratio: f64,
    pub routed_ratio: Option<f64>,
    /// `balanced`, `hot experts`, `slow dispatch/combine` or `outside the MoE layers`.
    pub cause: String,
    pub sentence: String,
}

impl EpRecord {
    pub fn is_gap(&self) -> bool {
        self.cause != "balanced"
    }
}

/// The parts of one rank (GPU kernels only; CPU-only traces have none).
pub(crate) fn parts(r: &RankResult, classes: &Classifier) -> EpParts {
    static RES: OnceLock<(Regex, Regex)> = OnceLock::new();
    let (dc, routing) = RES.get_or_init(|| {
        // Constant patterns: they compile.
        (
            Regex::new(r"(?i)dispatch|combine|all_?to_?all").unwrap_or_else(|_| unreachable!()),
            Regex::new(r"(?i)topk|align|sort|gating|scatter|gather|permute|count_and")
                .unwrap_or_else(|_| unreachable!()),
        )
    });
    let moe = classes.names().iter().position(|n| n == "moe");
    let comm = classes.comm();
    let mut p = EpParts {
        routed_tokens: r.moe_rows.map(|x| x as f64),
        ..Default::default()
    };
    for o in r.ops.iter().filter(|o| o.agg.kind == OpKind::Kernel) {
        let t = o.agg.total as f64;
        if o.agg.class == comm {
            if dc.is_match(&o.name) {
                p.dispatch_ns += t;
            }
        } else if Some(o.agg.class as usize) == moe && !routing.is_match(&o.name) {
            p.expert_ns += t;
        } else {
            p.rest_ns += t;
        }
    }
    p
}

/// Every EP rank against its EP peers (empty without EP indices or GPU kernels).
pub(crate) fn split(results: &[RankResult], classes: &Classifier, threshold: f64) -> Vec<EpRecord> {
    let all: Vec<EpParts> = results.iter().map(|r| parts(r, classes)).collect();
    let across_dp = ep_spans_dp(results);
    let mut out = Vec::new();
    for (i, r) in results.iter().enumerate() {
        let Some(ep) = r.id.ep else { continue };
        if !r.gpu || all[i].dispatch_ns + all[i].expert_ns == 0.0 {
            continue;
        }
        let peers: Vec<usize> = (0..results.len())
            .filter(|&j| {
                let q = &results[j];
                j != i
                    && q.gpu
                    && q.id.ep.is_some_and(|e| e != ep)
                    && (across_dp || q.id.dp == r.id.dp)
                    && q.id.pp == r.id.pp
            })
            .collect();
        if peers.is_empty() {
            continue;
        }
        let med = |f: &dyn Fn(&EpParts) -> f64| {
            median(&peers.iter().map(|&j| f(&all[j])).collect::<Vec<_>>())
        };
        let pp = EpParts {
            dispatch_ns: med(&|p| p.dispatch_ns),
            expert_ns: med(&|p| p.expert_ns),
            rest_ns: med(&|p| p.rest_ns),
            routed_tokens: peers
                .iter()
                .all(|&j| all[j].routed_tokens.is_some())
                .then(|| med(&|p| p.routed_tokens.unwrap_or(0.0))),
        };
        let me = all[i];
        out.push(record(
            r.label.clone(),
            ep,
            peers.iter().map(|&j| results[j].label.clone()).collect(),
            me,
            pp,
            threshold,
        ));
    }
    out
}

/// DP attention (SGLang `--enable-dp-attention`): the DP ranks are one TP group and one EP
/// group, so a TP index never repeats across DP indices (`TP-0-DP-0-EP-0`, `TP-1-DP-1-EP-1`,
/// …), while separate DP replicas repeat them (`TP-0-DP-0`, `TP-0-DP-1`). Then the EP peers
/// span the DP ranks.
pub(crate) fn ep_spans_dp(results: &[RankResult]) -> bool {
    let mut dp_of: HashMap<(Option<u32>, u32), Option<u32>> = HashMap::new();
    let mut dps = BTreeSet::new();
    for r in results {
        let Some(tp) = r.id.tp else { continue };
        dps.insert(r.id.dp);
        if let Some(prev) = dp_of.insert((r.id.pp, tp), r.id.dp) {
            if prev != r.id.dp {
                return false;
            }
        }
    }
    dps.len() > 1
}

/// An EP rank whose gap the EP split calls *hot experts* takes more time for the same batches,
/// which the attribution alone calls *slower device or host*: such records — the rank's, and
/// its DP replica's when the replica's gap is that rank's — say *hot experts* instead, so the
/// attribution table, the `ep` table and the verdict agree.
pub(crate) fn defer_hot_experts(a: &mut Attribution, ep: &[EpRecord]) {
    let hot: Vec<&EpRecord> = ep.iter().filter(|e| e.cause == "hot experts").collect();
    let dp_of = |rank: &str| a.ranks.iter().find(|r| r.rank == rank).and_then(|r| r.dp);
    let by_rec: Vec<Option<String>> = a
        .records
        .iter()
        .map(|rec| {
            if rec.cause != Cause::SlowerDevice {
                return None;
            }
            let e = hot.iter().find(|e| {
                e.rank == rec.who
                    || (rec.scope == "replica"
                        && dp_of(&e.rank).is_some_and(|d| rec.who == format!("DP{d:02}")))
            })?;
            Some(e.rank.clone())
        })
        .collect();
    for (rec, hot_rank) in a.records.iter_mut().zip(by_rec) {
        if let Some(h) = hot_rank {
            rec.cause = Cause::HotExperts;
            rec.sentence += &format!(
                "; the extra time is rank {h}'s expert GEMMs: hot experts (see the EP split)"
            );
        }
    }
}

fn record(
    rank: String,
    ep: u32,
    peers: Vec<String>,
    me: EpParts,
    pp: EpParts,
    threshold: f64,
) -> EpRecord {
    let total = ratio(me.total(), pp.total());
    let (d, x, rest) = (
        ratio(me.dispatch_ns, pp.dispatch_ns),
        ratio(me.expert_ns, pp.expert_ns),
        ratio(me.rest_ns, pp.rest_ns),
    );
    let routed = me
        .routed_tokens
        .zip(pp.routed_tokens)
        .map(|(a, b)| ratio(a, b));
    let excess = [
        me.dispatch_ns - pp.dispatch_ns,
        me.expert_ns - pp.expert_ns,
        me.rest_ns - pp.rest_ns,
    ];
    let largest = (0..3)
        .max_by(|&a, &b| excess[a].total_cmp(&excess[b]))
        .unwrap_or(2);
    let pct = 100.0 * (total - 1.0);
    let head = if rank.contains("EP") {
        format!("rank {rank}: {pct:+.0} % kernel time vs its EP peers")
    } else {
        format!("rank {rank} (EP{ep:02}): {pct:+.0} % kernel time vs its EP peers")
    };
    let (cause, sentence) = if total - 1.0 <= threshold {
        (
            "balanced",
            format!(
                "{head}, within the {:.0} % threshold (dispatch/combine {d:.2}×, expert GEMMs {x:.2}×)",
                100.0 * threshold
            ),
        )
    } else {
        match largest {
            1 => (
                "hot experts",
                format!(
                    "{head} — expert GEMMs {x:.2}× ({}), dispatch/combine {d:.2}×",
                    match routed {
                        Some(t) => format!("hot experts: {t:.2}× the routed tokens"),
                        None => "routed tokens not in the trace: enable record_shapes".into(),
                    }
                ),
            ),
            0 => (
                "slow dispatch/combine",
                format!(
                    "{head} — dispatch/combine {d:.2}× with {x:.2}× the expert GEMM time: waiting on a peer or the network"
                ),
            ),
            _ => (
                "outside the MoE layers",
                format!(
                    "{head} — outside the MoE layers ({rest:.2}×); dispatch/combine {d:.2}×, expert GEMMs {x:.2}×"
                ),
            ),
        }
    };
    // Peers with nothing in a part give no ratio (∞ or NaN): said in words, never printed.
    let nothing = [Some(total), Some(d), Some(x), Some(rest), routed]
        .into_iter()
        .flatten()
        .any(|v| !v.is_finite());
    let sentence = if nothing {
        format!(
            "rank {rank} (EP{ep:02}): its EP peers recorded no kernel time in a part it has \
             (dispatch/combine, expert GEMMs, the rest, or routed tokens): no ratio to give"
        )
    } else {
        sentence
    };
    EpRecord {
        rank,
        ep,
        peers,
        parts: me,
        peers_parts: pp,
        total_ratio: total,
        dispatch_ratio: d,
        expert_ratio: x,
        rest_ratio: rest,
        routed_ratio: routed,
        cause: cause.to_string(),
        sentence,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(d: f64, x: f64, r: f64) -> EpParts {
        EpParts {
            dispatch_ns: d,
            expert_ns: x,
            rest_ns: r,
            routed_tokens: None,
        }
    }

    #[test]
    fn the_largest_excess_names_the_cause() {
        let peers = p(100.0, 400.0, 500.0);
        let hot = record("A".into(), 1, vec![], p(100.0, 800.0, 500.0), peers, 0.05);
        assert_eq!(hot.cause, "hot experts");
        assert!((hot.expert_ratio - 2.0).abs() < 1e-12);
        let slow = record("A".into(), 1, vec![], p(300.0, 400.0, 500.0), peers, 0.05);
        assert_eq!(slow.cause, "slow dispatch/combine");
        assert!(slow.sentence.contains("3.00×"), "{}", slow.sentence);
        let even = record("A".into(), 1, vec![], p(101.0, 402.0, 500.0), peers, 0.05);
        assert_eq!(even.cause, "balanced");
    }
}
