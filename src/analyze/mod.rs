//! `rankprof analyze` / `analyze-profile`: is the load balanced across ranks, and if not, which
//! rank, which kernels, and from which step on?
//!
//! The pipeline:
//!
//! 1. **Inputs**: a profile directory, a list of rank files, or one merged trace (its ranks are
//!    recovered from the `[TP01-DP01] …` labels merged pids carry). Only regular files are
//!    read; a rank file that cannot be read at all is left out and named
//!    ([`FileInfo::unreadable`], a note), and the analysis is partial.
//! 2. **One pass per file, ranks in parallel** (rayon, `-j`): the [`collect`] module sees each
//!    event once through the reader's callback and keeps per-name aggregates, compact
//!    intervals, step annotations and collectives. [`rank::finish`] turns that into the rank's
//!    small results in the same worker and drops the intervals.
//! 3. **Across ranks**: the rank summary ([`busy`]), kernel classes and top kernels
//!    ([`classes`], [`kernels`]), the per-step table and the onset ([`steps`]), matched
//!    collectives ([`collectives`]), the work of each step ([`work`]) set against its time
//!    ([`attribution`]: uneven load, slower device, more kernels) and the [`verdict`] on top. [`summary`] is the small JSON
//!    digest for `compare`.
//! 4. **Output** through [`crate::report`]: terminal tables, JSON / CSV / markdown, HTML,
//!    Parquet.
//!
//! Steps 1-2 are the read phase and step 3 the reduce ([`phases`]); between them a
//! [`partial`] can carry the read ranks to another process: `--save-partial` on each node,
//! `--from-partials` once, the same report as one run.
//!
//! ```
//! use rankprof::analyze::{analyze, AnalyzeOptions};
//! let opts = AnalyzeOptions {
//!     profile_dir: Some("fixtures/sglang-tp4".into()),
//!     ..Default::default()
//! };
//! let a = analyze(&opts).unwrap();
//! assert_eq!(a.ranks.len(), 4);
//! for line in &a.verdict.lines {
//!     println!("{line}");
//! }
//! ```

pub mod attribution;
pub mod busy;
pub mod classes;
pub mod collect;
pub mod collectives;
pub mod collstore;
pub mod ep;
pub mod groups;
pub mod heat;
pub mod kernels;
pub mod model;
pub mod names;
pub mod partial;
pub mod phases;
pub mod plan;
pub mod rank;
pub mod rankset;
pub mod spill;
pub mod steps;
pub mod summary;
pub mod sweep;
pub mod verdict;
pub mod work;

use std::path::PathBuf;

use anyhow::Result;

use busy::RankSummary;
use classes::Classifier;
use kernels::ClassTable;
use rank::RankResult;
use steps::StepFig;

pub use model::{Analysis, DepthClass, DepthKernel, FileInfo, RankDepth};
pub use summary::{load_summary, Summary};

/// What to analyze and how, independent of the command line (every default equals the
/// command line's).
#[derive(Debug, Clone)]
pub struct AnalyzeOptions {
    /// A directory of rank traces (or holding one merged trace).
    pub profile_dir: Option<PathBuf>,
    /// Rank trace files, or one merged trace.
    pub files: Vec<PathBuf>,
    /// One rank in depth: its index in rank order.
    pub rank: Option<usize>,
    /// Only this profile id (when the directory holds several).
    pub profile_id: Option<String>,
    /// Only this stage (EXTEND, DECODE, prefill, decode).
    pub stage: Option<String>,
    /// Kernels in the top-kernels table.
    pub top_n: usize,
    /// A regex on annotation names that marks steps, instead of ProfilerStep#N / step[...].
    pub step_marker: Option<String>,
    /// How far above its peers' mean a rank must stay to count as slower, in percent.
    pub threshold: f64,
    /// Kernel class rules (TOML) used before the built-in ones.
    pub classes: Option<PathBuf>,
    /// Kernels kept by name in the summary.
    pub summary_kernels: usize,
    /// Worker threads (`None`: all cores).
    pub jobs: Option<usize>,
    /// Compare the ranks whose trace stops early (truncated, broken) with the others anyway;
    /// by default they are left out of the comparison while a complete rank remains.
    pub keep_partial: bool,
}

impl Default for AnalyzeOptions {
    fn default() -> Self {
        AnalyzeOptions {
            profile_dir: None,
            files: Vec::new(),
            rank: None,
            profile_id: None,
            stage: None,
            top_n: 15,
            step_marker: None,
            threshold: 5.0,
            classes: None,
            summary_kernels: 200,
            jobs: None,
            keep_partial: false,
        }
    }
}

/// Reads and analyzes a profile as `args` say, without printing anything: the read phase
/// then the reduce phase ([`phases`]).
pub fn analyze(args: &AnalyzeOptions) -> Result<Analysis> {
    let (classifier, _) = phases::rules(args)?;
    let read = phases::read(args, &classifier, None)?;
    phases::reduce(read, &classifier, args)
}

