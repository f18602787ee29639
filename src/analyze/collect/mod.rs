//! The read phase (stages 1-2 of [`crate::analyze`]): which files to read, one pass per file,
//! and each rank's small results. Nothing here looks across ranks.
//!
//! - [`plan`]: the files an analysis reads and the rank each holds; reading one file into its
//!   rank result(s) and its [`plan::FileInfo`].
//! - [`collector`]: the one-pass collector (the hot path), with [`names`], the events it reads
//!   and the reader's filter built from the same constants, and [`ops`], what it keeps per op
//!   name.
//! - [`spill`]: bounded-memory spools of fixed-size records that the collector fills;
//!   [`collstore`]: a rank's collectives in bounded memory (and in a partial).
//! - [`rank`]: a rank's collector turned into its [`rank::RankResult`], with the rank summary
//!   and its timeline unions ([`busy`]), the GPU figures folded in bounded memory ([`sweep`]),
//!   the step windows and per-step figures ([`steps`]) and what each step was asked to do
//!   ([`work`]), and what the rank did before each of its collectives ([`segments`]);
//! - [`memory`]: memory per device from Kineto's `[memory]` instant events (#53);
//!   [`snapshot`]: the profile's CUDA memory snapshots (`*.pickle`), read beside the traces.
//! - [`gaps`]: a second, targeted read of one rank's file, naming what its host did while its
//!   GPU idled before the collectives it arrived last at.
//!
//! Imports go one way: `work`, `ops`, `spill` and `busy` import no sibling; `names` and
//! `steps` import `work`; `memory` imports `steps`; `collector` imports those; `sweep` and `collstore` import
//! `collector`, `segments` imports `collector`, `spill` and `steps`, and `sweep` and
//! `collstore` import `segments`; `rank` imports them all and `plan` imports `rank`; `gaps`
//! imports `names` only.

pub(crate) mod busy;
pub(crate) mod collector;
pub(crate) mod collstore;
pub(crate) mod gaps;
pub(crate) mod memory;
pub mod names;
pub(crate) mod ops;
pub(crate) mod overlap;
pub(crate) mod p2p;
pub(crate) mod plan;
pub(crate) mod rank;
pub(crate) mod segments;
pub mod snapshot;
pub mod spill;
pub(crate) mod steps;
pub(crate) mod sweep;
pub(crate) mod work;
