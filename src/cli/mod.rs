//! Command-line definitions (clap) and nothing else. `crate::commands` turns these structs into
//! each library's options type; the value enums (`Align`, `CompareBasis`, `Backend`, …) are the
//! libraries' own.

// The doc comments below are clap help texts (`<UTC>`, `<id>` are placeholders, not HTML).
#![allow(rustdoc::invalid_html_tags)]

pub mod capture;
pub mod examples;
pub mod synth;
pub mod watch;

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::compare::{CompareBasis, GateRule, Inconclusive};
use crate::merge::{Align, TraceFormat};
use capture::{CaptureCommand, NsysCommand};
use synth::{DemoArgs, InflateArgs, SynthArgs};
use watch::WatchArgs;

#[derive(Parser, Debug)]
#[command(
    name = "rankprof",
    version,
    about = "Find out why one GPU rank is slower than the others"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// List the profiles in a directory: ids, stages, ranks found and missing, sizes.
    Ls(LsArgs),
    /// Merge every rank's trace into one Perfetto-ready trace per profile.
    Merge(MergeArgs),
    /// Per-rank kernel tables, classes, steps and collectives: which rank is slow, where, since when.
    Analyze(AnalyzeArgs),
    /// Compare a profile against a baseline: deltas, thresholds, exit code for CI.
    Compare(CompareArgs),
    /// Start/stop the profiler on every worker behind a router, drive load, collect, merge.
    #[command(subcommand)]
    Capture(CaptureCommand),
    /// Drive Nsight Systems sessions (`nsys sessions list`, `nsys start`, `nsys stop`).
    #[command(subcommand)]
    Nsys(NsysCommand),
    /// Follow every DP rank's load live; capture a profile when a trigger says they drift apart.
    Watch(WatchArgs),
    /// Write deterministic, realistic Kineto traces (for fixtures, tests and benchmarks).
    Synth(SynthArgs),
    /// Run `ls` and `merge` (and `analyze`) on the bundled fixtures/.
    Demo(DemoArgs),
    /// Print a shell completion script: `rankprof completions bash > /etc/bash_completion.d/rankprof`.
    Completions(CompletionsArgs),
    /// Write man pages into DIR: rankprof.1 and one page per subcommand (rankprof-analyze.1, …).
    Man(ManArgs),
    /// Decompress trace files in parallel and discard the bytes (benchmark baseline).
    #[command(hide = true)]
    Inflate(InflateArgs),
}

/// The whole command line with its examples ([`examples::examples`]) and the exit-code table
/// ([`crate::exit::HELP`]) at the end of every command's and subcommand's `--help`, wrapped to
/// the terminal ([`help_width`]).
pub fn command() -> clap::Command {
    command_at(Some(help_width()))
}

/// The width `--help` is wrapped to: the terminal's, else `$COLUMNS`, else 120
/// ([`crate::report::terminal::width`]), at most 100 (clap's own limit: longer lines read badly).
pub fn help_width() -> usize {
    usize::from(crate::report::terminal::width()).min(100)
}

/// [`command`] with its help wrapped to `width`, or as written (`None`: man pages, tests).
pub fn command_at(width: Option<usize>) -> clap::Command {
    fn with_after_help(c: clap::Command, path: &str, width: Option<usize>) -> clap::Command {
        c.after_help(examples::after_help_at(path, width))
            .mut_subcommands(|s| {
                let sub = match path {
                    "" => s.get_name().to_string(),
                    p => format!("{p} {}", s.get_name()),
                };
                with_after_help(s, &sub, width)
            })
    }
    let c = with_after_help(<Cli as clap::CommandFactory>::command(), "", width);
    c.term_width(width.unwrap_or(0))
}

/// Parses the process' arguments with [`command`] (exits with clap's message and code 2 on bad
/// usage, as `Cli::parse` does).
pub fn parse() -> Cli {
    let m = command().get_matches();
    <Cli as clap::FromArgMatches>::from_arg_matches(&m).unwrap_or_else(|e| e.exit())
}

