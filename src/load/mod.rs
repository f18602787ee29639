//! The load timeline, apart from the polling that records it: per-DP-rank load as servers report
//! it ([`loads`]: `/v1/loads`, [`prom`]: Prometheus `/metrics`), its spread figures
//! ([`stats`]), the `watch-<time>.jsonl` file ([`timeline`]) and that file as evidence
//! ([`evidence`]: load counter tracks for `crate::merge`, the load at the onset for
//! `crate::analyze`). It depends on `crate::trace` only, so merge and analyze can use it while
//! `crate::watch` (which drives captures) builds on top of them.

pub(crate) mod evidence;
pub mod loads;
pub(crate) mod prom;
pub(crate) mod stats;
pub mod timeline;
