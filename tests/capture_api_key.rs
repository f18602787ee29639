//! `capture --api-key` / `RANKPROF_API_KEY` against the real `sglang-router` started with
//! `--api-key`: without the key the router answers 401 and capture fails saying so (and never
//! shows a key); with it, every request to the router and to the workers carries
//! `Authorization: Bearer <key>` and the capture succeeds.

mod support;

use std::process::Command;

use rankprof::capture::startstop;
use rankprof::cli::capture::CaptureCommand;

use support::capture;
use support::router::Router;
use support::worker::TestWorker;

const KEY: &str = "s3cr3t-key-for-tests";

fn start_args(c: CaptureCommand) -> rankprof::capture::StartOptions {
    match c {
        CaptureCommand::Start(a) => rankprof::commands::capture::start_options(&a),
        _ => unreachable!(),
    }
}

#[test]
fn the_real_router_refuses_without_the_key_and_works_with_it() {
    let py = router_or_skip!();
    let ws = [TestWorker::sglang(1), TestWorker::sglang(1)];
    let mut args: Vec<String> = vec!["--worker-urls".into()];
    args.extend(ws.iter().map(|w| w.url().to_string()));
    let router = Router::launch_with_key(&py, &args, 2, Some(KEY));
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().to_str().unwrap();

    // 1. no key: the router's 401, said plainly; exit code 2; nothing started
    let o = Command::new(env!("CARGO_BIN_EXE_rankprof"))
        .args([
            "capture",
            "start",
            "--router-url",
            &router.url,
            "--output-dir",
            dir,
        ])
        .env_remove("RANKPROF_API_KEY")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("401 Unauthorized"), "{err}");
    assert!(
        err.contains("--api-key") && err.contains("RANKPROF_API_KEY"),
        "{err}"
    );
    assert!(ws.iter().all(|w| w.posts("/start_profile").is_empty()));

    // 2. a wrong key (from the environment): refused, and the key is not printed
    let o = Command::new(env!("CARGO_BIN_EXE_rankprof"))
        .args([
            "capture",
            "start",
            "--router-url",
            &router.url,
            "--output-dir",
            dir,
            "--json",
        ])
        .env("RANKPROF_API_KEY", "wrong-key-123")
        .output()
        .unwrap();
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(o.status.code(), Some(2), "{all}");
    assert!(
        all.contains("refused the API key (401 Unauthorized)"),
        "{all}"
    );
    assert!(!all.contains("wrong-key-123"), "the key was printed: {all}");

    // 3. the right key: the workers get it too, the start succeeds
    let o = startstop::start(&start_args(capture(&[
        "capture",
        "start",
        "--router-url",
        &router.url,
        "--output-dir",
        dir,
        "--api-key",
        KEY,
    ])))
    .unwrap();
    assert_eq!(o.outcome.code(), 0, "{o:#?}");
    assert!(!format!("{o:?}").contains(KEY), "the key is in the outcome");
    for w in &ws {
        let starts = w.posts("/start_profile");
        assert_eq!(starts.len(), 1, "{}", w.url());
        assert_eq!(
            starts[0].authorization.as_deref(),
            Some(format!("Bearer {KEY}").as_str())
        );
    }
    // the help shows the variable but never its value
    let h = Command::new(env!("CARGO_BIN_EXE_rankprof"))
        .args(["capture", "start", "--help"])
        .env("RANKPROF_API_KEY", "wrong-key-123")
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&h.stdout);
    assert!(
        help.contains("RANKPROF_API_KEY") && !help.contains("wrong-key-123"),
        "{help}"
    );
}
