//! Test helpers shared by the capture tests and the fan-out benchmark.
#![allow(dead_code)]

pub mod http;
pub mod loads;
pub mod router;
pub mod worker;

use rankprof::cli::capture::CaptureCommand;
use rankprof::cli::watch::WatchArgs;
use rankprof::cli::{Cli, Command};

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

/// Parses a `rankprof watch …` command line (without the program name and `watch`).
pub fn watch_args(args: &[&str]) -> WatchArgs {
    let cli = <Cli as clap::Parser>::try_parse_from(
        ["rankprof", "watch"]
            .into_iter()
            .chain(args.iter().copied()),
    )
    .unwrap_or_else(|e| panic!("{args:?}: {e}"));
    match cli.command {
        Command::Watch(a) => a,
        other => panic!("not a watch command: {other:?}"),
    }
}
