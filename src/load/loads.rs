//! What one server says about its load, per DP rank, whichever way it says it:
//!
//! | source | server | read |
//! |---|---|---|
//! | `GET /v1/loads` | SGLang ≥ 0.5 | `{"loads":[{"dp_rank","num_running_reqs","num_waiting_reqs","num_used_tokens","token_usage","gen_throughput",…}]}` |
//! | `GET /metrics` | SGLang (`--enable-metrics`) | gauges `sglang:num_running_reqs`, `sglang:num_queue_reqs`, `sglang:num_used_tokens`, `sglang:token_usage`, `sglang:gen_throughput`, label `dp_rank` |
//! | `GET /metrics` | vLLM | gauges `vllm:num_requests_running`, `vllm:num_requests_waiting`, `vllm:kv_cache_usage_perc` (older: `vllm:gpu_cache_usage_perc`), label `engine` (the DP rank); throughput from the counter `vllm:generation_tokens_total` between two polls |
//! | `GET /get_load` | older SGLang | `[{"dp_rank","num_reqs","num_waiting_reqs","num_tokens"}]` (running = `num_reqs` − `num_waiting_reqs`) |
//!
//! Everything becomes [`RankLoad`]s with the five [`Metric`]s (absent ones are `None`). Several
//! series for one DP rank (one per TP rank, per model) are folded by taking the largest.

use std::collections::BTreeMap;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;

use super::prom;

/// A polled figure of one DP rank. Short names are what the JSONL, the counters and the
/// trigger grammar use.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Metric {
    /// Requests in the running batch (`num_running_reqs`).
    Running,
    /// Requests queued (`num_waiting_reqs`).
    Waiting,
    /// KV-cache tokens in use (`num_used_tokens`).
    Tokens,
    /// KV-cache use, 0–1 (`token_usage`).
    TokenUsage,
    /// Generated tokens per second (`gen_throughput`).
    Throughput,
}

impl Metric {
    pub const ALL: [Metric; 5] = [
        Metric::Running,
        Metric::Waiting,
        Metric::Tokens,
        Metric::TokenUsage,
        Metric::Throughput,
    ];

    /// The short name (`running`, `waiting`, `tokens`, `token_usage`, `throughput`).
    pub fn name(self) -> &'static str {
        match self {
            Metric::Running => "running",
            Metric::Waiting => "waiting",
            Metric::Tokens => "tokens",
            Metric::TokenUsage => "token_usage",
            Metric::Throughput => "throughput",
        }
    }

    /// A short name, an alias, or SGLang's field name.
    pub fn from_name(s: &str) -> Option<Metric> {
        Some(match s.to_ascii_lowercase().as_str() {
            "running" | "num_running_reqs" => Metric::Running,
            "waiting" | "queue" | "num_waiting_reqs" | "num_queue_reqs" => Metric::Waiting,
            "tokens" | "num_used_tokens" => Metric::Tokens,
            "token_usage" | "usage" | "kv_usage" => Metric::TokenUsage,
            "throughput" | "gen_throughput" => Metric::Throughput,
            _ => return None,
        })
    }
}

/// One DP rank's load at one poll.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RankLoad {
    pub dp: u32,
    #[serde(serialize_with = "num", skip_serializing_if = "Option::is_none")]
    pub running: Option<f64>,
    #[serde(serialize_with = "num", skip_serializing_if = "Option::is_none")]
    pub waiting: Option<f64>,
    #[serde(serialize_with = "num", skip_serializing_if = "Option::is_none")]
    pub tokens: Option<f64>,
    #[serde(serialize_with = "num", skip_serializing_if = "Option::is_none")]
    pub token_usage: Option<f64>,
    #[serde(serialize_with = "num", skip_serializing_if = "Option::is_none")]
    pub throughput: Option<f64>,
}

/// Whole numbers as JSON integers (`3`, not `3.0`); the rest as floats.
fn num<S: Serializer>(v: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        Some(x) if x.fract() == 0.0 && x.abs() < 9.0e15 => s.serialize_i64(*x as i64),
        Some(x) => s.serialize_f64(*x),
        None => s.serialize_none(),
    }
}

