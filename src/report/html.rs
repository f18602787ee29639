//! The HTML report: one self-contained file (inline CSS, SVG and a few lines of script, nothing
//! fetched from the network) with the verdict, the merged trace to open in a trace viewer, two
//! heatmaps — rank × kernel class and rank × step — each with its colour scale, and every table
//! of the analysis, sortable by a click on a column header; the critical path as a lane chart
//! ([`super::html_lanes`]).
//!
//! Heatmap colours show each cell relative to its column's mean over ranks (class heatmap) or
//! to the mean of the other ranks in that step (step heatmap): white is even, red is above,
//! blue is below, full colour at ±25 %. On CPU-only traces the report says "ops", not "kernels".

use super::groups::View;
use super::table::{Cell, Table};
use super::tables::sections;
use crate::analyze::reduce::groups::Dim;
use crate::analyze::reduce::heat::{self, Heatmap};
use crate::analyze::Analysis;

fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            _ => o.push(c),
        }
    }
    o
}

/// Diverging colour for a relative deviation (0 = white, +0.25 = full red, -0.25 = full blue).
fn color(dev: f64) -> String {
    let x = if dev.is_finite() {
        (dev / 0.25).clamp(-1.0, 1.0)
    } else {
        1.0
    };
    let (r, g, b) = if x >= 0.0 {
        (255.0, 255.0 - 155.0 * x, 255.0 - 175.0 * x)
    } else {
        (255.0 + 175.0 * x, 255.0 + 120.0 * x, 255.0)
    };
    format!(
        "rgb({},{},{})",
        r.round() as u8,
        g.round() as u8,
        b.round() as u8
    )
}

