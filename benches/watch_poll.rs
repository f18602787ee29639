//! The watch loop's own cost: 64 in-process SGLang test workers (2 DP ranks each, `/v1/loads`
//! from the real fixture's shape) whose answers take 0–35 ms, polled every second for 20 polls
//! through `rankprof::watch::watch` (timeline streamed to a file, sparkline history, one
//! trigger evaluated). Per poll: wall time minus the slowest worker's delay (the overhead of
//! the fan-out and collection), and the CPU time of the watch's own threads (the loop and the
//! pollers, from /proc/self/task; the test servers are not counted). Target: < 50 ms overhead.
//! Then memory over time: 16 workers every 20 ms for 1,000 polls with a 1 s sparkline window:
//! the resident size and the samples held must not grow once the window is full (the test
//! servers' request logs, in the same process, are cleared as it goes).
//!
//!     cargo bench --bench watch_poll            (WATCH_BENCH_POLLS=N for another poll count)

#[path = "../tests/support/mod.rs"]
mod support;

use std::time::Duration;

use rankprof::watch::{self, Event};

use support::loads::{Loads, Mode};
use support::watch_args;
use support::worker::TestWorker;

const WORKERS: usize = 64;

/// CPU seconds of this process's threads named `watch-*` (the pollers) and of the main thread
/// (the loop). Linux only; clock ticks of 10 ms.
fn watch_cpu_s() -> f64 {
    let pid = std::process::id().to_string();
    let mut ticks = 0u64;
    let Ok(rd) = std::fs::read_dir("/proc/self/task") else {
        return f64::NAN;
    };
    for t in rd.flatten() {
        let tid = t.file_name().to_string_lossy().into_owned();
        let Ok(stat) = std::fs::read_to_string(t.path().join("stat")) else {
            continue;
        };
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let comm = &stat[open + 1..close];
        if tid != pid && !comm.starts_with("watch-") {
            continue;
        }
        let f: Vec<&str> = stat[close + 2..].split_whitespace().collect();
        // fields 14 and 15 of stat (utime, stime) are 11 and 12 after the comm
        ticks += f.get(11).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        ticks += f.get(12).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    }
    ticks as f64 / 100.0
}

fn rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

fn stats(v: &[f64]) -> (f64, f64) {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    (s[s.len() / 2], s[s.len() - 1])
}

fn main() {
    let polls: u64 = std::env::var("WATCH_BENCH_POLLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20);
    let workers: Vec<TestWorker> = (0..WORKERS).map(|_| TestWorker::sglang_dp(1, 2)).collect();
    let mut slowest = Duration::ZERO;
    for (i, w) in workers.iter().enumerate() {
        let l = Loads::attach(w, 2, Mode::V1Loads);
        let d = Duration::from_millis(5 * (i % 8) as u64);
        l.hang(d);
        slowest = slowest.max(d);
    }
    let dir = tempfile::tempdir().unwrap();
    let timeline = dir.path().join("watch-bench.jsonl");
    let polls_s = polls.to_string();
    let mut args = vec![
        "--backend",
        "sglang",
        "--interval",
        "1",
        "--max-polls",
        &polls_s,
        "--timeline",
        timeline.to_str().unwrap(),
        "--trigger",
        "waiting spread > 1000 for 10s",
        "--output-dir",
        dir.path().to_str().unwrap(),
        "--worker-url",
    ];
    args.extend(workers.iter().map(TestWorker::url));
    let opts = rankprof::commands::watch::options(&watch_args(&args)).unwrap();
    let mut wall_ms = Vec::new();
    let mut cpu_after_first = f64::NAN;
    let o = watch::watch(&opts, &mut |e| {
        if let Event::Poll { state, .. } = e {
            assert!(state
                .poll
                .workers
                .iter()
                .all(|w| w.status == watch::Status::Ok));
            wall_ms.push(state.poll.ms as f64);
            if state.poll.seq == 0 {
                cpu_after_first = watch_cpu_s();
            }
        }
    })
    .unwrap();
    assert_eq!(o.polls, polls);
    let cpu_ms = (watch_cpu_s() - cpu_after_first) * 1e3 / (polls - 1) as f64;
    // the first poll pays for thread starts and first connections: reported apart
    let first = wall_ms[0];
    let overhead: Vec<f64> = wall_ms[1..]
        .iter()
        .map(|w| w - slowest.as_millis() as f64)
        .collect();
    let (om, ox) = stats(&overhead);
    println!(
        "watch poll loop: {WORKERS} workers ({} DP ranks), answers delayed 0-{} ms, every 1 s, {polls} polls:",
        2 * WORKERS,
        slowest.as_millis()
    );
    println!(
        "  overhead per poll (wall minus the slowest worker's delay): median {om:.1} ms, max {ox:.1} ms (first poll: {:.1} ms)",
        first - slowest.as_millis() as f64
    );
    println!(
        "  CPU of the watch's own threads (loop + pollers) per poll: {cpu_ms:.1} ms (mean over polls 2-{polls})"
    );
    assert!(om < 50.0, "overhead {om:.1} ms per poll (target < 50 ms)");
    drop(workers);

    // Memory over time: the sparkline rings fill up, then stay; the timeline is on disk.
    let workers: Vec<TestWorker> = (0..16).map(|_| TestWorker::sglang_dp(1, 2)).collect();
    for w in &workers {
        Loads::attach(w, 2, Mode::V1Loads);
    }
    let timeline = dir.path().join("watch-memory.jsonl");
    let mut args = vec![
        "--backend",
        "sglang",
        "--interval",
        "0.02",
        "--max-polls",
        "1000",
        "--timeline",
        timeline.to_str().unwrap(),
        "--worker-url",
    ];
    args.extend(workers.iter().map(TestWorker::url));
    let mut opts = rankprof::commands::watch::options(&watch_args(&args)).unwrap();
    opts.spark_window = 1.0;
    let mut marks = Vec::new();
    watch::watch(&opts, &mut |e| {
        if let Event::Poll { state, .. } = e {
            let seq = state.poll.seq;
            if seq % 50 == 0 {
                for w in &workers {
                    w.server.forget();
                }
            }
            if seq == 99 || seq == 499 || seq == 999 {
                marks.push((seq + 1, rss_mb(), state.history.samples()));
            }
        }
    })
    .unwrap();
    let size = std::fs::metadata(&timeline).map_or(0, |m| m.len());
    println!("memory: 16 workers (32 DP ranks) every 20 ms, 1 s sparkline window, 1000 polls:");
    for (n, rss, samples) in &marks {
        println!("  after {n:>4} polls: RSS {rss:.1} MB, sparkline samples held {samples}");
    }
    println!("  timeline streamed to disk: {:.1} MB", size as f64 / 1e6);
    assert_eq!(marks.len(), 3);
    // at most one window (1 s / 20 ms + 2) per DP rank, however long it runs
    assert!(marks.iter().all(|m| m.2 <= 32 * 52), "{marks:?}");
}
