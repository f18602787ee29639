//! `rankprof watch`: follow the load of every DP rank of a live deployment, and capture a
//! profile at the moment the ranks drift apart.
//!
//! A profile taken at a random moment often shows a balanced system: the imbalance that hurt
//! came and went. `watch` polls every server's load once per `interval`, keeps the whole
//! timeline as evidence, and when a trigger says the ranks drifted apart (`waiting spread > 32
//! for 10s`) runs the same capture as `capture run` (start every server, wait, stop, flush,
//! merge, analyze). The merged trace then carries the load as counter tracks, and the analysis
//! says what the load was when the slow rank's onset began.
//!
//! - [`crate::load::loads`] reads what servers say about their load (`/v1/loads`, `/metrics`, `/get_load`),
//!   [`crate::load::prom`] the Prometheus text format;
//! - [`poll`] asks every worker at once on a deadline (a dead or hung worker never holds up the
//!   loop);
//! - [`crate::load::stats`] and [`trigger`]: how uneven a metric is across ranks, and the trigger grammar;
//! - [`crate::load::timeline`]: the JSONL timeline (streamed) and the bounded sparkline history;
//! - [`run`]: the loop (poll, trigger, capture on its own thread, cooldown, end);
//! - [`crate::load::evidence`]: the timeline found beside the traces by `merge` (counter tracks) and
//!   `analyze` (a note on the load at the onset);
//! - [`crate::report::watch`]: the live table drawn on a terminal.
//!
//! Worker discovery is `crate::capture::workers::resolve` and a capture is
//! `crate::capture::session::run`; the `watch` command turns the command line into
//! [`WatchOptions`] and prints the [`Event`]s.

pub(crate) mod poll;
pub(crate) mod run;
pub(crate) mod trigger;

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use serde::Serialize;

use crate::capture::session::RunOutcome;
use crate::capture::workers::Worker;
use crate::capture::{CaptureOptions, Targets};
use crate::trace::Ns;

pub use crate::load::loads::{Metric, RankLoad};
pub use poll::{Poll, Status, WorkerPoll};
pub use run::watch;
pub use trigger::{Armed, Fired, Trigger};

/// What `watch` does, independent of the command line (every default equals the command
/// line's).
#[derive(Debug, Clone)]
pub struct WatchOptions {
    /// Which workers (as `capture`); `timeout` is the discovery and capture request timeout.
    pub targets: Targets,
    /// Seconds between polls.
    pub interval: f64,
    /// Seconds one poll request may take (`None`: half the interval).
    pub poll_timeout: Option<f64>,
    /// Stop watching after this many seconds.
    pub duration: Option<f64>,
    /// Stop watching after this many polls.
    pub max_polls: Option<u64>,
    /// Capture when any of these fires.
    pub triggers: Vec<Trigger>,
    /// Capture at the first poll.
    pub trigger_now: bool,
    /// The capture run when a trigger fires (its `targets` are replaced by [`Self::targets`]).
    /// Without `duration` and `num_steps` it profiles for [`DEFAULT_CAPTURE_SECS`].
    pub capture: CaptureOptions,
    /// Seconds after a capture before a trigger may fire again.
    pub cooldown: f64,
    /// Captures before `watch` ends (it ends after the last one).
    pub max_captures: u32,
    /// The longest a capture may profile: its duration is cut to this; with `num_steps`
    /// alone, the wait for the servers to stop by themselves too.
    pub max_capture_secs: f64,
    /// Where the timeline goes (default: `watch-<UTC>.jsonl` in the capture's trace folder).
    pub timeline: Option<PathBuf>,
    /// The metric of the sparklines.
    pub spark: Metric,
    /// Seconds the sparklines cover.
    pub spark_window: f64,
    /// Set from outside (Ctrl-C) to end the watch after the current poll.
    pub stop: Option<Arc<AtomicBool>>,
}

/// How long a triggered capture profiles when neither a duration nor `num_steps` is given.
pub const DEFAULT_CAPTURE_SECS: f64 = 10.0;

impl Default for WatchOptions {
    fn default() -> Self {
        WatchOptions {
            targets: Targets::default(),
            interval: 1.0,
            poll_timeout: None,
            duration: None,
            max_polls: None,
            triggers: Vec::new(),
            trigger_now: false,
            capture: CaptureOptions::default(),
            cooldown: 60.0,
            max_captures: 1,
            max_capture_secs: 120.0,
            timeline: None,
            spark: Metric::Waiting,
            spark_window: 60.0,
            stop: None,
        }
    }
}

/// One capture a trigger started.
#[derive(Debug, Serialize)]
pub struct CaptureRecord {
    /// 1, 2, … in the order they ran.
    pub n: u32,
    /// What fired it.
    pub fired: Fired,
    pub started_ns: Ns,
    pub ended_ns: Ns,
    /// How the capture ended (failed when it could not run at all; serialized as its exit
    /// code).
    #[serde(rename = "exit_code")]
    pub ended: crate::exit::Outcome,
    /// Why it could not run (`capture run` refused: no workers, bad settings).
    pub error: Option<String>,
    pub outcome: Option<RunOutcome>,
}

/// How often one worker did not answer.
#[derive(Clone, Debug, Default, Serialize, PartialEq, Eq)]
pub struct WorkerTally {
    pub url: String,
    pub ok: u64,
    pub dead: u64,
    pub timeout: u64,
    pub error: u64,
    /// The last error seen.
    pub last_error: Option<String>,
}

/// What a watch did.
#[derive(Debug, Serialize)]
pub struct WatchOutcome {
    pub router: Option<String>,
    pub workers: Vec<WorkerTally>,
    pub polls: u64,
    pub timeline: Option<PathBuf>,
    /// The triggers that started a capture (one that held during a capture or a cooldown
    /// fires when it is over, if it still holds).
    pub fired: Vec<Fired>,
    pub captures: Vec<CaptureRecord>,
    /// `duration`, `max-polls`, `max-captures`, `interrupted`.
    pub end_reason: String,
    pub notes: Vec<String>,
    /// Ok; or the worst capture's (serialized as its exit code).
    #[serde(rename = "exit_code")]
    pub outcome: crate::exit::Outcome,
}

/// Where the watch is, for the live view.
pub struct ViewState<'a> {
    pub poll: &'a Poll,
    pub history: &'a crate::load::timeline::History,
    pub triggers: &'a [Armed],
    pub spark: Metric,
    pub spark_window: f64,
    pub interval: f64,
    /// Captures started so far, and the most allowed.
    pub captures: u32,
    pub max_captures: u32,
    /// The capture running now.
    pub capturing: Option<u32>,
    /// Seconds until a trigger may fire again.
    pub cooldown_left: Option<f64>,
}

/// What the watch reports as it goes (`line`: the JSON line written to the timeline).
pub enum Event<'a> {
    Started {
        workers: &'a [Worker],
        router: Option<&'a str>,
        timeline: Option<&'a std::path::Path>,
        notes: &'a [String],
        line: &'a str,
    },
    Poll {
        state: ViewState<'a>,
        line: &'a str,
    },
    Fired {
        fired: &'a Fired,
        n: u32,
        line: &'a str,
    },
    /// The watch stopped polling and waits for the capture in flight.
    Waiting {
        n: u32,
    },
    CaptureDone {
        record: &'a CaptureRecord,
        line: &'a str,
    },
    Ended {
        reason: &'a str,
        line: &'a str,
    },
}
