//! Scripted load for the in-process test workers: `GET /v1/loads` (the real SGLang answer's
//! shape, from `shared/fixtures/router/sglang_tp2dp2_v1_loads.json`), SGLang's or vLLM's
//! Prometheus `/metrics`, or only the old `/get_load`, with every DP rank balanced until a
//! scripted drift makes one rank's queue jump and grow. The load route can also be told to hang
//! or to close the socket, as a dying server does.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

use super::http::{Reply, Request};
use super::worker::TestWorker;

/// How the worker tells its load.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Mode {
    /// SGLang ≥ 0.5: `GET /v1/loads`.
    V1Loads,
    /// SGLang without `/v1/loads`: Prometheus gauges `sglang:*` with `dp_rank` labels.
    SglangMetrics,
    /// vLLM: Prometheus gauges `vllm:*` with `engine` labels, and the generated-token counter.
    VllmMetrics,
    /// Old SGLang: only `GET /get_load` (the worker's built-in answer).
    GetLoadOnly,
}

/// A drift: from `at_ns` (Unix ns) on, rank `rank` has `jump` more waiting requests, growing
/// by `per_sec`.
#[derive(Copy, Clone, Debug)]
pub struct Drift {
    pub at_ns: i64,
    pub rank: u32,
    pub jump: f64,
    pub per_sec: f64,
}

#[derive(Clone, Debug, Default)]
struct State {
    drift: Option<Drift>,
    /// Sleep this long before answering the load route.
    hang: Duration,
    /// Close the socket instead of answering the load route.
    die: bool,
}

/// The load of one test worker; change it at any time.
pub struct Loads {
    pub dp: u32,
    pub mode: Mode,
    state: Mutex<State>,
    /// Load requests answered (or closed).
    pub polls: AtomicU64,
}

pub fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i64
}

fn fixture_entry() -> Value {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/fixtures/router/sglang_tp2dp2_v1_loads.json");
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let v: Value = serde_json::from_str(&text).unwrap();
    v["loads"][0].clone()
}

impl Loads {
    /// Serves the load of `w` (its DP size `dp`) in `mode`.
    pub fn attach(w: &TestWorker, dp: u32, mode: Mode) -> Arc<Loads> {
        let l = Arc::new(Loads {
            dp,
            mode,
            state: Mutex::default(),
            polls: AtomicU64::new(0),
        });
        let me = l.clone();
        let template = fixture_entry();
        w.set_routes(move |r| me.route(r, &template));
        l
    }

    /// Starts a drift `after` from now; returns when it starts (Unix ns).
    pub fn drift_in(&self, after: Duration, rank: u32, jump: f64, per_sec: f64) -> i64 {
        let at_ns = now_ns() + after.as_nanos() as i64;
        self.state.lock().unwrap().drift = Some(Drift {
            at_ns,
            rank,
            jump,
            per_sec,
        });
        at_ns
    }

    pub fn hang(&self, d: Duration) {
        self.state.lock().unwrap().hang = d;
    }

    pub fn die(&self, yes: bool) {
        self.state.lock().unwrap().die = yes;
    }

    /// (running, waiting, used tokens, token usage, throughput) of rank `dp` at `t_ns`.
    pub fn figures(&self, dp: u32, t_ns: i64) -> (f64, f64, f64, f64, f64) {
        let (running, mut waiting, tokens, usage, tput) = (8.0, 2.0, 1024.0, 0.25, 500.0);
        if let Some(d) = self.state.lock().unwrap().drift {
            if d.rank == dp && t_ns >= d.at_ns {
                waiting += d.jump + d.per_sec * (t_ns - d.at_ns) as f64 / 1e9;
            }
        }
        (running, waiting.floor(), tokens, usage, tput)
    }