#[derive(Args, Debug, Clone)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Args, Debug, Clone)]
pub struct ManArgs {
    /// Directory for the pages (created if missing).
    pub dir: PathBuf,
}

#[derive(Args, Debug, Clone)]
pub struct LsArgs {
    /// Directory holding the rank traces.
    pub dir: PathBuf,
    /// Also look in subdirectories (per-step folders such as rollout_step_3/).
    #[arg(long, short = 'r')]
    pub recursive: bool,
    /// Read every file and count its events (slower).
    #[arg(long)]
    pub count: bool,
    /// Where ranks come from: the file names, `distributedInfo.rank` in each file's head, or
    /// file-name order (default: the names, checked against the heads where names alone are
    /// not enough; torch handler names: the head wins where they disagree, with a note).
    #[arg(long = "rank-from", value_enum, value_name = "FROM")]
    pub rank_from: Option<RankFromArg>,
    /// Output format on stdout: the listing as text, JSON, CSV (one row per file) or markdown.
    #[arg(long, value_enum, default_value_t = ReportFormat::Table)]
    pub format: ReportFormat,
    /// Same as --format json.
    #[arg(long, conflicts_with = "format")]
    pub json: bool,
}

#[derive(Args, Debug, Clone)]
pub struct MergeArgs {
    /// Directory holding the rank traces.
    #[arg(long = "profile-dir", value_name = "DIR")]
    pub profile_dir: Option<PathBuf>,
    /// Rank trace files to merge (instead of, or besides, --profile-dir); one folder alone is
    /// taken as --profile-dir.
    pub files: Vec<PathBuf>,
    /// Merge only this profile id (default: every profile found).
    #[arg(long = "profile-id")]
    pub profile_id: Option<String>,
    /// Merge only this stage (EXTEND, DECODE, prefill, decode).
    #[arg(long)]
    pub stage: Option<String>,
    /// Where ranks come from: the file names, `distributedInfo.rank` in each file's head, or
    /// file-name order (default: the names, checked against the heads where names alone are
    /// not enough; torch handler names: the head wins where they disagree, with a note).
    #[arg(long = "rank-from", value_enum, value_name = "FROM")]
    pub rank_from: Option<RankFromArg>,
    /// Output file (only when one group is merged), or an existing directory to write each
    /// merged trace into under its default name, DIR/merged-<id>[-<stage>].trace.json.gz
    /// (without -o: beside the rank files).
    #[arg(long, short = 'o')]
    pub output: Option<PathBuf>,
    /// Look in subdirectories too.
    #[arg(long, short = 'r')]
    pub recursive: bool,
    /// Clock alignment across ranks.
    #[arg(long, value_enum, default_value_t = Align::Base)]
    pub align: Align,
    /// Keep only these ranks (indices in rank order, as `ls` prints them): 0,3-5
    #[arg(long)]
    pub ranks: Option<String>,
    /// Keep only events overlapping START_US:END_US (output `ts` units, µs).
    #[arg(long)]
    pub window: Option<String>,
    /// Keep only steps A:B (ProfilerStep#N, or SGLang step[...] / vLLM execute_... annotations
    /// counted from 0 per rank).
    #[arg(long)]
    pub steps: Option<String>,
    /// Drop events of these categories: python_function,cuda_runtime
    #[arg(long = "drop-cat", value_delimiter = ',')]
    pub drop_cat: Vec<String>,
    /// Keep only GPU events (kernels, memcpy, memset, GPU annotations) and metadata.
    #[arg(long = "gpu-only")]
    pub gpu_only: bool,
    /// Write nothing when any rank is damaged.
    #[arg(long)]
    pub strict: bool,
    /// Analyze the ranks first and draw the critical path in the merged trace: a "critical
    /// path" track per rank with each collective it arrived last at (the segment before it,
    /// named by what it cost the others and why). Reads every rank twice.
    #[arg(long = "critical-path")]
    pub critical_path: bool,
    /// Analyze the ranks first and draw, beside each rank, its steps as the what-if replays
    /// them with every rank typical: a "what if (every rank typical)" track per rank with each
    /// ideal step (named with its ideal and recorded time) and, inside it, each collective from
    /// its ideal arrival to its ideal end. Reads every rank twice.
    #[arg(long = "what-if")]
    pub what_if: bool,
    /// gzip level of the output (0-9).
    #[arg(long, default_value_t = 1)]
    pub level: u32,
    /// The merged file's encoding: Chrome JSON, gzipped (every viewer), or Perfetto's
    /// protobuf (`.pftrace`: a tenth of the JSON's size, ranks in rank order in
    /// ui.perfetto.dev). Default: perfetto when -o ends in .pftrace, else json.
    #[arg(long = "trace-format", value_enum, value_name = "FORMAT")]
    pub trace_format: Option<TraceFormat>,
    /// Keep the SQLite export of each Nsight Systems report read (`x.nsys-rep` → `x.sqlite`,
    /// beside it; an existing one newer than the report is read instead of exporting again).
    /// By default the exports are temporary.
    #[arg(long = "keep-sqlite")]
    pub keep_sqlite: bool,
    /// Worker threads (default: all cores).
    #[arg(long, short = 'j')]
    pub jobs: Option<usize>,
    /// Output format on stdout: text, JSON (the result records), CSV (one row per rank) or
    /// markdown.
    #[arg(long, value_enum, default_value_t = ReportFormat::Table)]
    pub format: ReportFormat,
    /// Same as --format json.
    #[arg(long, conflicts_with = "format")]
    pub json: bool,
}

