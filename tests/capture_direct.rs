//! `rankprof capture` against test servers called directly or through stand-in routers that
//! answer the other worker-list shapes (legacy `/list_workers`, unhealthy workers), and the
//! failure paths: refused, timed out, closed, 404/500/503, old stop route, slow trace writes.

mod support;

use std::time::Duration;

use rankprof::capture::{session, startstop};
use rankprof::cli::capture::CaptureCommand;
use rankprof::cli::Command;
use rankprof::commands::capture::{run_options, start_options, stop_options};
use serde_json::{json, Value};

use support::capture;
use support::http::{dead_port, Reply, Server};
use support::worker::TestWorker;

fn start(args: &[&str]) -> startstop::Outcome {
    let mut v = vec!["capture", "start"];
    v.extend_from_slice(args);
    match capture(&v) {
        CaptureCommand::Start(a) => startstop::start(&start_options(&a)).unwrap(),
        _ => unreachable!(),
    }
}

fn stop(args: &[&str]) -> startstop::Outcome {
    let mut v = vec!["capture", "stop"];
    v.extend_from_slice(args);
    match capture(&v) {
        CaptureCommand::Stop(a) => startstop::stop(&stop_options(&a)).unwrap(),
        _ => unreachable!(),
    }
}

fn run(args: &[&str]) -> session::RunOutcome {
    let mut v = vec!["capture", "run"];
    v.extend_from_slice(args);
    match capture(&v) {
        CaptureCommand::Run(a) => session::run(&run_options(&a)).unwrap(),
        _ => unreachable!(),
    }
}

fn row<'a>(o: &'a startstop::Outcome, w: &TestWorker) -> &'a rankprof::capture::calls::WorkerRow {
    o.workers.iter().find(|r| r.url == w.url()).unwrap()
}

#[test]
fn legacy_list_workers_and_dp_urls() {
    let a = TestWorker::sglang_dp(1, 2);
    let b = TestWorker::sglang(1);
    let listed = json!({"urls": [format!("{}@0", a.url()), format!("{}@1", a.url()), format!("{}/", b.url())]});
    let router = Server::start(move |r| match r.path.as_str() {
        "/list_workers" => Reply::json(200, &listed),
        _ => Reply::json(404, &json!({"detail": "Not Found"})),
    });
    let o = start(&["--router-url", &router.url]);
    assert_eq!(o.outcome.code(), 0, "{o:#?}");
    assert_eq!(o.workers.len(), 2);
    assert_eq!(a.posts("/start_profile").len(), 1);
    assert_eq!(b.posts("/start_profile").len(), 1);
    // /workers first, then the legacy route
    let paths: Vec<String> = router.requests().into_iter().map(|r| r.path).collect();
    assert_eq!(paths, ["/workers", "/list_workers"]);
}

#[test]
fn unhealthy_workers_are_skipped_with_a_note() {
    let good = TestWorker::sglang(1);
    let sick = TestWorker::sglang(1);
    // the real router's answer shape, one worker unhealthy
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../shared/fixtures/router/router_workers_fake.json"
    ))
    .unwrap();
    let mut v: Value = serde_json::from_str(&text).unwrap();
    v["workers"][0]["url"] = json!(good.url());
    v["workers"][1]["url"] = json!(sick.url());
    v["workers"][1]["is_healthy"] = json!(false);
    let router = Server::start(move |_| Reply::json(200, &v));
    let o = start(&["--router-url", &router.url, "--backend", "sglang"]);
    assert_eq!(o.outcome.code(), 0);
    assert_eq!(o.workers.len(), 1);
    assert_eq!(good.posts("/start_profile").len(), 1);
    assert!(sick.server.requests().is_empty());
    assert!(
        o.notes
            .iter()
            .any(|n| n.contains(sick.url()) && n.contains("unhealthy")),
        "{:?}",
        o.notes
    );
}

