//! `rankprof inflate` (hidden): decompresses trace files in parallel with the crate's own gzip
//! backend (flate2 on zlib-rs) and throws the bytes away. It is the floor the `bench` script
//! measures `merge` and `analyze` against: no JSON work at all, just inflate. It opens files as
//! the reader does ([`crate::trace::reader::open`]: regular files only, every gzip member's
//! trailer checked).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use rayon::prelude::*;

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
