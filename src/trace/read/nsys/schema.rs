//! What an Nsight Systems SQLite export holds, found by asking it (`sqlite_master`,
//! `PRAGMA table_info`) rather than assuming one release's layout: its tables and their
//! columns, the columns each event kind is read from (picked by name: `demangledName` before
//! `shortName` before `mangledName`; `text` and/or `textId` in `NVTX_EVENTS`), its version
//! (`META_DATA_EXPORT`) and its session start (`TARGET_INFO_SESSION_START_TIME.utcEpochNs`),
//! and the refusal, naming the missing table or column, for an export that cannot be read.
//!
//! The layout followed is the one NVIDIA documents in "SQLite Export Schema Reference"
//! (<https://docs.nvidia.com/nsight-systems/UserGuide/index.html#exporter-sqlite-schema>):
//! Nsight Systems 2024.x (export schema 3.x), whose `NVTX_EVENTS` carries `text` and `textId`;
//! 2021.5's layout (names and NVTX text as `StringIds` ids or inline text) reads as well.

use std::collections::BTreeMap;

use rusqlite::Connection;

/// The releases whose layout this reader was written against, for refusal messages.
pub(crate) const KNOWN_GOOD: &str =
    "known to read: `nsys export --type sqlite` of Nsight Systems 2021.5 to 2024.x";

pub(crate) const KERNEL: &str = "CUPTI_ACTIVITY_KIND_KERNEL";
pub(crate) const MEMCPY: &str = "CUPTI_ACTIVITY_KIND_MEMCPY";
pub(crate) const MEMSET: &str = "CUPTI_ACTIVITY_KIND_MEMSET";
pub(crate) const RUNTIME: &str = "CUPTI_ACTIVITY_KIND_RUNTIME";
pub(crate) const NVTX: &str = "NVTX_EVENTS";
pub(crate) const STRINGS: &str = "StringIds";
pub(crate) const GPUS: &str = "TARGET_INFO_GPU";
pub(crate) const SESSION_START: &str = "TARGET_INFO_SESSION_START_TIME";
pub(crate) const META: &str = "META_DATA_EXPORT";

/// A column as `PRAGMA table_info` gives it.
#[derive(Debug, Clone)]
pub(crate) struct Column {
    pub(crate) name: String,
    /// The declared type, upper case (`INTEGER`, `TEXT`, or empty).
    pub(crate) ty: String,
}

/// The tables of an export and their columns.
#[derive(Debug, Default)]
pub(crate) struct Schema {
    pub(crate) tables: BTreeMap<String, Vec<Column>>,
}

/// Quotes an SQL identifier (`end` is a keyword).
pub(crate) fn ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

impl Schema {
    /// Reads the tables and their columns.
    pub(crate) fn read(conn: &Connection) -> rusqlite::Result<Schema> {
        let mut names = Vec::new();
        {
            let mut st = conn.prepare("SELECT name FROM sqlite_master WHERE type = 'table'")?;
            let mut rows = st.query([])?;
            while let Some(r) = rows.next()? {
                names.push(r.get::<_, String>(0)?);
            }
        }
        let mut tables = BTreeMap::new();
        for t in names {
            let mut st = conn.prepare(&format!("PRAGMA table_info({})", ident(&t)))?;
            let mut rows = st.query([])?;
            let mut cols = Vec::new();
            while let Some(r) = rows.next()? {
                cols.push(Column {
                    name: r.get::<_, String>(1)?,
                    ty: r
                        .get::<_, Option<String>>(2)?
                        .unwrap_or_default()
                        .to_ascii_uppercase(),
                });
            }
            tables.insert(t, cols);
        }
        Ok(Schema { tables })
    }

    pub(crate) fn has_table(&self, t: &str) -> bool {
        self.tables.contains_key(t)
    }

    /// The column `c` of table `t`, if both exist.
    pub(crate) fn column(&self, t: &str, c: &str) -> Option<&Column> {
        self.tables.get(t)?.iter().find(|x| x.name == c)
    }

