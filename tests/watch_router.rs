//! `rankprof watch --router-url` against the real `sglang-router` (PyPI) started `--dp-aware`
//! in front of in-process SGLang test workers (tests/support/worker.rs, loads from
//! tests/support/loads.rs): workers found through the router (one per server, its DP ranks
//! polled from `/v1/loads`), a drift on one server's DP1 fires the trigger within one hold
//! period, a worker whose load route dies is reported while the others go on, and every merged
//! trace (one per server) holds the load tracks of every DP rank that answered. Skips loudly
//! when the router is not installed.

mod support;

use std::io::Read;
use std::path::Path;
use std::time::Duration;

use rankprof::watch::{self, Event};
use serde_json::Value;

use support::loads::{Loads, Mode};
use support::router::Router;
use support::watch_args;
use support::worker::TestWorker;

fn read_gz_json(p: &Path) -> Value {
    let mut s = String::new();
    flate2::read::MultiGzDecoder::new(std::fs::File::open(p).unwrap())
        .read_to_string(&mut s)
        .unwrap();
    serde_json::from_str(&s).unwrap()
}

#[test]
fn dp_aware_router_drift_on_one_server_and_a_dying_one() {
    let py = router_or_skip!();
    let a = TestWorker::sglang_dp(1, 2);
    let b = TestWorker::sglang_dp(1, 2);
    let c = TestWorker::sglang_dp(1, 1);
    for w in [&a, &b, &c] {
        w.set(|x| x.wall_clock = true);
    }
    Loads::attach(&a, 2, Mode::V1Loads);
    let lb = Loads::attach(&b, 2, Mode::V1Loads);
    let lc = Loads::attach(&c, 1, Mode::V1Loads);
    let router = Router::launch(
        &py,
        &[
            "--dp-aware".into(),
            "--worker-urls".into(),
            a.url().into(),
            b.url().into(),
            c.url().into(),
        ],
        5,
    );
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().to_str().unwrap().to_string();
    let drift_ns = lb.drift_in(Duration::from_millis(1500), 1, 30.0, 5.0);
    let opts = rankprof::commands::watch::options(&watch_args(&[
        "--router-url",
        &router.url,
        "--interval",
        "0.2",
        "--trigger",
        "waiting max/mean > 2 for 1s",
        "--output-dir",
        &dir,
        "--capture-duration",
        "1.5",
        "--settle",
        "0.3",
        "--flush-timeout",
        "20",
        "--duration",
        "40",
        "--max-polls",
        "300",
    ]))
    .unwrap();
    let mut polls: Vec<Value> = Vec::new();
    let mut found = Vec::new();
    let o = watch::watch(&opts, &mut |e| match e {
        Event::Started { workers, .. } => {
            found = workers
                .iter()
                .map(|w| (w.url.clone(), w.dp_ranks.clone()))
                .collect();
        }
        Event::Poll { line, .. } => {
            let v: Value = serde_json::from_str(line).unwrap();
            if v["seq"] == 2 {
                lc.die(true);
            }
            polls.push(v);
        }
        _ => {}
    })
    .unwrap();
    // the router lists 5 DP workers: 3 servers
    found.sort();
    let mut want = vec![
        (a.url().to_string(), vec![0, 1]),
        (b.url().to_string(), vec![0, 1]),
        (c.url().to_string(), vec![0]),
    ];
    want.sort();
    assert_eq!(found, want);
    assert_eq!(o.outcome.code(), 0, "{:#?}", o.captures);
    assert_eq!(o.captures.len(), 1);
    let f = &o.fired[0];
    assert!(
        f.t_ns.get() - f.held_ns.get() >= drift_ns - 100_000_000,
        "fired before the drift"
    );
    let after = (f.t_ns.get() - drift_ns) as f64 / 1e9;
    assert!(
        (0.9..=1.0 + 0.4 + 0.5).contains(&after),
        "fired {after:.2} s after the drift"
    );
    // the dying worker is reported; the others go on
    for p in &polls {
        let st = |u: &str| {
            p["workers"]
                .as_array()
                .unwrap()
                .iter()
                .find(|w| w["url"] == u)
                .unwrap()["status"]
                .as_str()
                .unwrap()
                .to_string()
        };
        assert_eq!(st(a.url()), "ok");
        assert_eq!(st(b.url()), "ok");
        if p["seq"].as_u64().unwrap() >= 3 {
            assert_eq!(st(c.url()), "dead", "{p}");
        }
    }
    // every server profiled once; one merged trace each, with the load tracks
    for w in [&a, &b, &c] {
        assert_eq!(w.posts("/start_profile").len(), 1, "{}", w.url());
    }
    let merged: Vec<_> = std::fs::read_dir(out.path())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("merged-")
        })
        .collect();
    assert_eq!(merged.len(), 3, "{merged:?}");
    let host = |w: &TestWorker| w.url().trim_start_matches("http://").to_string();
    let want_tracks: Vec<String> = [(&a, 0), (&a, 1), (&b, 0), (&b, 1)]
        .iter()
        .map(|(w, d)| format!("[watch] {} DP{d:02}", host(w)))
        .collect();
    for m in &merged {
        let v = read_gz_json(m);
        let base = v["baseTimeNanoseconds"].as_i64().unwrap();
        let mut tracks = std::collections::BTreeMap::<String, usize>::new();
        let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
        for e in v["traceEvents"].as_array().unwrap() {
            let pid = e["pid"].as_str().unwrap_or("");
            if pid.starts_with("[watch]") {
                if e["ph"] == "C" {
                    *tracks.entry(pid.to_string()).or_default() += 1;
                }
            } else if let Some(ts) = e["ts"].as_f64() {
                lo = lo.min(ts);
                hi = hi.max(ts + e["dur"].as_f64().unwrap_or(0.0));
            }
        }
        let (lo, hi) = (base + (lo * 1e3) as i64, base + (hi * 1e3) as i64);
        let n = polls
            .iter()
            .filter(|p| (lo..=hi).contains(&p["t_ns"].as_i64().unwrap()))
            .count();
        assert!(n >= 5, "{n} polls in {}", m.display());
        let mut want_sorted = want_tracks.clone();
        want_sorted.sort();
        assert_eq!(
            tracks.keys().cloned().collect::<Vec<_>>(),
            want_sorted,
            "{}",
            m.display()
        );
        assert!(tracks.values().all(|&k| k == n), "{tracks:?} vs {n} polls");
    }
}
