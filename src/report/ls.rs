//! `rankprof ls` (being written).
use anyhow::Result;

use crate::cli::LsArgs;

pub fn run(_args: &LsArgs) -> Result<i32> {
    anyhow::bail!("ls is not built yet")
}
