//! `rankprof watch` against in-process test workers called directly (`--worker-url`): a
//! scripted drift fires the trigger within one hold period and never before, the capture runs
//! while polling goes on, the timeline holds every poll, and the merged trace holds one load
//! counter track per DP rank with one sample per poll in its time span; a worker that hangs or
//! dies mid-watch is reported and the others go on; `/metrics` and `/get_load` fallbacks; the
//! command's JSON lines and exit codes. Every loop is bounded by `--max-polls` / `--duration`.

mod support;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rankprof::watch::{self, Event, WatchOutcome};
use serde_json::Value;

use support::http::dead_port;
use support::loads::{Loads, Mode};
use support::watch_args;
use support::worker::TestWorker;

/// Runs the watch in-process; returns the outcome and the JSON lines of its events.
fn run_watch(args: &[&str], mut each: impl FnMut(&Value)) -> (WatchOutcome, Vec<Value>) {
    let opts = rankprof::commands::watch::options(&watch_args(args)).expect("options");
    let mut lines = Vec::new();
    let o = watch::watch(&opts, &mut |e| {
        let line = match e {
            Event::Started { line, .. }
            | Event::Poll { line, .. }
            | Event::Fired { line, .. }
            | Event::CaptureDone { line, .. }
            | Event::Ended { line, .. } => line,
            Event::Waiting { .. } => return,
        };
        let v: Value = serde_json::from_str(line).expect("a JSON line");
        each(&v);
        lines.push(v);
    })
    .expect("watch");
    (o, lines)
}

fn timeline_lines(p: &Path) -> Vec<Value> {
    std::fs::read_to_string(p)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn merged_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
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
    v.sort();
    v
}

fn read_gz_json(p: &Path) -> Value {
    let mut s = String::new();
    flate2::read::MultiGzDecoder::new(std::fs::File::open(p).unwrap())
        .read_to_string(&mut s)
        .unwrap();
    serde_json::from_str(&s).unwrap()
}

/// The merged trace's load counters per track, and its time span (Unix ns) without them.
fn counters_and_span(merged: &Value) -> (std::collections::BTreeMap<String, usize>, i64, i64) {
    let base = merged["baseTimeNanoseconds"].as_i64().expect("a base");
    let mut tracks = std::collections::BTreeMap::new();
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for e in merged["traceEvents"].as_array().unwrap() {
        let pid = e["pid"].as_str().unwrap_or("");
        if pid.starts_with("[watch]") {
            if e["ph"] == "C" {
                assert_eq!(e["name"], "load");
                assert!(e["args"]["waiting"].is_number() && e["args"]["running"].is_number());
                *tracks.entry(pid.to_string()).or_insert(0) += 1;
            }
            continue;
        }
        if let Some(ts) = e["ts"].as_f64() {
            lo = lo.min(ts);
            hi = hi.max(ts + e["dur"].as_f64().unwrap_or(0.0));
        }
    }
    (tracks, base + (lo * 1e3) as i64, base + (hi * 1e3) as i64)
}

