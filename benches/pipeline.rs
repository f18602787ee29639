//! `cargo bench --bench pipeline`: read and merge throughput on a generated 4-rank set
//! (~200 MB of JSON), against the crate's own pure inflate of the same files. Prints MB/s and
//! ratios; the 1 GB / 8-rank figures with zcat and peak RSS come from the `bench` script.

use std::io::Read;
use std::time::Instant;

use rankprof::merge::{gather, merge_group, MergeOptions};
use rankprof::synth::{write_set, SynthOptions};
use rankprof::trace::read_trace;

fn best<F: FnMut()>(runs: usize, mut f: F) -> f64 {
    (0..runs)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}

fn main() {
    let dir = tempfile::tempdir().expect("temp dir");
    let cfg = SynthOptions {
        tp: 4,
        target_bytes: Some(50_000_000),
        layers: 16,
        ..Default::default()
    };
    write_set(&cfg, dir.path()).expect("synth");
    let d = gather(Some(dir.path()), &[], false, None, None).expect("discover");
    let files: Vec<_> = d.groups[0].files.iter().map(|f| f.path.clone()).collect();
    let mut bytes = 0u64;
    let inflate = best(3, || {
        bytes = 0;
        for f in &files {
            let (mut r, _) = rankprof::trace::read::reader::open(f).expect("open");
            let mut buf = vec![0u8; 1 << 20];
            while let Ok(n) = r.read(&mut buf) {
                if n == 0 {
                    break;
                }
                bytes += n as u64;
            }
        }
    });
    let read = best(3, || {
        for f in &files {
            read_trace(f, |_| {}).expect("read");
        }
    });
    let out = dir.path().join("out").join("merged.trace.json.gz");
    std::fs::create_dir_all(out.parent().expect("parent")).expect("mkdir");
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("pool");
    let merge = best(3, || {
        pool.install(|| merge_group(&d.groups[0], &out, &MergeOptions::default()).expect("merge"));
    });
    let mb = bytes as f64 / 1e6;
    println!(
        "input: {} files, {mb:.1} MB JSON (one thread each stage)",
        files.len()
    );
    for (name, s) in [("inflate", inflate), ("read", read), ("merge", merge)] {
        println!(
            "{name:<8} {s:>7.3} s  {:>7.1} MB/s  x inflate {:>5.2}",
            mb / s,
            s / inflate
        );
    }
}
