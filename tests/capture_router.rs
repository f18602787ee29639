//! `rankprof capture` against the real `sglang-router` from PyPI, in front of in-process test
//! servers that speak SGLang's and vLLM's dialects (tests/support/worker.rs). What each server
//! received is checked against what the command was asked to do; trace figures are the ones
//! the test servers wrote (5 kernel events per rank file).

mod support;

use std::path::Path;

use rankprof::capture::{session, startstop};
use rankprof::cli::capture::CaptureCommand;
use rankprof::trace::read_trace;
use serde_json::{json, Value};

use support::capture;
use support::router::Router;
use support::worker::TestWorker;

fn start_args(c: CaptureCommand) -> rankprof::capture::StartOptions {
    match c {
        CaptureCommand::Start(a) => rankprof::commands::capture::start_options(&a),
        _ => unreachable!(),
    }
}

fn stop_args(c: CaptureCommand) -> rankprof::capture::StopOptions {
    match c {
        CaptureCommand::Stop(a) => rankprof::commands::capture::stop_options(&a),
        _ => unreachable!(),
    }
}

fn run_args(c: CaptureCommand) -> rankprof::capture::CaptureOptions {
    match c {
        CaptureCommand::Run(a) => rankprof::commands::capture::run_options(&a),
        _ => unreachable!(),
    }
}

fn body(r: &support::http::Request) -> Value {
    serde_json::from_str(&r.body).unwrap_or_else(|e| panic!("body {:?}: {e}", r.body))
}

/// Kernel events in every `merged-*` file of `dir`.
fn merged_kernels(dir: &Path) -> (usize, u64) {
    let mut files = 0;
    let mut kernels = 0;
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with("merged-") {
            files += 1;
            read_trace(&e.path(), |ev| {
                if ev.ph == b'X' && ev.cat.eq_str("kernel") {
                    kernels += 1;
                }
            })
            .unwrap();
        }
    }
    (files, kernels)
}

/// Checks the hand-over to merge/analyze: strict once a stage is built, a loud note before.
fn check_post(o: &session::RunOutcome, dir: &Path, expected_kernels: u64) {
    let post = o.post.as_ref().expect("merge_and_analyze ran");
    if post.merge.note.contains("not built yet") {
        eprintln!("**** merge is not built yet in this branch: merged-trace checks skipped ****");
    } else {
        assert_eq!(
            post.merge.code,
            Some(rankprof::exit::Outcome::Ok),
            "{}",
            post.merge.note
        );
        let (files, kernels) = merged_kernels(dir);
        assert_eq!(files, post.merged.len());
        assert!(files > 0);
        assert_eq!(kernels, expected_kernels);
    }
    // one analysis per merged trace
    assert_eq!(post.analyze.len(), post.merged.len().max(1));
    for a in &post.analyze {
        if a.note.contains("not built yet") {
            eprintln!("**** analyze is not built yet in this branch: analysis checks skipped ****");
        } else {
            assert_eq!(a.code, Some(rankprof::exit::Outcome::Ok), "{}", a.note);
        }
    }
}

