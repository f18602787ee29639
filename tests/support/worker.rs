//! In-process test servers that speak SGLang's or vLLM's HTTP dialect well enough for the real
//! sglang-router to register them and for `rankprof capture` to profile them: they answer the
//! router's polls, `/generate` and `/v1/completions`, record every request, and write small
//! valid Kineto traces named as the real servers name them when profiling stops. They can be
//! told to be slow, to close the socket, or to answer a fixed status; extra routes can be added
//! ([`TestWorker::set_routes`], e.g. the scripted `/v1/loads` of `support::loads`), and traces
//! can be written on the wall clock ([`Behaviour::wall_clock`]).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use flate2::write::GzEncoder;
use serde_json::{json, Value};

use super::http::{Reply, Request, Server};

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Dialect {
    Sglang,
    Vllm,
}

/// How a worker behaves; change it at any time through [`TestWorker::set`].
#[derive(Clone, Debug)]
pub struct Behaviour {
    /// Sleep this long before answering a profiling route.
    pub delay: Duration,
    /// Close the socket instead of answering a profiling route.
    pub die: bool,
    /// Answer `/start_profile` with this status instead.
    pub start_status: Option<u16>,
    /// Answer `/stop_profile` with this status instead.
    pub stop_status: Option<u16>,
    /// A server whose stop route is `/end_profile` (404 on `/stop_profile`): the fallback.
    pub old_stop_route: bool,
    /// Write the trace files in a background thread, in pieces, over this long after
    /// answering stop (a slow or shared file system).
    pub slow_write: Option<Duration>,
    /// SGLang with `num_steps`: the profiler stops by itself (and writes) this long after start.
    pub steps_take: Duration,
    /// Write traces on the wall clock: `baseTimeNanoseconds` = when profiling started, events
    /// spanning start → stop (default: a fixed clock in 2023).
    pub wall_clock: bool,
    /// The server runs under `nsys profile --capture-range=cudaProfilerApi`: a profile
    /// opened with the CUDA profiler (SGLang's `CUDA_PROFILER` activity; any vLLM profile, as
    /// with `--profiler-config '{"profiler": "cuda"}'`) writes no Kineto trace; when it ends,
    /// nsys writes its report: (the file copied, the report's path).
    pub nsys_report: Option<(PathBuf, PathBuf)>,
}

impl Default for Behaviour {
    fn default() -> Self {
        Behaviour {
            delay: Duration::ZERO,
            die: false,
            start_status: None,
            stop_status: None,
            old_stop_route: false,
            slow_write: None,
            steps_take: Duration::from_millis(150),
            wall_clock: false,
            nsys_report: None,
        }
    }
}

#[derive(Default)]
struct Profiler {
    running: bool,
    output_dir: Option<PathBuf>,
    prefix: Option<String>,
    by_stage: bool,
    generation: u64,
    /// Unix ns when profiling started.
    started_ns: u128,
    /// Started with the CUDA profiler (SGLang's `CUDA_PROFILER` activity).
    cuda_profiler: bool,
}

/// Routes answered before the built-in ones (`None`: not this route).
pub type Routes = Arc<dyn Fn(&Request) -> Option<Reply> + Send + Sync>;

struct Inner {
    dialect: Dialect,
    port: Mutex<u16>,
    tp: u32,
    dp: u32,
    /// Kernel events per rank file.
    kernels: usize,
    /// vLLM's `torch_profiler_dir` (`None`: started without `--profiler-config`).
    vllm_dir: Option<PathBuf>,
    behaviour: Mutex<Behaviour>,
    profiler: Mutex<Profiler>,
    written: Mutex<Vec<PathBuf>>,
    routes: Mutex<Option<Routes>>,
}

pub struct TestWorker {
    pub server: Server,
    inner: Arc<Inner>,
}

fn now_ns() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

/// The wall clock in ns for a file name, never the same twice in this process: two test
/// servers sharing a vLLM directory stop side by side, and a clock read the same nanosecond by
/// both (CI saw it: one server's rank-0 file written over the other's) would make them write
/// one file name. Real servers on one host differ by their `profile_prefix` or their time.
fn stamp_ns() -> u128 {
    static LAST: Mutex<u128> = Mutex::new(0);
    let mut last = LAST.lock().unwrap();
    *last = now_ns().max(*last + 1);
    *last
}

fn model_info() -> Value {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/fixtures/router/sglang_get_model_info.json");
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_json::from_str(&text).unwrap()
}

