//! The live-load parsers of `rankprof watch` on arbitrary text: SGLang's `GET /v1/loads`
//! (`load::loads::parse_v1_loads`), the older `GET /get_load` (`parse_get_load`) and the
//! Prometheus `/metrics` page of SGLang or vLLM (`parse_metrics`).
//!
//! Properties: no panic; every value returned is finite (NaN and infinities are "no value");
//! counts (running, waiting, tokens) are never negative from `/get_load`; the ranks come out
//! sorted by DP rank; a `/metrics` page yields at most one entry per DP rank; every `RankLoad`
//! serializes to JSON that parses back (the timeline writes them).
#![no_main]

use libfuzzer_sys::fuzz_target;
use rankprof::load::loads::{parse_get_load, parse_metrics, parse_v1_loads, Metric, RankLoad};

const METRICS: [Metric; 5] = [
    Metric::Running,
    Metric::Waiting,
    Metric::Tokens,
    Metric::TokenUsage,
    Metric::Throughput,
];

fn check(ranks: &[RankLoad], what: &str, text: &str) {
    for w in ranks.windows(2) {
        assert!(w[0].dp <= w[1].dp, "{what}: ranks not sorted from {text:?}");
    }
    for r in ranks {
        for m in METRICS {
            if let Some(v) = r.get(m) {
                assert!(v.is_finite(), "{what}: {} = {v} from {text:?}", m.name());
            }
        }
        let json = serde_json::to_string(r).expect("a RankLoad serializes");
        let back: Result<serde_json::Value, _> = serde_json::from_str(&json);
        assert!(back.is_ok(), "{what}: {json} is not JSON");
    }
}

fuzz_target!(|text: &str| {
    if let Ok(r) = parse_v1_loads(text) {
        check(&r, "v1/loads", text);
    }
    if let Ok(r) = parse_get_load(text) {
        check(&r, "get_load", text);
        for l in &r {
            for m in [Metric::Running, Metric::Waiting, Metric::Tokens] {
                if let Some(v) = l.get(m) {
                    // `running` is num_reqs minus waiting, floored at 0; the others are as sent
                    assert!(m != Metric::Running || v >= 0.0, "get_load running {v} < 0");
                }
            }
        }
    }
    let page = parse_metrics(text);
    check(&page.ranks, "metrics", text);
    let mut dps: Vec<u32> = page.ranks.iter().map(|r| r.dp).collect();
    dps.dedup();
    assert_eq!(
        dps.len(),
        page.ranks.len(),
        "metrics: a DP rank twice from {text:?}"
    );
});
