//! `capture` and `nsys` command-line definitions (clap).

use std::path::PathBuf;

use clap::{Args, Subcommand};

use crate::capture::{Activity, ApiKey, Backend, CaCert, Profiler, WorkerType};

#[derive(Subcommand, Debug, Clone)]
pub enum CaptureCommand {
    /// Start the profiler on every worker (one POST /start_profile each, all at once).
    Start(CaptureStartArgs),
    /// Stop the profiler on every worker (POST /stop_profile; /end_profile after a 404).
    Stop(CaptureStopArgs),
    /// The whole loop: start, drive load, wait, stop, wait for the traces to be written, merge,
    /// analyze.
    Run(CaptureRunArgs),
}

/// Which workers to call and how (shared by every `capture` subcommand).
#[derive(Args, Debug, Clone, Default)]
pub struct CaptureTargets {
    /// Router (sglang-router / sgl-model-gateway / vllm-router) whose `GET /workers` lists the
    /// workers.
    #[arg(long = "router-url", value_name = "URL")]
    pub router_url: Option<String>,
    /// Worker urls to call directly (repeatable; `http://h:p@N` DP-aware urls are accepted).
    #[arg(long = "worker-url", value_name = "URL", num_args = 1..)]
    pub worker_urls: Vec<String>,
    /// Find the router in a training log (last `Router launched at HOST:PORT` line).
    #[arg(long = "from-log", value_name = "FILE")]
    pub from_log: Option<PathBuf>,
    /// Only workers of these types (PD disaggregation): prefill, decode, regular.
    #[arg(long = "worker-type", value_enum, value_delimiter = ',')]
    pub worker_type: Vec<WorkerType>,
    /// Server dialect; `auto` asks each worker (`/model_info`, `/get_model_info`, then `/v1/models`).
    #[arg(long, value_enum, default_value_t = Backend::Auto)]
    pub backend: Backend,
    /// Seconds one request may take (connect + answer) before its worker counts as failed.
    #[arg(long, default_value_t = 30.0, value_name = "SECS")]
    pub timeout: f64,
    /// Print the result as JSON on stdout instead of a table.
    #[arg(long)]
    pub json: bool,
    /// API key for the router and workers (sglang-router / SGLang / vLLM `--api-key`), sent as
    /// `Authorization: Bearer KEY`. Never printed. Prefer the environment variable: a key on
    /// the command line is visible to other users in `ps`.
    #[arg(long = "api-key", value_name = "KEY", env = "RANKPROF_API_KEY", hide_env_values = true,
          value_parser = api_key)]
    pub api_key: Option<ApiKey>,
    /// PEM file of certificate authorities to trust for https, besides the usual public ones (a
    /// router or workers behind a private CA). Read and checked when given.
    #[arg(long = "ca-cert", value_name = "PEM", env = "RANKPROF_CA_CERT", value_parser = ca_cert)]
    pub ca_cert: Option<CaCert>,
}

fn ca_cert(s: &str) -> Result<CaCert, String> {
    CaCert::load(std::path::Path::new(s))
}

fn api_key(s: &str) -> Result<ApiKey, String> {
    ApiKey::new(s).ok_or_else(|| "the API key is empty".to_string())
}