impl RankLoad {
    pub fn get(&self, m: Metric) -> Option<f64> {
        match m {
            Metric::Running => self.running,
            Metric::Waiting => self.waiting,
            Metric::Tokens => self.tokens,
            Metric::TokenUsage => self.token_usage,
            Metric::Throughput => self.throughput,
        }
    }

    fn slot(&mut self, m: Metric) -> &mut Option<f64> {
        match m {
            Metric::Running => &mut self.running,
            Metric::Waiting => &mut self.waiting,
            Metric::Tokens => &mut self.tokens,
            Metric::TokenUsage => &mut self.token_usage,
            Metric::Throughput => &mut self.throughput,
        }
    }

    /// Sets `m`, keeping the larger value when it is already set (several series per rank).
    /// NaN and infinities are "no value".
    pub fn fold(&mut self, m: Metric, v: f64) {
        if !v.is_finite() {
            return;
        }
        let slot = self.slot(m);
        *slot = Some(slot.map_or(v, |old| old.max(v)));
    }
}

fn field(v: &Value, keys: &[&str]) -> Option<f64> {
    keys.iter().find_map(|k| v.get(*k).and_then(Value::as_f64))
}

fn dp_of(v: &Value, i: usize) -> u32 {
    v.get("dp_rank")
        .and_then(Value::as_u64)
        .and_then(|d| u32::try_from(d).ok())
        .unwrap_or(i as u32)
}

fn list(body: &str, key: &str) -> Result<Vec<Value>> {
    let v: Value = serde_json::from_str(body).context("the answer is not JSON")?;
    match v {
        Value::Array(a) => Ok(a),
        Value::Object(mut m) => match m.remove(key) {
            Some(Value::Array(a)) => Ok(a),
            _ => bail!("no `{key}` list in the answer"),
        },
        _ => bail!("unexpected answer"),
    }
}

/// SGLang's `GET /v1/loads` answer (`{"loads":[…]}`, or a bare list).
pub fn parse_v1_loads(body: &str) -> Result<Vec<RankLoad>> {
    let items = list(body, "loads")?;
    let mut out: Vec<RankLoad> = items
        .iter()
        .enumerate()
        .filter(|(_, v)| v.is_object())
        .map(|(i, v)| RankLoad {
            dp: dp_of(v, i),
            running: field(v, &["num_running_reqs"]),
            waiting: field(v, &["num_waiting_reqs", "num_queue_reqs"]),
            tokens: field(v, &["num_used_tokens"]),
            token_usage: field(v, &["token_usage"]),
            throughput: field(v, &["gen_throughput"]),
        })
        .collect();
    if out.is_empty() && !items.is_empty() {
        bail!("no load entries in the answer");
    }
    out.sort_by_key(|r| r.dp);
    Ok(out)
}

/// Older SGLang's `GET /get_load` answer: `[{"dp_rank","num_reqs","num_waiting_reqs","num_tokens"}]`.
pub fn parse_get_load(body: &str) -> Result<Vec<RankLoad>> {
    let items = list(body, "loads")?;
    let mut out: Vec<RankLoad> = items
        .iter()
        .enumerate()
        .filter(|(_, v)| v.is_object())
        .map(|(i, v)| {
            let waiting = field(v, &["num_waiting_reqs"]);
            RankLoad {
                dp: dp_of(v, i),
                running: field(v, &["num_reqs"]).map(|n| (n - waiting.unwrap_or(0.0)).max(0.0)),
                waiting,
                tokens: field(v, &["num_tokens"]),
                ..RankLoad::default()
            }
        })
        .collect();
    out.sort_by_key(|r| r.dp);
    Ok(out)
}

/// The Prometheus gauges read, by server: (metric name, what it is).
const SGLANG_GAUGES: [(&str, Metric); 5] = [
    ("sglang:num_running_reqs", Metric::Running),
    ("sglang:num_queue_reqs", Metric::Waiting),
    ("sglang:num_used_tokens", Metric::Tokens),
    ("sglang:token_usage", Metric::TokenUsage),
    ("sglang:gen_throughput", Metric::Throughput),
];
const VLLM_GAUGES: [(&str, Metric); 4] = [
    ("vllm:num_requests_running", Metric::Running),
    ("vllm:num_requests_waiting", Metric::Waiting),
    ("vllm:kv_cache_usage_perc", Metric::TokenUsage),
    ("vllm:gpu_cache_usage_perc", Metric::TokenUsage),
];
/// vLLM's generated-token counter: throughput is its rate between two polls.
pub(crate) const VLLM_GEN_TOKENS: &str = "vllm:generation_tokens_total";

