//! `rankprof synth`: deterministic, realistic Kineto traces (to be written).

use anyhow::Result;

use crate::cli::SynthArgs;

pub fn run(_args: &SynthArgs) -> Result<i32> {
    anyhow::bail!("synth is not built yet")
}
