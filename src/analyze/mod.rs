//! `rankprof analyze` / `analyze-profile`: is the load balanced across ranks, and if not, which
//! rank, which kernels, and from which step on?
//!
//! The pipeline:
//!
//! 1. **Inputs** ([`collect::plan`]): a profile directory, a list of rank files, or one merged
//!    trace (its ranks are recovered from the `[TP01-DP01] …` labels merged pids carry). Only
//!    regular files are read; a rank file that cannot be read at all is left out and named
//!    ([`FileInfo::unreadable`], a note), and the analysis is partial.
//! 2. **One pass per file, ranks in parallel** (rayon, `-j`): the [`collect::collector`] sees
//!    each event once through the reader's callback and keeps per-name aggregates, compact
//!    intervals, step annotations and collectives. [`collect::rank::finish`] turns that into
//!    the rank's small results in the same worker (its summary from [`collect::busy`], its
//!    steps and the work of each) and drops the intervals.
//! 3. **Across ranks** ([`reduce`]): kernel classes and top kernels ([`reduce::kernels`]), the
//!    per-step table and the onset ([`reduce::steps`]), matched collectives
//!    ([`reduce::collectives`]), ranks in groups ([`reduce::groups`]). Then **what explains a
//!    gap** ([`explain`]): the work of each step set against its time
//!    ([`explain::attribution`]: uneven load, slower device, more kernels), the MoE EP split
//!    ([`explain::ep`]) and the [`explain::verdict`] on top. [`summary`] is the small JSON
//!    digest for `compare`.
//! 4. **Output** through [`crate::report`]: terminal tables, JSON / CSV / markdown, HTML,
//!    Parquet.
//!
//! Steps 1-2 are the read phase and step 3 the reduce ([`phases`]); between them a
//! [`partial`] can carry the read ranks to another process: `--save-partial` on each node,
//! `--from-partials` once, the same report as one run.
//!
//! # Layout
//!
//! The folders follow the stages, and each imports only downward:
//!
//! - [`collect`]: the read phase, one file and one rank at a time (the plan, the collector
//!   and the names it reads, spools, a rank's busy unions, steps, work and collectives, and
//!   [`collect::rank::RankResult`], what a rank gives the rest). Nothing in it looks across
//!   ranks.
//! - [`reduce`]: tables across ranks, from the rank results; imports `collect`.
//! - [`explain`]: the causes (attribution, EP split, verdict) on top of the tables; imports
//!   `collect` and `reduce`.
//!
//! Beside them, at this level, the shared bottom that every stage may import: the kernel class
//! rules ([`classes`]), the options ([`options`]), compact rank sets ([`rankset`]) and small
//! statistics ([`stats`]). On top of everything: the result [`model`] (an [`Analysis`] holds
//! every stage's result), the [`summary`], the two [`phases`] that run the stages, the
//! cross-rank analysis the reduce phase runs (`cross`), and [`partial`], which saves and reads
//! the read phase. No file imports one above it, so the
//! graph of imports between files has no cycle.
//!
//! The facade re-exported here is what a library user needs: [`analyze`],
//! [`AnalyzeOptions`], [`Analysis`] (with [`RankDepth`], [`DepthClass`], [`DepthKernel`]),
//! [`FileInfo`], [`Summary`] and [`load_summary`], and the result types an [`Analysis`] holds
//! ([`RankSummary`], [`Verdict`], [`StepTable`], [`CriticalPath`], [`Attribution`], …). The
//! stage folders are `pub(crate)` or `#[doc(hidden)]` (reached by tests only). Inside
//! `analyze`, modules import each item from the module that defines it, never through the
//! facade.
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

pub(crate) mod classes;
// not API: for tests
#[doc(hidden)]
pub mod collect;
// not API: for tests
#[doc(hidden)]
pub mod explain;
pub(crate) mod model;
pub(crate) mod options;
// not API: for tests
#[doc(hidden)]
pub mod partial;
// not API: for tests
#[doc(hidden)]
mod cross;
pub mod phases;
pub(crate) mod rankset;
mod runs;
// not API: for tests
#[doc(hidden)]
pub mod reduce;
pub(crate) mod stats;
// not API: for tests/fuzz
#[doc(hidden)]
pub mod summary;

use anyhow::Result;

// The facade (see the module doc).
pub use collect::plan::{find, stages, FileInfo, Found};
pub use model::{Analysis, DepthClass, DepthKernel, RankDepth};
pub use options::{AnalyzeOptions, RankSel};
pub use summary::{load_summary, Summary};
// The result types an [`Analysis`] holds, by name.
pub use collect::busy::RankSummary;
pub use explain::attribution::Attribution;
pub use explain::drill::Drill;
pub use explain::ep::EpRecord;
pub use explain::verdict::Verdict;
pub use reduce::collectives::CollectiveReport;
pub use reduce::groups::{Dim, Groups};
pub use reduce::kernels::{ClassTable, KernelRow};
pub use reduce::path::CriticalPath;
pub use reduce::steps::StepTable;

/// Reads and analyzes a profile as `args` say, without printing anything: the read phase
/// then the reduce phase ([`phases`]).
pub fn analyze(args: &AnalyzeOptions) -> Result<Analysis> {
    analyze_found(args, find(args)?)
}

/// [`analyze`] of the files [`find`] found for `args`.
pub fn analyze_found(args: &AnalyzeOptions, found: Found) -> Result<Analysis> {
    let (classifier, _) = phases::rules(args)?;
    let read = phases::read(args, found, &classifier, None)?;
    phases::reduce(read, &classifier, args)
}
