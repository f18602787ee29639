//! The terminal report: the analysis's tables ([`super::tables`]) drawn with comfy-table,
//! fitted to the terminal width (long step tables keep their start, the onset and the end),
//! in the per-rank or the grouped form ([`super::groups`]), with the verdict and the notes.

use comfy_table::{Cell as CCell, CellAlignment, Table as CTable};

use super::groups::{View, SHOWN};
use super::table::{Cell, Table};
use super::tables::sections_for;
use crate::analyze::reduce::groups::Dim;
use crate::analyze::Analysis;

/// Terminal width: the terminal's, else `$COLUMNS`, else 120.
pub(crate) fn width() -> u16 {
    if let Some(w) = CTable::new().width() {
        return w;
    }
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(120)
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

/// Renders one table for the terminal.
pub(crate) fn render_table(t: &Table, onset_row: Option<usize>) -> String {
    let mut ct = super::text::table();
    ct.set_width(width());
    ct.set_header(t.columns.iter().map(CCell::new));
    let rows: Vec<Option<usize>> = if t.name == "steps" {
        visible_rows(t.rows.len(), onset_row)
    } else {
        (0..t.rows.len()).map(Some).collect()
    };
    let skipped = t.rows.len() - rows.iter().flatten().count();
    for r in rows {
        match r {
            Some(i) => {
                ct.add_row(t.rows[i].iter().map(|c| {
                    let cell = CCell::new(c.show());
                    if c.numeric() {
                        cell.set_alignment(CellAlignment::Right)
                    } else {
                        cell
                    }
                }));
            }
            None => {
                ct.add_row(t.columns.iter().map(|_| CCell::new("…")));
            }
        }
    }
    super::text::keep_words_whole(&mut ct);
    let mut s = format!("{}\n{ct}\n", t.title);
    if skipped > 0 {
        s.push_str(&format!(
            "({skipped} rows not shown; --format csv or json has them all)\n"
        ));
    }
    s
}

/// The terminal report: verdict, then every terminal table, then notes. In the grouped form
/// (many ranks, see [`super::groups`]) the tables with one row per rank give way to
/// distributions, outliers and the groups of `group_by`.
pub fn render_view(a: &Analysis, view: View, group_by: Option<Dim>) -> String {
    let mut s = String::new();
    let scope = match &a.stage {
        Some(st) => format!("{} (stage {st})", a.profile_id),
        None => a.profile_id.clone(),
    };
    let n = a.ranks.len();
    let plural = if n == 1 { "" } else { "s" };
    s.push_str(&format!("Profile {scope}: {n} rank{plural}\n"));
    for l in &a.verdict.lines {
        let w = (width() as usize).max(60) - 2;
        s.push_str(&format!("  {}\n", super::attribution::wrap(l, w, "    ")));
    }
    s.push('\n');
    if let Some(d) = &a.drill {
        return drill_view(s, a, d);
    }
    let onset = a.steps.onset.as_ref().map(|o| o.step_index);
    let grouped = super::groups::grouped(a, view);
    if grouped {
        for (t, line) in super::groups::tables(a, group_by) {
            s.push_str(&render_table(&t, None));
            if let Some(l) = line {
                s.push_str(&l);
                s.push('\n');
            }
            s.push('\n');
        }
    }
    let per_rank = ["ranks", "classes", "collectives_ranks"];
    for t in sections_for(a, Some(width() as usize))
        .iter()
        .filter(|t| t.terminal && !(grouped && per_rank.contains(&t.name)))
    {
        if grouped && t.name == "collectives" {
            s.push_str(&worst_worlds(t));
            s.push('\n');
            continue;
        }
        s.push_str(&render_table(t, onset));
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
fn drill_view(mut s: String, a: &Analysis, d: &crate::analyze::explain::drill::Drill) -> String {
    let w = (width() as usize).max(60) - 2;
    s.push_str(&format!(
        "Rank {} against its peers ({}):\n",
        d.rank, d.peers
    ));
    s.push_str(&format!(
        "  {}\n\n",
        super::attribution::wrap(&d.summary, w, "    ")
    ));
    for t in sections_for(a, Some(width() as usize))
        .iter()
        .filter(|t| t.terminal && (t.name.starts_with("drill") || t.name.starts_with("rank_")))
    {
        s.push_str(&render_table(t, None));
        s.push('\n');
    }
    s
}

/// The collective groups table in the grouped form: the [`SHOWN`](super::groups::SHOWN) rows with the largest mean
/// skew (one row per world and key: 128 replicas give 128 rows), the rest counted.
pub(crate) fn worst_worlds(t: &Table) -> String {
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
    let mut s = render_table(&t, None);
    if n > t.rows.len() {
        s.push_str(&format!(
            "({} rows not shown; --format csv or json has them all)\n",
            n - t.rows.len()
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
