//! `rankprof capture` under the faults of issue #13: a router list over 64 KiB, answers whose
//! body is cut short or never finishes, a stop that takes long (it must say what it waits
//! for). Every test is bounded: short timeouts, servers that give up.

mod support;

use std::net::TcpListener;
use std::time::{Duration, Instant};

use rankprof::capture::calls::WorkerRow;
use rankprof::capture::http::Http;
use rankprof::capture::{startstop, workers, Targets};
use rankprof::cli::capture::CaptureCommand;
use rankprof::commands::capture::start_options;
use serde_json::{json, Value};

use support::capture;
use support::http::{Reply, Server};
use support::worker::TestWorker;

fn start(args: &[&str]) -> startstop::Outcome {
    let mut v = vec!["capture", "start"];
    v.extend_from_slice(args);
    match capture(&v) {
        CaptureCommand::Start(a) => startstop::start(&start_options(&a)).unwrap(),
        _ => unreachable!(),
    }
}

fn row<'a>(o: &'a startstop::Outcome, url: &str) -> &'a WorkerRow {
    o.workers.iter().find(|r| r.url == url).unwrap()
}

/// `n` distinct ports nothing listens on (all bound at once, then released).
fn dead_ports(n: usize) -> Vec<u16> {
    let ls: Vec<TcpListener> = (0..n)
        .map(|_| TcpListener::bind("127.0.0.1:0").unwrap())
        .collect();
    ls.iter().map(|l| l.local_addr().unwrap().port()).collect()
}

/// The real router's `GET /workers` shape (from the recorded fixture) listing `urls`, with the
/// long model paths of a real deployment.
fn router_answer(urls: &[String]) -> Value {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../shared/fixtures/router/router_workers_fake.json"
    ))
    .unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    let model = "/mnt/models/meta-llama/Llama-3.1-70B-Instruct";
    let workers: Vec<Value> = urls
        .iter()
        .enumerate()
        .map(|(i, u)| {
            let mut w = v["workers"][0].clone();
            w["url"] = json!(u);
            w["id"] = json!(format!("{i:08x}-e1ba-4c7d-a04a-f558c6fd72a5"));
            w["model_id"] = json!(model);
            w["metadata"]["model_path"] = json!(model);
            w["metadata"]["served_model_name"] = json!(model);
            w
        })
        .collect();
    json!({"workers": workers, "total": urls.len(),
           "stats": {"prefill_count": 0, "decode_count": 0, "regular_count": urls.len()}})
}

