//! Merge (being written).
use anyhow::Result;

use crate::cli::MergeArgs;

pub fn run(_args: &MergeArgs) -> Result<i32> {
    anyhow::bail!("merge is not built yet")
}