#[test]
fn runs_through_the_real_router_start_and_stop_each_server_once() {
    let py = router_or_skip!();
    let ws = [
        TestWorker::sglang(2),
        TestWorker::sglang(1),
        TestWorker::sglang(1),
    ];
    let mut args: Vec<String> = vec!["--worker-urls".into()];
    args.extend(ws.iter().map(|w| w.url().to_string()));
    let router = Router::launch(&py, &args, 3);
    let kernels = 4 * ws[0].kernels_per_file() as u64; // 2 + 1 + 1 rank files

    // 1. --num-steps and no load of our own: wait until the servers stopped by themselves
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().to_str().unwrap();
    let o = session::run(&run_args(capture(&[
        "capture",
        "run",
        "--router-url",
        &router.url,
        "--output-dir",
        dir,
        "--num-steps",
        "3",
        "--activities",
        "CPU,GPU",
        "--profile-prefix",
        "rp",
        "--settle",
        "0.3",
        "--flush-timeout",
        "30",
    ])))
    .unwrap();
    assert_eq!(o.outcome.code(), 0, "{o:#?}");
    assert_eq!(o.workers.len(), 3);
    for w in &ws {
        let starts = w.posts("/start_profile");
        assert_eq!(starts.len(), 1, "{}", w.url());
        assert_eq!(
            body(&starts[0]),
            json!({"output_dir": dir, "num_steps": 3, "activities": ["CPU", "GPU"], "profile_prefix": "rp"})
        );
        assert_eq!(w.posts("/stop_profile").len(), 1, "{}", w.url());
        assert!(w.posts("/end_profile").is_empty());
    }
    // the servers had stopped after num_steps: SGLang's 500 to the stop is success
    for row in &o.workers {
        assert_eq!(row.stop.as_ref().unwrap().status, Some(500));
        assert!(row.ok(), "{row:?}");
    }
    assert!(o.load.is_none());
    assert!(o.traces[0].complete);
    assert_eq!(o.traces[0].rank_files(), 4);
    check_post(&o, out.path(), kernels);

    // 2. load through the router, stop when it is done
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().to_str().unwrap();
    let o = session::run(&run_args(capture(&[
        "capture",
        "run",
        "--router-url",
        &router.url,
        "--output-dir",
        dir,
        "--requests",
        "6",
        "--max-tokens",
        "4",
        "--with-stack",
        "--settle",
        "0.3",
        "--flush-timeout",
        "30",
    ])))
    .unwrap();
    assert_eq!(o.outcome.code(), 0, "{o:#?}");
    let load = o.load.as_ref().unwrap();
    assert_eq!((load.sent, load.ok), (6, 6));
    let generate: Vec<Value> = ws
        .iter()
        .flat_map(|w| w.posts("/generate"))
        .map(|r| body(&r))
        .collect();
    assert_eq!(generate.len(), 6);
    assert!(
        generate
            .iter()
            .all(|b| b["sampling_params"]["max_new_tokens"] == 4),
        "{generate:?}"
    );
    for w in &ws {
        let starts = w.posts("/start_profile");
        assert_eq!(starts.len(), 2, "{}", w.url());
        assert_eq!(
            body(&starts[1]),
            json!({"output_dir": dir, "with_stack": true})
        );
        // every request of the load came after the start and before the stop
        let stop = &w.posts("/stop_profile")[1];
        assert!(w
            .posts("/generate")
            .iter()
            .all(|g| g.at > starts[1].at && g.at < stop.at));
    }
    for row in &o.workers {
        assert_eq!(row.stop.as_ref().unwrap().status, Some(200));
    }
    assert_eq!(o.traces[0].rank_files(), 4);
    check_post(&o, out.path(), kernels);
}

