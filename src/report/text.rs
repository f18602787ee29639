//! Text helpers every renderer shares: the one terminal table style (and its rule that words
//! stay whole), fitting terminal text to a width (tables split by columns, [`draw`]; prose
//! wrapped at words, [`wrap`] and [`fit`]), the slow rank's highlight ([`highlight`]),
//! markdown cell escaping and the line under the terminal class table.

use comfy_table::{
    presets, Cell as CCell, CellAlignment, ColumnConstraint, ContentArrangement, Table, Width,
};

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

/// How many columns `s` takes on a terminal: its `char`s, ANSI colour sequences
/// (`ESC [ … m`) not counted.
pub(crate) fn display_width(s: &str) -> usize {
    let mut n = 0;
    let mut esc = false;
    for c in s.chars() {
        match (esc, c) {
            (false, '\u{1b}') => esc = true,
            (true, 'm') => esc = false,
            (true, _) => {}
            (false, _) => n += 1,
        }
    }
    n
}

/// Wraps `line` at spaces to at most `width` columns; continuation lines start with `indent`.
/// A word longer than a line is broken, after its last `/` in the room left where that is
/// past half of it (paths), else where the room ends.
pub(crate) fn wrap(line: &str, width: usize, indent: &str) -> String {
    wrap_after("", line, width, indent)
}

/// [`wrap`] for text that follows `prefix` on its first line.
fn wrap_after(prefix: &str, line: &str, width: usize, indent: &str) -> String {
    let iw = display_width(indent);
    let width = width.max(iw + 8);
    let mut out = prefix.to_string();
    let mut col = display_width(prefix);
    // Whether nothing but the prefix or indent is on the current line yet.
    let mut fresh = true;
    for word in line.split(' ') {
        let mut w: Vec<char> = word.chars().collect();
        loop {
            let sep = usize::from(!fresh);
            if col + sep + w.len() <= width {
                if !fresh {
                    out.push(' ');
                }
                out.extend(&w);
                col += sep + w.len();
                fresh = false;
                break;
            }
            let room = width.saturating_sub(col + sep);
            if !fresh && (iw + w.len() <= width || room < 8) {
                out.push('\n');
                out.push_str(indent);
                col = iw;
                fresh = true;
                continue;
            }
            // Longer than a line: the piece that fits here, the rest on the next line.
            let cut = w[..room]
                .iter()
                .rposition(|&c| c == '/')
                .filter(|&p| p >= room / 2)
                .map_or(room, |p| p + 1);
            if !fresh {
                out.push(' ');
            }
            out.extend(&w[..cut]);
            w.drain(..cut);
            out.push('\n');
            out.push_str(indent);
            col = iw;
            fresh = true;
            if w.is_empty() {
                break;
            }
        }
    }
    out
}

/// Whether a line of terminal text is part of a drawn table (its box-drawing border).
fn table_line(l: &str) -> bool {
    l.chars()
        .next()
        .is_some_and(|c| ('\u{2500}'..='\u{257f}').contains(&c))
}

/// Terminal text with every line fitted to `width`: a longer line (not a drawn table, which
/// [`draw`] fits) is wrapped at words, its continuation lines indented two columns past its
/// own indent (four past a `- ` list item's).
pub(crate) fn fit(text: &str, width: usize) -> String {
    let mut out = String::with_capacity(text.len());
    for (i, l) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        if display_width(l) <= width || table_line(l) {
            out.push_str(l);
            continue;
        }
        let lead = l.len() - l.trim_start_matches(' ').len();
        let extra = if l[lead..].starts_with("- ") { 4 } else { 2 };
        let indent = " ".repeat((lead + extra).min(width / 3));
        out.push_str(&wrap_after(&l[..lead], &l[lead..], width, &indent));
    }
    out
}

/// One cell of a table to [`draw`]: its text and whether it is right-aligned (a number).
pub(crate) type DrawCell = (String, bool);

/// A terminal table, title first, fitted to `width`: drawn whole when it fits with its words
/// whole ([`keep_words_whole`]); else split by columns into parts that do, each repeating the
/// leading label columns (rank, kernel, …) and titled "(continued)" after the first; a part
/// that still does not fit lets comfy-table break its words. The title is wrapped.
pub(crate) fn draw(title: &str, header: &[String], rows: &[Vec<DrawCell>], width: usize) -> String {
    let n = header.len();
    let build = |cols: &[usize], whole: bool| {
        let mut t = table();
        t.set_width(u16::try_from(width).unwrap_or(u16::MAX));
        t.set_header(cols.iter().map(|&c| CCell::new(&header[c])));
        for r in rows {
            t.add_row(cols.iter().map(|&c| match r.get(c) {
                Some((s, true)) => CCell::new(s).set_alignment(CellAlignment::Right),
                Some((s, false)) => CCell::new(s),
                None => CCell::new(""),
            }));
        }
        if whole {
            keep_words_whole(&mut t);
        }
        t
    };
    let widest = |t: &Table| t.lines().map(|l| display_width(&l)).max().unwrap_or(0);
    let fitted = |cols: &[usize]| {
        let t = build(cols, true);
        if widest(&t) <= width {
            t
        } else {
            build(cols, false)
        }
    };
    let all: Vec<usize> = (0..n).collect();
    let whole = build(&all, true);
    if widest(&whole) <= width || n <= 1 {
        let t = if widest(&whole) <= width {
            whole
        } else {
            fitted(&all)
        };
        return format!("{}\n{t}\n", wrap(title, width, "  "));
    }
    // The label columns every part repeats: the leading text columns, at most two.
    let text_col = |c: usize| rows.iter().all(|r| r.get(c).is_none_or(|x| !x.1));
    let keys = (0..n.min(2))
        .take_while(|&c| text_col(c))
        .count()
        .clamp(1, n - 1);
    let mut parts: Vec<Vec<usize>> = Vec::new();
    let mut cur: Vec<usize> = (0..keys).collect();
    for c in keys..n {
        let mut trial = cur.clone();
        trial.push(c);
        if cur.len() == keys || widest(&build(&trial, true)) <= width {
            cur = trial;
        } else {
            parts.push(std::mem::replace(&mut cur, (0..keys).chain([c]).collect()));
        }
    }
    parts.push(cur);
    let mut s = String::new();
    for (i, cols) in parts.iter().enumerate() {
        let t = fitted(cols);
        let head = if i == 0 {
            title.to_string()
        } else {
            format!("{title} (continued)")
        };
        if i > 0 {
            s.push('\n');
        }
        s.push_str(&format!("{}\n{t}\n", wrap(&head, width, "  ")));
    }
    s
}

