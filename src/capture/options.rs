//! What a capture is asked to do, independent of the command line: which servers
//! ([`Targets`]), what their profilers record ([`ProfileSettings`]), and the settings of
//! `start`, `stop` and the whole `run` ([`StartOptions`], [`StopOptions`], [`CaptureOptions`]).
//! Every default equals the command line's. Seconds become [`Duration`]s through [`seconds`],
//! which bounds them, so no option can make a wait endless or overflow.

use std::path::PathBuf;
use std::time::Duration;

/// Which server dialect to speak; `Auto` asks each server.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Backend {
    #[default]
    Auto,
    Sglang,
    Vllm,
}

/// A profiler activity SGLang records.
#[derive(Copy, Clone, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Activity {
    #[value(name = "CPU", alias = "cpu")]
    Cpu,
    #[value(name = "GPU", alias = "gpu")]
    Gpu,
    #[value(name = "MEM", alias = "mem")]
    Mem,
    #[value(name = "RPD", alias = "rpd")]
    Rpd,
    #[value(name = "CUDA_PROFILER", alias = "cuda_profiler")]
    CudaProfiler,
}

/// Which profiler `capture run` drives and collects.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Profiler {
    /// The servers' torch profiler: Kineto traces (`*.trace.json.gz`) in `--output-dir`.
    #[default]
    Torch,
    /// Nsight Systems: the servers run under `nsys profile --capture-range=cudaProfilerApi`;
    /// the start and stop requests open and close nsys's capture (SGLang: activity
    /// `CUDA_PROFILER`; vLLM: `--profiler-config '{"profiler":"cuda"}'`), and nsys writes its
    /// reports (`*.nsys-rep`) where its `-o` says, which `--output-dir` names.
    Nsys,
}

/// A worker's role under PD disaggregation (as routers report it).
#[derive(Copy, Clone, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum WorkerType {
    Prefill,
    Decode,
    Regular,
}

/// Which workers to call and how.
#[derive(Debug, Clone)]
pub struct Targets {
    /// A router whose `GET /workers` lists the workers.
    pub router_url: Option<String>,
    /// Worker urls to call directly (`http://h:p@N` DP-aware urls are accepted).
    pub worker_urls: Vec<String>,
    /// A training log holding a `Router launched at HOST:PORT` line.
    pub from_log: Option<PathBuf>,
    /// Only workers of these types (empty: all).
    pub worker_type: Vec<WorkerType>,
    pub backend: Backend,
    /// Seconds one request may take.
    pub timeout: f64,
    /// Seconds a fan-out (start, stop) runs before it says which servers it is waiting for
    /// (default 5; `RANKPROF_NOTICE_AFTER` on the command line).
    pub notice_after: f64,
    /// Sent as `Authorization: Bearer <key>` to the router and every worker.
    pub api_key: Option<ApiKey>,
    /// Certificate authorities trusted for https besides the Mozilla roots (`--ca-cert`).
    pub ca_cert: Option<super::tls::CaCert>,
}

/// An API key. Never shown: its `Debug` prints `ApiKey(***)`, it has no `Display` and no
/// `Serialize`, so it cannot reach a table, a note, an error or JSON by accident.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// `None` for an empty key (an empty `RANKPROF_API_KEY` means no key).
    pub fn new(key: &str) -> Option<ApiKey> {
        let k = key.trim();
        (!k.is_empty()).then(|| ApiKey(k.to_string()))
    }

    /// The `Authorization` header value.
    pub fn bearer(&self) -> String {
        format!("Bearer {}", self.0)
    }
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiKey(***)")
    }
}

impl Default for Targets {
    fn default() -> Self {
        Targets {
            router_url: None,
            worker_urls: Vec::new(),
            from_log: None,
            worker_type: Vec::new(),
            backend: Backend::Auto,
            timeout: 30.0,
            notice_after: 5.0,
            api_key: None,
            ca_cert: None,
        }
    }
}

