//! The HTML report: one self-contained file (inline CSS and SVG, no script, nothing fetched
//! from the network) with the verdict, two heatmaps — rank × kernel class and rank × step —
//! and every table of the analysis.
//!
//! Heatmap colours show each cell relative to its column's mean over ranks (class heatmap) or
//! to the mean of the other ranks in that step (step heatmap): white is even, red is above,
//! blue is below, full colour at ±25 %.

use super::tables::{sections, Cell};
use crate::analyze::heat::{self, Heatmap};
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
#verdict p { margin: 4px 0; }
table { border-collapse: collapse; margin: 6px 0 12px; font-size: 12px; }
th, td { border: 1px solid #d0d7de; padding: 3px 7px; }
th { background: #f6f8fa; text-align: left; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
svg text { font: 11px system-ui, sans-serif; }
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

/// The whole report as one HTML document.
pub fn render(a: &Analysis) -> String {
    let mut s = String::new();
    let title = match &a.stage {
        Some(st) => format!("rankprof analyze: {} (stage {st})", a.profile_id),
        None => format!("rankprof analyze: {}", a.profile_id),
    };
    s.push_str(&format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title><style>{CSS}</style></head><body>\n",
        esc(&title)
    ));
    s.push_str(&format!("<h1>{}</h1>\n", esc(&title)));
    s.push_str(&format!(
        "<p class=\"meta\">{} ranks · {} files · threshold {:.1} % · steps from {}</p>\n",
        a.ranks.len(),
        a.files.len(),
        a.threshold_pct,
        esc(&a.steps.source)
    ));
    let cls = if a.verdict.balanced {
        "balanced"
    } else {
        "imbalanced"
    };
    s.push_str(&format!("<div id=\"verdict\" class=\"{cls}\">"));
    for l in &a.verdict.lines {
        s.push_str(&format!("<p>{}</p>", esc(l)));
    }
    s.push_str("</div>\n");
    s.push_str("<h2>Kernel classes × rank (ms; colour: vs the class's mean over ranks)</h2>\n");
    s.push_str(&class_heatmap(a));
    if !a.steps.rows.is_empty() {
        s.push_str("\n<h2>Per-step work × rank (ms; colour: vs the other ranks' mean)</h2>\n");
        s.push_str(&step_heatmap(a));
        s.push_str("\n<h2>Work vs time per rank per step</h2>\n");
        s.push_str(&super::attribution::chart(a));
    }
    for t in sections(a).iter().filter(|t| t.name != "verdict") {
        s.push_str(&format!(
            "\n<h2>{}</h2>\n<table id=\"t-{}\"><thead><tr>",
            esc(&t.title),
            t.name
        ));
        for c in &t.columns {
            s.push_str(&format!("<th>{}</th>", esc(c)));
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
    }
    let notes = a.all_notes();
    if !notes.is_empty() {
        s.push_str("<h2>Notes</h2><ul class=\"notes\">");
        for n in notes {
            s.push_str(&format!("<li>{}</li>", esc(n)));
        }
        s.push_str("</ul>\n");
    }
    s.push_str("</body></html>\n");
    s
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
}
