//! `rankprof compare BASELINE CURRENT`: a performance regression gate for CI.
//!
//! Each side is a profile directory, a trace file (one rank's or a merged one) or a summary
//! saved by `analyze --save-summary`; [`sides`] turns it into an analysis
//! [`Summary`](crate::analyze::summary::Summary) (traces are analyzed in-process, the same
//! analysis `analyze` runs). [`diff`] measures baseline / current / delta / delta % for the
//! job, every rank, every kernel class (over all ranks and on each rank), the top kernels, the
//! kernels that appeared or vanished ([`normalize`] matches renamed template instances with
//! `--normalize`) and the imbalance, and [`runs`] says first when the two sides look like
//! different runs. [`gate`] judges the rows against `--max-regression`,
//! `--max-imbalance` and `--min-time-us`; `crate::report::compare` prints a terminal table, markdown for a PR
//! comment, or JSON.
//!
//! Times are per-step medians when both sides have steps (one slow step does not fail a run),
//! else whole-profile totals; the report says which. On steps, every row whose per-step samples
//! both sides keep is tested ([`decide`], with [`stats`]; [`samples`] finds them): regression /
//! no change / inconclusive, each with its interval, the family Holm-adjusted; other rows keep
//! the fixed threshold, said in the report. Exit codes: 0 no regression, 1 regression, 2 usage
//! or input error (unreadable or damaged input), 4 inconclusive (unless `--inconclusive`).
//!
//! ```
//! use rankprof::compare::{compare, CompareOptions};
//! let opts = CompareOptions {
//!     baseline: "fixtures/sglang-tp4".into(),
//!     current: "fixtures/sglang-tp4".into(),
//!     ..Default::default()
//! };
//! let c = compare(&opts).unwrap().comparison;
//! for f in &c.failures {
//!     println!("{}", f.message);
//! }
//! assert!(c.passed);
//! ```

pub mod decide;
pub mod diff;
pub(crate) mod drift;
pub(crate) mod gate;
pub mod memory;
pub(crate) mod normalize;
pub mod power;
pub(crate) mod runs;
pub(crate) mod samples;
pub(crate) mod sides;
pub(crate) mod stats;

use std::path::PathBuf;

use anyhow::Result;

use crate::trace::Ns;

pub use diff::{CompareBasis, Comparison};

/// What an inconclusive comparison exits with (`--inconclusive`): the choice is the command's.
#[derive(Copy, Clone, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Inconclusive {
    /// Its own exit code, 4.
    Code,
    /// Exit 0, as no regression.
    Pass,
    /// Exit 1, as a regression.
    Fail,
}

/// How the gate judges a time row (`--gate`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum GateRule {
    /// The per-step median (or total) against `--max-regression`, as before.
    Fixed,
    /// The per-step samples tested: regression / no change / inconclusive, each with its
    /// interval; rows without samples by the fixed threshold (docs/compare.md).
    #[default]
    Stats,
}

/// What to compare and the gate's thresholds, independent of the command line (every default
/// equals the command line's).
#[derive(Debug, Clone)]
pub struct CompareOptions {
    /// A profile directory, a trace (one rank's or merged) or a saved summary.
    pub baseline: PathBuf,
    /// The same kinds as `baseline`.
    pub current: PathBuf,
    /// More captures of the baseline (`--baseline a b c`): their steps are pooled with
    /// `baseline`'s, and their run-to-run spread is each metric's noise floor. A folder of saved
    /// summaries stands for the summaries in it.
    pub more_baselines: Vec<PathBuf>,
    /// Fail when a time grows by more than this many percent.
    pub max_regression: f64,
    /// Fail when the current imbalance (slowest rank's work over the mean) exceeds this.
    pub max_imbalance: Option<f64>,
    /// Fail when the current re-simulated slowdown exceeds this.
    pub max_slowdown: Option<f64>,
    /// Ignore rows whose baseline and current are both below this many µs.
    pub min_time_us: f64,
    /// Match kernels after stripping template arguments and launch-shape suffixes.
    pub normalize: bool,
    /// Do not fail on kernels found only in `current`.
    pub allow_new_kernels: bool,
    pub basis: CompareBasis,
    /// Kernels in the top-kernels table and the appeared / vanished lists.
    pub top_n: usize,
    /// For directory sides: the profile id to use.
    pub profile_id: Option<String>,
    /// For directory sides: the stage to use.
    pub stage: Option<String>,
    /// Worker threads (`None`: all cores).
    pub jobs: Option<usize>,
    /// How a time row is judged.
    pub gate: GateRule,
}

