//! What an analysis is asked to do ([`AnalyzeOptions`]), independent of the command line: the
//! inputs the read phase plans from, the rules and marker it reads with, and the threshold and
//! table sizes of the reduce.

use std::path::PathBuf;

use crate::trace::discover::RankFrom;

/// A rank as a user names it: its index in rank order (`2`, as `ls` lists them) or its label
/// as the reports print it (`TP01-DP01`, `[TP01-DP01]`, `rank3`; any case).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RankSel {
    Index(usize),
    Label(String),
}

impl RankSel {
    /// A whole number is an index; anything else a label.
    pub fn parse(s: &str) -> RankSel {
        match s.trim().parse::<usize>() {
            Ok(n) => RankSel::Index(n),
            Err(_) => RankSel::Label(s.trim().to_string()),
        }
    }

    /// Whether `label` (as a report prints it) is the one named.
    pub fn names(&self, label: &str) -> bool {
        let norm = |l: &str| {
            l.trim()
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_ascii_uppercase()
        };
        match self {
            RankSel::Index(_) => false,
            RankSel::Label(l) => norm(l) == norm(label),
        }
    }
}

impl std::fmt::Display for RankSel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RankSel::Index(n) => write!(f, "{n}"),
            RankSel::Label(l) => f.write_str(l),
        }
    }
}

/// What to analyze and how, independent of the command line (every default equals the
/// command line's).
#[derive(Debug, Clone)]
pub struct AnalyzeOptions {
    /// A directory of rank traces (or holding one merged trace).
    pub profile_dir: Option<PathBuf>,
    /// Rank trace files, or one merged trace.
    pub files: Vec<PathBuf>,
    /// One rank in depth: its index in rank order, or its label.
    pub rank: Option<RankSel>,
    /// Only this profile id (when the directory holds several).
    pub profile_id: Option<String>,
    /// Only this stage (EXTEND, DECODE, prefill, decode).
    pub stage: Option<String>,
    /// Where ranks come from (`--rank-from`; the default: names, checked against heads).
    pub rank_from: RankFrom,
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
    /// Align the ranks' clocks from their collectives' ends (GPU traces;
    /// [`crate::analyze::reduce::clocks`]): `--align collectives`, the default. `false`:
    /// `--align none`, every rank on its own clock.
    pub align: bool,
    /// Keep the what-if's "every rank typical" timeline, step by step (`merge --what-if` draws
    /// it; [`crate::analyze::reduce::path::ideal`]). Off by default: `analyze` does not keep it.
    pub ideal_timeline: bool,
    /// Keep, for each late arrival kept for a merged trace, the members that waited for it
    /// (`merge --critical-path` joins them to it by flow arrows). Off by default: `analyze`
    /// does not draw them, and 20,000 late arrivals' waiters with their labels were most of
    /// the memory its critical path touched.
    pub waiters: bool,
}

impl Default for AnalyzeOptions {
    fn default() -> Self {
        AnalyzeOptions {
            profile_dir: None,
            files: Vec::new(),
            rank: None,
            profile_id: None,
            stage: None,
            rank_from: RankFrom::Auto,
            top_n: 15,
            step_marker: None,
            threshold: 5.0,
            classes: None,
            summary_kernels: 200,
            jobs: None,
            keep_partial: false,
            align: true,
            ideal_timeline: false,
            waiters: false,
        }
    }
}
