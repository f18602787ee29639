//! `watch` command-line definitions (clap): the worker flags and profiler settings of
//! `capture`, plus the polling, trigger and capture-limit flags.

use std::path::PathBuf;

use clap::Args;

use super::capture::{CaptureTargets, ProfileSettingsArgs};

#[derive(Args, Debug, Clone, Default)]
pub struct WatchArgs {
    #[command(flatten)]
    pub targets: CaptureTargets,
    #[command(flatten)]
    pub profile: ProfileSettingsArgs,
    /// Seconds between polls.
    #[arg(long, default_value_t = 1.0, value_name = "SECS")]
    pub interval: f64,
    /// Seconds one poll request may take before its worker is marked `timeout` (default: half
    /// the interval).
    #[arg(long = "poll-timeout", value_name = "SECS")]
    pub poll_timeout: Option<f64>,
    /// Stop watching after this many seconds.
    #[arg(long, value_name = "SECS")]
    pub duration: Option<f64>,
    /// Stop watching after this many polls.
    #[arg(long = "max-polls", value_name = "N")]
    pub max_polls: Option<u64>,
    /// Capture when this holds, e.g. 'waiting spread > 32 for 10s' (repeatable: any fires).
    /// Grammar: METRIC AGG OP THRESHOLD [for DURATION]; METRIC running|waiting|tokens|
    /// token_usage|throughput; AGG max/mean|spread|cv|max|min|mean; OP > >= < <=.
    #[arg(long, value_name = "EXPR")]
    pub trigger: Vec<String>,
    /// Capture at the first poll.
    #[arg(long = "trigger-now")]
    pub trigger_now: bool,
    /// Seconds after a capture before a trigger may fire again.
    #[arg(long, default_value_t = 60.0, value_name = "SECS")]
    pub cooldown: f64,
    /// Captures before watch ends (it exits after the last).
    #[arg(long = "max-captures", default_value_t = 1, value_name = "N")]
    pub max_captures: u32,
    /// The longest a capture may profile (its --capture-duration is cut to this; with
    /// --num-steps alone, the wait for the servers to stop by themselves too).
    #[arg(
        long = "max-capture-secs",
        default_value_t = 120.0,
        value_name = "SECS"
    )]
    pub max_capture_secs: f64,
    /// How long a capture profiles (default 10 s, unless --num-steps is given).
    #[arg(long = "capture-duration", value_name = "SECS")]
    pub capture_duration: Option<f64>,
    /// Seconds to wait for a capture's trace files to appear and stop growing.
    #[arg(long = "flush-timeout", default_value_t = 300.0, value_name = "SECS")]
    pub flush_timeout: f64,
    /// Seconds a capture's trace files must stay the same size to count as written.
    #[arg(long, default_value_t = 3.0, value_name = "SECS")]
    pub settle: f64,
    /// Seconds a stop request may take (stopping writes the traces).
    #[arg(long = "stop-timeout", default_value_t = 600.0, value_name = "SECS")]
    pub stop_timeout: f64,
    /// Write the load timeline here (default: OUTPUT_DIR/watch-<UTC>.jsonl, beside the traces).
    #[arg(long, value_name = "FILE")]
    pub timeline: Option<PathBuf>,
    /// The metric of the sparklines: running, waiting, tokens, token_usage, throughput.
    #[arg(long, default_value = "waiting", value_name = "METRIC")]
    pub spark: String,
}