#[test]
fn drift_fires_the_trigger_once_and_the_capture_carries_the_load() {
    let w = TestWorker::sglang_dp(1, 2);
    w.set(|b| b.wall_clock = true);
    let loads = Loads::attach(&w, 2, Mode::V1Loads);
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().to_str().unwrap().to_string();
    let hold_s = 1.0;
    let interval_s = 0.2;
    // balanced for 1.5 s, then DP1's queue jumps by 30 and grows
    let drift_ns = loads.drift_in(Duration::from_millis(1500), 1, 30.0, 10.0);
    let t0 = Instant::now();
    let (o, lines) = run_watch(
        &[
            "--worker-url",
            w.url(),
            "--backend",
            "sglang",
            "--interval",
            "0.2",
            "--trigger",
            "running max/mean > 3",
            "--trigger",
            "waiting spread > 16 for 1s",
            "--output-dir",
            &dir,
            "--capture-duration",
            "1.5",
            "--settle",
            "0.3",
            "--flush-timeout",
            "20",
            "--cooldown",
            "0",
            "--duration",
            "40",
            "--max-polls",
            "300",
        ],
        |_| {},
    );
    assert!(t0.elapsed() < Duration::from_secs(30), "{:?}", t0.elapsed());
    assert_eq!(o.outcome.code(), 0, "{:#?}", o.captures);
    assert_eq!(o.end_reason, "max-captures");
    assert_eq!(o.captures.len(), 1);
    let f = &o.fired[0];
    assert_eq!(f.trigger, "waiting spread > 16 for 1s");
    // never before the drift (100 ms for the request's way), within one hold period (and a
    // poll or two) after it
    let since = f.t_ns.get() - f.held_ns.get();
    assert!(
        since >= drift_ns - 100_000_000,
        "held since {} ms before the drift",
        (drift_ns - since) / 1_000_000
    );
    let after = (f.t_ns.get() - drift_ns) as f64 / 1e9;
    assert!(after >= hold_s - 0.1, "fired {after:.2} s after the drift");
    assert!(
        after <= hold_s + 2.0 * interval_s + 0.5,
        "fired {after:.2} s after the drift"
    );

    // the capture: started once, stopped once, merged and analyzed
    assert_eq!(w.posts("/start_profile").len(), 1);
    assert_eq!(w.posts("/stop_profile").len(), 1);
    let rec = &o.captures[0];
    let outcome = rec.outcome.as_ref().expect("capture ran");
    assert_eq!(outcome.outcome.code(), 0, "{outcome:#?}");
    let post = outcome.post.as_ref().expect("merged");
    assert_eq!(post.merged.len(), 1);
    for run in &post.runs {
        let a = run.analysis.as_ref().unwrap().as_ref().unwrap();
        let labels: Vec<&str> = a.ranks.iter().map(|r| r.figures.rank.as_str()).collect();
        assert!(!labels.iter().any(|l| l.contains("watch")), "{labels:?}");
        assert_eq!(labels.len(), 2, "{labels:?}");
    }

    // the timeline: every poll, streamed, with the trigger and the capture
    let tl = o.timeline.clone().expect("a timeline");
    assert_eq!(tl.parent().unwrap(), out.path());
    let tlines = timeline_lines(&tl);
    let polls: Vec<&Value> = tlines.iter().filter(|l| l["kind"] == "poll").collect();
    assert_eq!(polls.len() as u64, o.polls);
    assert_eq!(tlines[0]["kind"], "watch");
    assert_eq!(tlines.last().unwrap()["kind"], "end");
    assert_eq!(tlines.iter().filter(|l| l["kind"] == "trigger").count(), 1);
    assert_eq!(tlines.iter().filter(|l| l["kind"] == "capture").count(), 2);
    for (i, p) in polls.iter().enumerate() {
        assert_eq!(p["seq"], i as u64);
        assert_eq!(p["workers"][0]["status"], "ok", "{p}");
        assert_eq!(p["workers"][0]["source"], "/v1/loads");
        assert_eq!(p["workers"][0]["ranks"].as_array().unwrap().len(), 2);
    }
    // the same lines were reported as events
    assert_eq!(
        lines.iter().filter(|l| l["kind"] == "poll").count(),
        polls.len()
    );
    // polling went on during the capture
    let (cs, ce) = (rec.started_ns.get(), rec.ended_ns.get());
    let during = polls
        .iter()
        .filter(|p| (cs..ce).contains(&p["t_ns"].as_i64().unwrap()))
        .count();
    assert!(during >= 5, "{during} polls during the capture");

    // the merged trace: one load track per DP rank, one sample per poll in its span
    let merged = merged_files(out.path());
    assert_eq!(merged.len(), 1, "{merged:?}");
    let (tracks, lo, hi) = counters_and_span(&read_gz_json(&merged[0]));
    let in_span = polls
        .iter()
        .filter(|p| (lo..=hi).contains(&p["t_ns"].as_i64().unwrap()))
        .count();
    assert!(in_span >= 5, "{in_span} polls in the trace's span");
    let want: std::collections::BTreeMap<String, usize> = [
        ("[watch] DP00".to_string(), in_span),
        ("[watch] DP01".to_string(), in_span),
    ]
    .into();
    assert_eq!(tracks, want);
}

