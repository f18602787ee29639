//! `--parquet DIR`: one Parquet file per table of the analysis (`ranks.parquet`,
//! `classes.parquet`, `kernels.parquet`, …), through polars. Behind the cargo feature
//! `parquet` (polars is a long build); without it the option fails with a clear message.
//!
//! A column is `Int64` when all its cells are integers, `Float64` when they are numbers, else
//! `String`; empty cells are nulls. Each file is written atomically (temp file + rename).

use std::path::Path;

use anyhow::Result;

use crate::analyze::Analysis;

#[cfg(not(feature = "parquet"))]
pub fn write(_a: &Analysis, _dir: &Path) -> Result<usize> {
    anyhow::bail!(
        "--parquet needs Parquet support: rebuild with `cargo build --release --features parquet`"
    )
}

#[cfg(feature = "parquet")]
pub fn write(a: &Analysis, dir: &Path) -> Result<usize> {
    use anyhow::Context;
    use polars::prelude::*;

    use super::tables::{sections, Cell};

    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut n = 0;
    for t in sections(a) {
        let mut cols: Vec<Column> = Vec::new();
        for (i, name) in t.columns.iter().enumerate() {
            let cells: Vec<&Cell> = t
                .rows
                .iter()
                .map(|r| r.get(i).unwrap_or(&Cell::Empty))
                .collect();
            let ints = cells
                .iter()
                .all(|c| matches!(c, Cell::Int(_) | Cell::Empty));
            let nums = cells
                .iter()
                .all(|c| matches!(c, Cell::Int(_) | Cell::Num(..) | Cell::Empty));
            let col = if ints {
                let v: Vec<Option<i64>> = cells
                    .iter()
                    .map(|c| if let Cell::Int(x) = c { Some(*x) } else { None })
                    .collect();
                Column::new(name.as_str().into(), v)
            } else if nums {
                let v: Vec<Option<f64>> = cells
                    .iter()
                    .map(|c| match c {
                        Cell::Int(x) => Some(*x as f64),
                        Cell::Num(x, _) => Some(*x),
                        _ => None,
                    })
                    .collect();
                Column::new(name.as_str().into(), v)
            } else {
                let v: Vec<Option<String>> = cells
                    .iter()
                    .map(|c| match c {
                        Cell::Empty => None,
                        other => Some(other.show()),
                    })
                    .collect();
                Column::new(name.as_str().into(), v)
            };
            cols.push(col);
        }
        let mut df = DataFrame::new(cols).with_context(|| format!("table {}", t.name))?;
        let path = dir.join(format!("{}.parquet", t.name));
        crate::trace::writer::write_atomic(&path, |w| {
            ParquetWriter::new(w)
                .finish(&mut df)
                .map(|_| ())
                .map_err(std::io::Error::other)
        })
        .with_context(|| format!("cannot write {}", path.display()))?;
        n += 1;
    }
    Ok(n)
}
