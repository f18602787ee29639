//! # rankprof
//!
//! Find out why one GPU rank is slower than the others.
//!
//! The data path, one module per stage — **discover → read → merge | analyze | compare →
//! render** — with capture beside it. The public entry points:
//!
//! | Stage | Entry point | Options → result |
//! |---|---|---|
//! | find the rank files | [`trace::discover()`], [`trace::discover_files`] | → [`trace::Discovery`] of [`trace::Group`]s, each file with its [`trace::RankId`] |
//! | read one file | [`trace::read_trace`], [`trace::read_trace_with`] | borrowed [`trace::Event`]s → [`trace::ReadReport`] (damage salvaged) |
//! | merge | [`merge::gather`], [`merge::merge_group`] | [`merge::MergeOptions`] → [`merge::MergeResult`] |
//! | analyze | [`analyze::analyze()`] | [`analyze::AnalyzeOptions`] → [`analyze::Analysis`] |
//! | merge then analyze | [`pipeline::merge_and_analyze`] | [`pipeline::PipelineOptions`] → [`pipeline::PipelineResult`] |
//! | compare | [`compare::compare()`] | [`compare::CompareOptions`] → [`compare::Compared`] |
//! | capture | [`capture::session::run`], [`capture::startstop::start`] / [`stop`](capture::startstop::stop), [`capture::nsys`] | [`capture::CaptureOptions`] → [`capture::session::RunOutcome`] |
//! | watch | [`watch::watch()`] | [`watch::WatchOptions`] → [`watch::WatchOutcome`] |
//! | render | [`report::write()`] (any [`report::Render`] in a [`report::Format`]), [`report::html::render`] | computes nothing |
//! | synthetic traces | [`synth::write_set`] | [`synth::SynthOptions`] → files |
//!
//! [`exit`] holds the exit codes the commands return and the one rule that combines them.
//!
//! Layers go one way: the command line (clap definitions, then arguments → options, call,
//! print, exit code) → the libraries above → [`trace`]. Every library entry point takes its
//! own options type and no library imports the command line (`tests/layering.rs` checks it).
//! Modules that are not listed here are internal (`pub(crate)`); the few items tests, fuzz
//! targets, benches and the binaries reach beyond this list are `#[doc(hidden)]` and not API.
//!
//! Which rank is slow, as the markdown report says it:
//!
//! ```
//! use rankprof::analyze::{analyze, AnalyzeOptions};
//! use rankprof::report::{self, analysis::AnalysisReport, Format};
//!
//! let a = analyze(&AnalyzeOptions {
//!     profile_dir: Some("fixtures/sglang-tp4".into()),
//!     ..Default::default()
//! })?;
//! assert_eq!(a.ranks.len(), 4);
//! let mut md = Vec::new();
//! report::write(&AnalysisReport::new(&a), Format::Markdown, &mut md)?;
//! assert!(String::from_utf8(md)?.contains("TP00"));
//! # Ok::<(), anyhow::Error>(())
//! ```
//!
//! Reading the files of a profile one event at a time:
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

// Internals stay `pub(crate)`: a `pub` item no user can reach is a warning.
#![warn(unreachable_pub)]
// Module docs link the internals they describe for contributors
// (`cargo doc --document-private-items`, where they resolve); the public docs leave them out.
#![allow(rustdoc::private_intra_doc_links)]

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
