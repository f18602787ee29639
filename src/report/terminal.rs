//! The terminal report: the analysis's tables ([`super::tables`]) drawn with comfy-table,
//! fitted to the terminal width (long step tables keep their start, the onset and the end),
//! in the per-rank or the grouped form ([`super::groups`]), with the verdict and the notes;
//! every line fitted to the width ([`width`]: tables split by columns, prose wrapped at words),
//! the slow rank highlighted where the caller asks for colour.

use comfy_table::Table as CTable;

use super::groups::{View, SHOWN};
use super::table::{Cell, Table};
use super::tables::sections_for;
use crate::analyze::reduce::groups::Dim;
use crate::analyze::Analysis;

/// Terminal width: the terminal's, else `$COLUMNS`, else 120 (at least 40: narrower, no table
/// of the report can be drawn).
pub fn width() -> u16 {
    let w = CTable::new().width().or_else(|| {
        std::env::var("COLUMNS")
            .ok()
            .and_then(|c| c.trim().parse().ok())
            .filter(|&c: &u16| c > 0)
    });
    w.unwrap_or(120).max(40)
}

/// How the terminal report is shown, beyond its view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Look {
    /// Columns every line fits in.
    pub width: usize,
    /// Highlight the slow rank (the verdict's lead) with ANSI colour.
    pub color: bool,
    /// The verdict lines only (`--quiet`).
    pub quiet: bool,
}

impl Default for Look {
    /// The terminal's width ([`width`]), no colour, the whole report.
    fn default() -> Self {
        Look {
            width: width() as usize,
            color: false,
            quiet: false,
        }
    }
}

/// Rows shown in the terminal for long step tables: the start, around the onset, the end.
fn visible_rows(n: usize, onset: Option<usize>) -> Vec<Option<usize>> {
    const LIMIT: usize = 40;
    if n <= LIMIT {
        return (0..n).map(Some).collect();
    }
    let mut keep = vec![false; n];
    for k in keep.iter_mut().take(10) {
        *k = true;
    }
    for k in keep.iter_mut().skip(n - 10) {
        *k = true;
    }
    if let Some(o) = onset {
        for k in keep.iter_mut().skip(o.saturating_sub(3)).take(10) {
            *k = true;
        }
    }
    let mut out = Vec::new();
    for (i, &k) in keep.iter().enumerate() {
        if k {
            out.push(Some(i));
        } else if out.last().is_some_and(|x: &Option<usize>| x.is_some()) {
            out.push(None);
        }
    }
    out
}

/// Renders one table, fitted to `width` columns (split by columns where it must be,
/// [`super::text::draw`]).
pub(crate) fn render_table_at(t: &Table, onset_row: Option<usize>, width: usize) -> String {
    let rows: Vec<Option<usize>> = if t.name == "steps" {
        visible_rows(t.rows.len(), onset_row)
    } else {
        (0..t.rows.len()).map(Some).collect()
    };
    let skipped = t.rows.len() - rows.iter().flatten().count();
    let cells: Vec<Vec<super::text::DrawCell>> = rows
        .iter()
        .map(|r| match r {
            Some(i) => t.rows[*i].iter().map(|c| (c.show(), c.numeric())).collect(),
            None => t.columns.iter().map(|_| ("…".to_string(), false)).collect(),
        })
        .collect();
    let mut s = super::text::draw(&t.title, &t.columns, &cells, width);
    if skipped > 0 {
        s.push_str(&format!(
            "({} not shown; --format csv or json has them all)\n",
            crate::analyze::explain::measure::count(skipped, "row")
        ));
    }
    s
}

/// The terminal report in the form the rank count calls for ([`View::Auto`]).
pub fn render(a: &Analysis) -> String {
    render_view(a, View::Auto, None)
}

/// The verdict lines, wrapped to `width` under a two-column indent.
fn verdict_lines(a: &Analysis, width: usize) -> String {
    let mut s = String::new();
    for l in &a.verdict.lines {
        s.push_str(&format!(
            "  {}\n",
            super::text::wrap(l, width.saturating_sub(2), "    ")
        ));
    }
    s
}

/// The terminal report at the terminal's width, without colour.
pub fn render_view(a: &Analysis, view: View, group_by: Option<Dim>) -> String {
    render_look(a, view, group_by, Look::default())
}

/// The terminal report as `look` asks: every line within its width; with `quiet`, the
/// verdict lines alone; with `color`, the verdict's lead (the slow rank or replica) in colour
/// wherever it is named.
pub fn render_look(a: &Analysis, view: View, group_by: Option<Dim>, look: Look) -> String {
    let text = if look.quiet {
        verdict_lines(a, look.width)
    } else {
        report(a, view, group_by, look.width)
    };
    let text = super::text::fit(&text, look.width);
    match (&a.verdict.lead, look.color) {
        (Some(lead), true) => super::text::highlight(&text, lead),
        _ => text,
    }
}