/// `text` with every whole-word occurrence of `label` (a rank label or `DPnn`: not inside a
/// longer label such as `TP01-DP01` for `TP01`) in bold red, for a terminal that shows colour.
pub(crate) fn highlight(text: &str, label: &str) -> String {
    if label.is_empty() {
        return text.to_string();
    }
    let part = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
    let mut out = String::with_capacity(text.len() + 64);
    let mut rest = text;
    while let Some(p) = rest.find(label) {
        let before = rest[..p].chars().next_back();
        let after = rest[p + label.len()..].chars().next();
        out.push_str(&rest[..p]);
        if before.is_some_and(part) || after.is_some_and(part) {
            out.push_str(label);
        } else {
            out.push_str(HIGHLIGHT);
            out.push_str(label);
            out.push_str(RESET);
        }
        rest = &rest[p + label.len()..];
    }
    out.push_str(rest);
    out
}

/// The escape that starts the slow rank's highlight (bold red), and the one that ends it.
pub(crate) const HIGHLIGHT: &str = "\u{1b}[1;31m";
pub(crate) const RESET: &str = "\u{1b}[0m";

/// A size in bytes as a person reads it: `12.3 MB` (decimal units), and under 0.05 MB in kB or
/// bytes (`48.2 kB`, `512 B`), never `0.0 MB`.
pub(crate) fn size(bytes: u64) -> String {
    let b = bytes as f64;
    if b >= 5e4 {
        format!("{:.1} MB", b / 1e6)
    } else if b >= 1e3 {
        format!("{:.1} kB", b / 1e3)
    } else {
        format!("{bytes} B")
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

    #[test]
    fn wraps_at_words_and_breaks_long_paths_after_a_slash() {
        assert_eq!(
            wrap("alpha beta gamma delta", 12, "  "),
            "alpha beta\n  gamma\n  delta"
        );
        assert_eq!(wrap("short", 80, "  "), "short");
        assert_eq!(
            wrap("see /aaaa/bbbb/cccc/dddd/eeee.json now", 16, "  "),
            "see /aaaa/bbbb/\n  cccc/dddd/\n  eeee.json now"
        );
        // No slash: cut where the room ends.
        assert_eq!(
            wrap("x abcdefghijklmnopqrstuvwxyz", 12, ""),
            "x abcdefghij\nklmnopqrstuv\nwxyz"
        );
    }

    #[test]
    fn fit_wraps_prose_under_its_indent_and_leaves_tables() {
        let rule = format!("┌{}┐", "─".repeat(30));
        let text = format!("  - one two three four five six\n{rule}\nok");
        assert_eq!(
            fit(&text, 20),
            format!("  - one two three\n      four five six\n{rule}\nok")
        );
        // Colour escapes take no column.
        let red = format!("{HIGHLIGHT}TP01{RESET} is slow");
        assert_eq!(display_width(&red), 12);
        assert_eq!(fit(&red, 12), red);
    }

    #[test]
    fn draw_splits_a_wide_table_by_columns_repeating_the_labels() {
        let header: Vec<String> = ["rank", "span", "busy", "idle", "compute", "memcpy/set"]
            .iter()
            .map(|c| c.to_string())
            .collect();
        let rows: Vec<Vec<DrawCell>> = ["TP00-DP00", "TP01-DP01"]
            .iter()
            .map(|r| {
                std::iter::once((r.to_string(), false))
                    .chain((0..5).map(|i| (format!("{}.25", 1000 + i), true)))
                    .collect()
            })
            .collect();
        let whole = draw("Rank summary", &header, &rows, 120);
        assert!(!whole.contains("(continued)"), "{whole}");
        let split = draw("Rank summary", &header, &rows, 40);
        assert!(split.lines().all(|l| l.chars().count() <= 40), "{split}");
        let parts = split.matches("Rank summary").count();
        assert!(parts >= 2, "{split}");
        assert_eq!(split.matches("(continued)").count(), parts - 1, "{split}");
        // Every part carries the rank labels, whole; every column is somewhere.
        assert_eq!(split.matches("TP01-DP01").count(), parts, "{split}");
        for c in &header {
            assert!(split.contains(c.as_str()), "{c}: {split}");
        }
    }

    #[test]
    fn sizes_never_read_zero_megabytes() {
        assert_eq!(size(0), "0 B");
        assert_eq!(size(999), "999 B");
        assert_eq!(size(1_000), "1.0 kB");
        assert_eq!(size(48_200), "48.2 kB");
        assert_eq!(size(50_000), "0.1 MB");
        assert_eq!(size(12_340_000), "12.3 MB");
    }

    #[test]
    fn highlight_marks_the_label_not_longer_labels() {
        let h = highlight("TP01 slow; TP01-DP01 and xTP01 are not", "TP01");
        assert_eq!(
            h,
            format!("{HIGHLIGHT}TP01{RESET} slow; TP01-DP01 and xTP01 are not")
        );
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
