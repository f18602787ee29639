//! Everything about trace files themselves: the streaming [`reader`], the [`Event`] view every
//! later stage consumes, [`discover`]y of rank files and their identity, and the [`writer`]
//! (streaming JSON + gzip, atomic), with [`cleanup`] of its temporary files on SIGINT/SIGTERM.

pub mod args;
pub mod cleanup;
mod dense_dp;
pub mod discover;
pub mod escape;
pub mod event;
mod grid;
pub mod gz;
pub mod json;
pub mod listing;
pub mod members;
pub mod memo;
pub mod merged;
pub mod open;
pub mod pickmemo;
pub mod rankid;
pub mod reader;
pub mod report;
mod sessions;
pub mod skim;
pub mod steps;
pub mod swar;
pub mod time;
pub mod toplevel;
mod unnamed;
pub mod want;
mod window;
pub mod writer;

pub use discover::{
    discover, discover_files, is_merged_trace, merged_name, Discovery, Group, RankFile, RankId,
};
pub use event::{Event, Id, Str, Val};
pub use reader::{read_trace, read_trace_with, Damage, Header, Nested, ReadReport, Want};
pub use time::Ns;
