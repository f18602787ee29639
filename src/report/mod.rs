//! Renderers only: the analysis as plain tables ([`tables`]) shown in the terminal or written as
//! CSV / JSON / markdown ([`formats`]), HTML ([`html`]) and Parquet ([`parquet`]); a comparison
//! as a table, markdown or JSON ([`compare`]); shared text helpers ([`text`]) and progress bars
//! ([`progress`]). Nothing here computes a figure: every number comes from the result types of
//! `analyze` and `compare`.

pub mod compare;
pub mod formats;
pub mod html;
pub mod parquet;
pub mod progress;
pub mod tables;
pub mod text;