#[test]
fn a_hung_and_a_dying_worker_are_reported_and_the_loop_keeps_time() {
    let good = TestWorker::sglang_dp(1, 2);
    let hung = TestWorker::sglang(1);
    let dying = TestWorker::sglang(1);
    let mut gone = Some(TestWorker::sglang(1));
    let gone_url = gone.as_ref().unwrap().url().to_string();
    let _g = Loads::attach(&good, 2, Mode::V1Loads);
    let h = Loads::attach(&hung, 1, Mode::V1Loads);
    let d = Loads::attach(&dying, 1, Mode::V1Loads);
    let _x = Loads::attach(gone.as_ref().unwrap(), 1, Mode::V1Loads);
    let t0 = Instant::now();
    let (o, lines) = run_watch(
        &[
            "--worker-url",
            good.url(),
            hung.url(),
            dying.url(),
            &gone_url,
            "--backend",
            "sglang",
            "--interval",
            "0.25",
            "--poll-timeout",
            "0.15",
            "--max-polls",
            "14",
        ],
        |v| {
            // after poll 3: one hangs, one closes the socket; after poll 5 one is gone
            if v["kind"] == "poll" && v["seq"] == 3 {
                h.hang(Duration::from_secs(3));
                d.die(true);
            }
            if v["kind"] == "poll" && v["seq"] == 5 {
                gone.take();
            }
        },
    );
    let took = t0.elapsed().as_secs_f64();
    assert_eq!(o.polls, 14);
    assert!(took < 14.0 * 0.25 + 1.5, "14 polls took {took:.2} s");
    assert_eq!(o.outcome.code(), 0);
    let polls: Vec<&Value> = lines.iter().filter(|l| l["kind"] == "poll").collect();
    assert_eq!(polls.len(), 14);
    let status = |p: &Value, url: &str| -> String {
        let w = p["workers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|w| w["url"] == url)
            .unwrap();
        w["status"].as_str().unwrap().to_string()
    };
    for p in &polls {
        let seq = p["seq"].as_u64().unwrap();
        assert_eq!(status(p, good.url()), "ok", "{p}");
        assert!(p["ms"].as_u64().unwrap() < 600, "poll took {} ms", p["ms"]);
        if seq <= 3 {
            for u in [hung.url(), dying.url(), gone_url.as_str()] {
                assert_eq!(status(p, u), "ok", "{p}");
            }
        }
        if seq >= 4 {
            assert_eq!(status(p, hung.url()), "timeout", "{p}");
            assert_eq!(status(p, dying.url()), "dead", "{p}");
        }
        if seq >= 6 {
            assert_eq!(status(p, &gone_url), "dead", "{p}");
        }
        // the imbalance covers the ranks that answered
        assert!(p["imbalance"]["waiting"]["n"].as_u64().unwrap() >= 2);
    }
    let tally = |u: &str| o.workers.iter().find(|w| w.url == u).unwrap().clone();
    assert_eq!(tally(good.url()).ok, 14);
    assert_eq!(tally(hung.url()).timeout, 10);
    assert_eq!(tally(dying.url()).dead, 10);
    assert!(tally(dying.url()).last_error.unwrap().contains("closed"));
    assert_eq!(tally(&gone_url).dead, 8);
    assert!(tally(&gone_url).last_error.unwrap().contains("refused"));
}

#[test]
fn metrics_and_get_load_fallbacks() {
    let sgl = TestWorker::sglang_dp(1, 2);
    let vllm = TestWorker::vllm(1, None);
    let old = TestWorker::sglang(1);
    Loads::attach(&sgl, 2, Mode::SglangMetrics);
    Loads::attach(&vllm, 2, Mode::VllmMetrics);
    Loads::attach(&old, 1, Mode::GetLoadOnly);
    let (o, lines) = run_watch(
        &[
            "--worker-url",
            sgl.url(),
            vllm.url(),
            old.url(),
            "--interval",
            "0.3",
            "--max-polls",
            "3",
        ],
        |_| {},
    );
    assert_eq!(o.polls, 3);
    let polls: Vec<&Value> = lines.iter().filter(|l| l["kind"] == "poll").collect();
    for p in &polls {
        let ws = p["workers"].as_array().unwrap();
        assert_eq!(ws[0]["source"], "/metrics", "{p}");
        assert_eq!(ws[0]["ranks"].as_array().unwrap().len(), 2);
        assert_eq!(ws[0]["ranks"][1]["waiting"], 2);
        assert_eq!(ws[0]["ranks"][1]["token_usage"], 0.25);
        assert_eq!(ws[1]["source"], "/metrics", "{p}");
        assert_eq!(ws[1]["ranks"].as_array().unwrap().len(), 2);
        assert_eq!(ws[1]["ranks"][0]["running"], 8);
        assert_eq!(ws[2]["source"], "/get_load", "{p}");
        assert_eq!(ws[2]["ranks"][0]["running"], 8);
        assert_eq!(ws[2]["ranks"][0]["waiting"], 2);
    }
    // vLLM's throughput: the counter's rise between two polls
    assert!(polls[0]["workers"][1]["ranks"][0]["throughput"].is_null());
    for p in &polls[1..] {
        let t = p["workers"][1]["ranks"][0]["throughput"].as_f64().unwrap();
        assert!((t - 500.0).abs() < 50.0, "{t}");
    }
}

/// Runs the binary; kills it after `limit`.
fn rankprof(args: &[&str], limit: Duration) -> (i32, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_rankprof"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            let mut out = String::new();
            let mut err = String::new();
            child
                .stdout
                .take()
                .unwrap()
                .read_to_string(&mut out)
                .unwrap();
            child
                .stderr
                .take()
                .unwrap()
                .read_to_string(&mut err)
                .unwrap();
            return (s.code().unwrap_or(-1), out, err);
        }
        if t0.elapsed() > limit {
            let _ = child.kill();
            panic!("rankprof {args:?} ran over {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn command_json_lines_and_exit_codes() {
    let w = TestWorker::sglang_dp(1, 2);
    Loads::attach(&w, 2, Mode::V1Loads);
    let limit = Duration::from_secs(60);

    // off a terminal: one JSON line per poll on stdout, between the header and the end
    let (code, out, err) = rankprof(
        &[
            "watch",
            "--worker-url",
            w.url(),
            "--interval",
            "0.1",
            "--max-polls",
            "3",
        ],
        limit,
    );
    assert_eq!(code, 0, "{err}");
    let kinds: Vec<String> = out
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["kind"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(kinds, ["watch", "poll", "poll", "poll", "end"]);
    assert!(err.contains("watch ended (max-polls): 3 polls"), "{err}");

    // usage: a bad trigger names its column
    let (code, _, err) = rankprof(
        &[
            "watch",
            "--worker-url",
            w.url(),
            "--trigger",
            "waiting sprad > 3",
            "--output-dir",
            "/tmp",
        ],
        limit,
    );
    assert_eq!(code, 2);
    assert!(
        err.contains("at column 9") && err.contains("unknown aggregate"),
        "{err}"
    );
    // usage: a trigger needs somewhere to put the traces
    let (code, _, err) = rankprof(&["watch", "--worker-url", w.url(), "--trigger-now"], limit);
    assert_eq!(code, 2);
    assert!(err.contains("--output-dir"), "{err}");
    // no workers: the router is not there
    let dead = format!("http://127.0.0.1:{}", dead_port());
    let (code, _, err) = rankprof(&["watch", "--router-url", &dead, "--max-polls", "1"], limit);
    assert_eq!(code, 2, "{err}");

    // a capture that fails (the server refuses to start profiling): 1
    let bad = TestWorker::sglang(1);
    Loads::attach(&bad, 1, Mode::V1Loads);
    bad.set(|b| b.start_status = Some(503));
    let out_dir = tempfile::tempdir().unwrap();
    let (code, out, err) = rankprof(
        &[
            "watch",
            "--worker-url",
            bad.url(),
            "--backend",
            "sglang",
            "--interval",
            "0.1",
            "--trigger-now",
            "--output-dir",
            out_dir.path().to_str().unwrap(),
            "--capture-duration",
            "0.2",
            "--settle",
            "0.1",
            "--flush-timeout",
            "2",
            "--max-polls",
            "100",
        ],
        limit,
    );
    assert_eq!(code, 1, "{out}\n{err}");
    let capture: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v["kind"] == "capture")
        .collect();
    assert_eq!(capture.len(), 1);
    assert_eq!(capture[0]["exit_code"], 1);
    assert_eq!(capture[0]["outcome"]["workers"][0]["start"]["status"], 503);
}

/// The example of docs/capture.md, on a pseudo-terminal (`script`): a TP1×DP2 test worker whose DP1 queue
/// grows after 3 s, the live table, the trigger, the capture's report. Run by hand:
/// `cargo test --release --test watch_direct -- --ignored readme_example --nocapture`.
#[test]
#[ignore]
fn readme_example() {
    let w = TestWorker::sglang_dp(1, 2);
    w.set(|b| b.wall_clock = true);
    let loads = Loads::attach(&w, 2, Mode::V1Loads);
    loads.drift_in(Duration::from_secs(3), 1, 20.0, 8.0);
    let out = tempfile::tempdir().unwrap();
    let cmd = format!(
        "stty cols 120 rows 50; {} watch --worker-url {} --interval 0.5 --trigger 'waiting max/mean > 1.5 for 2s' \
         --output-dir {} --capture-duration 3 --settle 0.5",
        env!("CARGO_BIN_EXE_rankprof"),
        w.url(),
        out.path().display()
    );
    let o = Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .output()
        .unwrap();
    println!("$ {cmd}\n{}", String::from_utf8_lossy(&o.stdout));
    for e in std::fs::read_dir(out.path()).unwrap().flatten() {
        println!("{}", e.file_name().to_string_lossy());
    }
}
