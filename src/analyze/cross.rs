//! The cross-rank analysis (the reduce phase's core, [`super::phases`]): over the ranks kept,
//! the reduce stages ([`super::reduce`]: kernel classes and top kernels, the step table, matched
//! collectives and the critical path, groups) and the explanation on top of them
//! ([`super::explain`]: attribution, EP split, verdict, the `--rank` drill-down), with the saved
//! [`summary`]; and the one second read it may ask for, naming what a host-bound rank's host
//! did in its gaps ([`super::collect::gaps`]).

use anyhow::Result;

use super::classes::{self, Classifier};
use super::collect::busy::RankSummary;
use super::collect::collstore::RankColls;
use super::collect::gaps;
use super::collect::ops::NameAgg;
use super::collect::rank::RankResult;
use super::collect::steps::StepFig;
use super::explain::{attribution, drill, ep, memory, verdict};
use super::model::{self, Analysis};
use super::options::{AnalyzeOptions, RankSel};
use super::rankset;
use super::reduce::kernels::{self, ClassTable};
use super::reduce::path::acc::Acc;
use super::reduce::path::{CriticalPath, HostOp, HostOps, Kind as PathKind};
use super::reduce::{clocks, collectives, groups, steps};
use super::summary;
use crate::trace::Ns;

/// The cross-rank analysis of the ranks kept: the reduce stages (kernel classes and top
/// kernels, the step table, matched collectives, groups) and the explanation on top of them
/// (attribution, EP split, verdict), with the saved summary.
// Long on purpose: every stage in the order each needs the others' results.
pub(super) fn cross_rank(
    mut results: Vec<RankResult>,
    classifier: &Classifier,
    args: &AnalyzeOptions,
    threshold: f64,
    id: &str,
    stage: Option<&str>,
) -> Result<Analysis> {
    let labels: Vec<String> = results.iter().map(|r| r.label.clone()).collect();
    let class_names: Vec<String> = classifier.names().to_vec();
    let mut notes = Vec::new();

    let class_ns: Vec<Vec<i64>> = results.iter().map(|r| r.class_ns.clone()).collect();
    let (unclassified_pct, unclassified_rank_pct) =
        classes::other_share(&class_ns, classifier.other() as usize);
    let classes = ClassTable {
        classes: class_names.clone(),
        ranks: labels.clone(),
        ns: class_ns,
        unclassified_pct,
        unclassified_rank_pct,
    };
    let ops: Vec<&[NameAgg]> = results.iter().map(|r| r.ops.as_slice()).collect();
    let top = kernels::top(&labels, &ops, &class_names, args.top_n);

    let step_source = results
        .first()
        .map(|r| r.step_source.clone())
        .unwrap_or_default();
    if results.iter().any(|r| r.step_source != step_source) {
        let mut by: std::collections::BTreeMap<&str, Vec<&str>> = Default::default();
        for r in &results {
            by.entry(&r.step_source).or_default().push(&r.label);
        }
        let s: Vec<String> = by
            .iter()
            .map(|(src, l)| format!("{} {src}", rankset::compact(l)))
            .collect();
        notes.push(format!(
            "ranks found different step markers: {}",
            s.join("; ")
        ));
    }
    let basis = if results.iter().all(|r| !r.gpu) {
        "cpu"
    } else {
        "gpu"
    };
    let (w, wnote) = collectives::worlds(&results);
    notes.extend(wnote);
    let clocks = if args.align && results.iter().all(|r| r.gpu) {
        align_clocks(&mut results, &w, &mut notes)?
    } else {
        Vec::new()
    };
    let figs: Vec<&[StepFig]> = results.iter().map(|r| r.steps.as_slice()).collect();
    let mut steps = steps::table(&labels, &figs, &w, &step_source, basis, threshold);
    if let Some(o) = steps.onset.as_mut() {
        o.rank_id = results[o.rank_index].id.clone();
    }
    let step_class_ns: Vec<Vec<Vec<i64>>> = (0..results.len())
        .map(|r| {
            steps
                .rows
                .iter()
                .map(|row| results[r].steps[row.idx[r]].class_ns.clone())
                .collect()
        })
        .collect();

    let colls: Vec<RankColls> = results.iter().map(|r| r.colls.clone()).collect();
    let csource = if results.iter().all(|r| r.gpu) {
        "gpu"
    } else if results.iter().all(|r| !r.gpu) {
        "cpu"
    } else {
        "mixed"
    };
    let windows: Vec<Vec<(i64, i64)>> = results
        .iter()
        .map(|r| r.steps.iter().map(|f| (f.start_ns, f.dur_ns)).collect())
        .collect();
    let mut acc = Acc::new(&labels, &windows, &steps, args.top_n);
    let coll = collectives::analyze_into(&labels, &w, &colls, csource, args.top_n, Some(&mut acc))?;
    let mut path = acc.finish(&w);
    name_host_gaps(&mut path, &results, threshold, &mut notes);
    // What the critical path could not judge is said with the other notes (which steps its
    // per-step figures cover stays in its JSON).
    notes.extend(
        path.notes
            .iter()
            .filter(|n| !n.starts_with("per-step costs are over"))
            .cloned(),
    );

    let summaries: Vec<RankSummary> = results.iter().map(|r| r.summary.clone()).collect();
    let dp: Vec<Option<u32>> = results.iter().map(|r| r.id.dp).collect();
    let mut attribution = attribution::attribute(&attribution::Input {
        labels: &labels,
        dp: &dp,
        figs: &figs,
        summaries: &summaries,
        steps: &steps,
        threshold,
    });
    let ep = ep::split(&results, classifier, threshold);
    ep::defer_hot_experts(&mut attribution, &ep);
    let mut verdict = verdict::judge(&verdict::Input {
        summaries: &summaries,
        class_names: &class_names,
        comm_class: classifier.comm() as usize,
        class_ns: &classes.ns,
        step_class_ns: &step_class_ns,
        steps: &steps,
        collectives: &coll,
        path: &path,
        attribution: &attribution,
        ep: &ep,
        threshold,
        world: results.iter().filter_map(|r| r.world_size).max(),
    });
    let memory = memory::ranks(&results);
    verdict.lines.extend(memory::lines(&memory, threshold));
    let summary = summary::build(
        id,
        stage,
        &results,
        &class_names,
        &steps,
        &verdict,
        &attribution,
        &path,
        args.summary_kernels,
    );
    let lead = verdict
        .lead
        .as_ref()
        .and_then(|l| labels.iter().position(|x| x == l));
    let groups = groups::build(&results, &summaries, &steps, lead);
    let chosen = args.rank.as_ref().and_then(|s| selected(&results, s));
    if let (Some(sel), None) = (&args.rank, chosen) {
        notes.push(format!(
            "--rank {sel}: that rank is left out of the comparison (its data stops early): no \
             drill-down"
        ));
    }
    let depth = chosen.map(|r| model::depth(&results[r], &class_names, args.top_n));
    let drill = chosen.map(|r| {
        drill::drill(
            &drill::Input {
                results: &results,
                class_names: &class_names,
                comm_class: classifier.comm() as usize,
                work_ns: &groups.work_ns,
                steps: &steps,
                collectives: &coll,
                verdict_lines: &verdict.lines,
                threshold,
                top_n: args.top_n,
            },
            r,
        )
    });
    Ok(Analysis {
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
        path,
        attribution,
        ep,
        memory,
        snapshots: Vec::new(),
        depth,
        drill,
        groups,
        notes,
        clocks,
        damaged: false,
        stopped_early: None,
        merged_trace: None,
        summary: Some(summary),
    })
}

