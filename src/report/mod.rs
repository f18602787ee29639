//! Output of results: the `ls` listing, terminal tables, CSV / JSON / markdown / HTML, and the
//! `demo` walk-through.

pub mod demo;
pub mod ls;
