//! Fan-out speed: `capture start` and `capture stop` on 64 in-process test servers that each
//! take 200 ms to answer a profiling call. Sequentially that is 12.8 s per step; all at once it
//! should be one answer time plus overhead (target: < 1 s). Prints the wall times.
//!
//!     cargo bench --bench capture_fanout

#[path = "../tests/support/mod.rs"]
mod support;

use std::time::{Duration, Instant};

use rankprof::capture::startstop;
use rankprof::cli::capture::CaptureCommand;

use support::capture;
use support::worker::TestWorker;

const WORKERS: usize = 64;
const DELAY: Duration = Duration::from_millis(200);
const ROUNDS: usize = 5;

fn main() {
    let workers: Vec<TestWorker> = (0..WORKERS).map(|_| TestWorker::sglang(1)).collect();
    for w in &workers {
        w.set(|b| b.delay = DELAY);
    }
    let urls: Vec<&str> = workers.iter().map(TestWorker::url).collect();
    for backend in ["sglang", "auto"] {
        let mut start_s = Vec::new();
        let mut stop_s = Vec::new();
        for _ in 0..ROUNDS {
            let mut args = vec!["capture", "start", "--backend", backend, "--worker-url"];
            args.extend(&urls);
            let CaptureCommand::Start(a) = capture(&args) else {
                unreachable!()
            };
            let t0 = Instant::now();
            let o =
                startstop::start(&rankprof::commands::capture::start_options(&a)).expect("start");
            start_s.push(t0.elapsed().as_secs_f64());
            assert_eq!(
                o.outcome.code(),
                0,
                "{:?}",
                o.workers.iter().find(|r| !r.ok())
            );

            args[1] = "stop";
            let CaptureCommand::Stop(a) = capture(&args) else {
                unreachable!()
            };
            let t0 = Instant::now();
            let o = startstop::stop(&rankprof::commands::capture::stop_options(&a)).expect("stop");
            stop_s.push(t0.elapsed().as_secs_f64());
            assert_eq!(o.outcome.code(), 0);
        }
        let fmt = |v: &[f64]| {
            let mut s = v.to_vec();
            s.sort_by(f64::total_cmp);
            format!(
                "median {:.3} s, min {:.3} s, max {:.3} s",
                s[s.len() / 2],
                s[0],
                s[s.len() - 1]
            )
        };
        println!(
            "capture fan-out, {WORKERS} workers x {} ms, --backend {backend}, {ROUNDS} rounds:\n  start: {}\n  stop:  {}",
            DELAY.as_millis(),
            fmt(&start_s),
            fmt(&stop_s)
        );
    }
    let starts: usize = workers
        .iter()
        .map(|w| w.posts("/start_profile").len())
        .sum();
    assert_eq!(starts, 2 * ROUNDS * WORKERS);
}