/// The profiler settings SGLang's `ProfileReqInput` takes (vLLM takes none over HTTP).
#[derive(Debug, Clone, Default)]
pub struct ProfileSettings {
    /// Where the traces go (SGLang: sent, made absolute; vLLM: its `torch_profiler_dir`).
    pub output_dir: Option<PathBuf>,
    /// Put everything under `output_dir/step_N/`.
    pub step: Option<u64>,
    pub start_step: Option<u64>,
    pub num_steps: Option<u64>,
    pub activities: Vec<Activity>,
    pub profile_by_stage: bool,
    pub profile_stages: Vec<String>,
    /// `None`: not sent (the server's default).
    pub with_stack: Option<bool>,
    /// `None`: not sent (the server's default).
    pub record_shapes: Option<bool>,
    pub merge_profiles: bool,
    pub profile_prefix: Option<String>,
}

/// `capture start`.
#[derive(Debug, Clone, Default)]
pub struct StartOptions {
    pub targets: Targets,
    pub profile: ProfileSettings,
    /// Where the session record is also kept, per set of targets (see [`super::record`]).
    pub state_dir: Option<PathBuf>,
}

/// `capture stop`.
#[derive(Debug, Clone)]
pub struct StopOptions {
    pub targets: Targets,
    /// As given to `capture start`: SGLang's later 500 then means "already stopped". Without
    /// it, the session record of `capture start` says (see [`super::record`]).
    pub num_steps: Option<u64>,
    /// Where `capture start --output-dir` wrote its session record.
    pub output_dir: Option<PathBuf>,
    /// Where `capture start` kept its session record per set of targets.
    pub state_dir: Option<PathBuf>,
    /// Seconds a stop request may take (stopping writes the traces).
    pub stop_timeout: f64,
}

impl Default for StopOptions {
    fn default() -> Self {
        StopOptions {
            targets: Targets::default(),
            num_steps: None,
            output_dir: None,
            state_dir: None,
            stop_timeout: 600.0,
        }
    }
}

/// `capture run`: start, load, wait, stop, flush, merge and analyze.
#[derive(Debug, Clone)]
pub struct CaptureOptions {
    pub targets: Targets,
    pub profile: ProfileSettings,
    /// Generation requests sent while profiling (0: none).
    pub requests: u64,
    pub prompt: String,
    pub max_tokens: u64,
    /// Requests in flight (default 32).
    pub concurrency: Option<usize>,
    /// Model name for vLLM's `/v1/completions` (default: the server's first).
    pub model: Option<String>,
    /// Stop after this many seconds.
    pub duration: Option<f64>,
    pub flush_timeout: f64,
    pub settle: f64,
    pub stop_timeout: f64,
    /// Do not merge and analyze the collected traces.
    pub no_merge: bool,
    /// The profiler driven and collected.
    pub profiler: Profiler,
    /// Set (by a Ctrl-C handler) to end the profiling window now: the servers are sent the
    /// stop at once, and the capture ends without waiting for their traces.
    pub interrupt: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
}

impl Default for CaptureOptions {
    fn default() -> Self {
        CaptureOptions {
            targets: Targets::default(),
            profile: ProfileSettings::default(),
            requests: 0,
            prompt: "The quick brown fox jumps over the lazy dog.".into(),
            max_tokens: 32,
            concurrency: None,
            model: None,
            duration: None,
            flush_timeout: 300.0,
            settle: 3.0,
            stop_timeout: 600.0,
            no_merge: false,
            profiler: Profiler::Torch,
            interrupt: None,
        }
    }
}

/// The longest any wait may be (30 days): larger values, including infinity, are cut to it.
pub(crate) const MAX_WAIT: Duration = Duration::from_secs(30 * 24 * 3600);

/// `s` seconds as a [`Duration`]: at least 1 ms (also for 0, negative and NaN), at most
/// [`MAX_WAIT`].
pub(crate) fn seconds(s: f64) -> Duration {
    if s.is_nan() || s <= 0.0 {
        return Duration::from_millis(1);
    }
    Duration::try_from_secs_f64(s)
        .unwrap_or(MAX_WAIT)
        .clamp(Duration::from_millis(1), MAX_WAIT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_are_bounded() {
        assert_eq!(seconds(1.5), Duration::from_millis(1500));
        assert_eq!(seconds(0.0), Duration::from_millis(1));
        assert_eq!(seconds(-3.0), Duration::from_millis(1));
        assert_eq!(seconds(f64::NAN), Duration::from_millis(1));
        assert_eq!(seconds(f64::INFINITY), MAX_WAIT);
        assert_eq!(seconds(1e30), MAX_WAIT);
    }
}
