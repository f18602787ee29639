//! `rankprof inflate` (hidden): decompresses trace files in parallel with the crate's own gzip
//! backend (flate2 on zlib-rs) and throws the bytes away. It is the floor the `bench` script
//! measures `merge` and `analyze` against: no JSON work at all, just inflate. It opens files as
//! the reader does ([`crate::trace::read::reader::open`]: regular files only, every gzip member's
//! trailer checked). With a deflate level it also compresses the bytes again (into nothing):
//! the floor for `merge`, which must read and write.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use rayon::prelude::*;

/// Decompressed (or, for plain files, read) bytes of one file; with `deflate`, each buffer is
/// compressed again at that gzip level and the output discarded.
pub(crate) fn inflate_file(path: &Path, deflate: Option<u32>) -> Result<u64> {
    let (mut src, _gzip) =
        crate::trace::read::reader::open(path).map_err(|e| anyhow::anyhow!("reading {e}"))?;
    let mut buf = vec![0u8; 1 << 20];
    let mut total = 0u64;
    let mut enc = deflate.map(|l| {
        flate2::write::GzEncoder::new(std::io::sink(), flate2::Compression::new(l.min(9)))
    });
    loop {
        let n = src
            .read(&mut buf)
            .with_context(|| format!("{}: inflating after {total} bytes", path.display()))?;
        if n == 0 {
            if let Some(e) = enc {
                e.finish().context("deflating")?;
            }
            return Ok(total);
        }
        if let Some(e) = enc.as_mut() {
            e.write_all(&buf[..n]).context("deflating")?;
        }
        total += n as u64;
    }
}

/// Inflates (and, with `deflate`, compresses again) every file on `jobs` threads (`None`: all
/// cores); each file's byte count, in order, and the wall time.
pub(crate) fn inflate_all(
    files: &[PathBuf],
    jobs: Option<usize>,
    deflate: Option<u32>,
) -> Result<(Vec<u64>, f64)> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs.unwrap_or(0))
        .build()
        .context("starting worker threads")?;
    let t0 = Instant::now();
    let sizes: Vec<Result<u64>> =
        pool.install(|| files.par_iter().map(|p| inflate_file(p, deflate)).collect());
    let secs = t0.elapsed().as_secs_f64();
    Ok((sizes.into_iter().collect::<Result<_>>()?, secs))
}
