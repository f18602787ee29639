//! Benchmark of `analyze` on a large multi-rank set, against the floor of the same work:
//!
//! 1. `analyze` (the library call the CLI makes), peak RSS of this process after it;
//! 2. the reader alone (every event parsed, callback empty);
//! 3. a pure parallel inflate of the same files (flate2, output discarded);
//! 4. parallel `zcat` of the same files to /dev/null.
//!
//! Each stage reports wall time, CPU time (user + sys), MB/s of decompressed JSON, and the
//! ratio of its wall time to analyze's. Run it on an idle machine for meaningful wall times:
//!
//! ```text
//! python3 benches/make_bench_set.py --out bench-data/big8 --ranks 8 --copies 15   # ~1.05 GB
//! cargo bench --bench analyze -- bench-data/big8 [-j 2] [--runs 3]
//! ```

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use rayon::prelude::*;

/// (user + sys of this process, user + sys of its waited-for children), seconds.
fn cpu_times() -> (f64, f64) {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name, which is in parentheses.
    let rest = stat.rsplit_once(')').map_or("", |x| x.1);
    let f: Vec<f64> = rest
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0.0))
        .collect();
    let tick = 100.0;
    let g = |i: usize| f.get(i).copied().unwrap_or(0.0) / tick;
    // utime, stime, cutime, cstime are fields 14-17, i.e. 11-14 after the name.
    (g(11) + g(12), g(13) + g(14))
}

fn peak_rss_kib() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

struct Stage {
    name: &'static str,
    wall: f64,
    cpu: f64,
}

fn best_of<F: FnMut()>(name: &'static str, runs: usize, children: bool, mut f: F) -> Stage {
    let mut best = Stage {
        name,
        wall: f64::MAX,
        cpu: 0.0,
    };
    for _ in 0..runs {
        let (c0, k0) = cpu_times();
        let t = Instant::now();
        f();
        let wall = t.elapsed().as_secs_f64();
        let (c1, k1) = cpu_times();
        let cpu = if children { k1 - k0 } else { c1 - c0 };
        if wall < best.wall {
            best = Stage { name, wall, cpu };
        }
    }
    best
}

fn inflate(path: &Path) -> u64 {
    let f = std::fs::File::open(path).expect("open");
    let mut d = flate2::read::MultiGzDecoder::new(std::io::BufReader::with_capacity(1 << 18, f));
    let mut buf = vec![0u8; 1 << 20];
    let mut n = 0u64;
    loop {
        match d.read(&mut buf) {
            Ok(0) => return n,
            Ok(k) => n += k as u64,
            Err(e) => panic!("{}: {e}", path.display()),
        }
    }
}

fn main() {
    let mut dir: Option<PathBuf> = None;
    let mut jobs = std::thread::available_parallelism().map_or(2, |n| n.get());
    let mut runs = 3;
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "-j" => jobs = it.next().and_then(|v| v.parse().ok()).unwrap_or(jobs),
            "--runs" => runs = it.next().and_then(|v| v.parse().ok()).unwrap_or(runs),
            "--bench" => {}
            other => dir = Some(PathBuf::from(other)),
        }
    }
    let dir = dir.unwrap_or_else(|| PathBuf::from("bench-data/big8"));
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| {
            panic!(
                "{}: {e} (make it with benches/make_bench_set.py)",
                dir.display()
            )
        })
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(".json.gz"))
        .collect();
    files.sort();
    let gz: u64 = files
        .iter()
        .map(|f| f.metadata().map_or(0, |m| m.len()))
        .sum();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs)
        .build()
        .expect("pool");
    let json: u64 = pool.install(|| files.par_iter().map(|f| inflate(f)).sum());
    println!(
        "{} files in {}: {:.1} MB gzip, {:.1} MB JSON; {jobs} threads, best of {runs}",
        files.len(),
        dir.display(),
        gz as f64 / 1e6,
        json as f64 / 1e6
    );

    let args = rankprof::analyze::AnalyzeOptions {
        profile_dir: Some(dir.clone()),
        jobs: Some(jobs),
        ..Default::default()
    };
    let mut verdict = Vec::new();
    let analyze = best_of("analyze", runs, false, || {
        let a = rankprof::analyze::analyze(&args).expect("analyze");
        verdict = a.verdict.lines.clone();
    });
    let rss = peak_rss_kib();
    let reader = best_of("reader only", runs, false, || {
        pool.install(|| {
            files.par_iter().for_each(|f| {
                let mut n = 0u64;
                rankprof::trace::read_trace(f, |_| n += 1).expect("read");
            })
        })
    });
    let inflate_s = best_of("pure inflate", runs, false, || {
        pool.install(|| {
            files.par_iter().for_each(|f| {
                inflate(f);
            })
        })
    });
    let list: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    let zcat = best_of("parallel zcat", runs, true, || {
        let st = Command::new("sh")
            .arg("-c")
            .arg(format!(
                "printf '%s\\n' \"$@\" | xargs -P {jobs} -n 1 zcat > /dev/null"
            ))
            .arg("sh")
            .args(&list)
            .status()
            .expect("zcat");
        assert!(st.success());
    });

    println!(
        "{:<14} {:>8} {:>8} {:>9} {:>12}",
        "stage", "wall s", "cpu s", "MB/s", "analyze/this"
    );
    for s in [&analyze, &reader, &inflate_s, &zcat] {
        println!(
            "{:<14} {:>8.3} {:>8.2} {:>9.0} {:>12.2}",
            s.name,
            s.wall,
            s.cpu,
            json as f64 / 1e6 / s.wall,
            analyze.wall / s.wall
        );
    }
    println!("peak RSS after analyze: {:.1} MiB", rss as f64 / 1024.0);
    for l in verdict {
        println!("  {l}");
    }
}