/// What a `/metrics` page gave.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FromMetrics {
    pub ranks: Vec<RankLoad>,
    /// vLLM's `generation_tokens_total` per DP rank (for a rate across polls).
    pub gen_tokens: BTreeMap<u32, f64>,
    /// `sglang` or `vllm`: whose gauges were found.
    pub server: Option<&'static str>,
    pub bad_lines: usize,
}

/// Reads the load gauges of a `/metrics` page (SGLang's or vLLM's). `ranks` is empty when the
/// page has none of them (metrics of something else, or SGLang without `--enable-metrics`).
pub fn parse_metrics(text: &str) -> FromMetrics {
    let gauge = |name: &str| -> Option<(Metric, &'static str)> {
        if let Some((_, m)) = SGLANG_GAUGES.iter().find(|(n, _)| *n == name) {
            return Some((*m, "sglang"));
        }
        VLLM_GAUGES
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, m)| (*m, "vllm"))
    };
    let page = prom::parse(text, |n| gauge(n).is_some() || n == VLLM_GEN_TOKENS);
    let mut by_dp: BTreeMap<u32, RankLoad> = BTreeMap::new();
    let mut out = FromMetrics {
        bad_lines: page.bad_lines,
        ..FromMetrics::default()
    };
    for s in &page.samples {
        let dp = s
            .label("dp_rank")
            .or_else(|| s.label("engine"))
            .and_then(|d| d.parse::<u32>().ok())
            .unwrap_or(0);
        if s.name == VLLM_GEN_TOKENS {
            if s.value.is_finite() {
                *out.gen_tokens.entry(dp).or_default() += s.value;
            }
            continue;
        }
        if let Some((m, server)) = gauge(&s.name) {
            out.server = Some(server);
            by_dp
                .entry(dp)
                .or_insert_with(|| RankLoad {
                    dp,
                    ..RankLoad::default()
                })
                .fold(m, s.value);
        }
    }
    out.ranks = by_dp.into_values().collect();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_tp2dp2_v1_loads_answer() {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../shared/fixtures/router/sglang_tp2dp2_v1_loads.json");
        let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        let r = parse_v1_loads(&text).unwrap();
        assert_eq!(r.len(), 2);
        assert_eq!(r[0].dp, 0);
        assert_eq!(r[1].dp, 1);
        for x in &r {
            assert_eq!(x.running, Some(0.0));
            assert_eq!(x.waiting, Some(0.0));
            assert_eq!(x.tokens, Some(0.0));
            assert_eq!(x.token_usage, Some(0.0));
            assert_eq!(x.throughput, Some(0.0));
        }
        assert_eq!(
            serde_json::to_string(&r[1]).unwrap(),
            r#"{"dp":1,"running":0,"waiting":0,"tokens":0,"token_usage":0,"throughput":0}"#
        );
    }

    #[test]
    fn v1_loads_shapes_and_errors() {
        let r = parse_v1_loads(
            r#"[{"dp_rank":1,"num_running_reqs":3,"num_waiting_reqs":9,"token_usage":0.5},
                {"dp_rank":0,"num_running_reqs":2}]"#,
        )
        .unwrap();
        assert_eq!(r[0].dp, 0);
        assert_eq!(r[1].waiting, Some(9.0));
        assert_eq!(r[0].waiting, None);
        assert!(parse_v1_loads("<html>").is_err());
        assert!(parse_v1_loads(r#"{"detail":"Not Found"}"#).is_err());
        assert!(parse_v1_loads(r#"{"loads":[1,2]}"#).is_err());
        assert!(parse_v1_loads(r#"{"loads":[]}"#).unwrap().is_empty());
    }

    #[test]
    fn legacy_get_load() {
        let r = parse_get_load(
            r#"[{"dp_rank":0,"num_reqs":5,"num_waiting_reqs":2,"num_tokens":100},
                {"dp_rank":1,"num_reqs":1,"num_waiting_reqs":3,"num_tokens":7}]"#,
        )
        .unwrap();
        assert_eq!(r[0].running, Some(3.0));
        assert_eq!(r[1].running, Some(0.0));
        assert_eq!(r[1].tokens, Some(7.0));
    }

    #[test]
    fn sglang_metrics_by_dp_rank_largest_tp_series_wins() {
        let text = concat!(
            "# HELP sglang:num_running_reqs The number of running requests.\n",
            "# TYPE sglang:num_running_reqs gauge\n",
            "sglang:num_running_reqs{dp_rank=\"0\",model_name=\"m\",tp_rank=\"0\"} 4.0\n",
            "sglang:num_running_reqs{dp_rank=\"0\",model_name=\"m\",tp_rank=\"1\"} 5.0\n",
            "sglang:num_running_reqs{dp_rank=\"1\",model_name=\"m\",tp_rank=\"0\"} 1.0\n",
            "sglang:num_queue_reqs{dp_rank=\"1\",model_name=\"m\",tp_rank=\"0\"} 30.0\n",
            "sglang:token_usage{dp_rank=\"1\",model_name=\"m\",tp_rank=\"0\"} 0.75\n",
            "sglang:gen_throughput{dp_rank=\"1\",model_name=\"m\",tp_rank=\"0\"} NaN\n",
            "sglang:num_used_tokens{dp_rank=\"0\",model_name=\"m\",tp_rank=\"0\"} 1024\n",
            "sglang:cache_hit_rate{dp_rank=\"0\"} 0.5\n",
        );
        let m = parse_metrics(text);
        assert_eq!(m.server, Some("sglang"));
        assert_eq!(m.ranks.len(), 2);
        assert_eq!(m.ranks[0].running, Some(5.0));
        assert_eq!(m.ranks[0].tokens, Some(1024.0));
        assert_eq!(m.ranks[1].waiting, Some(30.0));
        assert_eq!(m.ranks[1].token_usage, Some(0.75));
        assert_eq!(m.ranks[1].throughput, None, "NaN is no value");
    }

    #[test]
    fn vllm_metrics_engine_label_is_the_dp_rank() {
        let text = concat!(
            "# HELP vllm:num_requests_running Number of requests in model execution batches.\n",
            "# TYPE vllm:num_requests_running gauge\n",
            "vllm:num_requests_running{engine=\"0\",model_name=\"tiny\"} 8.0\n",
            "vllm:num_requests_running{engine=\"1\",model_name=\"tiny\"} 2.0\n",
            "vllm:num_requests_waiting{engine=\"1\",model_name=\"tiny\"} 17.0\n",
            "vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"tiny\"} 0.25\n",
            "vllm:generation_tokens_total{engine=\"0\",model_name=\"tiny\"} 1234.0\n",
            "vllm:generation_tokens_created{engine=\"0\",model_name=\"tiny\"} 1.7e9\n",
            "vllm:e2e_request_latency_seconds_bucket{engine=\"0\",le=\"+Inf\",model_name=\"tiny\"} 3.0\n",
        );
        let m = parse_metrics(text);
        assert_eq!(m.server, Some("vllm"));
        assert_eq!(m.ranks.len(), 2);
        assert_eq!(m.ranks[0].running, Some(8.0));
        assert_eq!(m.ranks[0].token_usage, Some(0.25));
        assert_eq!(m.ranks[1].waiting, Some(17.0));
        assert_eq!(m.gen_tokens.get(&0), Some(&1234.0));
        assert_eq!(m.bad_lines, 0);
    }

    #[test]
    fn a_page_without_load_gauges_has_no_ranks() {
        let m = parse_metrics("# test\nprocess_cpu_seconds_total 3\n");
        assert!(m.ranks.is_empty());
        assert_eq!(m.server, None);
    }

    #[test]
    fn metric_names_and_aliases() {
        for m in Metric::ALL {
            assert_eq!(Metric::from_name(m.name()), Some(m));
        }
        assert_eq!(Metric::from_name("num_waiting_reqs"), Some(Metric::Waiting));
        assert_eq!(Metric::from_name("Usage"), Some(Metric::TokenUsage));
        assert_eq!(Metric::from_name("latency"), None);
    }
}
