//! The one table model every output is made from: a [`Table`] of typed [`Cell`]s, and its
//! forms — CSV ([`write_csv`]), markdown ([`write_markdown`]), JSON records ([`Table::records`]) and
//! the terminal ([`super::terminal::render_table_at`]); Parquet writes the same tables
//! ([`super::parquet`]). A renderer builds tables from a result and hands them to these; it
//! never formats a value itself, so a table exists in every format by construction.

use std::io::Write;

use serde_json::{Map, Value};

use super::text::{md_code, md_text};

/// One value of a table.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Cell {
    Text(String),
    Int(i64),
    /// A number shown with this many decimals (CSV and JSON keep its full precision).
    Num(f64, usize),
    /// A number shown at full precision everywhere (the tidy tables machines read).
    Real(f64),
    /// Yes or no: `true` / `false` as text, a JSON boolean.
    Bool(bool),
    Empty,
}

impl Cell {
    /// The value as a person reads it.
    pub(crate) fn show(&self) -> String {
        match self {
            Cell::Text(s) => s.clone(),
            Cell::Int(v) => v.to_string(),
            Cell::Num(v, d) if v.is_finite() => format!("{v:.d$}"),
            // A ratio over nothing (∞, NaN) has no value to show: never `inf` or `NaN`.
            Cell::Num(..) => "—".to_string(),
            Cell::Real(v) if v.is_finite() => format!("{v}"),
            Cell::Bool(b) => b.to_string(),
            Cell::Real(_) | Cell::Empty => String::new(),
        }
    }

    /// Whether the value is a number (right-aligned in the terminal).
    pub(crate) fn numeric(&self) -> bool {
        matches!(self, Cell::Int(_) | Cell::Num(..) | Cell::Real(_))
    }

    /// The value in a CSV file: numbers at full precision, text quoted where it must be.
    pub(crate) fn csv(&self) -> String {
        match self {
            Cell::Num(v, _) | Cell::Real(v) if v.is_finite() => format!("{v}"),
            Cell::Num(..) | Cell::Real(_) => String::new(),
            other => csv_field(&other.show()),
        }
    }

    /// The value in a JSON record (a number that is not finite is null).
    pub(crate) fn json(&self) -> Value {
        match self {
            Cell::Text(s) => Value::String(s.clone()),
            Cell::Int(v) => Value::from(*v),
            Cell::Bool(b) => Value::Bool(*b),
            Cell::Num(v, _) | Cell::Real(v) => {
                serde_json::Number::from_f64(*v).map_or(Value::Null, Value::Number)
            }
            Cell::Empty => Value::Null,
        }
    }
}

/// A yes/no cell (a JSON boolean).
pub(crate) fn b(v: bool) -> Cell {
    Cell::Bool(v)
}

/// A text cell.
pub(crate) fn s(v: impl Into<String>) -> Cell {
    Cell::Text(v.into())
}

/// An integer cell (empty when it does not fit in i64).
pub(crate) fn i(v: impl TryInto<i64>) -> Cell {
    v.try_into().map_or(Cell::Empty, Cell::Int)
}

/// A number at full precision.
pub(crate) fn f(v: f64) -> Cell {
    Cell::Real(v)
}

/// Nanoseconds shown as milliseconds, two decimals.
pub(crate) fn ms(ns: impl Into<i64>) -> Cell {
    Cell::Num(ns.into() as f64 / 1e6, 2)
}

/// Nanoseconds shown as microseconds, one decimal.
pub(crate) fn us(ns: f64) -> Cell {
    Cell::Num(ns / 1e3, 1)
}

/// A text cell.
pub(crate) fn text(s: impl Into<String>) -> Cell {
    Cell::Text(s.into())
}

/// A named table. `name` is a stable file/section id (`ranks`, `classes`, …): the file stem in
/// `--csv-dir` and `--parquet`.
#[derive(Debug, Clone)]
pub(crate) struct Table {
    pub(crate) name: &'static str,
    pub(crate) title: String,
    pub(crate) columns: Vec<String>,
    pub(crate) rows: Vec<Vec<Cell>>,
    /// Shown in the terminal (long-form tables are only written to files).
    pub(crate) terminal: bool,
}

impl Table {
    /// An empty data table (titled by its name, not shown in the terminal).
    pub(crate) fn data(name: &'static str, columns: &[&str]) -> Table {
        Table {
            name,
            title: name.to_string(),
            columns: columns.iter().map(|c| c.to_string()).collect(),
            rows: Vec::new(),
            terminal: false,
        }
    }

    /// The table as CSV: a header line, one line per row.
    pub(crate) fn csv(&self) -> String {
        let mut out = Vec::new();
        // Writing to a Vec cannot fail.
        let _ = write_csv(self, &mut out);
        String::from_utf8_lossy(&out).into_owned()
    }

    /// The table as a JSON list of flat records.
    pub(crate) fn records(&self) -> Value {
        Value::Array(self.rows.iter().map(|r| record(&self.columns, r)).collect())
    }
}

