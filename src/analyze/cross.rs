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
/// (attribution, EP split, verdict), with the saved summary. Every stage runs in the order each
/// needs the others' results; the notes are said in that order.
pub(super) fn cross_rank(
    mut results: Vec<RankResult>,
    classifier: &Classifier,
    args: &AnalyzeOptions,
    threshold: f64,
    id: &str,
    stage: Option<&str>,
) -> Result<Analysis> {
    let cx = Ctx::new(&results, classifier, args, threshold);
    let mut notes = Vec::new();

    let classes = cx.class_table(&results);
    let top = cx.top_kernels(&results);
    let step_source = step_source(&results, &mut notes);
    let (worlds, clocks) = cx.worlds_and_clocks(&mut results, &mut notes)?;
    let (steps, step_class_ns) = cx.step_table(&results, &worlds, &step_source);
    let source = RankResult::figure_source(&results);
    let (coll, path) = cx.collectives_and_path(&results, &worlds, &steps, source, &mut notes)?;
    let reduced = Reduced {
        summaries: results.iter().map(|r| r.summary.clone()).collect(),
        classes,
        steps,
        step_class_ns,
        coll,
        path,
    };

    let explained = cx.explain(&results, &reduced);
    let summary = cx.saved_summary(id, stage, &results, &reduced, &explained);
    let (groups, depth, drill) = cx.rank_views(&results, &reduced, &explained, &mut notes);
    Ok(Analysis {
        profile_id: id.to_string(),
        stage: stage.map(String::from),
        files: Vec::new(),
        source: source.to_string(),
        threshold_pct: args.threshold,
        verdict: explained.verdict,
        ranks: reduced.summaries,
        classes: reduced.classes,
        kernels: top,
        steps: reduced.steps,
        collectives: reduced.coll,
        path: reduced.path,
        attribution: explained.attribution,
        ep: explained.ep,
        memory: explained.memory,
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

/// What every stage reads: the ranks' labels in rank order, the class names and rules, the
/// options, and the threshold as a fraction.
struct Ctx<'a> {
    labels: Vec<String>,
    class_names: Vec<String>,
    classifier: &'a Classifier,
    args: &'a AnalyzeOptions,
    threshold: f64,
}

/// The reduce stages' results, which the explanation and the report read.
struct Reduced {
    summaries: Vec<RankSummary>,
    classes: ClassTable,
    steps: steps::StepTable,
    /// Per rank, per step row, the rank's time per class in that row's step.
    step_class_ns: Vec<Vec<Vec<i64>>>,
    coll: collectives::CollectiveReport,
    path: CriticalPath,
}

/// The explanation on top of the reduce stages.
struct Explained {
    attribution: attribution::Attribution,
    ep: Vec<ep::EpRecord>,
    verdict: verdict::Verdict,
    memory: Vec<memory::MemoryRank>,
}

/// The ranks' step marker (the first rank's), with a note when the ranks found different ones.
fn step_source(results: &[RankResult], notes: &mut Vec<String>) -> String {
    let step_source = results
        .first()
        .map(|r| r.step_source.clone())
        .unwrap_or_default();
    if results.iter().any(|r| r.step_source != step_source) {
        let mut by: std::collections::BTreeMap<&str, Vec<&str>> = Default::default();
        for r in results {
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
    step_source
}

impl<'a> Ctx<'a> {
    /// The context of the analysis of `results`.
    fn new(
        results: &[RankResult],
        classifier: &'a Classifier,
        args: &'a AnalyzeOptions,
        threshold: f64,
    ) -> Self {
        Ctx {
            labels: results.iter().map(|r| r.label.clone()).collect(),
            class_names: classifier.names().to_vec(),
            classifier,
            args,
            threshold,
        }
    }

    /// The kernel-class table: each rank's time per class and the unclassified share.
    fn class_table(&self, results: &[RankResult]) -> ClassTable {
        let class_ns: Vec<Vec<i64>> = results.iter().map(|r| r.class_ns.clone()).collect();
        let (unclassified_pct, unclassified_rank_pct) =
            classes::other_share(&class_ns, self.classifier.other() as usize);
        ClassTable {
            classes: self.class_names.clone(),
            ranks: self.labels.clone(),
            ns: class_ns,
            unclassified_pct,
            unclassified_rank_pct,
        }
    }

    /// The top kernels table (`--top-n`).
    fn top_kernels(&self, results: &[RankResult]) -> Vec<kernels::KernelRow> {
        let ops: Vec<&[NameAgg]> = results.iter().map(|r| r.ops.as_slice()).collect();
        kernels::top(&self.labels, &ops, &self.class_names, self.args.top_n)
    }

    /// The collective worlds, and with `--align collectives` on GPU ranks, each rank whose
    /// clock is off its world's put on the others' ([`align_clocks`]).
    fn worlds_and_clocks(
        &self,
        results: &mut [RankResult],
        notes: &mut Vec<String>,
    ) -> Result<(Vec<Vec<usize>>, Vec<clocks::ClockOffset>)> {
        let (w, wnote) = collectives::worlds(results);
        notes.extend(wnote);
        let clocks = if self.args.align && results.iter().all(|r| r.gpu) {
            align_clocks(results, &w, notes)?
        } else {
            Vec::new()
        };
        Ok((w, clocks))
    }

    /// The step table (its onset's rank named), and per rank its time per class in each row's
    /// step.
    fn step_table(
        &self,
        results: &[RankResult],
        worlds: &[Vec<usize>],
        step_source: &str,
    ) -> (steps::StepTable, Vec<Vec<Vec<i64>>>) {
        let basis = if results.iter().all(|r| !r.gpu) {
            "cpu"
        } else {
            "gpu"
        };
        let figs: Vec<&[StepFig]> = results.iter().map(|r| r.steps.as_slice()).collect();
        let mut steps = steps::table(
            &self.labels,
            &figs,
            worlds,
            step_source,
            basis,
            self.threshold,
        );
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
        (steps, step_class_ns)
    }

    /// The matched collectives and the critical path accumulated while matching them, its
    /// host gaps named; what the path could not judge joins `notes`.
    fn collectives_and_path(
        &self,
        results: &[RankResult],
        worlds: &[Vec<usize>],
        steps: &steps::StepTable,
        source: &str,
        notes: &mut Vec<String>,
    ) -> Result<(collectives::CollectiveReport, CriticalPath)> {
        let top_n = self.args.top_n;
        let colls: Vec<RankColls> = results.iter().map(|r| r.colls.clone()).collect();
        let windows: Vec<Vec<(i64, i64)>> = results
            .iter()
            .map(|r| {
                r.steps
                    .iter()
                    .map(|f| (f.start_ns.get(), f.dur_ns.get()))
                    .collect()
            })
            .collect();
        let ideal = self.args.ideal_timeline;
        // GPU ranks' hosts run ahead of their devices: a late arrival's lag carries on.
        let run_ahead = results.iter().all(|r| r.gpu);
        let waiters = self.args.waiters;
        let mut acc = Acc::new(
            &self.labels,
            &windows,
            steps,
            top_n,
            ideal,
            run_ahead,
            waiters,
        );
        let stage_of: Vec<Option<u32>> = results.iter().map(|r| r.id.pp).collect();
        let coll = collectives::analyze_into(
            &self.labels,
            worlds,
            &colls,
            &stage_of,
            source,
            top_n,
            Some(&mut acc),
        )?;
        let mut path = acc.finish(worlds, &stage_of);
        name_host_gaps(&mut path, results, self.threshold, notes);
        // What the critical path could not judge is said with the other notes (which steps its
        // per-step figures cover stays in its JSON).
        notes.extend(
            path.notes
                .iter()
                .filter(|n| !n.starts_with("per-step costs are over"))
                .cloned(),
        );
        Ok((coll, path))
    }

    /// Attribution (hot experts deferred to the EP split), the verdict, and the memory table
    /// whose lines end the verdict.
    fn explain(&self, results: &[RankResult], red: &Reduced) -> Explained {
        let figs: Vec<&[StepFig]> = results.iter().map(|r| r.steps.as_slice()).collect();
        let dp: Vec<Option<u32>> = results.iter().map(|r| r.id.dp).collect();
        let pp: Vec<Option<u32>> = results.iter().map(|r| r.id.pp).collect();
        let mut attribution = attribution::attribute(&attribution::Input {
            labels: &self.labels,
            dp: &dp,
            pp: &pp,
            figs: &figs,
            summaries: &red.summaries,
            steps: &red.steps,
            threshold: self.threshold,
        });
        let ep = ep::split(results, self.classifier, self.threshold);
        ep::defer_hot_experts(&mut attribution, &ep);
        let mut verdict = verdict::judge(&verdict::Input {
            summaries: &red.summaries,
            class_names: &self.class_names,
            comm_class: self.classifier.comm() as usize,
            class_ns: &red.classes.ns,
            step_class_ns: &red.step_class_ns,
            steps: &red.steps,
            collectives: &red.coll,
            path: &red.path,
            attribution: &attribution,
            ep: &ep,
            threshold: self.threshold,
            world: results.iter().filter_map(|r| r.world_size).max(),
        });
        let memory = memory::ranks(results);
        verdict.lines.extend(memory::lines(&memory, self.threshold));
        Explained {
            attribution,
            ep,
            verdict,
            memory,
        }
    }

    /// The saved summary (`--save-summary`) of the analysis.
    fn saved_summary(
        &self,
        id: &str,
        stage: Option<&str>,
        results: &[RankResult],
        red: &Reduced,
        ex: &Explained,
    ) -> summary::Summary {
        summary::build(
            id,
            stage,
            results,
            &self.class_names,
            &red.steps,
            &ex.verdict,
            &ex.attribution,
            &red.path,
            self.args.summary_kernels,
        )
    }

    /// The groups (the verdict's lead marked), and for `--rank` its depth and drill-down, or a
    /// note when that rank was left out.
    fn rank_views(
        &self,
        results: &[RankResult],
        red: &Reduced,
        ex: &Explained,
        notes: &mut Vec<String>,
    ) -> (
        groups::Groups,
        Option<model::RankDepth>,
        Option<drill::Drill>,
    ) {
        let lead = ex
            .verdict
            .lead
            .as_ref()
            .and_then(|l| self.labels.iter().position(|x| x == l));
        let groups = groups::build(results, &red.summaries, &red.steps, lead);
        let chosen = self.args.rank.as_ref().and_then(|s| selected(results, s));
        if let (Some(sel), None) = (&self.args.rank, chosen) {
            notes.push(format!(
                "--rank {sel}: that rank is left out of the comparison (its data stops early): no \
                 drill-down"
            ));
        }
        let depth = chosen.map(|r| model::depth(&results[r], &self.class_names, self.args.top_n));
        let drill = chosen.map(|r| {
            drill::drill(
                &drill::Input {
                    results,
                    class_names: &self.class_names,
                    comm_class: self.classifier.comm() as usize,
                    work_ns: &groups.work_ns,
                    steps: &red.steps,
                    collectives: &red.coll,
                    verdict_lines: &ex.verdict.lines,
                    threshold: self.threshold,
                    top_n: self.args.top_n,
                },
                r,
            )
        });
        (groups, depth, drill)
    }
}

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

/// For the host-bound ranks that cost the step at least the threshold (the three costliest),
/// reads each one's file again to name what its host did while its GPU sat idle before the
/// collectives it arrived last at ([`super::collect::gaps`]). Only per-rank GPU traces: a
/// merged trace holds every rank, a CPU-only trace has no GPU to idle.
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
