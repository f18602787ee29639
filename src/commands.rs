//! Dispatch from parsed command lines to the modules, and the exit codes every command shares.

use anyhow::Result;

use crate::cli::Command;

/// Exit codes (documented in README.md).
pub mod exit {
    /// Everything worked; for `compare`, no regression.
    pub const OK: i32 = 0;
    /// The job ran but found a failure: a regression (`compare`), a worker that failed (`capture`).
    pub const FAILED: i32 = 1;
    /// Bad usage or unreadable input: nothing useful was produced.
    pub const USAGE: i32 = 2;
    /// Output written, but some input was damaged: merged/analyzed as far as it could be read.
    pub const PARTIAL: i32 = 3;
}

/// Runs one command, prints any error on stderr, returns the exit code.
pub fn main(cmd: Command) -> i32 {
    match run(cmd) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            exit::USAGE
        }
    }
}

pub fn run(cmd: Command) -> Result<i32> {
    match cmd {
        Command::Ls(a) => crate::report::ls::run(&a),
        Command::Merge(a) => crate::merge::run(&a),
        Command::Synth(a) => crate::synth::run(&a),
        Command::Demo(a) => crate::report::demo::run(&a),
        Command::Inflate(a) => crate::synth::inflate::run(&a),
        Command::Analyze(a) => crate::analyze::run(&a),
        Command::Compare(a) => crate::compare::run(&a),
        Command::Capture(c) => crate::capture::run(&c),
        Command::Nsys(c) => crate::capture::nsys::run(&c),
    }
}