/// A small valid Kineto trace for one rank: `kernels` kernel events, one ProfilerStep, metadata.
pub fn trace_json(rank: u32, world: u32, kernels: usize) -> Value {
    let mut events = vec![
        json!({"ph":"M","name":"process_name","pid":0,"tid":0,"args":{"name":"python"}}),
        json!({"ph":"X","cat":"user_annotation","name":"ProfilerStep#0","pid":1,"tid":1,"ts":100.0,"dur":10000.0}),
    ];
    for i in 0..kernels {
        events.push(
            json!({"ph":"X","cat":"kernel","name":format!("gemm_kernel_{}", i % 3),
            "pid":0,"tid":7,"ts":200.0 + 20.0 * i as f64,"dur":10.5,
            "args":{"device":0,"stream":7,"correlation":i + 1}}),
        );
    }
    json!({"schemaVersion":1,"deviceProperties":[{"id":0,"name":"Test GPU"}],
           "distributedInfo":{"backend":"nccl","rank":rank,"world_size":world},
           "traceEvents":events,"traceName":"test","displayTimeUnit":"ms",
           "baseTimeNanoseconds":1_700_000_000_000_000_000u64})
}

/// [`trace_json`] on the wall clock: base = `start_ns`, one ProfilerStep from start to `stop_ns`,
/// the kernels spread over it.
pub fn trace_json_wall(
    rank: u32,
    world: u32,
    kernels: usize,
    start_ns: u128,
    stop_ns: u128,
) -> Value {
    let mut v = trace_json(rank, world, kernels);
    let span_us = ((stop_ns.saturating_sub(start_ns)) as f64 / 1e3).max(1000.0);
    if let Some(events) = v["traceEvents"].as_array_mut() {
        let mut k = 0;
        for e in events.iter_mut() {
            if e["cat"] == "user_annotation" {
                e["ts"] = json!(0.0);
                e["dur"] = json!(span_us);
            } else if e["cat"] == "kernel" {
                e["ts"] = json!(span_us * (k as f64 + 0.5) / kernels.max(1) as f64);
                k += 1;
            }
        }
    }
    v["baseTimeNanoseconds"] = json!(start_ns as u64);
    v
}

fn gz(v: &Value) -> Vec<u8> {
    let mut e = GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(v.to_string().as_bytes()).unwrap();
    e.finish().unwrap()
}

impl Inner {
    /// The files this server writes when its profiler stops, with their contents.
    fn trace_files(&self, p: &Profiler) -> Vec<(PathBuf, Vec<u8>)> {
        let port = *self.port.lock().unwrap();
        let ns = stamp_ns();
        let world = self.tp * self.dp;
        let wall = self.behaviour.lock().unwrap().wall_clock;
        let make = |rank: u32| {
            if wall {
                trace_json_wall(rank, world, self.kernels, p.started_ns, ns)
            } else {
                trace_json(rank, world, self.kernels)
            }
        };
        let mut out = Vec::new();
        match self.dialect {
            Dialect::Sglang => {
                let Some(dir) = &p.output_dir else { return out };
                // SGLang's profile id is time.time(); the port keeps servers apart.
                let id = format!("{}.{port}{}", ns / 1_000_000_000, p.generation);
                let stages: &[&str] = if p.by_stage {
                    &["-EXTEND", "-DECODE"]
                } else {
                    &[""]
                };
                for dp in 0..self.dp {
                    for tp in 0..self.tp {
                        for st in stages {
                            let prefix = p
                                .prefix
                                .as_ref()
                                .map(|s| format!("{s}-"))
                                .unwrap_or_default();
                            let dp_part = if self.dp > 1 {
                                format!("-DP-{dp}")
                            } else {
                                String::new()
                            };
                            let name = format!("{prefix}{id}-TP-{tp}{dp_part}{st}.trace.json.gz");
                            out.push((dir.join(name), gz(&make(tp))));
                        }
                    }
                }
            }
            Dialect::Vllm => {
                let Some(dir) = &self.vllm_dir else {
                    return out;
                };
                let prefix = p.prefix.as_ref().map_or(String::new(), |x| format!("{x}_"));
                for r in 0..world {
                    let name =
                        format!("{prefix}dp0_pp0_tp{r}_dcp0_ep0_rank{r}.{ns}.pt.trace.json.gz");
                    out.push((dir.join(name), gz(&make(r))));
                }
            }
        }
        out
    }

