//! `rankprof capture` and `rankprof nsys`: drive the profilers of running servers.
//!
//! People profiling an SGLang or vLLM deployment read the router port from a log, loop over
//! `GET /workers` with curl, send requests by hand, guess when the traces are flushed, then merge
//! them with other tools. `capture run` does the loop in one command and says what went wrong
//! per server:
//!
//! 1. [`workers`] finds the servers (router `GET /workers`, `--worker-url`, `--from-log` read
//!    by [`fromlog`]), one per DP-aware `url@N` group;
//! 2. [`dialect`] knows what SGLang and vLLM expect and what their answers mean (a 500 after
//!    `num_steps` is success; vLLM's 404 means no `--profiler-config`);
//! 3. [`fanout`] calls every server at once, each with its own timeout ([`http`]: bodies read
//!    whole up to 64 MiB, a body cut short is a failure; https trusting [`tls`]'s `--ca-cert`
//!    authorities too), and says what it is waiting for;
//! 4. [`session`] orders start → [`traffic`] (load generation) → stop → [`flush`] wait → merge and analyze
//!    ([`startstop`]: `capture start` / `capture stop` on their own, with the [`record`]);
//! 5. [`crate::report::capture`] prints one row per server and sets the exit code (0 all ok, 1 any failed,
//!    2 usage);
//! 6. [`nsys`] does the same for Nsight Systems sessions; `capture run --profiler nsys`
//!    ([`profiler`]) drives servers running under `nsys profile` through their HTTP routes
//!    and collects nsys's reports instead of Kineto traces.
//!
//! Capture does not look inside traces: it hands the files to [`crate::pipeline`] (merge, then
//! analyze) through [`handoff::merge_and_analyze`]. Its settings come as [`options`] types;
//! the `capture` command (in the command layer) turns the command line into them and prints
//! the outcome.

// not API: for tests
#[doc(hidden)]
pub mod calls;
pub(crate) mod dialect;
// not API: for tests
#[doc(hidden)]
pub mod fanout;
pub(crate) mod flush;
pub(crate) mod fromlog;
pub(crate) mod handoff;
// not API: for tests
#[doc(hidden)]
pub mod http;
pub mod nsys;
pub(crate) mod options;
pub(crate) mod profiler;
pub(crate) mod record;
pub mod session;
pub mod startstop;
pub(crate) mod tls;
pub(crate) mod traffic;
mod window;
// not API: for tests/fuzz
#[doc(hidden)]
pub mod workers;

pub use options::WorkerType;
pub use options::{Activity, Backend, Profiler};
pub use options::{ApiKey, CaptureOptions, ProfileSettings, StartOptions, StopOptions, Targets};
pub use tls::CaCert;