#[derive(Args, Debug, Clone)]
pub struct AnalyzeArgs {
    /// Directory holding the rank traces (or one merged trace).
    #[arg(long = "profile-dir", value_name = "DIR")]
    pub profile_dir: Option<PathBuf>,
    /// Rank trace files, or one merged trace (ranks recovered from its `[TP00]` pid labels); one
    /// folder alone is taken as --profile-dir.
    pub files: Vec<PathBuf>,
    /// Compare every rank (the default).
    #[arg(long = "all-ranks", conflicts_with = "rank")]
    pub all_ranks: bool,
    /// One rank against its peers: the whole profile is analyzed, and the report drills down
    /// into this rank — the kernel classes, kernels, steps and collectives where it differs most
    /// from its peers' median, with the ratios. Its index in rank order (0 = first, as `ls`
    /// lists them) or its label as the reports print it (TP01-DP01).
    #[arg(long, value_name = "N|LABEL")]
    pub rank: Option<String>,
    /// Analyze only this profile id (when the directory holds several).
    #[arg(long = "profile-id")]
    pub profile_id: Option<String>,
    /// Analyze only this stage (EXTEND, DECODE, prefill, decode).
    #[arg(long)]
    pub stage: Option<String>,
    /// Where ranks come from: the file names, `distributedInfo.rank` in each file's head, or
    /// file-name order (default: the names, checked against the heads where names alone are
    /// not enough; torch handler names: the head wins where they disagree, with a note).
    #[arg(long = "rank-from", value_enum, value_name = "FROM")]
    pub rank_from: Option<RankFromArg>,
    /// Kernels in the top-kernels table.
    #[arg(long = "top-n", value_name = "K", default_value_t = 15,
          allow_negative_numbers = true, value_parser = count)]
    pub top_n: usize,
    /// Step annotations to use (regex on annotation names) instead of ProfilerStep#N / step[...] / execute_....
    #[arg(long = "step-marker", value_name = "REGEX")]
    pub step_marker: Option<String>,
    /// How far above the others' mean a rank must stay to count as slower, in percent.
    #[arg(long, value_name = "PCT", default_value = "5", value_parser = percent)]
    pub threshold: f64,
    /// Kernel class rules to use before (or instead of) the built-in ones (TOML).
    #[arg(long, value_name = "RULES.toml")]
    pub classes: Option<PathBuf>,
    /// Compare ranks whose trace stops early (truncated, broken) with the others anyway; by
    /// default they are left out of the comparison, named on the report's first line.
    #[arg(long = "keep-partial")]
    pub keep_partial: bool,
    /// Clocks: `collectives` aligns a rank whose collectives all end a constant time off its
    /// world's (another host's clock; GPU traces), and says so; `none` keeps every rank's own.
    #[arg(long, value_enum, value_name = "HOW", default_value = "collectives")]
    pub align: AlignArg,
    /// Keep the SQLite export of each Nsight Systems report read (`x.nsys-rep` → `x.sqlite`,
    /// beside it; an existing one newer than the report is read instead of exporting again).
    /// By default the exports are temporary.
    #[arg(long = "keep-sqlite")]
    pub keep_sqlite: bool,
    /// Output format on stdout.
    #[arg(long, value_enum, default_value_t = ReportFormat::Table)]
    pub format: ReportFormat,
    /// Same as --format json.
    #[arg(long, conflicts_with = "format")]
    pub json: bool,
    /// Print the verdict lines only (terminal format); the exit code is unchanged.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Highlight the slow rank in colour: `auto` on a terminal unless NO_COLOR is set,
    /// `always`, or `never`.
    #[arg(long, value_enum, value_name = "WHEN", default_value_t = ColorArg::Auto)]
    pub color: ColorArg,
    /// Terminal tables one row per rank, or grouped (distributions, top outlier ranks, groups);
    /// `auto`: grouped above 32 ranks.
    #[arg(long, value_enum, default_value_t = ViewArg::Auto)]
    pub view: ViewArg,
    /// The groups the grouped view shows (default: DP replicas, else the first the ranks
    /// have). `node`: the file's directory, else the file-name prefix before the rank fields.
    #[arg(long = "group-by", value_enum, value_name = "DIM")]
    pub group_by: Option<GroupByArg>,
    /// Also write one CSV per table into DIR (ranks.csv, classes.csv, kernels_by_rank.csv,
    /// steps_by_rank.csv, verdict.csv, attribution.csv, …): long form where a table has one,
    /// times in ns, units in the column names; the same tables as --parquet.
    #[arg(long = "csv-dir", value_name = "DIR")]
    pub csv_dir: Option<PathBuf>,
    /// Also write one Parquet file per table into DIR, the same tables as --csv-dir (needs the
    /// `parquet` build feature).
    #[arg(long, value_name = "DIR")]
    pub parquet: Option<PathBuf>,
    /// Also write a self-contained HTML report (heatmaps and tables).
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Also write the small versioned JSON summary that `compare` reads.
    #[arg(long = "save-summary", value_name = "FILE.json")]
    pub save_summary: Option<PathBuf>,
    /// Kernels kept by name in the saved summary (the rest are folded into one entry).
    #[arg(long = "summary-kernels", value_name = "N", default_value_t = 200)]
    pub summary_kernels: usize,
    /// Worker threads (default: all cores).
    #[arg(long, short = 'j')]
    pub jobs: Option<usize>,
    /// Read the ranks given (or one --shard of them) and write them as a partial into FILE
    /// (gzip'd JSON) for `--from-partials`, instead of a report.
    #[arg(long = "save-partial", value_name = "FILE",
          conflicts_with_all = ["rank", "html", "csv_dir", "parquet", "save_summary"])]
    pub save_partial: Option<PathBuf>,
    /// With --save-partial: only the K-th of N equal slices of the rank files, in rank order
    /// (1-based), e.g. `--shard 2/8`.
    #[arg(long, value_name = "K/N", requires = "save_partial", value_parser = shard)]
    pub shard: Option<(usize, usize)>,
    /// Analyze the ranks of these partials (written by --save-partial) together: the same
    /// report as one run over all their files. The read options (--classes, --step-marker,
    /// --profile-id, --stage, --rank) were fixed when the partials were saved.
    #[arg(long = "from-partials", value_name = "PARTIAL", num_args = 1..,
          conflicts_with_all = ["profile_dir", "files", "classes", "step_marker", "profile_id",
                                "rank_from",
                                "stage", "rank", "save_partial"])]
    pub from_partials: Vec<PathBuf>,
}

