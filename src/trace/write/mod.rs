//! Writing traces: the [`writer`] (gzip built from independently compressed pieces, atomic
//! files) and the [`cleanup`] of its temporary files on SIGINT/SIGTERM. `writer.rs` uses
//! `cleanup.rs`; nothing here uses [`super::read`] or
//! [`super::discover`](mod@super::discover).

pub mod cleanup;
pub mod writer;