/// Groups ranks into worlds for collective matching.
fn worlds(results: &[RankResult]) -> (Vec<Vec<usize>>, Option<String>) {
    let n = results.len();
    let all = vec![(0..n).collect::<Vec<_>>()];
    let Some(ws) = results.iter().filter_map(|r| r.world_size).min() else {
        return (all, None);
    };
    if ws as usize >= n || ws < 1 || !results.iter().all(|r| r.id.dp.is_some()) {
        return (all, None);
    }
    let mut by_dp: std::collections::BTreeMap<u32, Vec<usize>> = std::collections::BTreeMap::new();
    for (i, r) in results.iter().enumerate() {
        by_dp.entry(r.id.dp.unwrap_or(0)).or_default().push(i);
    }
    if by_dp.values().all(|v| v.len() == ws as usize) {
        let w: Vec<Vec<usize>> = by_dp.into_values().collect();
        let note = format!(
            "the traces report a world of {ws} ranks: collectives are matched within each of the {} DP replicas",
            w.len()
        );
        (w, Some(note))
    } else {
        (
            all,
            Some(format!(
                "the traces report a world of {ws} ranks but {n} ranks were given; collectives are matched across all"
            )),
        )
    }
}

pub(crate) fn cross_rank(
    results: Vec<RankResult>,
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
    let ops: Vec<&[kernels::NameAgg]> = results.iter().map(|r| r.ops.as_slice()).collect();
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
    let (w, wnote) = worlds(&results);
    notes.extend(wnote);
    let figs: Vec<&[StepFig]> = results.iter().map(|r| r.steps.as_slice()).collect();
    let steps = steps::table(&labels, &figs, &w, &step_source, basis, threshold);
    let step_class_ns: Vec<Vec<Vec<i64>>> = (0..results.len())
        .map(|r| {
            steps
                .rows
                .iter()
                .map(|row| results[r].steps[row.idx[r]].class_ns.clone())
                .collect()
        })
        .collect();

    let colls: Vec<collectives::RankColls> = results.iter().map(|r| r.colls.clone()).collect();
    let csource = if results.iter().all(|r| r.gpu) {
        "gpu"
    } else if results.iter().all(|r| !r.gpu) {
        "cpu"
    } else {
        "mixed"
    };
    let coll = collectives::analyze(&labels, &w, &colls, csource, args.top_n)?;

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
    let verdict = verdict::judge(&verdict::Input {
        summaries: &summaries,
        class_names: &class_names,
        comm_class: classifier.comm() as usize,
        class_ns: &classes.ns,
        step_class_ns: &step_class_ns,
        steps: &steps,
        collectives: &coll,
        attribution: &attribution,
        ep: &ep,
        threshold,
    });
    let summary = summary::build(
        id,
        stage,
        &results,
        &class_names,
        &steps,
        &verdict,
        &attribution,
        args.summary_kernels,
    );
    let groups = groups::build(&results, &summaries, &steps);
    let depth = (args.rank.is_some() && results.len() == 1)
        .then(|| depth(&results[0], &class_names, args.top_n));
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
        attribution,
        ep,
        depth,
        groups,
        notes,
        damaged: false,
        stopped_early: None,
        merged_trace: None,
        summary: Some(summary),
    })
}

fn depth(r: &RankResult, class_names: &[String], top_n: usize) -> RankDepth {
    let sum: i64 = r.ops.iter().map(|o| o.agg.total).sum();
    let pct = |x: i64| busy::pct(x, sum);
    RankDepth {
        rank: r.label.clone(),
        summary: r.summary.clone(),
        classes: class_names
            .iter()
            .zip(&r.class_ns)
            .map(|(c, &t)| DepthClass {
                class: c.clone(),
                total_ns: t,
                pct: pct(t),
            })
            .collect(),
        kernels: r
            .ops
            .iter()
            .take(top_n)
            .map(|o| DepthKernel {
                name: o.name.clone(),
                short: kernels::short_name(&o.name),
                class: class_names
                    .get(o.agg.class as usize)
                    .cloned()
                    .unwrap_or_default(),
                kind: o.agg.kind.as_str().to_string(),
                total_ns: o.agg.total,
                count: o.agg.count,
                mean_ns: if o.agg.count > 0 {
                    o.agg.total as f64 / o.agg.count as f64
                } else {
                    0.0
                },
                min_ns: if o.agg.count > 0 { o.agg.min } else { 0 },
                max_ns: o.agg.max,
                pct: pct(o.agg.total),
            })
            .collect(),
        streams: r.streams.clone(),
        step_source: r.step_source.clone(),
        steps: r.steps.clone(),
    }
}