/// `K/N` with 1 ≤ K ≤ N.
fn shard(s: &str) -> Result<(usize, usize), String> {
    let bad = || format!("{s:?} is not K/N (1 <= K <= N), e.g. 2/8");
    let (k, n) = s.split_once('/').ok_or_else(bad)?;
    let (k, n): (usize, usize) = (
        k.trim().parse().map_err(|_| bad())?,
        n.trim().parse().map_err(|_| bad())?,
    );
    if k == 0 || k > n {
        return Err(bad());
    }
    Ok((k, n))
}

/// How `analyze` puts the ranks' clocks together (`--align`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum AlignArg {
    /// Align a rank whose collectives all end a constant time off its world's.
    Collectives,
    /// Every rank on its own clock.
    None,
}

/// Where ranks come from (`--rank-from`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum RankFromArg {
    /// The rank in each file's name.
    Name,
    /// `distributedInfo.rank` in each file's head.
    DistributedInfo,
    /// File-name order.
    Order,
}

/// The form of the terminal report.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum ViewArg {
    Auto,
    Ranks,
    Grouped,
}

/// A dimension ranks are grouped by.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum GroupByArg {
    Dp,
    Tp,
    Pp,
    Ep,
    Node,
}

/// When to colour (`--color`, as ripgrep's).
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum ColorArg {
    /// On a terminal, unless the NO_COLOR environment variable is set (and not empty).
    Auto,
    /// Always, even when piped.
    Always,
    /// Never.
    Never,
}