/// The terminal report: verdict, then every terminal table, then notes. In the grouped form
/// (many ranks, see [`super::groups`]) the tables with one row per rank give way to
/// distributions, outliers and the groups of `group_by`.
fn report(a: &Analysis, view: View, group_by: Option<Dim>, width: usize) -> String {
    let mut s = String::new();
    let scope = match &a.stage {
        Some(st) => format!("{} (stage {st})", a.profile_id),
        None => a.profile_id.clone(),
    };
    let n = a.ranks.len();
    let plural = if n == 1 { "" } else { "s" };
    s.push_str(&format!("Profile {scope}: {n} rank{plural}\n"));
    s.push_str(&verdict_lines(a, width));
    s.push('\n');
    if let Some(d) = &a.drill {
        return drill_view(s, a, d, width);
    }
    let onset = a.steps.onset.as_ref().map(|o| o.step_index);
    let grouped = super::groups::grouped(a, view);
    if grouped {
        for (t, line) in super::groups::tables(a, group_by) {
            s.push_str(&render_table_at(&t, None, width));
            if let Some(l) = line {
                s.push_str(&l);
                s.push('\n');
            }
            s.push('\n');
        }
    }
    let per_rank = ["ranks", "classes", "collectives_ranks"];
    for t in sections_for(a, Some(width))
        .iter()
        .filter(|t| t.terminal && !(grouped && per_rank.contains(&t.name)))
    {
        if grouped && t.name == "collectives" {
            s.push_str(&worst_worlds_at(t, width));
            s.push('\n');
            continue;
        }
        s.push_str(&render_table_at(t, onset, width));
        if t.name == "classes" {
            s.push_str(&super::text::unclassified_line(a));
        }
        s.push('\n');
    }
    let mut notes: Vec<&String> = a.steps.notes.iter().chain(&a.collectives.notes).collect();
    notes.dedup();
    if !notes.is_empty() {
        s.push_str("Notes:\n");
        for n in notes.iter().take(20) {
            s.push_str(&format!("  - {n}\n"));
        }
        if notes.len() > 20 {
            s.push_str(&format!(
                "  - … {} more (see --format json)\n",
                notes.len() - 20
            ));
        }
    }
    s
}

/// `--rank`: after the verdict, the rank against its peers (its summary line, the drill-down
/// tables) and the rank's own tables; the whole profile's tables are left to a run without it.
fn drill_view(
    mut s: String,
    a: &Analysis,
    d: &crate::analyze::explain::drill::Drill,
    width: usize,
) -> String {
    let w = width.saturating_sub(2);
    s.push_str(&format!(
        "Rank {} against its peers ({}):\n",
        d.rank, d.peers
    ));
    s.push_str(&format!(
        "  {}\n\n",
        super::text::wrap(&d.summary, w, "    ")
    ));
    for t in sections_for(a, Some(width))
        .iter()
        .filter(|t| t.terminal && (t.name.starts_with("drill") || t.name.starts_with("rank_")))
    {
        s.push_str(&render_table_at(t, None, width));
        s.push('\n');
    }
    s
}

/// The collective groups table in the grouped form: the [`SHOWN`](super::groups::SHOWN) rows with the largest mean
/// skew (one row per world and key: 128 replicas give 128 rows), the rest counted.
/// Fitted to `width` columns.
fn worst_worlds_at(t: &Table, width: usize) -> String {
    let col = t.columns.iter().position(|c| c == "mean skew µs");
    let mut t = t.clone();
    let n = t.rows.len();
    if let (Some(c), true) = (col, n > SHOWN) {
        let key = |r: &Vec<Cell>| match r.get(c) {
            Some(Cell::Num(v, _)) => *v,
            _ => f64::MIN,
        };
        t.rows.sort_by(|a, b| key(b).total_cmp(&key(a)));
        t.rows.truncate(SHOWN);
        t.title = format!(
            "{} — the {SHOWN} of {n} with the largest mean skew",
            t.title
        );
    }
    let mut s = render_table_at(&t, None, width);
    if n > t.rows.len() {
        s.push_str(&format!(
            "({} not shown; --format csv or json has them all)\n",
            crate::analyze::explain::measure::count(n - t.rows.len(), "row")
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_step_tables_keep_start_onset_and_end() {
        let v = visible_rows(100, Some(50));
        let shown: Vec<usize> = v.iter().flatten().copied().collect();
        assert!(shown.contains(&0) && shown.contains(&9) && shown.contains(&99));
        assert!(shown.contains(&47) && shown.contains(&56));
        assert!(!shown.contains(&30));
        assert_eq!(v.iter().filter(|x| x.is_none()).count(), 2);
        assert_eq!(visible_rows(5, None).len(), 5);
    }
}
