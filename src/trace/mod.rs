//! Everything about trace files themselves, in three folders along their seams:
//!
//! - [`read`]: the streaming [`read::reader`] and the [`Event`] view every later stage consumes;
//! - [`discover`](mod@discover): finding the rank files of a profile and their identity;
//! - [`write`](mod@write): the writer (streaming JSON + gzip, atomic), with the cleanup of its
//!   temporary files on SIGINT/SIGTERM;
//!
//! and, beside them, the primitives all of them share: [`time`] ([`Ns`]) and [`rankid`]
//! ([`RankId`]). The dependencies go one way: `discover` uses `read` (a file's head) and the
//! primitives, `read` uses the primitives, `write` uses nothing else here, and the primitives
//! use nothing.
//!
//! The facade below is what a library user needs; everything else is reached by its own path
//! (`trace::read::…`, `trace::discover::…`, `trace::write::…`).

// not API: for tests/fuzz
#[doc(hidden)]
pub mod discover;
pub(crate) mod rankid;
// not API: for tests/fuzz/benches
#[doc(hidden)]
pub mod read;
pub(crate) mod runs;
// PyTorch CUDA memory snapshots (`_dump_snapshot` pickles), read streaming.
pub mod snapshot;
pub(crate) mod time;
pub(crate) mod write;

pub use discover::group::Group;
pub use discover::merged::{is_merged_trace, merged_name};
pub use discover::rankfile::RankFile;
pub use discover::{discover, discover_files, Discovery};
pub use rankid::RankId;
pub use read::damage::{Damage, Header, ReadReport};
pub use read::event::Event;
pub use read::reader::{read_trace, read_trace_with, Nested};
pub use read::value::{Id, Str, Val};
pub use read::want::Want;
pub use time::Ns;
