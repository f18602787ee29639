//! Text helpers every renderer shares: the one terminal table style and markdown cell
//! escaping.

use comfy_table::{presets, ContentArrangement, Table};

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
