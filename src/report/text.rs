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