#[test]
fn dp_aware_router_lists_two_workers_but_the_server_is_called_once() {
    let py = router_or_skip!();
    let w = TestWorker::sglang_dp(2, 2);
    let router = Router::launch(
        &py,
        &["--dp-aware".into(), "--worker-urls".into(), w.url().into()],
        2,
    );
    let listed: Vec<String> = router.workers_answer()["workers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["url"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(listed.len(), 2, "{listed:?}");
    assert!(
        listed
            .iter()
            .all(|u| u.starts_with(&format!("{}@", w.url()))),
        "{listed:?}"
    );

    let o = startstop::start(&start_args(capture(&[
        "capture",
        "start",
        "--router-url",
        &router.url,
    ])))
    .unwrap();
    assert_eq!(o.outcome.code(), 0);
    assert_eq!(o.workers.len(), 1);
    assert_eq!(o.workers[0].url, w.url());
    assert_eq!(o.workers[0].dp_ranks, [0, 1]);
    assert_eq!(w.posts("/start_profile").len(), 1);
    assert_eq!(body(&w.posts("/start_profile")[0]), json!({}));

    let o = startstop::stop(&stop_args(capture(&[
        "capture",
        "stop",
        "--router-url",
        &router.url,
    ])))
    .unwrap();
    assert_eq!(o.outcome.code(), 0, "{o:#?}");
    assert_eq!(w.posts("/stop_profile").len(), 1);
}

#[test]
fn a_dead_worker_and_a_vllm_without_profiler_fail_alone() {
    let py = router_or_skip!();
    let vdir = tempfile::tempdir().unwrap();
    let good = TestWorker::sglang(1);
    let dying = TestWorker::sglang(1);
    let slow = TestWorker::sglang(1);
    let no_cfg = TestWorker::vllm(1, None);
    let vllm = TestWorker::vllm(2, Some(vdir.path()));
    let all = [&good, &dying, &slow, &no_cfg, &vllm];
    let mut args: Vec<String> = vec!["--worker-urls".into()];
    args.extend(all.iter().map(|w| w.url().to_string()));
    let router = Router::launch(&py, &args, 5);
    // after the router registered them: one dies on profiling calls, one is slow
    dying.set(|b| b.die = true);
    slow.set(|b| b.delay = std::time::Duration::from_millis(1500));

    let o = startstop::start(&start_args(capture(&[
        "capture",
        "start",
        "--router-url",
        &router.url,
        "--timeout",
        "10",
    ])))
    .unwrap();
    assert_eq!(o.outcome.code(), 1);
    let row = |w: &TestWorker| o.workers.iter().find(|r| r.url == w.url()).unwrap().clone();
    assert!(row(&good).ok());
    assert!(row(&slow).ok());
    assert!(row(&vllm).ok());
    assert_eq!(row(&vllm).backend.unwrap().name(), "vllm");
    let d = row(&dying);
    assert!(!d.ok());
    assert_eq!(d.start.as_ref().unwrap().failure.as_deref(), Some("closed"));
    let n = row(&no_cfg);
    assert!(!n.ok());
    assert_eq!(n.start.as_ref().unwrap().status, Some(404));
    assert!(n.hint().contains("--profiler-config"), "{}", n.hint());
    // the slow server did not hold up the others: each answered on its own clock
    assert!(row(&good).start.as_ref().unwrap().ms < 1000);
    assert!(row(&slow).start.as_ref().unwrap().ms >= 1500);
    for w in all {
        assert_eq!(w.posts("/start_profile").len(), 1, "{}", w.url());
    }
    // vLLM's start has no body
    assert_eq!(vllm.posts("/start_profile")[0].body, "");
}

#[test]
fn pd_router_worker_type_filter_calls_only_decode() {
    let py = router_or_skip!();
    let prefill = TestWorker::sglang(1);
    let decode = TestWorker::sglang(1);
    let router = Router::launch(
        &py,
        &[
            "--pd-disaggregation".into(),
            "--prefill".into(),
            prefill.url().into(),
            "--decode".into(),
            decode.url().into(),
        ],
        2,
    );
    let o = startstop::start(&start_args(capture(&[
        "capture",
        "start",
        "--router-url",
        &router.url,
        "--worker-type",
        "decode",
        "--backend",
        "sglang",
    ])))
    .unwrap();
    assert_eq!(o.outcome.code(), 0);
    assert_eq!(o.workers.len(), 1);
    assert_eq!(o.workers[0].worker_type.as_deref(), Some("decode"));
    assert_eq!(decode.posts("/start_profile").len(), 1);
    assert!(prefill.posts("/start_profile").is_empty());
    assert!(
        o.notes
            .iter()
            .any(|n| n.contains(prefill.url()) && n.contains("prefill")),
        "{:?}",
        o.notes
    );
}

#[test]
fn vllm_run_with_step_folder_and_load_through_the_router() {
    let py = router_or_skip!();
    let vdir = tempfile::tempdir().unwrap();
    let ws = [
        TestWorker::vllm(2, Some(vdir.path())),
        TestWorker::vllm(1, Some(vdir.path())),
    ];
    for w in &ws {
        w.set(|b| b.slow_write = Some(std::time::Duration::from_millis(800)));
    }
    let mut args: Vec<String> = vec!["--worker-urls".into()];
    args.extend(ws.iter().map(|w| w.url().to_string()));
    let router = Router::launch(&py, &args, 2);
    std::fs::write(
        vdir.path().join("old.pt.trace.json.gz"),
        b"from an earlier run",
    )
    .unwrap();
    let dir = vdir.path().to_str().unwrap();
    let o = session::run(&run_args(capture(&[
        "capture",
        "run",
        "--router-url",
        &router.url,
        "--output-dir",
        dir,
        "--step",
        "7",
        "--requests",
        "4",
        "--settle",
        "0.5",
        "--flush-timeout",
        "30",
    ])))
    .unwrap();
    assert_eq!(o.outcome.code(), 0, "{o:#?}");
    for w in &ws {
        assert_eq!(w.posts("/start_profile").len(), 1);
        assert_eq!(w.posts("/stop_profile").len(), 1);
    }
    let completions: Vec<Value> = ws
        .iter()
        .flat_map(|w| w.posts("/v1/completions"))
        .map(|r| body(&r))
        .collect();
    assert_eq!(completions.len(), 4);
    assert!(
        completions
            .iter()
            .all(|b| b["model"] == "tiny-llama" && b["max_tokens"] == 32),
        "{completions:?}"
    );
    // this capture's 3 files, fully written, moved into step_7; the old file stays where it was
    let step = vdir.path().join("step_7");
    assert_eq!(o.trace_dir.as_deref(), Some(step.as_path()));
    let mut in_step: Vec<String> = std::fs::read_dir(&step)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with("merged-"))
        .collect();
    in_step.sort();
    assert_eq!(in_step.len(), 3, "{in_step:?}");
    assert!(vdir.path().join("old.pt.trace.json.gz").exists());
    for f in &o.traces[0].files {
        assert_eq!(
            std::fs::metadata(&f.0).unwrap().len(),
            f.1,
            "{}",
            f.0.display()
        );
    }
    check_post(&o, &step, 3 * ws[0].kernels_per_file() as u64);
}