#[test]
fn router_found_in_a_training_log() {
    let w = TestWorker::sglang(1);
    let listed = json!({"workers": [{"url": w.url(), "worker_type": "regular", "is_healthy": true}], "total": 1});
    let router = Server::start(move |_| Reply::json(200, &listed));
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("train.log");
    std::fs::write(
        &log,
        format!(
            "Router launched at 127.0.0.1:{}, Prometheus port: 1\nrestart\n(pid=3) Router launched at 127.0.0.1:{}, Prometheus port: 2\n",
            dead_port(),
            router.port
        ),
    )
    .unwrap();
    let o = start(&["--from-log", log.to_str().unwrap()]);
    assert_eq!(o.outcome.code(), 0, "{o:#?}");
    assert_eq!(o.router.as_deref(), Some(router.url.as_str()));
    assert_eq!(w.posts("/start_profile").len(), 1);
}

#[test]
fn refused_timeout_and_status_failures_each_get_their_row() {
    let ok = TestWorker::sglang(1);
    let slow = TestWorker::sglang(1);
    slow.set(|b| b.delay = Duration::from_secs(3));
    let busy = TestWorker::sglang(1);
    busy.set(|b| b.start_status = Some(503));
    let dead = format!("http://127.0.0.1:{}", dead_port());
    let o = start(&[
        "--worker-url",
        ok.url(),
        slow.url(),
        busy.url(),
        &dead,
        "--backend",
        "sglang",
        "--timeout",
        "0.5",
    ]);
    assert_eq!(o.outcome.code(), 1);
    assert!(row(&o, &ok).ok());
    let s = row(&o, &slow).start.clone().unwrap();
    assert_eq!(s.failure.as_deref(), Some("timeout"));
    assert!(s.ms < 3000, "{}", s.ms);
    let b = row(&o, &busy).start.clone().unwrap();
    assert_eq!(b.status, Some(503));
    assert!(b.note.contains("not ready"), "{}", b.note);
    let d = o.workers.iter().find(|r| r.url == dead).unwrap();
    assert_eq!(
        d.start.as_ref().unwrap().failure.as_deref(),
        Some("refused")
    );
    // the table says the same
    let t = rankprof::report::capture::table(&o.workers).to_string();
    assert_eq!(t.matches("FAILED").count(), 3, "{t}");
    assert!(
        t.contains("refused") && t.contains("timeout") && t.contains("503"),
        "{t}"
    );
}

#[test]
fn stop_falls_back_to_end_profile_and_reads_500s() {
    let old = TestWorker::sglang(1);
    old.set(|b| b.old_stop_route = true);
    let idle = TestWorker::sglang(1);
    assert_eq!(start(&["--worker-url", old.url()]).outcome.code(), 0);
    // `idle` was never started: its 500 is a failure unless --num-steps says it may have stopped
    let o = stop(&["--worker-url", old.url(), idle.url()]);
    assert_eq!(o.outcome.code(), 1);
    let r = row(&o, &old).stop.clone().unwrap();
    assert_eq!(
        (r.route.as_str(), r.status, r.ok),
        ("/end_profile", Some(200), true)
    );
    assert_eq!(old.posts("/stop_profile").len(), 1);
    assert_eq!(old.posts("/end_profile").len(), 1);
    let i = row(&o, &idle).stop.clone().unwrap();
    assert_eq!((i.status, i.ok), (Some(500), false));
    assert!(i.note.contains("--num-steps"), "{}", i.note);
    let o = stop(&["--worker-url", idle.url(), "--num-steps", "5"]);
    assert_eq!(o.outcome.code(), 0);
    assert!(row(&o, &idle)
        .stop
        .as_ref()
        .unwrap()
        .note
        .contains("num_steps"));
}

#[test]
fn vllm_without_profiler_config_says_how_to_restart() {
    let w = TestWorker::vllm(1, None);
    let o = start(&["--worker-url", w.url(), "--output-dir", "/srv/traces"]);
    assert_eq!(o.outcome.code(), 1);
    let r = row(&o, &w);
    assert_eq!(r.backend.map(|d| d.name()), Some("vllm"));
    assert!(
        r.hint().contains(
            r#"--profiler-config '{"profiler":"torch","torch_profiler_dir":"/srv/traces"}'"#
        ),
        "{}",
        r.hint()
    );
    // auto-detection asked SGLang's two model-info routes (404 on vLLM), then /v1/models
    let gets: Vec<String> = w
        .server
        .requests()
        .into_iter()
        .filter(|r| r.method == "GET")
        .map(|r| r.path)
        .collect();
    assert_eq!(gets, ["/model_info", "/get_model_info", "/v1/models"]);
}

