//! The HTML report's heatmaps for many ranks: drawn on `<canvas>` by a few lines of inline
//! script from compact inline data (deviations in ‰, values in ms), instead of one SVG
//! rectangle per cell — so that 1,024 ranks × 200 steps stay a few hundred kB. Ranks are laid
//! out on the parallel grid ([`crate::analyze::reduce::groups::Grid`]): the work map has a row per DP
//! replica and a column per TP rank (per PP stage × TP rank); the rank × step and rank × class
//! maps have a row per rank in grid order (a replica's ranks together), labelled by replica.
//! Hovering a cell names it. Same colour scale as the SVG heatmaps.

use crate::analyze::reduce::heat::{self, Heatmap};
use crate::analyze::Analysis;

/// A heatmap's data for the canvas script: row labels (empty: not drawn), column labels,
/// deviations in ‰, values.
struct Data<'a> {
    rows: Vec<String>,
    cols: &'a [String],
    dev: Vec<Vec<f64>>,
    val: Vec<Vec<f64>>,
    /// Cell height in px.
    cell_h: usize,
    /// Cell width in px.
    cell_w: usize,
}

fn json_str(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

/// Inline JSON data of one canvas. `</` is escaped so no string can close the script element.
fn data_json(d: &Data<'_>) -> String {
    let list = |v: &[String]| v.iter().map(|s| json_str(s)).collect::<Vec<_>>().join(",");
    let num = |x: f64, scale: f64| {
        if x.is_finite() {
            format!("{}", (x * scale).round() as i64)
        } else {
            "null".into()
        }
    };
    let rows2 = |m: &[Vec<f64>], scale: f64, dec: usize| {
        m.iter()
            .map(|r| {
                let cells: Vec<String> = if dec == 0 {
                    r.iter().map(|&x| num(x, scale)).collect()
                } else {
                    r.iter()
                        .map(|&x| {
                            if x.is_finite() {
                                format!("{x:.dec$}")
                            } else {
                                "null".into()
                            }
                        })
                        .collect()
                };
                format!("[{}]", cells.join(","))
            })
            .collect::<Vec<_>>()
            .join(",")
    };
    format!(
        r#"{{"rows":[{}],"cols":[{}],"dev":[{}],"val":[{}],"h":{},"w":{}}}"#,
        list(&d.rows),
        list(d.cols),
        rows2(&d.dev, 1000.0, 0),
        rows2(&d.val, 1.0, 2),
        d.cell_h,
        d.cell_w
    )
    .replace("</", "<\\/")
}

fn canvas(id: &str, d: &Data<'_>) -> String {
    format!(
        "<canvas id=\"{id}\" class=\"cheat\"></canvas><script type=\"application/json\" id=\"{id}-data\">{}</script>\n",
        data_json(d)
    )
}

/// Draws every `canvas.cheat` from its data; the colour of [`super::html`]'s `color`.
pub(crate) const CANVAS_JS: &str = r##"
function heatColor(p) {
  if (p === null) return "#eeeeee";
  var x = Math.max(-1, Math.min(1, p / 250));
  var r, g, b;
  if (x >= 0) { r = 255; g = 255 - 155 * x; b = 255 - 175 * x; }
  else { r = 255 + 175 * x; g = 255 + 120 * x; b = 255; }
  return "rgb(" + Math.round(r) + "," + Math.round(g) + "," + Math.round(b) + ")";
}
document.querySelectorAll("canvas.cheat").forEach(function (cv) {
  var d = JSON.parse(document.getElementById(cv.id + "-data").textContent);
  var lw = 8 + 7 * d.rows.reduce(function (m, r) { return Math.max(m, r.length); }, 4);
  var hh = 18, cw = d.w, ch = d.h;
  var every = Math.max(1, Math.ceil(60 / cw));
  cv.width = lw + cw * d.cols.length + 8;
  cv.height = hh + ch * d.rows.length + 4;
  var g = cv.getContext("2d");
  g.font = "11px system-ui, sans-serif";
  g.fillStyle = "#1b1f24";
  d.cols.forEach(function (c, j) { if (j % every === 0) g.fillText(c, lw + j * cw, hh - 6); });
  d.rows.forEach(function (r, i) {
    if (r) { g.fillStyle = "#1b1f24"; g.fillText(r, 2, hh + i * ch + Math.min(ch, 11)); }
    d.dev[i].forEach(function (p, j) {
      g.fillStyle = heatColor(p);
      g.fillRect(lw + j * cw, hh + i * ch, cw, ch);
    });
  });
  cv.addEventListener("mousemove", function (e) {
    var b = cv.getBoundingClientRect();
    var j = Math.floor((e.clientX - b.left - lw) / cw), i = Math.floor((e.clientY - b.top - hh) / ch);
    var ok = i >= 0 && j >= 0 && i < d.rows.length && j < d.cols.length;
    cv.title = ok ? d.names[i] + " · " + d.cols[j] + ": " + d.val[i][j] + " ms (" + (d.dev[i][j] / 10).toFixed(1) + " %)" : "";
  });
});
"##;

/// Ranks in grid order (DP replica by replica), else rank order.
fn order(a: &Analysis) -> Vec<usize> {
    match &a.groups.grid {
        Some(g) => g.cells.iter().flatten().flatten().copied().collect(),
        None => (0..a.ranks.len()).collect(),
    }
}

/// A rank × column map with a row per rank in grid order; a replica's first rank carries its
/// label, at most one label per 12 px.
fn rank_map(id: &str, a: &Analysis, h: &Heatmap) -> String {
    let ord = order(a);
    let cell_h = if ord.len() > 256 { 2 } else { 6 };
    let per_label = 12usize.div_ceil(cell_h);
    let mut last = None;
    let mut since = per_label;
    let rows: Vec<String> = ord
        .iter()
        .map(|&r| {
            since += 1;
            let g = a.groups.grid.as_ref().and_then(|g| {
                g.cells
                    .iter()
                    .position(|row| row.contains(&Some(r)))
                    .map(|i| g.rows[i].clone())
            });
            let label = g.unwrap_or_else(|| h.rows.get(r).cloned().unwrap_or_default());
            if last.as_ref() != Some(&label) && since >= per_label {
                since = 0;
                last = Some(label.clone());
                label
            } else {
                String::new()
            }
        })
        .collect();
    let pick = |m: &[Vec<f64>]| {
        ord.iter()
            .map(|&r| m.get(r).cloned().unwrap_or_default())
            .collect()
    };
    let d = Data {
        rows,
        cols: &h.cols,
        dev: pick(&h.dev),
        val: pick(&h.ms),
        cell_h,
        cell_w: (900 / h.cols.len().max(1)).clamp(4, 60),
    };
    names(canvas(id, &d), a, &ord)
}

/// Adds the hover names (every rank's label, in the map's row order) to a canvas' data.
fn names(html: String, a: &Analysis, ord: &[usize]) -> String {
    let list: Vec<String> = ord
        .iter()
        .map(|&r| json_str(&a.ranks[r].figures.rank))
        .collect();
    html.replacen(
        r#"{"rows":"#,
        &format!(r#"{{"names":[{}],"rows":"#, list.join(",")),
        1,
    )
}

/// The work map: DP replicas × TP ranks, each rank's work against its peers' (the verdict's
/// measure, [`crate::analyze::reduce::groups::Groups::vs_peers_pct`]).
pub(crate) fn work_map(a: &Analysis) -> Option<String> {
    let g = a.groups.grid.as_ref()?;
    let pick = |v: &[f64], r: &Option<usize>| r.and_then(|r| v.get(r)).copied();
    let dev = g
        .cells
        .iter()
        .map(|row| {
            row.iter()
                .map(|r| pick(&a.groups.vs_peers_pct, r).map_or(f64::NAN, |p| p / 100.0))
                .collect()
        })
        .collect();
    let val = g
        .cells
        .iter()
        .map(|row| {
            row.iter()
                .map(|r| {
                    r.and_then(|r| a.groups.work_ns.get(r))
                        .map_or(f64::NAN, |&w| w as f64 / 1e6)
                })
                .collect()
        })
        .collect();
    let d = Data {
        rows: g.rows.clone(),
        cols: &g.cols,
        dev,
        val,
        cell_h: if g.rows.len() > 64 { 6 } else { 14 },
        cell_w: 36,
    };
    let row_names: Vec<String> = g.rows.iter().map(|r| json_str(r)).collect();
    Some(canvas("grid-work", &d).replacen(
        r#"{"rows":"#,
        &format!(r#"{{"names":[{}],"rows":"#, row_names.join(",")),
        1,
    ))
}

/// The rank × step map (rows in grid order).
pub(crate) fn step_map(a: &Analysis) -> String {
    rank_map("heat-steps", a, &heat::steps(&a.steps))
}

/// The rank × class map (rows in grid order).
pub(crate) fn class_map(a: &Analysis) -> String {
    rank_map("heat-classes", a, &heat::classes(&a.classes))
}
