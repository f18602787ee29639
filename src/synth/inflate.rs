//! `rankprof inflate` (hidden): decompresses trace files in parallel with the crate's own gzip
//! backend (flate2 on zlib-rs) and throws the bytes away. It is the floor the `bench` script
//! measures `merge` and `analyze` against: no JSON work at all, just inflate. It opens files as
//! the reader does ([`crate::trace::reader::open`]: regular files only, every gzip member's
//! trailer checked).

use std::io::Read;
use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result};
use rayon::prelude::*;

use crate::cli::InflateArgs;
use crate::commands::exit;

/// Decompressed (or, for plain files, read) bytes of one file.
pub fn inflate_file(path: &Path) -> Result<u64> {
    let (mut src, _gzip) =
        crate::trace::reader::open(path).map_err(|e| anyhow::anyhow!("reading {e}"))?;
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