fn gets(w: &TestWorker) -> Vec<String> {
    let r = w.server.requests().into_iter();
    r.filter(|r| r.method == "GET").map(|r| r.path).collect()
}

/// Current SGLang is known by `/model_info` alone (its `/get_model_info` logs a deprecation
/// warning at each call); an SGLang from before `/model_info` by `/get_model_info`.
#[test]
fn sglang_is_detected_by_model_info_then_the_old_route() {
    let new = TestWorker::sglang(1);
    let old = TestWorker::sglang(1);
    old.set_routes(|r| {
        (r.path == "/model_info").then(|| Reply::json(404, &json!({"detail": "Not Found"})))
    });
    for w in [&new, &old] {
        let o = start(&["--worker-url", w.url()]);
        assert_eq!(o.outcome.code(), 0, "{o:#?}");
        assert_eq!(row(&o, w).backend.map(|d| d.name()), Some("sglang"));
        assert_eq!(w.posts("/start_profile").len(), 1);
    }
    assert_eq!(gets(&new), ["/model_info"]);
    assert_eq!(gets(&old), ["/model_info", "/get_model_info"]);
}

/// vLLM's start takes `--num-steps` as `max_iterations` (and the prefix): its profiler stops by
/// itself, and `capture run` with no load of its own waits for the traces, as for SGLang.
#[test]
fn vllm_run_with_num_steps_sends_max_iterations_and_waits() {
    let vdir = tempfile::tempdir().unwrap();
    let w = TestWorker::vllm(2, Some(vdir.path()));
    w.set(|b| b.steps_take = Duration::from_millis(400));
    let dir = vdir.path().to_str().unwrap();
    let o = run(&[
        "--worker-url",
        w.url(),
        "--backend",
        "vllm",
        "--output-dir",
        dir,
        "--num-steps",
        "3",
        "--start-step",
        "5",
        "--profile-prefix",
        "run7",
        "--settle",
        "0.3",
        "--flush-timeout",
        "30",
    ]);
    assert_eq!(o.outcome.code(), 0, "{o:#?}");
    let s: Value = serde_json::from_str(&w.posts("/start_profile")[0].body).unwrap();
    assert_eq!(s, json!({"max_iterations": 3, "profile_prefix": "run7"}));
    // Both ranks written by the profiler stopping itself, before the stop was sent.
    let f = &o.traces[0];
    assert!(f.complete, "{o:#?}");
    assert_eq!(f.rank_files(), 2);
    assert!(f.files.iter().all(|(p, _)| p
        .file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with("run7_dp0_pp0_tp"))));
    let note = &o.workers[0].start.as_ref().unwrap().note;
    assert!(note.contains("--start-step not sent"), "{note}");
}

#[test]
fn run_waits_for_slowly_written_traces_and_uses_step_folders() {
    let out = tempfile::tempdir().unwrap();
    let ws = [TestWorker::sglang(2), TestWorker::sglang(1)];
    for w in &ws {
        w.set(|b| b.slow_write = Some(Duration::from_millis(1200)));
    }
    let dir = out.path().to_str().unwrap();
    let o = run(&[
        "--worker-url",
        ws[0].url(),
        ws[1].url(),
        "--output-dir",
        dir,
        "--step",
        "12",
        "--requests",
        "5",
        "--concurrency",
        "2",
        "--profile-by-stage",
        "--settle",
        "0.5",
        "--flush-timeout",
        "30",
    ]);
    assert_eq!(o.outcome.code(), 0, "{o:#?}");
    let step = out.path().join("step_12");
    assert_eq!(o.trace_dir.as_deref(), Some(step.as_path()));
    for w in &ws {
        let s: Value = serde_json::from_str(&w.posts("/start_profile")[0].body).unwrap();
        assert_eq!(
            s,
            json!({"output_dir": step.to_str().unwrap(), "profile_by_stage": true})
        );
    }
    // without a router the load is spread over the servers: 5 requests, round-robin
    let per: Vec<usize> = ws.iter().map(|w| w.posts("/generate").len()).collect();
    assert_eq!(per.iter().sum::<usize>(), 5);
    assert!(per.iter().all(|&n| n >= 2), "{per:?}");
    // (2 + 1) ranks × EXTEND/DECODE, each at its final size although written after stop answered
    let f = &o.traces[0];
    assert!(f.complete);
    assert_eq!(f.rank_files(), 6);
    for (path, size) in &f.files {
        assert_eq!(
            std::fs::metadata(path).unwrap().len(),
            *size,
            "{}",
            path.display()
        );
    }
    let written: usize = ws.iter().map(|w| w.written().len()).sum();
    assert_eq!(written, 6);
}