/// The profiler settings SGLang's `ProfileReqInput` takes (vLLM takes none: its profiler is set
/// by `--profiler-config` when the server starts).
#[derive(Args, Debug, Clone, Default)]
pub struct ProfileSettingsArgs {
    /// Where the traces go. SGLang gets it in the request (made absolute); for vLLM it is the
    /// server's `torch_profiler_dir`, used here only to watch for the files.
    #[arg(long = "output-dir", value_name = "DIR")]
    pub output_dir: Option<PathBuf>,
    /// Put everything under OUTPUT_DIR/step_N/ (one folder per global step, as verl does).
    #[arg(long, value_name = "N")]
    pub step: Option<u64>,
    /// First forward step to profile (skips warm-up).
    #[arg(long = "start-step", value_name = "N")]
    pub start_step: Option<u64>,
    /// Profile this many steps; SGLang then stops by itself.
    #[arg(long = "num-steps", value_name = "N")]
    pub num_steps: Option<u64>,
    /// Activities: CPU,GPU,MEM,RPD,CUDA_PROFILER.
    #[arg(long, value_enum, value_delimiter = ',')]
    pub activities: Vec<Activity>,
    /// Profile prefill and decode separately (files end in -EXTEND / -DECODE).
    #[arg(long = "profile-by-stage")]
    pub profile_by_stage: bool,
    /// Only these stages (with --profile-by-stage): prefill,decode (EXTEND and DECODE are sent
    /// as prefill and decode, the names SGLang's per-stage profiler matches).
    #[arg(long = "profile-stages", value_delimiter = ',', value_name = "STAGES")]
    pub profile_stages: Vec<String>,
    /// Record Python stacks.
    #[arg(long = "with-stack", overrides_with = "no_with_stack")]
    pub with_stack: bool,
    #[arg(long = "no-with-stack", overrides_with = "with_stack", hide = true)]
    pub no_with_stack: bool,
    /// Record operator input shapes.
    #[arg(long = "record-shapes", overrides_with = "no_record_shapes")]
    pub record_shapes: bool,
    #[arg(
        long = "no-record-shapes",
        overrides_with = "record_shapes",
        hide = true
    )]
    pub no_record_shapes: bool,
    /// Let SGLang merge its ranks' traces itself when it stops.
    #[arg(long = "merge-profiles")]
    pub merge_profiles: bool,
    /// Prefix of the trace file names.
    #[arg(long = "profile-prefix", value_name = "PREFIX")]
    pub profile_prefix: Option<String>,
}

#[derive(Args, Debug, Clone, Default)]
pub struct CaptureStartArgs {
    #[command(flatten)]
    pub targets: CaptureTargets,
    #[command(flatten)]
    pub profile: ProfileSettingsArgs,
}

#[derive(Args, Debug, Clone, Default)]
pub struct CaptureStopArgs {
    #[command(flatten)]
    pub targets: CaptureTargets,
    /// As given to `capture start`: SGLang then stops by itself, and its 500 "Profiling is not in
    /// progress" to this stop means done, not failed. Not needed when `capture start` recorded
    /// its session (it does, for the same targets, or in `--output-dir`).
    #[arg(long = "num-steps", value_name = "N")]
    pub num_steps: Option<u64>,
    /// The `--output-dir` given to `capture start`: read its session record
    /// (`.rankprof-capture.json`) there.
    #[arg(long = "output-dir", value_name = "DIR")]
    pub output_dir: Option<PathBuf>,
    /// Seconds a stop request may take (stopping writes the traces, which can be slow).
    #[arg(long = "stop-timeout", default_value_t = 600.0, value_name = "SECS")]
    pub stop_timeout: f64,
}