/// How `analyze`, `ls` and `merge` print their results.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    /// Terminal tables.
    Table,
    Json,
    Csv,
    Markdown,
}

/// A percentage: `5`, `5%`, `2.5`.
/// A count (`--top-n`): a whole number ≥ 0. A negative one is read as a value (not as a
/// flag, which made clap suggest `-- -1`) and refused in words.
fn count(s: &str) -> Result<usize, String> {
    match s.trim().parse::<i64>() {
        Ok(v) if v >= 0 => usize::try_from(v).map_err(|_| format!("{s} is too large")),
        Ok(_) => Err(format!("{s} is negative: give a count, 0 or more")),
        Err(_) => Err(format!("{s:?} is not a whole number")),
    }
}

fn percent(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .trim_end_matches('%')
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a percentage"))?;
    if !(0.0..=1000.0).contains(&v) {
        return Err(format!("{s} is outside 0-1000 %"));
    }
    Ok(v)
}

#[derive(Args, Debug, Clone)]
pub struct CompareArgs {
    /// Baseline: a profile directory, a trace (one rank's or a merged one), or a summary saved
    /// with `analyze --save-summary`. With --baseline, a lone path here is CURRENT.
    #[arg(value_name = "BASELINE", required_unless_present = "baselines")]
    pub baseline: Option<PathBuf>,
    /// Current: the same kinds as BASELINE.
    #[arg(value_name = "CURRENT")]
    pub current: Option<PathBuf>,
    /// Baselines, several captures of the same load (or a folder of saved summaries): their
    /// steps are pooled, and their run-to-run spread is each metric's noise floor. Without a
    /// path before it, the last path after --baseline is CURRENT (`--baseline a b c CURRENT`).
    #[arg(long = "baseline", value_name = "PATH", num_args = 1.., action = clap::ArgAction::Append)]
    pub baselines: Vec<PathBuf>,
    /// How a time row is judged: `fixed`, its per-step median (or total) against
    /// --max-regression; `stats`, its per-step samples tested (regression / no change /
    /// inconclusive, each with its 95 % interval; see docs/compare.md for when to trust it).
    #[arg(long, value_enum, default_value_t = GateRule::Stats)]
    pub gate: GateRule,
    /// With --gate stats: what an inconclusive comparison (no regression, but rows the steps
    /// cannot decide) exits with: its own code 4, or 0 (`pass`), or 1 (`fail`).
    #[arg(long, value_enum, default_value_t = Inconclusive::Code)]
    pub inconclusive: Inconclusive,
    /// Print the detection rate of planted regressions (2, 5, 10 %) at 8, 16 and 32 steps for
    /// the BASELINE's own step-to-step spread, simulated by resampling its steps; no CURRENT.
    #[arg(long)]
    pub power: bool,
    /// The change that counts: a time (overall, per rank, per class) fails when it grew by more
    /// than this (with per-step samples: significantly, and by more than the noise floor too):
    /// `5%` or `5`.
    #[arg(long = "max-regression", value_name = "PCT", default_value = "5", value_parser = percent)]
    pub max_regression: f64,
    /// Fail when the current imbalance (slowest rank's work over the mean) exceeds this, e.g. 1.10.
    #[arg(long = "max-imbalance", value_name = "RATIO", value_parser = ratio)]
    pub max_imbalance: Option<f64>,
    /// Fail when the current slowdown, re-simulated at the collectives (the step over the step
    /// with every rank typical: the what-if's S), exceeds this, e.g. 1.10. Not judged when the
    /// current side has no trusted what-if (it says so).
    #[arg(long = "max-slowdown", value_name = "RATIO", value_parser = ratio)]
    pub max_slowdown: Option<f64>,
    /// Ignore rows (and new kernels) whose baseline and current are both below this many µs.
    #[arg(long = "min-time-us", value_name = "US", default_value = "0", value_parser = non_negative)]
    pub min_time_us: f64,
    /// Match kernels after stripping template arguments and launch-shape suffixes.
    #[arg(long)]
    pub normalize: bool,
    /// Do not fail on kernels found only in CURRENT (they are still listed).
    #[arg(long = "allow-new-kernels")]
    pub allow_new_kernels: bool,
    /// What the times are: per-step medians (`steps`), whole-profile totals (`totals`), or
    /// steps when both sides have steps (`auto`).
    #[arg(long, value_enum, default_value_t = CompareBasis::Auto)]
    pub basis: CompareBasis,
    /// Output format on stdout.
    #[arg(long, value_enum, default_value_t = CompareFormat::Table)]
    pub format: CompareFormat,
    /// Same as --format json.
    #[arg(long, conflicts_with = "format")]
    pub json: bool,
    /// Print the headline and the failures only (terminal format); the exit code is unchanged.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Kernels in the top-kernels table (and in the appeared / vanished lists).
    #[arg(long = "top-n", value_name = "K", default_value_t = 15,
          allow_negative_numbers = true, value_parser = count)]
    pub top_n: usize,
    /// For directory sides: the profile id to use (when a directory holds several).
    #[arg(long = "profile-id")]
    pub profile_id: Option<String>,
    /// For directory sides: the stage to use (EXTEND, DECODE, prefill, decode).
    #[arg(long)]
    pub stage: Option<String>,
    /// Also write the report (in --format) to FILE.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Worker threads for reading traces (default: all cores).
    #[arg(long, short = 'j')]
    pub jobs: Option<usize>,
}

/// How `compare` prints its report.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum CompareFormat {
    /// Terminal tables.
    Table,
    /// GitHub-flavoured markdown (a PR comment, `$GITHUB_STEP_SUMMARY`).
    Markdown,
    Json,
    /// Every table as CSV, each after a `# title` line.
    Csv,
}

/// A ratio of at least 1: `1.10`.
fn ratio(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a number"))?;
    if !(v >= 1.0 && v.is_finite()) {
        return Err(format!("{s} is below 1 (slowest over mean is at least 1)"));
    }
    Ok(v)
}

/// A finite number >= 0.
fn non_negative(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a number"))?;
    if !(v >= 0.0 && v.is_finite()) {
        return Err(format!("{s} must be 0 or more"));
    }
    Ok(v)
}
