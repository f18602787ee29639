//! `rankprof inflate` (hidden): the decompression floor the benchmarks measure against.

use anyhow::Result;

use crate::cli::synth::InflateArgs;
use crate::exit;
use crate::synth::inflate::inflate_all;

pub(crate) fn run(args: &InflateArgs) -> Result<i32> {
    let (sizes, secs) = inflate_all(&args.files, args.jobs, args.deflate)?;
    let mut total = 0u64;
    for (p, n) in args.files.iter().zip(sizes) {
        total += n;
        eprintln!("{}  {n} bytes", p.display());
    }
    super::outln!(
        "inflated{} {} files, {total} bytes in {secs:.3} s ({:.1} MB/s)",
        args.deflate
            .map_or(String::new(), |l| format!(" and deflated (level {l})")),
        args.files.len(),
        total as f64 / 1e6 / secs.max(1e-9)
    )?;
    Ok(exit::OK)
}