#[derive(Args, Debug, Clone, Default)]
pub struct CaptureRunArgs {
    #[command(flatten)]
    pub targets: CaptureTargets,
    #[command(flatten)]
    pub profile: ProfileSettingsArgs,
    /// Send this many generation requests while profiling (through the router when there is one).
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub requests: u64,
    /// Prompt of the load requests.
    #[arg(long, default_value = "The quick brown fox jumps over the lazy dog.")]
    pub prompt: String,
    /// Tokens each load request generates.
    #[arg(long = "max-tokens", default_value_t = 32, value_name = "M")]
    pub max_tokens: u64,
    /// Load requests in flight at once (default: min(requests, 32)).
    #[arg(long, value_name = "N")]
    pub concurrency: Option<usize>,
    /// Model name for vLLM's /v1/completions (default: the first of GET /v1/models).
    #[arg(long)]
    pub model: Option<String>,
    /// Stop after this many seconds (otherwise when the load is done / num_steps are reached).
    #[arg(long, value_name = "SECS")]
    pub duration: Option<f64>,
    /// Seconds to wait for the trace files to appear and stop growing. With --num-steps and
    /// no load or --duration, servers whose trace folder this machine cannot see are given
    /// this long to profile their steps before the stop is sent (Ctrl-C sends it at once).
    #[arg(long = "flush-timeout", default_value_t = 300.0, value_name = "SECS")]
    pub flush_timeout: f64,
    /// Seconds the trace files must stay the same size to count as written.
    #[arg(long, default_value_t = 3.0, value_name = "SECS")]
    pub settle: f64,
    /// Seconds a stop request may take (stopping writes the traces, which can be slow).
    #[arg(long = "stop-timeout", default_value_t = 600.0, value_name = "SECS")]
    pub stop_timeout: f64,
    /// Do not merge and analyze the collected traces.
    #[arg(long = "no-merge")]
    pub no_merge: bool,
    /// The profiler to drive: `torch` (Kineto traces) or `nsys` (servers run under
    /// `nsys profile --capture-range=cudaProfilerApi --capture-range-end=repeat -o
    /// OUTPUT_DIR/NAME`: start/stop open and close nsys's capture, and the reports nsys writes
    /// in --output-dir are merged and analyzed).
    #[arg(long, value_enum, default_value_t = Profiler::Torch)]
    pub profiler: Profiler,
}

#[derive(Subcommand, Debug, Clone)]
pub enum NsysCommand {
    /// List the Nsight Systems sessions (`nsys sessions list`).
    List(NsysArgs),
    /// Start collection in a session (`nsys start --session=…`).
    Start(NsysArgs),
    /// Stop collection in a session and write its report (`nsys stop --session=…`); with
    /// --analyze, analyze the reports written.
    Stop(NsysStopArgs),
}

#[derive(Args, Debug, Clone, Default)]
pub struct NsysStopArgs {
    #[command(flatten)]
    pub nsys: NsysArgs,
    /// Then analyze the reports written, as `rankprof analyze` does (the analysis on stdout,
    /// the stop table on stderr): the `.nsys-rep` files nsys names in its output, or every rank
    /// of --profile-dir.
    #[arg(long)]
    pub analyze: bool,
    /// With --analyze: the folder of the sessions' reports (what their `-o` names), analyzed
    /// as `analyze --profile-dir DIR`.
    #[arg(long = "profile-dir", value_name = "DIR", requires = "analyze")]
    pub profile_dir: Option<PathBuf>,
    /// With --analyze: keep each report's SQLite export beside it (`x.sqlite`).
    #[arg(long = "keep-sqlite", requires = "analyze")]
    pub keep_sqlite: bool,
}

#[derive(Args, Debug, Clone, Default)]
pub struct NsysArgs {
    /// Session ID or NAME as `nsys sessions list` shows it.
    #[arg(long, value_name = "ID|NAME", conflicts_with = "all")]
    pub session: Option<String>,
    /// Every session (start: those not collecting; stop: those collecting).
    #[arg(long)]
    pub all: bool,
    /// The nsys binary (default: $RANKPROF_NSYS, else `nsys` on PATH).
    #[arg(long, value_name = "PATH")]
    pub nsys: Option<PathBuf>,
    /// Print JSON on stdout instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Seconds `nsys sessions list` and `nsys start` may take before nsys is killed
    /// [default: 60].
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<f64>,
    /// Seconds `nsys stop` may take (it writes the report) before nsys is killed [default: 600].
    #[arg(long = "stop-timeout", value_name = "SECS")]
    pub stop_timeout: Option<f64>,
    /// Extra arguments handed to `nsys start` / `nsys stop` unchanged (after `--`).
    #[arg(last = true)]
    pub extra: Vec<String>,
}
