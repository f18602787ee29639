//! Output of results: the `ls` listing, terminal tables, CSV / JSON / markdown / HTML /
//! Parquet, and the `demo` walk-through.

pub mod demo;
pub mod formats;
pub mod html;
pub mod ls;
pub mod parquet;
pub mod progress;
pub mod tables;
