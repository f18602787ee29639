//! `rankprof demo` (being written).
use anyhow::Result;

use crate::cli::DemoArgs;

pub fn run(_args: &DemoArgs) -> Result<i32> {
    anyhow::bail!("demo is not built yet")
}
