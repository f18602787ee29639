//! Reading trace files: the streaming [`reader`] and the [`Event`](event::Event) view every
//! later stage consumes, with what it stands on.
//!
//! The files, bottom up (each uses only files listed before it; none uses
//! [`super::discover`](mod@super::discover) or [`super::write`](mod@super::write)):
//!
//! - the primitives, which use no other file here: `swar.rs` (byte classes a word at a time),
//!   `toplevel.rs`, [`escape`], [`stop`] (why a scan stopped), [`memo`] (the separator memo),
//!   [`gz`] (gzip members, every check), `open.rs` (regular files only), [`window`] (the read
//!   windows);
//! - the JSON scanner: [`skim`] (nested values 64 bytes at a time), [`json`] (values),
//!   [`object`] (an object's fields, an event's `args` member by member);
//! - the event: [`value`] (`Str`, `Id`, `Val`), [`args`] (lookups in `args`), [`event`];
//! - which events a reader hands over: [`want`], `pickmemo.rs`, `peek.rs` (the peek at an
//!   event's first bytes); [`steps`] (step markers, and the events a steps-only read wants);
//! - [`damage`] (what a read found: its header, counts and damage) and the [`reader`] itself, which drives them all;
//! - [`nsys`]: Nsight Systems SQLite exports, read into the same [`event::Event`]s (the
//!   reader hands a `*.sqlite` path to it).
//!
//! The modules marked hidden are not API: they are public only for the fuzz targets, tests and
//! benches (`fuzz/`, `tests/`, `benches/`).

pub mod args;
pub mod damage;
pub mod escape;
pub mod event;
#[doc(hidden)] // not API: for the fuzz targets/benches (`gz::Members`)
pub mod gz;
mod header_json;
pub mod json;
#[doc(hidden)] // not API: for the fuzz targets/benches (`memo::Memo`)
pub mod memo;
pub(crate) mod nsys;
#[doc(hidden)] // not API: for the fuzz targets/benches (`object::scan_object…`)
pub mod object;
pub(crate) mod open;
mod peek;
pub(crate) mod pickmemo;
pub mod reader;
#[doc(hidden)] // not API: for the fuzz targets/benches (`skim::skip_nested`, the kernels)
pub mod skim;
pub(crate) mod steps;
pub(crate) mod stop;
pub(crate) mod swar;
pub(crate) mod toplevel;
pub(crate) mod value;
pub mod want;
#[doc(hidden)] // not API: for the fuzz targets/benches (`window::CHUNK`)
pub mod window;