    /// The first of `names` that table `t` has.
    pub(crate) fn first_of<'n>(&self, t: &str, names: &[&'n str]) -> Option<&'n str> {
        names.iter().copied().find(|c| self.column(t, c).is_some())
    }

    /// The columns of `t`, for messages.
    pub(crate) fn listed(&self, t: &str) -> String {
        self.tables
            .get(t)
            .map(|c| {
                c.iter()
                    .map(|c| c.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default()
    }

    /// Whether `StringIds` can turn ids into names (`id`, `value`).
    pub(crate) fn strings(&self) -> bool {
        self.column(STRINGS, "id").is_some() && self.column(STRINGS, "value").is_some()
    }

    /// The SQL for a name held in column `col` of `alias` (table `t`): a text column's own
    /// text; else the `StringIds` value its integer points at (joined as `join`), falling back
    /// on the column's value as text. `None` when the column holds ids and the export has no
    /// `StringIds`.
    pub(crate) fn name_expr(
        &self,
        t: &str,
        alias: &str,
        col: &str,
        join: &str,
    ) -> Option<NameExpr> {
        let ty = self.column(t, col).map(|c| c.ty.as_str()).unwrap_or("");
        let text = ty.contains("CHAR") || ty.contains("TEXT") || ty.contains("CLOB");
        let c = format!("{alias}.{}", ident(col));
        if text {
            // Inline text: never joined (SQLite would compare a numeric-looking name to ids).
            Some(NameExpr {
                expr: format!("CAST({c} AS TEXT)"),
                join: String::new(),
            })
        } else if self.strings() {
            Some(NameExpr {
                expr: format!("COALESCE({join}.value, CAST({c} AS TEXT))"),
                join: format!(" LEFT JOIN {} AS {join} ON {join}.id = {c}", ident(STRINGS)),
            })
        } else if ty.contains("INT") {
            None
        } else {
            Some(NameExpr {
                expr: format!("CAST({c} AS TEXT)"),
                join: String::new(),
            })
        }
    }

    /// Why the kernels cannot be read, if they cannot: the first missing piece, named.
    pub(crate) fn refusal(&self) -> Option<String> {
        if !self.has_table(KERNEL) {
            let hint = if self.tables.is_empty() {
                "the file holds no table at all (is it an export, `nsys export --type sqlite`?)"
                    .to_string()
            } else {
                "the report holds no CUDA kernel: profile with `nsys profile --trace=cuda,nvtx …`"
                    .to_string()
            };
            return Some(format!("no table {KERNEL}: {hint}"));
        }
        for c in ["start", "end"] {
            if self.column(KERNEL, c).is_none() {
                return Some(format!(
                    "table {KERNEL} has no column \"{c}\" (it has: {})",
                    self.listed(KERNEL)
                ));
            }
        }
        let Some(name) = self.first_of(KERNEL, KERNEL_NAMES) else {
            return Some(format!(
                "table {KERNEL} has none of the name columns {} (it has: {})",
                KERNEL_NAMES.join(", "),
                self.listed(KERNEL)
            ));
        };
        if self.name_expr(KERNEL, "k", name, "s").is_none() {
            return Some(format!(
                "table {KERNEL}'s names ({name}) are ids into {STRINGS}, which the export lacks \
                 (or has without its columns id, value)"
            ));
        }
        None
    }
}

/// The columns a kernel's name is read from, the best first: the demangled name is what
/// Kineto shows (`void flash::flash_fwd_kernel<…>(Flash_fwd_params)`).
pub(crate) const KERNEL_NAMES: &[&str] = &["demangledName", "shortName", "mangledName", "name"];

/// An SQL expression giving a name, and the join it needs.
#[derive(Debug, Clone)]
pub(crate) struct NameExpr {
    pub(crate) expr: String,
    pub(crate) join: String,
}
