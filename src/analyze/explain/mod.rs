//! What explains a gap (the second half of stage 3 of [`crate::analyze`]), on top of the tables
//! of [`crate::analyze::reduce`].
//!
//! - [`measure`]: which work figure the comparison uses (tokens, sequences, message elements or
//!   launches).
//! - [`attribution`]: per rank, replica and onset, more work (uneven load), the same work
//!   slower (device or host) or more kernels.
//! - [`ep`]: MoE expert parallelism, each EP rank's dispatch/combine, expert GEMMs and the rest
//!   against its EP peers; it turns the attribution's *slower device* into *hot experts* where
//!   the expert GEMMs say so.
//! - [`evidence`]: whether a candidate's per-step figure holds from step to step or is noise.
//! - [`moving`]: a slowdown that moves between ranks from step to step (no one rank's).
//! - [`memory`]: each rank's memory peaks (Kineto's `[memory]` events) and the verdict's line
//!   when one rank's peak stands above the median rank's.
//! - [`snapshot`]: each memory snapshot given to its rank, and the verdict's snapshot line.
//! - [`verdict`]: the lines on top of the report.
//! - [`drill`]: one rank (`--rank`) against its peers' median, by class, kernel, step and
//!   collective, with the verdict's lines about it.
//!
//! Imports: [`crate::analyze::collect`], [`crate::analyze::reduce`] and the shared bottom;
//! inside, `attribution` imports `measure`, `ep` imports `attribution`, and `verdict` imports
//! `attribution`, `ep`, `evidence` and `moving`; `memory`, `snapshot` and `drill` import none of them (it takes the verdict's lines).

pub mod attribution;
pub(crate) mod drill;
pub(crate) mod ep;
pub(crate) mod evidence;
pub(crate) mod measure;
pub mod memory;
pub(crate) mod moving;
pub mod snapshot;
pub(crate) mod verdict;
