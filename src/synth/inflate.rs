//! `rankprof inflate` (hidden): decompresses trace files in parallel with the crate's own gzip
//! backend (flate2 on zlib-rs) and throws the bytes away. It is the floor the `bench` script
//! measures `merge` and `analyze` against: no JSON work at all, just inflate.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use flate2::bufread::MultiGzDecoder;
use rayon::prelude::*;

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

/// Inflates every file on `jobs` threads (`None`: all cores); each file's byte count, in
/// order, and the wall time.
pub fn inflate_all(files: &[PathBuf], jobs: Option<usize>) -> Result<(Vec<u64>, f64)> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs.unwrap_or(0))
        .build()
        .context("starting worker threads")?;
    let t0 = Instant::now();
    let sizes: Vec<Result<u64>> =
        pool.install(|| files.par_iter().map(|p| inflate_file(p)).collect());
    let secs = t0.elapsed().as_secs_f64();
    Ok((sizes.into_iter().collect::<Result<_>>()?, secs))
}