/// A CSV field: quoted when it holds a comma, a quote or a line break.
pub(crate) fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// `t` as CSV: a header line, one line per row.
pub(crate) fn write_csv(t: &Table, w: &mut dyn Write) -> std::io::Result<()> {
    let head: Vec<String> = t.columns.iter().map(|c| csv_field(c)).collect();
    writeln!(w, "{}", head.join(","))?;
    for row in &t.rows {
        writeln!(
            w,
            "{}",
            row.iter().map(Cell::csv).collect::<Vec<_>>().join(",")
        )?;
    }
    Ok(())
}

/// How a markdown table is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Markdown {
    /// Numbers right-aligned (by the first row), kernel and op names as inline code: a report.
    Report,
    /// Every column left-aligned, every value escaped text: a listing of records.
    Plain,
}

/// `t` as a GitHub markdown table (header, alignment row, rows).
pub(crate) fn write_markdown(t: &Table, style: Markdown, w: &mut dyn Write) -> std::io::Result<()> {
    match style {
        Markdown::Report => {
            let head: Vec<String> = t.columns.iter().map(|c| md_text(c)).collect();
            writeln!(w, "| {} |", head.join(" | "))?;
            let empty = vec![Cell::Empty; t.columns.len()];
            let align: String = t
                .rows
                .first()
                .unwrap_or(&empty)
                .iter()
                .map(|c| {
                    if matches!(c, Cell::Int(_) | Cell::Num(..)) {
                        "---:|"
                    } else {
                        "---|"
                    }
                })
                .collect();
            writeln!(w, "|{align}")?;
            let code: Vec<bool> = t
                .columns
                .iter()
                .map(|c| matches!(c.as_str(), "kernel" | "name"))
                .collect();
            for row in &t.rows {
                let cells: Vec<String> = row
                    .iter()
                    .enumerate()
                    .map(|(i, c)| match c {
                        Cell::Text(v) if code.get(i).copied().unwrap_or(false) => md_code(v),
                        other => md_text(&other.show()),
                    })
                    .collect();
                writeln!(w, "| {} |", cells.join(" | "))?;
            }
        }
        Markdown::Plain => {
            write!(w, "| {} |\n|", t.columns.join(" | "))?;
            w.write_all("---|".repeat(t.columns.len()).as_bytes())?;
            w.write_all(b"\n")?;
            for r in &t.rows {
                let cells: Vec<String> = r
                    .iter()
                    .map(|v| match v {
                        Cell::Text(x) => md_text(x),
                        other => other.show(),
                    })
                    .collect();
                writeln!(w, "| {} |", cells.join(" | "))?;
            }
        }
    }
    Ok(())
}

/// `t` as a markdown string (see [`write_markdown`]).
pub(crate) fn markdown(t: &Table, style: Markdown) -> String {
    let mut out = Vec::new();
    // Writing to a Vec cannot fail.
    let _ = write_markdown(t, style, &mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// One row as a flat JSON record (keys in `columns`' names).
pub(crate) fn record<S: AsRef<str>>(columns: &[S], row: &[Cell]) -> Value {
    let m: Map<String, Value> = columns
        .iter()
        .zip(row)
        .map(|(c, v)| (c.as_ref().to_string(), v.json()))
        .collect();
    Value::Object(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form_of_a_cell() {
        let t = Table {
            name: "t",
            title: "T".into(),
            columns: vec![
                "name".into(),
                "n".into(),
                "ms".into(),
                "x".into(),
                "e".into(),
            ],
            rows: vec![vec![
                s("a,b|c"),
                i(3),
                Cell::Num(1.23456, 2),
                f(0.1 + 0.2),
                Cell::Empty,
            ]],
            terminal: false,
        };
        assert_eq!(
            t.csv(),
            "name,n,ms,x,e\n\"a,b|c\",3,1.23456,0.30000000000000004,\n"
        );
        assert_eq!(
            markdown(&t, Markdown::Report),
            "| name | n | ms | x | e |\n|---|---:|---:|---|---|\n| `a,b\\|c` | 3 | 1.23 | 0.30000000000000004 |  |\n"
        );
        assert_eq!(
            markdown(&t, Markdown::Plain),
            "| name | n | ms | x | e |\n|---|---|---|---|---|\n| a,b\\|c | 3 | 1.23 | 0.30000000000000004 |  |\n"
        );
        assert_eq!(
            t.records(),
            serde_json::json!([{"name": "a,b|c", "n": 3, "ms": 1.23456, "x": 0.30000000000000004, "e": null}])
        );
        assert_eq!(Cell::Real(f64::INFINITY).csv(), "");
        assert_eq!(Cell::Real(f64::NAN).json(), Value::Null);
    }

    #[test]
    fn a_number_that_is_not_finite_is_never_inf_or_nan() {
        for v in [f64::INFINITY, f64::NEG_INFINITY, f64::NAN] {
            let c = Cell::Num(v, 2);
            assert_eq!((c.show().as_str(), c.csv().as_str()), ("—", ""));
            assert_eq!(c.json(), Value::Null);
        }
        assert_eq!(
            (b(true).show(), b(false).csv(), b(true).json()),
            ("true".to_string(), "false".to_string(), Value::Bool(true))
        );
    }
}
