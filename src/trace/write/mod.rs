//! Writing traces: the [`writer`] (gzip built from independently compressed pieces, atomic
//! files), the [`cleanup`] of its temporary files on SIGINT/SIGTERM, and the [`overlay`] of
//! annotations a merge adds to the ranks' events, and the [`protobuf`] wire writer of the
//! `.pftrace` output. `writer.rs` uses
//! `cleanup.rs`; nothing here uses [`super::read`] or
//! [`super::discover`](mod@super::discover).

pub(crate) mod cleanup;
pub(crate) mod overlay;
pub(crate) mod protobuf;
pub(crate) mod writer;
