//! `rankprof inflate` (hidden): decompresses trace files in parallel with the crate's own gzip
//! backend (flate2 on zlib-rs) and throws the bytes away. It is the floor the `bench` script
//! measures `merge` and `analyze` against: no JSON work at all, just inflate.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result};
use flate2::bufread::MultiGzDecoder;
use rayon::prelude::*;

use crate::cli::InflateArgs;
use crate::commands::exit;

/// Decompressed (or, for plain files, read) bytes of one file.
pub fn inflate_file(path: &Path) -> Result<u64> {
    let file = File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let mut input = BufReader::with_capacity(1 << 18, file);
    let gzip = input
        .fill_buf()
        .with_context(|| format!("reading {}", path.display()))?
        .starts_with(&[0x1f, 0x8b]);
    let mut src: Box<dyn Read> = if gzip {
        Box::new(MultiGzDecoder::new(input))
    } else {
        Box::new(input)
    };
    let mut buf = vec![0u8; 1 << 20];
    let mut total = 0u64;
    loop {
        let n = src
            .read(&mut buf)
            .with_context(|| format!("{}: inflating after {total} bytes", path.display()))?;
        if n == 0 {
            return Ok(total);
        }
        total += n as u64;
    }
}

pub fn run(args: &InflateArgs) -> Result<i32> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(args.jobs.unwrap_or(0))
        .build()
        .context("starting worker threads")?;
    let t0 = Instant::now();
    let sizes: Vec<Result<u64>> =
        pool.install(|| args.files.par_iter().map(|p| inflate_file(p)).collect());
    let secs = t0.elapsed().as_secs_f64();
    let mut total = 0u64;
    for (p, s) in args.files.iter().zip(sizes) {
        let n = s?;
        total += n;
        eprintln!("{}  {n} bytes", p.display());
    }
    println!(
        "inflated {} files, {total} bytes in {secs:.3} s ({:.1} MB/s)",
        args.files.len(),
        total as f64 / 1e6 / secs.max(1e-9)
    );
    Ok(exit::OK)
}