    /// Writes the files a stop produces. A slow write is each file on its own thread, as a
    /// real server's rank processes write theirs side by side (one after another, a TP-2
    /// server's second file would appear only after its first is done: a wait for "one new
    /// file per server" could end, on a busy machine, before the second began).
    fn write(self: &Arc<Self>, files: Vec<(PathBuf, Vec<u8>)>, slow: Option<Duration>) {
        let write_one = move |me: Arc<Self>, path: PathBuf, bytes: Vec<u8>| {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            let mut f = std::fs::File::create(&path).unwrap();
            match slow {
                Some(total) => {
                    let pieces = 4;
                    for chunk in bytes.chunks(bytes.len().div_ceil(pieces).max(1)) {
                        f.write_all(chunk).unwrap();
                        f.flush().unwrap();
                        std::thread::sleep(total / pieces as u32);
                    }
                }
                None => f.write_all(&bytes).unwrap(),
            }
            me.written.lock().unwrap().push(path);
        };
        for (path, bytes) in files {
            let me = self.clone();
            if slow.is_some() {
                std::thread::spawn(move || write_one(me, path, bytes));
            } else {
                write_one(me, path, bytes);
            }
        }
    }

    fn stop_profiler(self: &Arc<Self>, slow: Option<Duration>) -> bool {
        let files = {
            let mut p = self.profiler.lock().unwrap();
            if !p.running {
                return false;
            }
            p.running = false;
            let nsys = self.behaviour.lock().unwrap().nsys_report.clone();
            match nsys {
                Some((src, rep)) if p.cuda_profiler || self.dialect == Dialect::Vllm => {
                    vec![(rep, std::fs::read(&src).unwrap())]
                }
                _ => self.trace_files(&p),
            }
        };
        self.write(files, slow);
        true
    }

    /// The profiler stops by itself (SGLang's `num_steps`, vLLM's `max_iterations`) and writes
    /// its traces, [`Behaviour::steps_take`] after the start.
    fn stop_by_itself(self: &Arc<Self>, b: &Behaviour) {
        let me = self.clone();
        let (after, slow) = (b.steps_take, b.slow_write);
        std::thread::spawn(move || {
            std::thread::sleep(after);
            me.stop_profiler(slow);
        });
    }

    fn handle(self: &Arc<Self>, r: &Request) -> Reply {
        let extra = self.routes.lock().unwrap().clone();
        if let Some(reply) = extra.and_then(|f| f(r)) {
            return reply;
        }
        let b = self.behaviour.lock().unwrap().clone();
        let profiling = matches!(
            r.path.as_str(),
            "/start_profile" | "/stop_profile" | "/end_profile"
        );
        if profiling {
            std::thread::sleep(b.delay);
            if b.die {
                return Reply::Close;
            }
        }
        let sgl = self.dialect == Dialect::Sglang;
        match (r.method.as_str(), r.path.as_str()) {
            ("GET", "/health" | "/health_generate") => Reply::text(200, ""),
            ("GET", "/get_model_info" | "/model_info") if sgl => Reply::json(200, &model_info()),
            ("GET", "/get_server_info" | "/server_info") if sgl => {
                Reply::json(200, &json!({"tp_size": self.tp, "dp_size": self.dp, "version": "test"}))
            }
            ("GET", "/get_load") if sgl => Reply::json(
                200,
                &json!((0..self.dp).map(|d| json!({"dp_rank": d, "num_reqs": 0, "num_waiting_reqs": 0, "num_tokens": 0})).collect::<Vec<_>>()),
            ),
            ("GET", "/metrics") => Reply::text(200, "# test\n"),
            ("GET", "/v1/models") => Reply::json(
                200,
                &json!({"object":"list","data":[{"id":"tiny-llama","object":"model","owned_by": if sgl {"sglang"} else {"vllm"}}]}),
            ),
            ("POST", "/generate") if sgl => Reply::json(200, &json!({"text":"ok","meta_info":{"id":"1"}})),
            ("POST", "/v1/completions") => {
                Reply::json(200, &json!({"id":"c","object":"text_completion","choices":[{"index":0,"text":"ok"}]}))
            }
            ("POST", "/start_profile") => {
                if let Some(s) = b.start_status {
                    return Reply::text(s, "forced");
                }
                let body: Value = serde_json::from_str(&r.body).unwrap_or(json!({}));
                if !sgl {
                    if self.vllm_dir.is_none() {
                        return Reply::json(404, &json!({"detail":"Not Found"}));
                    }
                    // vLLM's StartProfileRequest: `max_iterations` stops the profiler by
                    // itself; `profile_prefix` goes in front of the rank suffix.
                    {
                        let mut p = self.profiler.lock().unwrap();
                        p.running = true;
                        p.started_ns = now_ns();
                        p.prefix = body.get("profile_prefix").and_then(Value::as_str).map(str::to_string);
                    }
                    if body.get("max_iterations").and_then(Value::as_u64).is_some() {
                        self.stop_by_itself(&b);
                    }
                    return Reply::text(200, "");
                }
                let num_steps = body.get("num_steps").and_then(Value::as_u64);
                {
                    let mut p = self.profiler.lock().unwrap();
                    if p.running {
                        // RuntimeError("Profiling is already in progress") in SGLang
                        return Reply::text(500, "Internal Server Error");
                    }
                    p.running = true;
                    p.started_ns = now_ns();
                    p.generation += 1;
                    p.output_dir = body.get("output_dir").and_then(Value::as_str).map(PathBuf::from);
                    p.prefix = body.get("profile_prefix").and_then(Value::as_str).map(str::to_string);
                    p.by_stage = body.get("profile_by_stage").and_then(Value::as_bool).unwrap_or(false);
                    p.cuda_profiler = body
                        .get("activities")
                        .and_then(Value::as_array)
                        .is_some_and(|a| a.iter().any(|x| x == "CUDA_PROFILER"));
                }
                if num_steps.is_some() {
                    self.stop_by_itself(&b);
                }
                Reply::text(200, "Start profiling.\n")
            }
            ("POST", "/stop_profile" | "/end_profile") => {
                if sgl && b.old_stop_route == (r.path == "/stop_profile") {
                    return Reply::json(404, &json!({"detail":"Not Found"}));
                }
                if !sgl && (r.path == "/end_profile" || self.vllm_dir.is_none()) {
                    return Reply::json(404, &json!({"detail":"Not Found"}));
                }
                if let Some(s) = b.stop_status {
                    return Reply::text(s, "forced");
                }
                if self.stop_profiler(b.slow_write) {
                    Reply::text(200, if sgl { "Stop profiling. This will take some time.\n" } else { "" })
                } else if sgl {
                    // RuntimeError("Profiling is not in progress. Call /start_profile first.")
                    Reply::text(500, "Internal Server Error")
                } else {
                    Reply::text(200, "")
                }
            }
            _ => Reply::json(404, &json!({"detail":"Not Found"})),
        }
    }
}