/// For the host-bound ranks that cost the step at least the threshold (the three costliest),
/// reads each one's file again to name what its host did while its GPU sat idle before the
/// collectives it arrived last at ([`super::collect::gaps`]). Only per-rank GPU traces: a
/// merged trace holds every rank, a CPU-only trace has no GPU to idle.
/// Puts a rank whose clock is off its world's by a constant ([`clocks`]) on the others', and
/// says so with the offset and its spread: an offset is never waiting or skew.
fn align_clocks(
    results: &mut [RankResult],
    worlds: &[Vec<usize>],
    notes: &mut Vec<String>,
) -> Result<Vec<clocks::ClockOffset>> {
    let colls: Vec<RankColls> = results.iter().map(|r| r.colls.clone()).collect();
    let found = clocks::estimate(worlds, &colls)?;
    drop(colls);
    let mut out = Vec::new();
    for o in &found {
        let Some(r) = results.get_mut(o.rank) else {
            continue;
        };
        r.add_base(-o.offset_ns);
        notes.push(format!(
            "clock of {} is {:+.3} ms off its world's (its collectives end that much {} the others' at every one of {}; spread {:.1} µs): aligned (--align none keeps it)",
            r.label,
            o.offset_ns as f64 / 1e6,
            if o.offset_ns > 0 { "after" } else { "before" },
            o.collectives,
            o.spread_ns as f64 / 1e3
        ));
        out.push(clocks::ClockOffset {
            rank: r.label.clone(),
            offset_ns: Ns::new(o.offset_ns),
            spread_ns: Ns::new(o.spread_ns),
            collectives: o.collectives,
        });
    }
    Ok(out)
}

fn name_host_gaps(
    path: &mut CriticalPath,
    results: &[RankResult],
    threshold: f64,
    notes: &mut Vec<String>,
) {
    let who: Vec<String> = path
        .causes
        .iter()
        .filter(|c| {
            c.kind == PathKind::Host
                && c.net_per_step_ns > 0.0
                && c.net_step_pct >= 100.0 * threshold
        })
        .map(|c| c.who.clone())
        .take(3)
        .collect();
    for w in who {
        let Some(r) = results.iter().find(|r| r.label == w) else {
            continue;
        };
        if !r.gpu || crate::trace::is_merged_trace(&r.path) {
            continue;
        }
        let windows: Vec<(i64, i64)> = path
            .marks
            .iter()
            .filter(|l| l.rank == w && l.host_ns > Ns::ZERO)
            .map(|l| (l.seg_start_ns.get(), l.start_ns.get()))
            .collect();
        if windows.is_empty() {
            continue;
        }
        match gaps::host_in_gaps(&r.path, r.base_ns.unwrap_or(0), &windows) {
            Ok(g) => path.host_ops.push(HostOps {
                who: w,
                segments: windows.len(),
                idle_ns: Ns::new(g.idle_ns),
                unrecorded_ns: Ns::new(g.unrecorded_ns),
                ops: g
                    .ops
                    .into_iter()
                    .map(|(name, ns)| HostOp {
                        name,
                        ns: Ns::new(ns),
                    })
                    .collect(),
                capped: g.capped,
            }),
            Err(e) => notes.push(format!(
                "the host gaps of {w} could not be read again to name their ops: {e}"
            )),
        }
    }
}

/// The rank `--rank` names among those analyzed: by label, or by its place in rank order.
pub(super) fn selected(results: &[RankResult], sel: &RankSel) -> Option<usize> {
    match sel {
        RankSel::Index(n) => (*n < results.len()).then_some(*n),
        RankSel::Label(_) => results.iter().position(|r| sel.names(&r.label)),
    }
}
