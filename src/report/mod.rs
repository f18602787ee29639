//! Renderers only: the analysis as plain tables ([`tables`], the attribution's in
//! [`attribution`], the collectives' in [`collective_tables`]) shown in the terminal or written as
//! CSV / JSON / markdown ([`formats`], JSON streamed by [`json`]), in groups for many ranks ([`groups`]), HTML ([`html`]) and Parquet ([`parquet`]); a comparison
//! as a table, markdown or JSON ([`compare`]); and shared text helpers ([`text`]). Nothing here computes a figure: every number comes from the result types of
//! `analyze` and `compare`.

pub mod attribution;
pub mod collective_tables;
pub mod compare;
pub mod formats;
pub mod groups;
pub mod html;
pub mod html_grid;
pub mod json;
pub mod parquet;
pub mod tables;
pub mod terminal;
pub mod text;
pub mod tidy;