    fn route(&self, r: &Request, template: &Value) -> Option<Reply> {
        let ours = match (self.mode, r.path.as_str()) {
            (Mode::V1Loads, "/v1/loads") => true,
            (Mode::SglangMetrics | Mode::VllmMetrics, "/metrics") => true,
            (Mode::GetLoadOnly, "/get_load") => true,
            (_, "/v1/loads") => return Some(Reply::json(404, &json!({"detail": "Not Found"}))),
            _ => false,
        };
        if !ours {
            return None;
        }
        self.polls.fetch_add(1, Ordering::SeqCst);
        let st = self.state.lock().unwrap().clone();
        std::thread::sleep(st.hang);
        if st.die {
            return Some(Reply::Close);
        }
        let t = now_ns();
        Some(match self.mode {
            Mode::V1Loads => Reply::json(200, &self.v1_loads(template, t)),
            Mode::SglangMetrics => Reply::text(200, &self.sglang_metrics(t)),
            Mode::VllmMetrics => Reply::text(200, &self.vllm_metrics(t)),
            Mode::GetLoadOnly => Reply::json(200, &self.get_load(t)),
        })
    }

    fn v1_loads(&self, template: &Value, t: i64) -> Value {
        let loads: Vec<Value> = (0..self.dp)
            .map(|d| {
                let (run, wait, tok, usage, tput) = self.figures(d, t);
                let mut e = template.clone();
                e["dp_rank"] = json!(d);
                e["timestamp"] = json!(t as f64 / 1e9);
                e["num_running_reqs"] = json!(run as u64);
                e["num_waiting_reqs"] = json!(wait as u64);
                e["queues"]["waiting"] = json!(wait as u64);
                e["num_used_tokens"] = json!(tok as u64);
                e["token_usage"] = json!(usage);
                e["gen_throughput"] = json!(tput);
                e
            })
            .collect();
        json!({"timestamp": "2026-11-20T22:19:45.520965+00:00", "version": "0.5.23",
               "accelerator": null, "num_accelerators": self.dp, "loads": loads})
    }

    fn get_load(&self, t: i64) -> Value {
        json!((0..self.dp)
            .map(|d| {
                let (run, wait, tok, _, _) = self.figures(d, t);
                json!({"dp_rank": d, "num_reqs": run + wait, "num_waiting_reqs": wait, "num_tokens": tok})
            })
            .collect::<Vec<_>>())
    }

    fn sglang_metrics(&self, t: i64) -> String {
        let mut s = String::from(
            "# HELP sglang:num_running_reqs The number of running requests.\n# TYPE sglang:num_running_reqs gauge\n",
        );
        for d in 0..self.dp {
            let (run, wait, tok, usage, tput) = self.figures(d, t);
            let l = format!(
                "dp_rank=\"{d}\",engine_type=\"unified\",model_name=\"tiny \\\"llama\\\"\",pp_rank=\"0\",tp_rank=\"0\""
            );
            s += &format!("sglang:num_running_reqs{{{l}}} {run:.1}\n");
            s += &format!("sglang:num_queue_reqs{{{l}}} {wait:.1}\n");
            s += &format!("sglang:num_used_tokens{{{l}}} {tok:.1}\n");
            s += &format!("sglang:token_usage{{{l}}} {usage}\n");
            s += &format!("sglang:gen_throughput{{{l}}} {tput:.1}\n");
            s += &format!("sglang:cache_hit_rate{{{l}}} NaN\n");
        }
        s += "# EOF\n";
        s
    }

    fn vllm_metrics(&self, t: i64) -> String {
        let mut s = String::from(
            "# HELP vllm:num_requests_running Number of requests in model execution batches.\n# TYPE vllm:num_requests_running gauge\n",
        );
        for d in 0..self.dp {
            let (run, wait, _, usage, tput) = self.figures(d, t);
            let l = format!("engine=\"{d}\",model_name=\"tiny-llama\"");
            s += &format!("vllm:num_requests_running{{{l}}} {run:.1}\n");
            s += &format!("vllm:num_requests_waiting{{{l}}} {wait:.1}\n");
            s += &format!("vllm:kv_cache_usage_perc{{{l}}} {usage}\n");
            // a counter growing at `tput` tokens per second
            s += &format!(
                "vllm:generation_tokens_total{{{l}}} {:.1}\n",
                tput * (t as f64 / 1e9 - 1.79e9)
            );
            s += &format!("vllm:e2e_request_latency_seconds_bucket{{{l},le=\"+Inf\"}} 3.0\n");
        }
        s
    }
}