#[test]
fn run_reports_traces_that_never_come() {
    let out = tempfile::tempdir().unwrap();
    let w = TestWorker::sglang(1);
    // answers stop but writes nothing (output_dir elsewhere)
    w.set(|b| b.stop_status = Some(200));
    let o = run(&[
        "--worker-url",
        w.url(),
        "--output-dir",
        out.path().to_str().unwrap(),
        "--duration",
        "0.2",
        "--settle",
        "0.1",
        "--flush-timeout",
        "0.5",
    ]);
    assert_eq!(o.outcome.code(), 1, "{o:#?}");
    assert!(o.workers[0].ok());
    assert!(!o.traces[0].complete);
    assert!(
        o.notes.iter().any(|n| n.contains("within --flush-timeout")),
        "{:?}",
        o.notes
    );
    assert!(o.post.is_none());
}

/// A vLLM whose traces go elsewhere (another `torch_profiler_dir`, or a `cuda`/`proton`
/// profiler, which answers the same routes and writes no Kineto trace): the note says what to
/// check.
#[test]
fn vllm_traces_that_never_come_say_what_to_check() {
    let out = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let w = TestWorker::vllm(1, Some(elsewhere.path()));
    let o = run(&[
        "--worker-url",
        w.url(),
        "--output-dir",
        out.path().to_str().unwrap(),
        "--duration",
        "0.2",
        "--settle",
        "0.1",
        "--flush-timeout",
        "0.5",
    ]);
    assert_eq!(o.outcome.code(), 1, "{o:#?}");
    assert!(o.workers[0].ok(), "{o:#?}");
    // it did write, where the note says to look
    assert_eq!(w.written().len(), 1);
    assert!(w.written()[0].starts_with(elsewhere.path()));
    let note = o
        .notes
        .iter()
        .find(|n| n.contains("within --flush-timeout"));
    let note = note.unwrap_or_else(|| panic!("{:?}", o.notes));
    assert!(note.contains("only 0 trace files"), "{note}");
    assert!(note.contains("torch_profiler_dir"), "{note}");
    assert!(note.contains(r#""profiler": "torch""#), "{note}");
    assert!(note.contains(r#""proton""#), "{note}");
}

#[test]
fn no_workers_and_bad_flags_are_usage_errors() {
    let code = |args: &[&str]| {
        let mut v = vec!["capture"];
        v.extend_from_slice(args);
        rankprof::commands::main(Command::Capture(capture(&v)))
    };
    assert_eq!(code(&["start"]), 2);
    assert_eq!(
        code(&[
            "start",
            "--router-url",
            &format!("127.0.0.1:{}", dead_port())
        ]),
        2
    );
    let empty = Server::start(|_| Reply::json(200, &json!({"workers": [], "total": 0})));
    assert_eq!(code(&["stop", "--router-url", &empty.url]), 2);
    let w = TestWorker::sglang(1);
    // run without a way to know when to stop, or without an output dir
    assert_eq!(
        code(&["run", "--worker-url", w.url(), "--output-dir", "/tmp/x"]),
        2
    );
    assert_eq!(
        code(&["run", "--worker-url", w.url(), "--requests", "1"]),
        2
    );
    assert!(w.server.requests().is_empty());
}

#[test]
fn json_output_and_exit_code_from_the_binary() {
    let ok = TestWorker::sglang(1);
    let dead = format!("http://127.0.0.1:{}", dead_port());
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_rankprof"))
        .args([
            "capture",
            "start",
            "--worker-url",
            ok.url(),
            &dead,
            "--backend",
            "sglang",
            "--json",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    assert_eq!(v["exit_code"], 1);
    let rows = v["workers"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0]["url"], ok.url());
    assert_eq!(rows[0]["start"]["status"], 200);
    assert_eq!(rows[1]["start"]["failure"], "refused");
    assert_eq!(ok.posts("/start_profile").len(), 1);
}

/// Ctrl-C during `capture run` (the options' interrupt flag, set 300 ms in): the stop goes to
/// the server at once instead of after `--duration 60`, a note says the traces were not
/// waited for, and the exit code is 1.
#[test]
fn an_interrupted_run_stops_the_servers_at_once() {
    let out = tempfile::tempdir().unwrap();
    let w = TestWorker::sglang(1);
    let args = [
        "capture",
        "run",
        "--worker-url",
        w.url(),
        "--output-dir",
        out.path().to_str().unwrap(),
        "--duration",
        "60",
    ];
    let CaptureCommand::Run(a) = capture(&args) else {
        unreachable!()
    };
    let flag = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let opts = rankprof::capture::CaptureOptions {
        interrupt: Some(flag.clone()),
        ..run_options(&a)
    };
    let setter = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        flag.store(true, std::sync::atomic::Ordering::SeqCst);
    });
    let o = session::run(&opts).unwrap();
    setter.join().unwrap();
    assert_eq!(w.posts("/stop_profile").len(), 1, "{o:#?}");
    assert_eq!(o.outcome.code(), 1);
    assert!(o.traces.is_empty(), "{o:#?}");
    assert!(
        o.notes.iter().any(|n| n.contains("interrupted (Ctrl-C)")),
        "{:?}",
        o.notes
    );
}

/// `--num-steps` with nowhere to watch the traces (`--no-merge`, no `--output-dir`): the stop
/// is not sent at once (it would end the profile after ~0 steps) but after `--flush-timeout`,
/// so it finds the profiler already stopped by itself (SGLang's bare 500, taken as ok).
#[test]
fn num_steps_unwatched_waits_before_the_stop() {
    let w = TestWorker::sglang(1);
    w.set(|b| b.steps_take = Duration::from_millis(200));
    let o = run(&[
        "--worker-url",
        w.url(),
        "--num-steps",
        "5",
        "--no-merge",
        "--flush-timeout",
        "2",
    ]);
    assert_eq!(o.outcome.code(), 0, "{o:#?}");
    let stop = o.workers[0].stop.as_ref().unwrap();
    assert_eq!(stop.status, Some(500), "{o:#?}");
    assert!(
        o.notes.iter().any(|n| n.contains("cannot see")),
        "{:?}",
        o.notes
    );
}

/// Every load request refused (the server answers `/generate` with 404): the capture profiled
/// an idle server, so the exit code is 1, with the note naming the failures.
#[test]
fn a_run_whose_load_all_failed_exits_1() {
    let w = TestWorker::sglang(1);
    w.set_routes(|r| (r.path == "/generate").then(|| Reply::text(404, "not found")));
    let o = run(&[
        "--worker-url",
        w.url(),
        "--requests",
        "3",
        "--concurrency",
        "1",
        "--no-merge",
    ]);
    assert_eq!(w.posts("/stop_profile").len(), 1);
    assert_eq!(o.outcome.code(), 1, "{o:#?}");
    assert!(
        o.notes
            .iter()
            .any(|n| n.contains("3 of 3 load requests failed")),
        "{:?}",
        o.notes
    );
}

/// `capture run --profiler nsys` against an SGLang server running under
/// `nsys profile --capture-range=cudaProfilerApi`: the start asks for the `CUDA_PROFILER`
/// activity (and names no torch folder); when the profile ends, "nsys" writes its report (a
/// 4-GPU export built by tests/make_nsys_sqlite.py, under a `.nsys-rep` name, written slowly)
/// into --output-dir, where a report of an earlier capture already is; the run waits for the
/// new report only, exports it with the stand-in `nsys` (tests/support/fake-nsys.sh), merges
/// it and analyzes it: one rank per GPU, with the figures the export itself gives.
#[test]
fn nsys_run_collects_the_report_nsys_writes() {
    let py_ok = std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !py_ok {
        eprintln!("skipped: no python3 for tests/make_nsys_sqlite.py");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (node, out, bin) = (
        tmp.path().join("node"),
        tmp.path().join("out"),
        tmp.path().join("bin"),
    );
    let made = std::process::Command::new("python3")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/make_nsys_sqlite.py"
        ))
        .arg(&node)
        .args(["--multi-gpu", "node"])
        .output()
        .unwrap();
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    for d in [&out, &bin] {
        std::fs::create_dir(d).unwrap();
    }
    std::os::unix::fs::symlink(
        concat!(env!("CARGO_MANIFEST_DIR"), "/tests/support/fake-nsys.sh"),
        bin.join("nsys"),
    )
    .unwrap();
    // A report of an earlier capture: not this one's (it is not even a report).
    std::fs::write(out.join("earlier.nsys-rep"), b"not this capture's").unwrap();
    let w = TestWorker::sglang(4);
    let rep = out.join("server1.nsys-rep");
    w.set(|b| {
        b.nsys_report = Some((node.join("node.sqlite"), rep.clone()));
        b.slow_write = Some(Duration::from_millis(800));
    });
    let rankprof = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_rankprof"))
            .args(args)
            .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
            .env("TMPDIR", tmp.path())
            .env_remove("RANKPROF_NSYS")
            .output()
            .unwrap()
    };
    let o = rankprof(&[
        "capture",
        "run",
        "--worker-url",
        w.url(),
        "--profiler",
        "nsys",
        "--output-dir",
        out.to_str().unwrap(),
        "--requests",
        "3",
        "--settle",
        "0.4",
        "--flush-timeout",
        "30",
        "--json",
    ]);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(0), "{err}");
    let v: Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stdout)));
    let start: Value = serde_json::from_str(&w.posts("/start_profile")[0].body).unwrap();
    assert_eq!(start, json!({"activities": ["CUDA_PROFILER"]}));
    assert_eq!(
        v["traces"][0]["files"],
        json!([[rep, std::fs::metadata(&rep).unwrap().len()]])
    );
    assert_eq!(v["traces"][0]["complete"], true);
    assert_eq!(v["trace_dir"], json!(out));
    let merged = out.join("merged-server1.trace.json.gz");
    assert_eq!(v["post"]["merged"], json!([merged]), "{err}");
    assert_eq!(v["post"]["analyze"][0]["code"], 0, "{err}");

    // The merged report analyzed gives what the export itself gives, GPU by GPU.
    let busy = |args: &[&str]| -> Vec<Value> {
        let o = rankprof(args);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        let a: Value = serde_json::from_slice(&o.stdout).unwrap();
        a["ranks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| json!([r["kernels"], r["busy_ns"], r["comm_ns"]]))
            .collect()
    };
    let want = busy(&[
        "analyze",
        "--json",
        node.join("node.sqlite").to_str().unwrap(),
    ]);
    assert_eq!(want.len(), 4);
    assert_eq!(busy(&["analyze", "--json", merged.to_str().unwrap()]), want);
}

