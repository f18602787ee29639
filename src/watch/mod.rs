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
//! - [`loads`] reads what servers say about their load (`/v1/loads`, `/metrics`, `/get_load`),
//!   [`prom`] the Prometheus text format;
//! - [`poll`] asks every worker at once on a deadline (a dead or hung worker never holds up the
//!   loop);
//! - [`stats`] and [`trigger`]: how uneven a metric is across ranks, and the trigger grammar;
//! - [`timeline`]: the JSONL timeline (streamed) and the bounded sparkline history;
//! - [`run`]: the loop (poll, trigger, capture on its own thread, cooldown, end);
//! - [`evidence`]: the timeline found beside the traces by `merge` (counter tracks) and
//!   `analyze` (a note on the load at the onset);
//! - [`view`]: the live table drawn on a terminal.
//!
//! Worker discovery is `crate::capture::workers::resolve` and a capture is
//! `crate::capture::session::run`; `crate::commands::watch` turns the command line into
//! [`WatchOptions`] and prints the [`Event`]s.

pub mod loads;
pub mod prom;
pub mod stats;
pub mod trigger;

pub use loads::{Metric, RankLoad};
pub use trigger::{Armed, Fired, Trigger};
