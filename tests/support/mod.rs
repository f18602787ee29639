//! Test helpers shared by the capture tests and the fan-out benchmark.
#![allow(dead_code)]

pub mod http;
pub mod router;
pub mod worker;

use rankprof::cli::{CaptureCommand, Cli, Command};

/// Parses a `rankprof capture …` command line (without the program name).
pub fn capture(args: &[&str]) -> CaptureCommand {
    let cli = <Cli as clap::Parser>::try_parse_from(
        std::iter::once("rankprof").chain(args.iter().copied()),
    )
    .unwrap_or_else(|e| panic!("{args:?}: {e}"));
    match cli.command {
        Command::Capture(c) => c,
        other => panic!("not a capture command: {other:?}"),
    }
}
