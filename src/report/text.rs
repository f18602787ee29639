//! Text helpers every renderer shares: the one terminal table style, markdown cell escaping
//! and the line under the terminal class table.

use comfy_table::{presets, ContentArrangement, Table};

use crate::analyze::classes::OTHER;
use crate::analyze::Analysis;

/// An empty terminal table in the house style (UTF-8, condensed, fitted to the terminal).
pub fn table() -> Table {
    let mut t = Table::new();
    t.load_preset(presets::UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Dynamic);
    t
}

/// A markdown table cell: `|` escaped, line breaks flattened.
pub fn md_cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// The line under the class table: how much time no rule classified, per rank when ranks
/// differ, and the largest unclassified kernels of the top-kernels table.
pub fn unclassified_line(a: &Analysis) -> String {
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
pub fn md_text(s: &str) -> String {
    md_cell(s).replace('<', "&lt;").replace('>', "&gt;")
}

/// A name as inline code, safe in a GitHub table cell: a backtick fence longer than any run of
/// backticks in it, `|` escaped (GitHub splits cells before code spans), line breaks flattened.
/// `<` and `>` need no escaping inside code.
pub fn md_code(s: &str) -> String {
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
}
