//! `--parquet DIR`: one Parquet file per table of the analysis (`ranks.parquet`,
//! `classes.parquet`, `kernels.parquet`, …), through the Apache `parquet` crate's column
//! writer (no Arrow: CONTRIBUTING.md, "Build costs", has the figures behind that choice). Behind
//! the cargo feature `parquet`, on by default; a build without it fails the option with a
//! clear message.
//!
//! A column is `Int64` when all its cells are integers, `Float64` (`DOUBLE`) when they are
//! numbers, else `String` (`BYTE_ARRAY`, UTF-8); every column is `OPTIONAL` and empty cells are
//! nulls. One row group per file, Snappy-compressed. Each file is written atomically (temp
//! file + rename).

use std::path::Path;

use anyhow::Result;

use crate::analyze::Analysis;

#[cfg(not(feature = "parquet"))]
pub(crate) fn write(_a: &Analysis, _dir: &Path) -> Result<usize> {
    anyhow::bail!(
        "--parquet needs Parquet support: rebuild with `cargo build --release --features parquet`"
    )
}

/// Writes every table of `a` into `dir` (created if needed); the number of files written.
#[cfg(feature = "parquet")]
pub(crate) fn write(a: &Analysis, dir: &Path) -> Result<usize> {
    use anyhow::Context;

    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut n = 0;
    for t in super::tidy::files(a) {
        let path = dir.join(format!("{}.parquet", t.name));
        crate::trace::write::writer::write_atomic(&path, |w| {
            imp::write_table(&t, w).map_err(std::io::Error::other)
        })
        .with_context(|| format!("cannot write {} (table {})", path.display(), t.name))?;
        n += 1;
    }
    Ok(n)
}

#[cfg(feature = "parquet")]
mod imp {
    use std::io::Write;
    use std::sync::Arc;

    use parquet::basic::{Compression, LogicalType, Repetition, Type as Physical};
    use parquet::data_type::{ByteArray, ByteArrayType, DoubleType, Int64Type};
    use parquet::errors::Result;
    use parquet::file::properties::WriterProperties;
    use parquet::file::writer::SerializedFileWriter;
    use parquet::schema::types::Type;

    use crate::report::table::{Cell, Table};

    /// One column's non-null values; `defs` has one definition level per row (1 = a value,
    /// 0 = null), as Parquet stores an `OPTIONAL` column.
    enum Values {
        Int(Vec<i64>),
        Float(Vec<f64>),
        Text(Vec<ByteArray>),
    }

    struct Column {
        values: Values,
        defs: Vec<i16>,
    }

    /// Types column `i` of `t` (see the module doc) and gathers its values.
    fn column(t: &Table, i: usize) -> Column {
        let cells: Vec<&Cell> = t
            .rows
            .iter()
            .map(|r| r.get(i).unwrap_or(&Cell::Empty))
            .collect();
        let defs = cells.iter().map(|c| i16::from(!null(c))).collect();
        let ints = cells
            .iter()
            .all(|c| matches!(c, Cell::Int(_) | Cell::Empty));
        let nums = cells.iter().all(|c| {
            matches!(
                c,
                Cell::Int(_) | Cell::Num(..) | Cell::Real(_) | Cell::Empty
            )
        });
        let values = if ints {
            Values::Int(
                cells
                    .iter()
                    .filter_map(|c| match c {
                        Cell::Int(x) => Some(*x),
                        _ => None,
                    })
                    .collect(),
            )
        } else if nums {
            Values::Float(
                cells
                    .iter()
                    .filter_map(|c| match c {
                        Cell::Int(x) => Some(*x as f64),
                        Cell::Num(x, _) | Cell::Real(x) if x.is_finite() => Some(*x),
                        _ => None,
                    })
                    .collect(),
            )
        } else {
            Values::Text(
                cells
                    .iter()
                    .filter(|c| !null(c))
                    .map(|c| ByteArray::from(c.show().into_bytes()))
                    .collect(),
            )
        };
        Column { values, defs }
    }

    /// A cell stored as null: an empty one, or a number that is not finite (an empty field in
    /// the CSV files too).
    fn null(c: &Cell) -> bool {
        matches!(c, Cell::Empty) || matches!(c, Cell::Num(x, _) | Cell::Real(x) if !x.is_finite())
    }

    fn field(name: &str, v: &Values) -> Result<Arc<Type>> {
        let (physical, logical) = match v {
            Values::Int(_) => (Physical::INT64, None),
            Values::Float(_) => (Physical::DOUBLE, None),
            Values::Text(_) => (Physical::BYTE_ARRAY, Some(LogicalType::String)),
        };
        Type::primitive_type_builder(name, physical)
            .with_repetition(Repetition::OPTIONAL)
            .with_logical_type(logical)
            .build()
            .map(Arc::new)
    }

    /// `t` as one Parquet file on `w`: its schema, then (when it has rows) one row group.
    pub(super) fn write_table<W: Write + Send>(t: &Table, w: W) -> Result<()> {
        let cols: Vec<Column> = (0..t.columns.len()).map(|i| column(t, i)).collect();
        let fields = t
            .columns
            .iter()
            .zip(&cols)
            .map(|(name, c)| field(name, &c.values))
            .collect::<Result<Vec<_>>>()?;
        let schema = Type::group_type_builder("schema")
            .with_fields(fields)
            .build()?;
        let props = WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .set_created_by(format!("rankprof {}", env!("CARGO_PKG_VERSION")))
            .build();
        let mut file = SerializedFileWriter::new(w, Arc::new(schema), Arc::new(props))?;
        if !t.rows.is_empty() {
            let mut group = file.next_row_group()?;
            for c in &cols {
                let Some(mut out) = group.next_column()? else {
                    break;
                };
                let defs = Some(c.defs.as_slice());
                match &c.values {
                    Values::Int(v) => out.typed::<Int64Type>().write_batch(v, defs, None)?,
                    Values::Float(v) => out.typed::<DoubleType>().write_batch(v, defs, None)?,
                    Values::Text(v) => out.typed::<ByteArrayType>().write_batch(v, defs, None)?,
                };
                out.close()?;
            }
            group.close()?;
        }
        file.close()?;
        Ok(())
    }
}
