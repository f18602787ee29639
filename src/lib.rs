//! # rankprof
//!
//! Find out why one GPU rank is slower than the others.
//!
//! The data path, one module per stage — **discover → read → merge | analyze | compare →
//! render** — with capture beside it:
//!
//! 1. [`trace::discover()`] finds the per-rank trace files of a profile (SGLang, vLLM and generic
//!    names) and gives each its [`trace::RankId`];
//! 2. [`trace::read_trace`] streams one file event by event as borrowed [`trace::Event`]s,
//!    salvaging everything before any damage;
//! 3. [`merge`] writes one Perfetto-ready trace from many ranks (labels, unique ids, aligned
//!    clocks); [`analyze`] turns events into per-rank tables and a verdict; [`compare`] gates a
//!    profile against a baseline; [`pipeline`] runs merge then analyze;
//! 4. [`report`] renders results (tables, CSV / JSON / markdown / HTML / Parquet) and computes
//!    nothing.
//!
//! [`capture`] drives the profilers of running servers and hands the files it collected to
//! [`pipeline`]; [`watch`] follows their load and runs a capture when the ranks drift apart.
//! [`synth`] generates deterministic traces for tests and benchmarks.
//!
//! Layers go one way: [`cli`] (clap definitions) → [`commands`] (arguments → options, call,
//! print, [`exit`] code) → the libraries above → [`trace`]. Every library entry point takes its
//! own options type ([`merge::MergeOptions`], [`analyze::AnalyzeOptions`],
//! [`compare::CompareOptions`], [`capture::CaptureOptions`], [`synth::SynthOptions`]) and no
//! library imports `cli` or `commands` (`tests/layering.rs` checks it).
//!
//! ```no_run
//! use std::path::Path;
//! let found = rankprof::trace::discover(Path::new("/tmp/profiles"), false).unwrap();
//! for group in &found.groups {
//!     for file in &group.files {
//!         let mut kernels = 0u64;
//!         let report = rankprof::trace::read_trace(&file.path, |ev| {
//!             if ev.cat.eq_str("kernel") { kernels += 1; }
//!         }).unwrap();
//!         println!("{} {}: {kernels} kernels, {} events", group.profile_id, file.label, report.events);
//!     }
//! }
//! ```

#![warn(unreachable_pub)]

pub mod analyze;
pub mod capture;
// not API: for the binaries and tests
#[doc(hidden)]
pub mod cli;
// not API: for the binaries and tests
#[doc(hidden)]
pub mod commands;
pub mod compare;
pub mod exit;
// not API: for tests and fuzz
#[doc(hidden)]
pub mod load;
pub mod merge;
pub mod pipeline;
pub(crate) mod progress;
pub mod report;
pub mod synth;
#[cfg(test)]
mod testrng;
pub mod trace;
pub mod watch;
