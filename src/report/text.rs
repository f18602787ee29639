//! Text helpers every renderer shares: the one terminal table style (and its rule that words
//! stay whole), markdown cell escaping and the line under the terminal class table.

use comfy_table::{presets, ColumnConstraint, ContentArrangement, Table, Width};

use crate::analyze::classes::OTHER;
use crate::analyze::Analysis;

/// An empty terminal table in the house style (UTF-8, condensed, fitted to the terminal).
/// Once its header and rows are in, [`keep_words_whole`] keeps its words from being broken.
pub(crate) fn table() -> Table {
    let mut t = Table::new();
    t.load_preset(presets::UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Dynamic);
    t
}

/// Words up to this many characters are never broken across lines in a terminal table cell;
/// longer ones (kernel names) still wrap.
const WHOLE_WORD_MAX: usize = 24;

/// Gives each column of `t` (header and rows already in) at least the width of the longest word
/// in it, up to [`WHOLE_WORD_MAX`]. Fitted to a narrow terminal, or to 120 columns when the
/// report is piped, comfy-table otherwise breaks words to make a table fit (`TP01-DP` over
/// `01`, `balance` over `d`), and a rank label broken in two is not found by a search of the
/// report. A table whose words do not fit is drawn wider than the terminal instead. Widths are
/// counted in `char`s: a word of double-width characters may still be broken.
pub(crate) fn keep_words_whole(t: &mut Table) {
    let longest = |s: &str| {
        s.split_whitespace()
            .map(|w| w.chars().count())
            .max()
            .unwrap_or(0)
    };
    let mut widths: Vec<usize> = Vec::new();
    for row in t.header().into_iter().chain(t.row_iter()) {
        for (i, cell) in row.cell_iter().enumerate() {
            if widths.len() <= i {
                widths.resize(i + 1, 0);
            }
            widths[i] = widths[i].max(longest(&cell.content()));
        }
    }
    for (i, w) in widths.into_iter().enumerate() {
        if let Some(col) = t.column_mut(i) {
            // comfy-table's boundaries include the cell's padding.
            let w = w.min(WHOLE_WORD_MAX) as u16 + col.padding_width();
            col.set_constraint(ColumnConstraint::LowerBoundary(Width::Fixed(w)));
        }
    }
}

/// A markdown table cell: `|` escaped, line breaks flattened.
pub(crate) fn md_cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// The line under the class table: how much time no rule classified, per rank when ranks
/// differ, and the largest unclassified kernels of the top-kernels table.
pub(crate) fn unclassified_line(a: &Analysis) -> String {
    let c = &a.classes;
    let (lo, hi) = c
        .unclassified_rank_pct
        .iter()
        .fold((f64::MAX, f64::MIN), |(l, h), &x| (l.min(x), h.max(x)));
    let mut s = format!(
        "Unclassified (\"other\"): {:.1} % of the time",
        c.unclassified_pct
    );
    if c.unclassified_rank_pct.len() > 1 && hi - lo >= 0.05 {
        s.push_str(&format!(" ({lo:.1} to {hi:.1} % by rank)"));
    }
    let top: Vec<&str> = a
        .kernels
        .iter()
        .filter(|k| k.class == OTHER)
        .take(3)
        .map(|k| k.short.as_str())
        .collect();
    if !top.is_empty() {
        s.push_str(&format!("; largest: {}", top.join(", ")));
    }
    if c.unclassified_pct > 0.0 {
        s.push_str(" (--classes rules.toml sorts them)");
    }
    s.push('\n');
    s
}

/// Markdown text that GitHub shows as written: `<` and `>` as entities (so that
/// `act_and_mul_kernel<silu>` is not taken for an HTML tag), `|` escaped, line breaks flattened.
pub(crate) fn md_text(s: &str) -> String {
    md_cell(s).replace('<', "&lt;").replace('>', "&gt;")
}

/// A name as inline code, safe in a GitHub table cell: a backtick fence longer than any run of
/// backticks in it, `|` escaped (GitHub splits cells before code spans), line breaks flattened.
/// `<` and `>` need no escaping inside code.
pub(crate) fn md_code(s: &str) -> String {
    if s.is_empty() {
        return String::new();
    }
    let mut longest = 0;
    let mut run = 0;
    for c in s.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat(longest + 1);
    let body = md_cell(s);
    let pad = if body.starts_with('`') || body.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{body}{pad}{fence}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_names_are_github_safe() {
        assert_eq!(
            md_code("act_and_mul_kernel<silu>"),
            "`act_and_mul_kernel<silu>`"
        );
        assert_eq!(md_code("a|b"), "`a\\|b`");
        assert_eq!(md_code("x`y"), "``x`y``");
        assert_eq!(md_code("`q"), "`` `q ``");
        assert_eq!(md_text("f<T> | g"), "f&lt;T&gt; \\| g");
    }

    /// A table too wide for its width: without the constraints comfy-table breaks the rank
    /// labels and words to fit; with them every word of up to [`WHOLE_WORD_MAX`] characters
    /// stands whole on one line, and a longer one still wraps.
    #[test]
    fn words_are_not_broken_to_fit() {
        let long = "x".repeat(WHOLE_WORD_MAX + 6);
        let draw = |whole: bool| {
            let mut t = table();
            t.set_width(40);
            t.set_header([
                "scope",
                "who",
                "cause",
                "time ratio",
                "tokens ratio",
                "kernel",
            ]);
            t.add_row([
                "replica",
                "TP01-DP01",
                "balanced",
                "1.04",
                "1.00",
                long.as_str(),
            ]);
            t.add_row([
                "rank",
                "TP600-DP37-EP37",
                "slower device or host",
                "1.5",
                "1",
                "k",
            ]);
            if whole {
                keep_words_whole(&mut t);
            }
            t.to_string()
        };
        let words = [
            "replica",
            "TP01-DP01",
            "balanced",
            "TP600-DP37-EP37",
            "slower",
            "tokens",
        ];
        let broken = draw(false);
        assert!(
            words.iter().any(|w| !broken.contains(w)),
            "the case no longer breaks words:\n{broken}"
        );
        let whole = draw(true);
        for w in words {
            assert!(whole.contains(w), "{w} broken:\n{whole}");
        }
        assert!(!whole.contains(long.as_str()), "{whole}");
    }
}