impl Default for CompareOptions {
    fn default() -> Self {
        CompareOptions {
            baseline: PathBuf::new(),
            current: PathBuf::new(),
            more_baselines: Vec::new(),
            max_regression: 5.0,
            max_imbalance: None,
            max_slowdown: None,
            min_time_us: 0.0,
            normalize: false,
            allow_new_kernels: false,
            basis: CompareBasis::Auto,
            top_n: 15,
            profile_id: None,
            stage: None,
            jobs: None,
            gate: GateRule::Stats,
        }
    }
}

/// A comparison with what it read: the analyses' notes (for stderr) and every input file (so
/// that an output never replaces one).
#[derive(Debug, Clone)]
pub struct Compared {
    pub comparison: Comparison,
    pub notes: Vec<String>,
    pub inputs: Vec<PathBuf>,
}

/// `compare --power`: the detection table for `baseline` (and `more_baselines`), without a
/// current side.
pub fn power_of(args: &CompareOptions) -> Result<power::Power> {
    let mut all = vec![sides::load(&args.baseline, "baseline", args)?.summary];
    all.extend(
        sides::load_more(&args.more_baselines, args)?
            .into_iter()
            .map(|s| s.summary),
    );
    power::power(&all, args.max_regression)
}

/// Loads both sides, measures and judges, without printing anything.
pub fn compare(args: &CompareOptions) -> Result<Compared> {
    let base = sides::load(&args.baseline, "baseline", args)?;
    let cur = sides::load(&args.current, "current", args)?;
    let opts = diff::Options {
        basis: args.basis,
        normalize: args.normalize,
        top_n: args.top_n,
        thresholds: diff::Thresholds {
            max_regression_pct: args.max_regression,
            max_imbalance: args.max_imbalance,
            max_slowdown: args.max_slowdown,
            min_time_ns: Ns::new((args.min_time_us * 1e3).round() as i64),
            new_kernels_fail: !args.allow_new_kernels,
            statistical: args.gate == GateRule::Stats,
        },
    };
    let more = sides::load_more(&args.more_baselines, args)?;
    let mut c = diff::build(
        &base.summary,
        &cur.summary,
        base.info,
        cur.info.clone(),
        &opts,
    )?;
    let summaries: Vec<_> = more.iter().map(|m| m.summary.clone()).collect();
    let lost = decide::pool(&mut c, &summaries);
    if lost > 0 {
        c.notes.push(format!(
            "{lost} rows lack per-step samples in some baseline: judged by the fixed threshold"
        ));
    }
    if opts.thresholds.statistical {
        let others = more
            .iter()
            .map(|m| {
                diff::build(
                    &m.summary,
                    &cur.summary,
                    m.info.clone(),
                    cur.info.clone(),
                    &opts,
                )
            })
            .collect::<Result<Vec<_>>>()?;
        decide::floor_unsampled(&mut c, &others);
    }
    c.more_baselines = more.iter().map(|m| m.info.clone()).collect();
    gate::apply(&mut c);
    let mut notes = base.notes;
    notes.extend(cur.notes);
    let mut inputs = base.inputs;
    inputs.extend(cur.inputs);
    for m in more {
        notes.extend(m.notes);
        inputs.extend(m.inputs);
    }
    Ok(Compared {
        comparison: c,
        notes,
        inputs,
    })
}