#[test]
fn a_router_listing_150_workers_over_64_kib_is_read_whole() {
    let real = [
        TestWorker::sglang(1),
        TestWorker::sglang(1),
        TestWorker::sglang(1),
    ];
    let mut urls: Vec<String> = real.iter().map(|w| w.url().to_string()).collect();
    urls.extend(
        dead_ports(147)
            .into_iter()
            .map(|p| format!("http://127.0.0.1:{p}")),
    );
    let answer = router_answer(&urls);
    let size = answer.to_string().len();
    assert!(size > 64 * 1024, "only {size} bytes");
    let router = Server::start(move |_| Reply::json(200, &answer));

    let found = workers::resolve(
        &Http::new(),
        &Targets {
            router_url: Some(router.url.clone()),
            timeout: 5.0,
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(found.workers.len(), 150);
    let got: Vec<&str> = found.workers.iter().map(|w| w.url.as_str()).collect();
    assert_eq!(got, urls);

    let o = start(&[
        "--router-url",
        &router.url,
        "--backend",
        "sglang",
        "--timeout",
        "2",
    ]);
    assert_eq!(o.workers.len(), 150);
    for w in &real {
        assert!(row(&o, w.url()).ok(), "{:?}", row(&o, w.url()));
        assert_eq!(w.posts("/start_profile").len(), 1);
    }
    // the listed ports nobody serves: refused, one row each
    assert_eq!(o.outcome.code(), 1);
    let refused = o
        .workers
        .iter()
        .filter(|r| r.start.as_ref().and_then(|c| c.failure.as_deref()) == Some("refused"))
        .count();
    assert!(refused >= 140, "{refused}");
}

/// A server whose `/start_profile` and `/stop_profile` answer 200 with a body that promises
/// 1000 bytes and sends 10; then it hangs for `hold` (at most 10 s) and closes.
fn partial_server(hold: Duration) -> Server {
    Server::start(move |r| match r.path.as_str() {
        "/start_profile" | "/stop_profile" => Reply::Partial {
            status: 200,
            declared: 1000,
            sent: "Start prof".into(),
            hold,
        },
        _ => Reply::json(404, &json!({"detail": "Not Found"})),
    })
}

#[test]
fn a_body_cut_short_or_never_finished_is_a_failure() {
    let cut = partial_server(Duration::ZERO);
    let hung = partial_server(Duration::from_secs(3));
    let good = TestWorker::sglang(1);
    let t0 = Instant::now();
    let o = start(&[
        "--worker-url",
        &cut.url,
        &hung.url,
        good.url(),
        "--backend",
        "sglang",
        "--timeout",
        "0.5",
    ]);
    assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
    assert_eq!(o.outcome.code(), 1, "{o:#?}");
    assert!(row(&o, good.url()).ok());
    let c = row(&o, &cut.url).start.clone().unwrap();
    assert_eq!((c.status, c.ok), (Some(200), false));
    assert_eq!(c.failure.as_deref(), Some("closed"));
    assert!(
        c.note.contains("before the body was complete"),
        "{}",
        c.note
    );
    let h = row(&o, &hung.url).start.clone().unwrap();
    assert_eq!((h.status, h.ok), (Some(200), false));
    assert_eq!(h.failure.as_deref(), Some("timeout"));
    assert!(
        h.note.contains("did not arrive within the timeout"),
        "{}",
        h.note
    );
    assert!(h.ms < 1500, "{}", h.ms);
    // the table says FAILED for both, next to the status
    let t = rankprof::report::capture::table(&o.workers).to_string();
    assert_eq!(t.matches("FAILED").count(), 2, "{t}");
    // a 2xx whose body was lost still started the profiler: `capture run` would stop it
    assert!(row(&o, &cut.url).needs_stop());
}

#[test]
fn a_router_answer_cut_short_is_an_error_that_says_so() {
    let router = Server::start(|_| Reply::Partial {
        status: 200,
        declared: 5000,
        sent: r#"{"workers":[{"url":"http://127.0.0.1:1"#.into(),
        hold: Duration::ZERO,
    });
    let e = workers::resolve(
        &Http::new(),
        &Targets {
            router_url: Some(router.url.clone()),
            timeout: 2.0,
            ..Default::default()
        },
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("cannot read the worker list") && e.contains("before the body was complete"),
        "{e}"
    );
}

#[test]
fn a_long_stop_says_which_servers_it_waits_for() {
    let fast = TestWorker::sglang(1);
    let slow = TestWorker::sglang(1);
    slow.set(|b| b.delay = Duration::from_millis(1500));
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_rankprof"))
        .args([
            "capture",
            "stop",
            "--worker-url",
            fast.url(),
            slow.url(),
            "--backend",
            "sglang",
            "--num-steps",
            "2",
            "--stop-timeout",
            "5",
        ])
        .env(rankprof::commands::capture::NOTICE_AFTER_ENV, "0.3")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("stop: waiting for"))
        .collect();
    // at ~0.3 s and ~0.9 s (the gap doubles): said, but not flooding
    assert!((1..=3).contains(&lines.len()), "{err}");
    assert!(
        lines[0].starts_with("stop: waiting for 1 of 2 servers (0 s): ")
            && lines[0].ends_with(slow.url()),
        "{err}"
    );
    // quick commands say nothing (default: after 5 s)
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_rankprof"))
        .args([
            "capture",
            "stop",
            "--worker-url",
            fast.url(),
            "--num-steps",
            "2",
        ])
        .env_remove(rankprof::commands::capture::NOTICE_AFTER_ENV)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(!String::from_utf8_lossy(&out.stderr).contains("waiting for"));
}

/// Runs the binary with its own state dir; returns (exit code, stdout JSON, stderr).
fn bin(args: &[&str], state: &std::path::Path) -> (Option<i32>, Value, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_rankprof"))
        .args(args)
        .arg("--json")
        .env("RANKPROF_STATE_DIR", state)
        .output()
        .unwrap();
    let v = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (
        out.status.code(),
        v,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_stop_after_num_steps_is_success_without_repeating_num_steps() {
    let w = TestWorker::sglang(1);
    w.set(|b| b.steps_take = Duration::from_millis(100));
    let tmp = tempfile::tempdir().unwrap();
    let (state, out) = (tmp.path().join("state"), tmp.path().join("traces"));
    let out_s = out.to_str().unwrap();
    let url = w.url();
    let start = [
        "capture",
        "start",
        "--worker-url",
        url,
        "--backend",
        "sglang",
    ];
    let (code, _, err) = bin(
        &[&start[..], &["--num-steps", "2", "--output-dir", out_s]].concat(),
        &state,
    );
    assert_eq!(code, Some(0), "{err}");
    let rec: Value =
        serde_json::from_slice(&std::fs::read(out.join(".rankprof-capture.json")).unwrap())
            .unwrap();
    assert_eq!(rec["num_steps"], 2);
    assert_eq!(rec["workers"], json!([url]));
    // SGLang stops by itself after num_steps; a later bare stop answers 500
    let t0 = Instant::now();
    while w.written().is_empty() && t0.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let stop = [
        "capture",
        "stop",
        "--worker-url",
        url,
        "--backend",
        "sglang",
    ];
    // found by the same targets in the state dir
    let (code, v, err) = bin(&stop, &state);
    assert_eq!(code, Some(0), "{err}");
    let note = v["workers"][0]["stop"]["note"].as_str().unwrap_or("");
    assert_eq!(v["workers"][0]["stop"]["status"], 500);
    assert!(note.contains("after 2 steps"), "{v}");
    // found in the output dir, whatever the state dir holds
    let empty = tmp.path().join("empty");
    let (code, _, err) = bin(&[&stop[..], &["--output-dir", out_s]].concat(), &empty);
    assert_eq!(code, Some(0), "{err}");
    // the control: no record, no --num-steps: the bare 500 is a failure
    let (code, v, _) = bin(&stop, &empty);
    assert_eq!(code, Some(1), "{v}");
    // a record vouches only for the servers it lists
    let other = TestWorker::sglang(1);
    let (code, _, _) = bin(
        &[
            &stop[..],
            &["--worker-url", other.url(), "--output-dir", out_s],
        ]
        .concat(),
        &empty,
    );
    assert_eq!(code, Some(1));
}