impl TestWorker {
    fn start(dialect: Dialect, tp: u32, dp: u32, vllm_dir: Option<PathBuf>) -> TestWorker {
        let inner = Arc::new(Inner {
            dialect,
            port: Mutex::new(0),
            tp,
            dp,
            kernels: 5,
            vllm_dir,
            behaviour: Mutex::new(Behaviour::default()),
            profiler: Mutex::default(),
            written: Mutex::default(),
            routes: Mutex::default(),
        });
        let server = {
            let inner = inner.clone();
            Server::start(move |r| inner.handle(r))
        };
        *inner.port.lock().unwrap() = server.port;
        TestWorker { server, inner }
    }

    pub fn sglang(tp: u32) -> TestWorker {
        Self::start(Dialect::Sglang, tp, 1, None)
    }

    /// A TP×DP SGLang server (one process, `dp_size` reported to the router).
    pub fn sglang_dp(tp: u32, dp: u32) -> TestWorker {
        Self::start(Dialect::Sglang, tp, dp, None)
    }

    /// A vLLM server started with `--profiler-config` pointing at `dir` (`None`: without).
    pub fn vllm(tp: u32, dir: Option<&Path>) -> TestWorker {
        Self::start(Dialect::Vllm, tp, 1, dir.map(Path::to_path_buf))
    }

    pub fn url(&self) -> &str {
        &self.server.url
    }

    pub fn set(&self, f: impl FnOnce(&mut Behaviour)) {
        f(&mut self.inner.behaviour.lock().unwrap());
    }

    /// Kernel events in each rank file this worker writes.
    pub fn kernels_per_file(&self) -> usize {
        self.inner.kernels
    }

    /// Trace files written so far.
    pub fn written(&self) -> Vec<PathBuf> {
        self.inner.written.lock().unwrap().clone()
    }

    pub fn posts(&self, path: &str) -> Vec<Request> {
        self.server.calls("POST", path)
    }

    /// Routes answered before the built-in ones (replacing any set before).
    pub fn set_routes(&self, f: impl Fn(&Request) -> Option<Reply> + Send + Sync + 'static) {
        *self.inner.routes.lock().unwrap() = Some(Arc::new(f));
    }
}
