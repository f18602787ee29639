//! Across ranks (the first half of stage 3 of [`crate::analyze`]): the tables computed from
//! every rank's [`RankResult`](crate::analyze::collect::rank::RankResult), with no judgement of
//! cause (that is [`crate::analyze::explain`]'s).
//!
//! - [`kernels`]: class × rank totals and the top kernels with their imbalance.
//! - [`steps`]: the step × rank table and the onset of an imbalance.
//! - [`clocks`]: ranks whose clock is off their world's by a constant, from the collectives'
//!   ends (aligned before the other tables).
//! - [`collectives`]: the worlds ranks are matched in, matched collectives, skews, waits and
//!   the straggler.
//! - [`path`]: the critical path across ranks: what each late arrival at a collective cost
//!   the step, and why (more work, host gap, late step start, slow transfer).
//! - [`groups`]: ranks per DP replica, TP / PP / EP rank and node, distributions, outliers and
//!   the parallel grid.
//! - [`heat`]: the rank × class and rank × step heatmaps the HTML report draws.
//!
//! Imports: [`crate::analyze::collect`] and the shared bottom of `analyze` (classes, rank sets,
//! statistics); inside, `heat` imports `kernels` and `steps`, `groups` imports `steps`,
//! `path` imports `steps` and `collectives` imports `path`.

pub mod clocks;
pub(crate) mod collectives;
pub mod groups;
pub(crate) mod heat;
pub(crate) mod kernels;
pub mod path;
pub(crate) mod steps;