const CSS: &str = r#"
body { font: 14px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 24px; color: #1b1f24; }
h1 { font-size: 20px; margin: 0 0 8px; }
h2 { font-size: 16px; margin: 28px 0 8px; }
#verdict { padding: 10px 14px; border-radius: 6px; margin: 12px 0; }
#verdict.balanced { background: #e6f4ea; border: 1px solid #9cd3ac; }
#verdict.imbalanced { background: #fdecea; border: 1px solid #f1a39b; }
#verdict.inconclusive { background: #fff8e1; border: 1px solid #e6c96b; }
#verdict p { margin: 4px 0; }
table { border-collapse: collapse; margin: 6px 0 12px; font-size: 12px; }
th, td { border: 1px solid #d0d7de; padding: 3px 7px; }
th { background: #f6f8fa; text-align: left; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
svg text { font: 11px system-ui, sans-serif; }
svg.legend { display: block; margin: 2px 0 4px; }
table.sortable th { cursor: pointer; user-select: none; }
th[aria-sort="ascending"]::after { content: " \25B2"; }
th[aria-sort="descending"]::after { content: " \25BC"; }
#merged-trace code { background: #f6f8fa; padding: 1px 4px; }
.meta { color: #57606a; font-size: 12px; }
.notes li { color: #57606a; font-size: 12px; }
"#;

/// SVG heatmap: `rows` × `cols`, `val[r][c]` shown as text (when it fits), `dev[r][c]` as colour.
fn heatmap(
    id: &str,
    rows: &[String],
    cols: &[String],
    val: &[Vec<String>],
    dev: &[Vec<f64>],
) -> String {
    let label_w = 12
        + 7 * rows
            .iter()
            .map(|r| r.chars().count())
            .max()
            .unwrap_or(4)
            .max(4);
    let many = cols.len() > 24;
    let cell_w = if many {
        (900 / cols.len().max(1)).clamp(4, 36)
    } else {
        84
    };
    let cell_h = 22;
    let head_h = if many { 20 } else { 34 };
    let w = label_w + cell_w * cols.len() + 10;
    let h = head_h + cell_h * rows.len() + 6;
    let mut s = format!(
        r#"<svg id="{id}" class="heatmap" width="{w}" height="{h}" viewBox="0 0 {w} {h}">"#
    );
    for (c, name) in cols.iter().enumerate() {
        let show = !many || c % (cols.len() / 12).max(1) == 0;
        if show {
            let x = label_w + c * cell_w + cell_w / 2;
            s.push_str(&format!(
                r#"<text x="{x}" y="{}" text-anchor="middle">{}</text>"#,
                head_h - 8,
                esc(name)
            ));
        }
    }
    for (r, name) in rows.iter().enumerate() {
        let y = head_h + r * cell_h;
        s.push_str(&format!(
            r#"<text x="4" y="{}">{}</text>"#,
            y + 15,
            esc(name)
        ));
        for (c, col) in cols.iter().enumerate() {
            let x = label_w + c * cell_w;
            let d = dev.get(r).and_then(|v| v.get(c)).copied().unwrap_or(0.0);
            let v = val
                .get(r)
                .and_then(|v| v.get(c))
                .cloned()
                .unwrap_or_default();
            s.push_str(&format!(
                r##"<rect x="{x}" y="{y}" width="{cell_w}" height="{cell_h}" fill="{}" stroke="#ffffff"><title>{} · {}: {} ({:+.1} %)</title></rect>"##,
                color(d),
                esc(name),
                esc(col),
                esc(&v),
                100.0 * d
            ));
            if !many {
                s.push_str(&format!(
                    r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#,
                    x + cell_w / 2,
                    y + 15,
                    esc(&v)
                ));
            }
        }
    }
    s.push_str("</svg>");
    s
}

/// Deviations the legend shows a swatch for: −25 % to +25 % in steps of 5 %.
const LEGEND_PCT: [i32; 11] = [-25, -20, -15, -10, -5, 0, 5, 10, 15, 20, 25];

/// The colour scale of heatmap `id`: one swatch per value of [`LEGEND_PCT`], labelled, with
/// what the colour compares against.
fn legend(id: &str, against: &str) -> String {
    // Room on the left for the first label, on the right for the caption (~7 px a character).
    let (sw, x0) = (34, 26);
    let caption = format!("blue: below, red: above {against}");
    let w = x0 + sw * LEGEND_PCT.len() + 16 + 7 * caption.chars().count();
    let mut s = format!(
        r#"<svg id="{id}-legend" class="legend" width="{w}" height="34" viewBox="0 0 {w} 34">"#
    );
    for (i, pct) in LEGEND_PCT.iter().enumerate() {
        let x = x0 + i * sw;
        let label = match pct {
            -25 => "≤ −25 %".to_string(),
            25 => "≥ +25 %".to_string(),
            0 => "0 %".to_string(),
            p if *p < 0 => format!("−{} %", -p),
            p => format!("+{p} %"),
        };
        s.push_str(&format!(
            r##"<rect x="{x}" y="2" width="{sw}" height="14" fill="{}" stroke="#d0d7de"><title>{label}</title></rect>"##,
            color(f64::from(*pct) / 100.0)
        ));
        if [0, 2, 5, 8, 10].contains(&i) {
            s.push_str(&format!(
                r#"<text x="{}" y="29" text-anchor="middle">{label}</text>"#,
                x + sw / 2
            ));
        }
    }
    s.push_str(&format!(
        r#"<text x="{}" y="13">{}</text></svg>"#,
        x0 + sw * LEGEND_PCT.len() + 10,
        esc(&caption)
    ));
    s
}

/// On CPU-only traces, "op(s)" for the words "kernel(s)" in a heading or column name.
fn ops_for_kernels(s: &str) -> String {
    fn flush(word: &mut String, out: &mut String) {
        out.push_str(match word.as_str() {
            "kernel" => "op",
            "kernels" => "ops",
            "Kernel" => "Op",
            "Kernels" => "Ops",
            w => w,
        });
        word.clear();
    }
    let (mut out, mut word) = (String::with_capacity(s.len()), String::new());
    for c in s.chars() {
        if c.is_alphanumeric() || c == '_' {
            word.push(c);
        } else {
            flush(&mut word, &mut out);
            out.push(c);
        }
    }
    flush(&mut word, &mut out);
    out
}

/// Sorts a table by the column whose header is clicked: numbers (cells of class `n`) largest
/// first, text A to Z (`TP2` before `TP10`); a second click reverses. Rows keep their order
/// among equals.
const SORT_JS: &str = r#"
document.querySelectorAll("table.sortable").forEach(function (table) {
  var heads = Array.prototype.slice.call(table.tHead.rows[0].cells);
  heads.forEach(function (th, col) {
    th.addEventListener("click", function () {
      var body = table.tBodies[0];
      var rows = Array.prototype.slice.call(body.rows);
      var num = rows.some(function (r) { return r.cells[col] && r.cells[col].classList.contains("n"); });
      var now = th.getAttribute("aria-sort");
      var desc = now ? now === "ascending" : num;
      var key = function (r) {
        var t = r.cells[col] ? r.cells[col].textContent.trim() : "";
        if (!num) return t;
        var v = parseFloat(t);
        return isNaN(v) ? -Number.MAX_VALUE : v; // an empty cell sorts below every number
      };
      rows.sort(function (a, b) {
        var x = key(a), y = key(b);
        var c = num ? (x < y ? -1 : x > y ? 1 : 0) : x.localeCompare(y, undefined, { numeric: true });
        return desc ? -c : c;
      });
      heads.forEach(function (h) { h.removeAttribute("aria-sort"); });
      th.setAttribute("aria-sort", desc ? "descending" : "ascending");
      rows.forEach(function (r) { body.appendChild(r); });
    });
  });
});
"#;

/// Where the merged trace is and how to open it.
fn merged_trace(path: &str) -> String {
    let p = std::path::Path::new(path);
    let name = p
        .file_name()
        .map_or_else(|| path.to_string(), |n| n.to_string_lossy().to_string());
    let dir = p
        .parent()
        .map(|d| d.display().to_string())
        .filter(|d| !d.is_empty());
    format!(
        r#"<p id="merged-trace">Merged trace: <code>{}</code>{} — open it in <a href="https://ui.perfetto.dev">ui.perfetto.dev</a> (Open trace file) or in Chrome at <code>chrome://tracing</code> (Load); every rank is its own group of tracks, labelled <code>[TP01]</code>, <code>[TP00-DP01]</code>, ….</p>"#,
        esc(&name),
        dir.map_or_else(String::new, |d| format!(" in <code>{}</code>", esc(&d)))
    )
}

/// Draws a computed heatmap (values shown as ms with two decimals).
fn draw(id: &str, h: &Heatmap) -> String {
    let val: Vec<Vec<String>> =
        h.ms.iter()
            .map(|r| r.iter().map(|v| format!("{v:.2}")).collect())
            .collect();
    heatmap(id, &h.rows, &h.cols, &val, &h.dev)
}

fn class_heatmap(a: &Analysis) -> String {
    draw("heat-classes", &heat::classes(&a.classes))
}

fn step_heatmap(a: &Analysis) -> String {
    draw("heat-steps", &heat::steps(&a.steps))
}

/// The whole report as one HTML document, in the form the rank count calls for.
pub fn render(a: &Analysis) -> String {
    render_view(a, View::Auto, None)
}

/// Tables left out of the grouped form (the CSV and JSON outputs have them): a row per rank
/// and step or kernel, and per-rank tables the grouped tables and the canvases already show
/// (classes, work, collectives per rank). The rank summary and the attribution stay, sortable.
const LONG_TABLES: [&str; 5] = [
    "kernels_by_rank",
    "steps_by_rank",
    "classes",
    "work",
    "collectives_ranks",
];

/// The whole report as one HTML document. In the grouped form (many ranks) the heatmaps are
/// drawn on canvases laid out on the parallel grid ([`super::html_grid`]), the grouped tables
/// come first and the long per-rank × step / kernel tables are left to the CSV and JSON.
pub(crate) fn render_view(a: &Analysis, view: View, group_by: Option<Dim>) -> String {
    let grouped = super::groups::grouped(a, view);
    let mut s = head(a);
    s.push_str(&verdict_block(a));
    s.push_str(&lanes_block(a));
    heatmaps(&mut s, a, grouped);
    for t in &report_tables(a, grouped, group_by) {
        s.push_str(&table_html(t, a.source == "cpu"));
    }
    s.push_str(&notes_block(a));
    s.push_str(&format!("<script>{SORT_JS}</script>\n"));
    if grouped {
        s.push_str(&format!(
            "<script>{}</script>\n",
            super::html_grid::CANVAS_JS
        ));
    }
    s.push_str("</body></html>\n");
    s
}

/// The document's head, its title and the line of what the figures are from (and the merged
/// trace beside it, when there is one).
fn head(a: &Analysis) -> String {
    let title = match &a.stage {
        Some(st) => format!("rankprof analyze: {} (stage {st})", a.profile_id),
        None => format!("rankprof analyze: {}", a.profile_id),
    };
    let mut s = format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title><style>{CSS}</style></head><body>\n",
        esc(&title)
    );
    s.push_str(&format!("<h1>{}</h1>\n", esc(&title)));
    let source = match a.source.as_str() {
        "cpu" => "CPU-only trace: figures from CPU ops (self time)",
        "gpu" => "figures from GPU kernels",
        _ => "figures from GPU kernels, and CPU ops on the ranks without any",
    };
    s.push_str(&format!(
        "<p class=\"meta\">{} · {} · threshold {:.1} % · steps from {} · <span id=\"source\">{source}</span></p>\n",
        crate::analyze::explain::measure::count(a.ranks.len(), "rank"),
        crate::analyze::explain::measure::count(a.files.len(), "file"),
        a.threshold_pct,
        esc(&a.steps.source)
    ));
    if let Some(p) = &a.merged_trace {
        s.push_str(&merged_trace(p));
        s.push('\n');
    }
    s
}

/// The verdict's lines, styled balanced, inconclusive or imbalanced.
fn verdict_block(a: &Analysis) -> String {
    let cls = if a.verdict.balanced {
        "balanced"
    } else if a.verdict.inconclusive {
        "inconclusive"
    } else {
        "imbalanced"
    };
    let mut s = format!("<div id=\"verdict\" class=\"{cls}\">");
    for l in &a.verdict.lines {
        s.push_str(&format!("<p>{}</p>", esc(l)));
    }
    s.push_str("</div>\n");
    s
}

/// The critical path's lane chart, when there are late arrivals to draw.
fn lanes_block(a: &Analysis) -> String {
    let lanes = super::html_lanes::chart(a);
    if lanes.is_empty() {
        return lanes;
    }
    format!("\n<h2>Critical path: who the others waited for (ranks as lanes; three steps from the first late arrival)</h2>\n{lanes}\n")
}

/// The class × rank map, then the grouped maps, or the step × rank map and the work-vs-time
/// chart.
fn heatmaps(s: &mut String, a: &Analysis, grouped: bool) {
    s.push_str(&format!(
        "<h2>{} × rank (ms; colour: vs the class's mean over ranks)</h2>\n",
        if a.source == "cpu" {
            "CPU op classes"
        } else {
            "Kernel classes"
        }
    ));
    s.push_str(&legend("heat-classes", "the class's mean over ranks"));
    if grouped {
        s.push_str(&super::html_grid::class_map(a));
        grouped_maps(s, a);
    } else {
        s.push_str(&class_heatmap(a));
    }
    if !grouped && !a.steps.rows.is_empty() {
        s.push_str("\n<h2>Per-step work × rank (ms; colour: vs the other ranks' mean)</h2>\n");
        s.push_str(&legend("heat-steps", "the other ranks' mean in that step"));
        s.push_str(&step_heatmap(a));
        s.push_str("\n<h2>Work vs time per rank per step</h2>\n");
        s.push_str(&super::attribution::chart(a));
    }
}

/// The tables shown: the grouped ones first in the grouped form, then the report's (not the
/// verdict, nor in the grouped form the long per-rank ones).
fn report_tables(a: &Analysis, grouped: bool, group_by: Option<Dim>) -> Vec<Table> {
    let mut tables: Vec<Table> = Vec::new();
    if grouped {
        tables.extend(
            super::groups::tables(a, group_by)
                .into_iter()
                .map(|(t, _)| t),
        );
    }
    tables.extend(
        sections(a)
            .into_iter()
            .filter(|t| t.name != "verdict" && !(grouped && LONG_TABLES.contains(&t.name))),
    );
    tables
}

/// One sortable table, its title and headers in the trace's words (ops for a CPU-only one).
fn table_html(t: &Table, cpu: bool) -> String {
    let words = |x: &str| {
        if cpu {
            ops_for_kernels(x)
        } else {
            x.to_string()
        }
    };
    let mut s = format!(
        "\n<h2>{}</h2>\n<table id=\"t-{}\" class=\"sortable\"><thead><tr>",
        esc(&words(&t.title)),
        t.name
    );
    for c in &t.columns {
        s.push_str(&format!(
            "<th title=\"click to sort\">{}</th>",
            esc(&words(c))
        ));
    }
    s.push_str("</tr></thead><tbody>\n");
    for row in &t.rows {
        s.push_str("<tr>");
        for c in row {
            let num = matches!(c, Cell::Int(_) | Cell::Num(..));
            s.push_str(&format!(
                "<td{}>{}</td>",
                if num { " class=\"n\"" } else { "" },
                esc(&c.show())
            ));
        }
        s.push_str("</tr>\n");
    }
    s.push_str("</tbody></table>\n");
    s
}

/// Every note of the analysis, when there are any.
fn notes_block(a: &Analysis) -> String {
    let notes = a.all_notes();
    if notes.is_empty() {
        return String::new();
    }
    let mut s = "<h2>Notes</h2><ul class=\"notes\">".to_string();
    for n in notes {
        s.push_str(&format!("<li>{}</li>", esc(n)));
    }
    s.push_str("</ul>\n");
    s
}

/// The grouped form's work map (DP × TP) and rank × step map.
fn grouped_maps(s: &mut String, a: &Analysis) {
    if let Some(m) = super::html_grid::work_map(a) {
        s.push_str(&format!(
            "\n<h2>Work per rank on the parallel grid (DP replica × TP rank; colour: vs the mean of {})</h2>\n",
            esc(&a.groups.peers)
        ));
        s.push_str(&legend(
            "grid-work",
            &format!("the mean of {}", a.groups.peers),
        ));
        s.push_str(&m);
    }
    if !a.steps.rows.is_empty() {
        s.push_str("\n<h2>Per-step work × rank, ranks by replica (ms; colour: vs the other ranks of the replica)</h2>\n");
        s.push_str(&legend(
            "heat-steps",
            "the replica's other ranks in that step",
        ));
        s.push_str(&super::html_grid::step_map(a));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colours_and_escaping() {
        assert_eq!(color(0.0), "rgb(255,255,255)");
        assert_eq!(color(0.25), "rgb(255,100,80)");
        assert_eq!(color(-1.0), "rgb(80,135,255)");
        assert_eq!(esc("<a&\"b\">"), "&lt;a&amp;&quot;b&quot;&gt;");
    }

    #[test]
    fn cpu_wording_changes_whole_words_only() {
        assert_eq!(
            ops_for_kernels("Top 15 kernels × rank; kernel, Kernels, Kernel classes"),
            "Top 15 ops × rank; op, Ops, Op classes"
        );
        // Names that merely contain the word stay.
        assert_eq!(
            ops_for_kernels("act_and_mul_kernel kernelspec kernels2"),
            "act_and_mul_kernel kernelspec kernels2"
        );
    }

    #[test]
    fn legend_has_a_labelled_swatch_per_step() {
        let l = legend("heat-x", "the mean");
        assert_eq!(l.matches("<rect").count(), LEGEND_PCT.len());
        // The ends and the middle carry the colours the cells use.
        assert!(l.contains(&format!("fill=\"{}\"", color(-0.25))));
        assert!(l.contains("fill=\"rgb(255,255,255)\""));
        assert!(l.contains("fill=\"rgb(255,100,80)\""));
        for want in [">≤ −25 %<", ">−15 %<", ">0 %<", ">+15 %<", ">≥ +25 %<"] {
            assert!(l.contains(want), "{want}");
        }
    }

    #[test]
    fn merged_trace_line_names_the_file_and_the_viewers() {
        let p = merged_trace("/data/run 1/merged-17.trace.json.gz");
        assert!(p.contains("<code>merged-17.trace.json.gz</code> in <code>/data/run 1</code>"));
        assert!(p.contains("ui.perfetto.dev") && p.contains("chrome://tracing"));
        assert!(merged_trace("m.json.gz").contains("<code>m.json.gz</code> — open"));
    }
}