/// `--profiler nsys` against a server that is not running under nsys: no report comes, the
/// run fails (1) after --flush-timeout with a note saying what to check; a torch `--step`
/// folder and activities without CUDA_PROFILER are refused before any server is called.
#[test]
fn nsys_run_without_nsys_says_what_to_check() {
    let out = tempfile::tempdir().unwrap();
    let w = TestWorker::sglang(1);
    let dir = out.path().to_str().unwrap();
    let o = run(&[
        "--worker-url",
        w.url(),
        "--profiler",
        "nsys",
        "--output-dir",
        dir,
        "--requests",
        "2",
        "--settle",
        "0.2",
        "--flush-timeout",
        "1",
    ]);
    assert_eq!(o.outcome.code(), 1, "{o:#?}");
    let notes = o.notes.join("\n");
    assert!(
        notes.contains("only 0 Nsight Systems reports (of at least 1) appeared")
            && notes.contains("--capture-range=cudaProfilerApi"),
        "{notes}"
    );
    assert!(o.post.is_none());
    for bad in [vec!["--step", "3"], vec!["--activities", "CPU,GPU"]] {
        let mut args = vec![
            "capture",
            "run",
            "--worker-url",
            w.url(),
            "--profiler",
            "nsys",
            "--output-dir",
            dir,
            "--requests",
            "2",
        ];
        args.extend(bad.iter().copied());
        let before = w.posts("/start_profile").len();
        let e = match capture(&args) {
            CaptureCommand::Run(a) => session::run(&run_options(&a)).unwrap_err().to_string(),
            _ => unreachable!(),
        };
        assert!(
            e.contains("--profiler nsys") || e.contains("nsys's -o"),
            "{e}"
        );
        assert_eq!(
            w.posts("/start_profile").len(),
            before,
            "{bad:?} called a server"
        );
    }
}
