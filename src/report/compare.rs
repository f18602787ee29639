//! A [`Comparison`] as text: terminal tables, GitHub markdown (a PR comment or
//! `$GITHUB_STEP_SUMMARY`), CSV or JSON. The three show the same sections in the same order:
//! verdict and failures, overall, ranks, classes, classes by rank, top kernels, kernels that
//! appeared or vanished, notes.

use std::io::Write;

use anyhow::Result;

use super::text::md_cell as md;
use super::Render;

use crate::analyze::classes::COMM;
use crate::analyze::collect::ops::short_name;
use crate::compare::diff::{Basis, Comparison, Decision, KernelOnly, Row, Status};
use crate::compare::gate::{fmt_ns, fmt_pct};
use crate::compare::power::Power;
use crate::trace::Ns;

/// A section: title, header, rows; `right[i]` aligns column i to the right.
struct Section {
    title: String,
    columns: Vec<String>,
    right: Vec<bool>,
    rows: Vec<Vec<String>>,
    /// A line under the table.
    footer: Option<String>,
}

fn status(s: Status) -> String {
    match s {
        Status::Ok => "ok",
        Status::Regression => "FAIL",
        Status::BelowMinTime => "below min",
        Status::Inconclusive => "inconclusive",
    }
    .into()
}

/// Δ %, with the interval of a tested row: `+23.1 % [+19.8, +26.0]`.
fn change_cell(r: &Row) -> String {
    match &r.stat {
        Some(st) => format!(
            "{:+.1} % [{:+.1}, {:+.1}]{}",
            st.change_pct,
            st.ci_low_pct,
            st.ci_high_pct,
            if st.vs_peers { " vs peers" } else { "" }
        ),
        None => fmt_pct(r.delta_pct),
    }
}

fn delta(ns: impl Into<i64>) -> String {
    let ns: i64 = ns.into();
    if ns > 0 {
        format!("+{}", fmt_ns(ns))
    } else {
        fmt_ns(ns)
    }
}

fn time_rows(rows: &[Row], label: impl Fn(&Row) -> String) -> Vec<Vec<String>> {
    rows.iter()
        .map(|r| {
            vec![
                label(r),
                fmt_ns(r.baseline_ns),
                fmt_ns(r.current_ns),
                delta(r.delta_ns),
                change_cell(r),
                status(r.status),
            ]
        })
        .collect()
}

const TIME_COLS: [&str; 5] = ["baseline", "current", "Δ", "Δ % [95 %]", "verdict"];

/// Each rank's peak allocated memory, in MiB, and its change.
fn memory_section(c: &Comparison) -> Section {
    let mib = |b: i64| format!("{:.1}", b as f64 / (1024.0 * 1024.0));
    let rows = c
        .memory
        .iter()
        .map(|m| {
            vec![
                m.rank.clone(),
                m.device.clone(),
                mib(m.baseline_peak_allocated_bytes),
                mib(m.current_peak_allocated_bytes),
                fmt_pct(m.change_pct),
                if m.fails { "FAIL" } else { "ok" }.into(),
            ]
        })
        .collect();
    Section {
        title: "Memory: peak allocated per rank (MiB)".into(),
        columns: ["rank", "device", "baseline", "current", "change", "status"]
            .map(String::from)
            .to_vec(),
        right: vec![false, false, true, true, true, false],
        rows,
        footer: None,
    }
}

fn time_section(title: String, first: &'static str, rows: Vec<Vec<String>>) -> Section {
    let mut columns = vec![first.to_string()];
    columns.extend(TIME_COLS.iter().map(|c| c.to_string()));
    Section {
        title,
        columns,
        right: vec![false, true, true, true, true, false],
        rows,
        footer: None,
    }
}

/// "FAIL: TP2's gemm time per step +12.0 % (…); 3 failures (ranks TP2; classes gemm; TP0, TP1
/// wait longer in collectives, for TP2)" or "PASS: …": the worst regression in words first
/// ([`Comparison::lead`]), then the ranks and classes of the ranks' own regressions, then the
/// ranks that only wait for them. Two sides that look like different runs say so first.
pub fn headline(c: &Comparison) -> String {
    let runs = (!c.different_runs.is_empty()).then(|| {
        format!(
            "the sides look like different runs ({}), whose figures do not compare one to one",
            c.different_runs.join("; ")
        )
    });
    if c.passed {
        let verdict = match c.inconclusive.first() {
            Some(_) if c.decision == Decision::NoChange => format!(
                "PASS: no regression ({} undecided, none leaning to a regression)",
                plural(c.inconclusive.len(), "row")
            ),
            Some(first) => format!(
                "INCONCLUSIVE: no regression found, but {} undecided (first: {})",
                plural(c.inconclusive.len(), "row"),
                first.message
            ),
            None => "PASS: no regression".into(),
        };
        return match runs {
            Some(r) => format!("{verdict} (but {r})"),
            None => verdict,
        };
    }
    fn add<'a>(v: &mut Vec<&'a str>, x: Option<&'a str>) {
        if let Some(x) = x {
            if !v.contains(&x) {
                v.push(x);
            }
        }
    }
    let mut ranks: Vec<&str> = Vec::new();
    let mut classes: Vec<&str> = Vec::new();
    let mut waits: Vec<&str> = Vec::new();
    for f in c
        .failures
        .iter()
        .filter(|f| f.kind == "rank-class" && !f.waiting)
    {
        add(&mut classes, f.class.as_deref());
    }
    let waiting = c.failures.iter().any(|f| f.waiting);
    for f in &c.failures {
        if f.waiting {
            add(&mut waits, f.rank.as_deref());
            continue;
        }
        add(&mut ranks, f.rank.as_deref());
        // Communication over all ranks grows with the waiting: not a class of its own.
        if !(waiting && f.class.as_deref() == Some(COMM) && f.rank.is_none()) {
            add(&mut classes, f.class.as_deref());
        }
    }
    let mut what = Vec::new();
    if !ranks.is_empty() {
        what.push(format!("ranks {}", ranks.join(", ")));
    }
    if !classes.is_empty() {
        what.push(format!("classes {}", classes.join(", ")));
    }
    if !waits.is_empty() {
        let (verb, slow) = if waits.len() == 1 {
            ("waits", "its")
        } else {
            ("wait", "their")
        };
        let rank_set: Vec<&str> = ranks
            .iter()
            .copied()
            .filter(|r| !waits.contains(r))
            .collect();
        what.push(if rank_set.is_empty() {
            format!(
                "{} {verb} longer in collectives ({slow} own work did not grow)",
                waits.join(", ")
            )
        } else {
            format!(
                "{} {verb} longer in collectives, for {}",
                waits.join(", "),
                rank_set.join(", ")
            )
        });
    }
    let n = c.failures.len();
    let count = format!(
        "{n} {}{}",
        if n == 1 { "failure" } else { "failures" },
        if what.is_empty() {
            String::new()
        } else {
            format!(" ({})", what.join("; "))
        }
    );
    match (runs, &c.lead) {
        (Some(r), _) => format!("FAIL: {r}; {count}"),
        (None, Some(l)) => format!("FAIL: {l}; {count}"),
        (None, None) => format!("FAIL: {count}"),
    }
}

fn plural(n: usize, one: &str) -> String {
    format!("{n} {one}{}", if n == 1 { "" } else { "s" })
}

/// What a side is, after its path: `directory: profile X, 4 ranks, 12 steps`.
fn side_what(s: &crate::compare::sides::SideInfo) -> String {
    let stage = s
        .stage
        .as_deref()
        .map(|x| format!(", stage {x}"))
        .unwrap_or_default();
    format!(
        "{}: profile {}{stage}, {}, {}",
        s.kind,
        s.profile_id,
        plural(s.ranks.len(), "rank"),
        plural(s.steps, "step")
    )
}

fn gate_line(c: &Comparison) -> String {
    let t = &c.thresholds;
    let mut s = format!("max regression {} %", t.max_regression_pct);
    match t.max_imbalance {
        Some(m) => s.push_str(&format!(", max imbalance {m}")),
        None => s.push_str(", imbalance not gated"),
    }
    match t.max_slowdown {
        Some(m) => s.push_str(&format!(", max slowdown {m}")),
        None => s.push_str(", slowdown not gated"),
    }
    s.push_str(&format!(", min time {}", fmt_ns(t.min_time_ns)));
    if t.min_time_ns > Ns::ZERO && c.overall.iter().any(|r| r.floor_ns.is_some()) {
        s.push_str(" (on times; a time per token on the work it divides)");
    }
    s.push_str(if t.new_kernels_fail {
        ", new kernels fail"
    } else {
        ", new kernels allowed"
    });
    if c.normalized {
        s.push_str(", kernel names normalized");
    }
    s
}

fn kernel_only(v: &[KernelOnly], top: usize, what: &str) -> Option<Section> {
    if v.is_empty() {
        return None;
    }
    let shown = v.len().min(top);
    Some(Section {
        title: format!("Kernels that {what} ({})", v.len()),
        columns: cols(&["kernel", "class", "total", "calls", "note"]),
        right: vec![false, false, true, true, false],
        rows: v
            .iter()
            .take(shown)
            .map(|k| {
                vec![
                    short_name(&k.name),
                    k.class.clone(),
                    fmt_ns(k.total_ns),
                    k.count.to_string(),
                    if k.fails {
                        "FAIL".into()
                    } else if !k.certain {
                        "maybe folded in the other summary".into()
                    } else {
                        String::new()
                    },
                ]
            })
            .collect(),
        footer: (v.len() > shown).then(|| {
            format!(
                "({} more; --top-n or --format json shows them)",
                v.len() - shown
            )
        }),
    })
}

/// The re-simulated slowdown's row, when either side has one.
fn slowdown_line(c: &Comparison) -> Option<Vec<String>> {
    let (base, cur) = c.slowdown.slowdowns();
    if base.is_none() && cur.is_none() {
        return None;
    }
    let x = |v: Option<f64>| v.map_or_else(|| "—".to_string(), |v| format!("{v:.3}"));
    Some(vec![
        "slowdown, re-simulated (step / every rank typical)".into(),
        x(base),
        x(cur),
        match (base, cur) {
            (Some(b), Some(c)) => format!("{:+.3}", c - b),
            _ => String::new(),
        },
        String::new(),
        if c.slowdown.fails {
            "FAIL".into()
        } else if c.thresholds.max_slowdown.is_none() || cur.is_none() {
            "not gated".into()
        } else {
            "ok".into()
        },
    ])
}

fn sections(c: &Comparison, top: usize) -> Vec<Section> {
    let per = if c.basis == Basis::Steps {
        " (per-step medians)"
    } else {
        " (totals)"
    };
    let mut out = Vec::new();
    let mut overall = time_rows(&c.overall, |r| r.name.clone());
    let im = &c.imbalance;
    overall.push(vec![
        "imbalance (slowest / mean work)".into(),
        format!("{:.3}", im.baseline),
        format!("{:.3}", im.current),
        format!("{:+.3}", im.delta),
        String::new(),
        if im.fails {
            "FAIL".into()
        } else if c.thresholds.max_imbalance.is_none() || im.ranks < 2 {
            "not gated".into()
        } else {
            "ok".into()
        },
    ]);
    overall.extend(slowdown_line(c));
    out.push(time_section("Overall".into(), "metric", overall));
    if !c.memory.is_empty() {
        out.push(memory_section(c));
    }
    if !c.ranks.is_empty() {
        out.push(time_section(
            format!("Ranks: work{per}"),
            "rank",
            time_rows(&c.ranks, |r| r.name.clone()),
        ));
    }
    out.push(time_section(
        format!("Classes, all ranks{per}"),
        "class",
        time_rows(&c.classes, |r| r.name.clone()),
    ));
    if c.ranks.len() > 1 {
        out.push(by_rank(c));
    }
    if !c.kernels.is_empty() {
        out.push(Section {
            title: format!(
                "Top {} kernels on both sides (totals over ranks)",
                c.kernels.len()
            ),
            columns: cols(&["kernel", "class", "baseline", "current", "Δ %", "calls"]),
            right: vec![false, false, true, true, true, true],
            rows: c
                .kernels
                .iter()
                .map(|k| {
                    vec![
                        short_name(&k.name),
                        k.class.clone(),
                        fmt_ns(k.baseline_ns),
                        fmt_ns(k.current_ns),
                        fmt_pct(k.delta_pct),
                        if k.baseline_count == k.current_count {
                            k.current_count.to_string()
                        } else {
                            format!("{} → {}", k.baseline_count, k.current_count)
                        },
                    ]
                })
                .collect(),
            footer: None,
        });
    }
    out.extend(kernel_only(&c.appeared, top, "appeared"));
    out.extend(kernel_only(&c.vanished, top, "vanished"));
    out
}

/// Class × rank matrix of Δ %; failing cells end in `!`.
/// Columns of the class × rank matrix at most; beyond, the ranks with a failing cell and then
/// those with the largest changes.
const MATRIX_RANKS: usize = 16;

fn by_rank(c: &Comparison) -> Section {
    let mut ranks: Vec<&str> = c.ranks.iter().map(|r| r.name.as_str()).collect();
    let mut footer = None;
    if ranks.len() > MATRIX_RANKS {
        // (failing cells, largest |Δ %|) per rank, most interesting first.
        let key = |rk: &str| {
            let cells = || {
                c.rank_classes
                    .iter()
                    .filter(move |r| r.rank.as_deref() == Some(rk))
            };
            let fails = cells().filter(|r| r.status == Status::Regression).count();
            let moved = cells()
                .filter_map(|r| r.delta_pct)
                .map(f64::abs)
                .fold(0.0, f64::max);
            (fails, moved)
        };
        let mut scored: Vec<(usize, &str, (usize, f64))> = ranks
            .iter()
            .enumerate()
            .map(|(i, r)| (i, *r, key(r)))
            .collect();
        scored.sort_by(|a, b| {
            b.2 .0
                .cmp(&a.2 .0)
                .then(b.2 .1.total_cmp(&a.2 .1))
                .then(a.0.cmp(&b.0))
        });
        scored.truncate(MATRIX_RANKS);
        scored.sort_by_key(|s| s.0);
        footer = Some(format!(
            "({} of {} ranks shown: those with failures, then the largest changes; --format json has all)",
            scored.len(),
            ranks.len()
        ));
        ranks = scored.into_iter().map(|s| s.1).collect();
    }
    let mut classes: Vec<&str> = Vec::new();
    for r in &c.rank_classes {
        if let Some(x) = r.class.as_deref() {
            if !classes.contains(&x) {
                classes.push(x);
            }
        }
    }
    let rows = classes
        .iter()
        .map(|cl| {
            let mut row = vec![cl.to_string()];
            for rk in &ranks {
                let cell = c
                    .rank_classes
                    .iter()
                    .find(|r| r.class.as_deref() == Some(cl) && r.rank.as_deref() == Some(rk));
                row.push(match cell {
                    None => String::new(),
                    Some(r) => match r.status {
                        Status::Regression => format!("{}!", fmt_pct(r.delta_pct)),
                        Status::Inconclusive => format!("{}?", fmt_pct(r.delta_pct)),
                        Status::BelowMinTime => "·".into(),
                        Status::Ok => fmt_pct(r.delta_pct),
                    },
                });
            }
            row
        })
        .collect();
    let mut columns = vec!["class".to_string()];
    columns.extend(ranks.iter().map(|r| r.to_string()));
    Section {
        title: "Classes by rank: Δ % (! = fails, ? = inconclusive, · = below --min-time-us)".into(),
        columns,
        right: std::iter::once(false)
            .chain(ranks.iter().map(|_| true))
            .collect(),
        rows,
        footer,
    }
}

fn cols(names: &[&str]) -> Vec<String> {
    names.iter().map(|c| c.to_string()).collect()
}

/// The verdict alone (`compare --quiet`): the headline and the failures.
pub fn quiet(c: &Comparison) -> String {
    // The headline wrapped as the full report wraps it.
    let w = (super::terminal::width() as usize).max(60);
    let mut s = format!(
        "{}\n",
        super::text::wrap(&format!("rankprof compare: {}", headline(c)), w, "    ")
    );
    for f in &c.failures {
        s.push_str(&format!("  - {}\n", f.message));
    }
    super::text::fit(&s, super::terminal::width() as usize)
}

/// Terminal tables.
pub(crate) fn table(c: &Comparison) -> String {
    // The headline wraps at the terminal's width, its continuation indented under it.
    let w = (super::terminal::width() as usize).max(60);
    let mut s = format!(
        "{}\n",
        super::attribution::wrap(&format!("rankprof compare: {}", headline(c)), w, "    ")
    );
    for (name, side) in [("baseline", &c.baseline), ("current ", &c.current)] {
        s.push_str(&format!("  {name}  {} ({})\n", side.path, side_what(side)));
    }
    for b in &c.more_baselines {
        s.push_str(&format!("  baseline  {} ({})\n", b.path, side_what(b)));
    }
    s.push_str(&format!("  basis     {}\n", c.basis_note));
    s.push_str(&format!("  gate      {}\n", gate_line(c)));
    for (name, text) in [("rule", &c.rule), ("noise", &c.noise)] {
        let line = format!("  {name:<9} {text}");
        s.push_str(&format!(
            "{}\n",
            super::attribution::wrap(&line, w, "            ")
        ));
    }
    if !c.failures.is_empty() {
        s.push_str("\nFailures:\n");
        for f in &c.failures {
            s.push_str(&format!("  - {}\n", f.message));
        }
    }
    if !c.inconclusive.is_empty() {
        s.push_str("\nInconclusive (too few steps to decide, or one baseline's drift):\n");
        for f in &c.inconclusive {
            s.push_str(&format!("  - {}\n", f.message));
        }
    }
    for sec in sections(c, c.top_n) {
        let right = |i: usize| sec.right.get(i).copied().unwrap_or(false);
        let rows: Vec<Vec<super::text::DrawCell>> = sec
            .rows
            .iter()
            .map(|r| {
                r.iter()
                    .enumerate()
                    .map(|(i, v)| (v.clone(), right(i)))
                    .collect()
            })
            .collect();
        let width = super::terminal::width() as usize;
        s.push('\n');
        s.push_str(&super::text::draw(&sec.title, &sec.columns, &rows, width));
        if let Some(f) = &sec.footer {
            s.push_str(&format!("{f}\n"));
        }
    }
    if !c.notes.is_empty() {
        s.push_str("\nNotes:\n");
        for n in &c.notes {
            s.push_str(&format!("  - {n}\n"));
        }
    }
    s
}

/// GitHub-flavoured markdown.
pub(crate) fn markdown(c: &Comparison) -> String {
    let mark = match c.decision {
        Decision::Regression => "❌",
        Decision::Inconclusive => "⚠️",
        Decision::NoChange => "✅",
    };
    let mut s = format!("### {mark} rankprof compare: {}\n\n", md(&headline(c)));
    for (name, side) in [("baseline", &c.baseline), ("current", &c.current)] {
        s.push_str(&format!(
            "- **{name}** `{}` ({})\n",
            md(&side.path),
            md(&side_what(side))
        ));
    }
    for b in &c.more_baselines {
        s.push_str(&format!(
            "- **baseline** `{}` ({})\n",
            md(&b.path),
            md(&side_what(b))
        ));
    }
    s.push_str(&format!("- **basis** {}\n", md(&c.basis_note)));
    s.push_str(&format!("- **gate** {}\n", md(&gate_line(c))));
    s.push_str(&format!("- **rule** {}\n", md(&c.rule)));
    s.push_str(&format!("- **noise** {}\n", md(&c.noise)));
    if !c.failures.is_empty() {
        s.push_str("\n**Failures**\n\n");
        for f in &c.failures {
            s.push_str(&format!("- {}\n", md(&f.message)));
        }
    }
    if !c.inconclusive.is_empty() {
        s.push_str("\n**Inconclusive** (too few steps to decide, or one baseline's drift)\n\n");
        for f in &c.inconclusive {
            s.push_str(&format!("- {}\n", md(&f.message)));
        }
    }
    for (i, sec) in sections(c, c.top_n).iter().enumerate() {
        let (head, rows) = (&sec.columns, &sec.rows);
        // The first three sections stay open; the longer ones fold.
        let fold = i >= 3;
        if fold {
            s.push_str(&format!(
                "\n<details><summary>{}</summary>\n\n",
                md(&sec.title)
            ));
        } else {
            s.push_str(&format!("\n**{}**\n\n", md(&sec.title)));
        }
        s.push_str(&format!(
            "| {} |\n|{}\n",
            head.iter().map(|h| md(h)).collect::<Vec<_>>().join(" | "),
            (0..head.len())
                .map(|i| if sec.right.get(i).copied().unwrap_or(false) {
                    "---:|"
                } else {
                    "---|"
                })
                .collect::<String>()
        ));
        for r in rows {
            let cells: Vec<String> = r
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    if i == 0 && sec.columns.first().map(String::as_str) == Some("kernel") {
                        super::text::md_code(v)
                    } else {
                        md(v)
                    }
                })
                .collect();
            s.push_str(&format!("| {} |\n", cells.join(" | ")));
        }
        if let Some(f) = &sec.footer {
            s.push_str(&format!("\n{}\n", md(f)));
        }
        if fold {
            s.push_str("\n</details>\n");
        }
    }
    if !c.notes.is_empty() {
        s.push_str("\n**Notes**\n\n");
        for n in &c.notes {
            s.push_str(&format!("- {}\n", md(n)));
        }
    }
    s
}

/// Every section as CSV, each after a `# title` line and followed by a blank line (the figures
/// as the tables show them).
pub(crate) fn write_csv(c: &Comparison, w: &mut dyn Write) -> Result<()> {
    for sec in sections(c, c.top_n) {
        let t = super::table::Table {
            name: "comparison",
            title: sec.title.clone(),
            columns: sec.columns.clone(),
            rows: sec
                .rows
                .iter()
                .map(|r| r.iter().map(|v| super::table::s(v.as_str())).collect())
                .collect(),
            terminal: true,
        };
        writeln!(w, "# {}", t.title)?;
        super::table::write_csv(&t, w)?;
        writeln!(w)?;
    }
    Ok(())
}

impl Render for Comparison {
    fn terminal(&self, w: &mut dyn Write) -> Result<()> {
        w.write_all(table(self).as_bytes())?;
        Ok(())
    }

    fn json(&self, w: &mut dyn Write) -> Result<()> {
        w.write_all(json(self)?.as_bytes())?;
        Ok(())
    }

    fn csv(&self, w: &mut dyn Write) -> Result<()> {
        write_csv(self, w)
    }

    fn markdown(&self, w: &mut dyn Write) -> Result<()> {
        w.write_all(markdown(self).as_bytes())?;
        Ok(())
    }
}

/// The comparison as pretty JSON (all times integer ns).
pub(crate) fn json(c: &Comparison) -> Result<String> {
    Ok(serde_json::to_string_pretty(c)? + "\n")
}

/// The rows of a detection table: steps, then the share detected per effect.
fn power_rows(p: &Power) -> (Vec<String>, Vec<Vec<String>>) {
    let mut head = vec!["steps per side".to_string()];
    head.extend(p.effects_pct.iter().map(|e| format!("+{e} %")));
    let rows = p
        .steps
        .iter()
        .zip(&p.detected)
        .map(|(n, d)| {
            let mut row = vec![n.to_string()];
            row.extend(d.iter().map(|x| format!("{:.0} %", x * 100.0)));
            row
        })
        .collect();
    (head, rows)
}

fn power_intro(p: &Power) -> String {
    format!(
        "Detection rate of a planted regression on {} ({} baseline steps, spread ±{:.1} % MAD), \
         declared a regression against a {:.1} % band in a family of {} rows; {} trials per cell, \
         steps resampled from the baseline (run-to-run drift not simulated: an upper bound).",
        p.metric, p.baseline_steps, p.spread_pct, p.band_pct, p.family, p.trials
    )
}

/// `compare --power` as a terminal table.
pub fn power_table(p: &Power) -> String {
    let width = super::terminal::width() as usize;
    let (head, rows) = power_rows(p);
    let cells: Vec<Vec<super::text::DrawCell>> = rows
        .into_iter()
        .map(|r| r.into_iter().map(|v| (v, true)).collect())
        .collect();
    let mut s = format!(
        "{}\n\n",
        super::attribution::wrap(&power_intro(p), width.max(60), "")
    );
    s.push_str(&super::text::draw("compare --power", &head, &cells, width));
    super::text::fit(&s, width)
}

/// `compare --power` as markdown.
pub fn power_markdown(p: &Power) -> String {
    let (head, rows) = power_rows(p);
    let mut s = format!("{}\n\n| {} |\n|", md(&power_intro(p)), head.join(" | "));
    s.push_str(&"---:|".repeat(head.len()));
    s.push('\n');
    for r in rows {
        s.push_str(&format!("| {} |\n", r.join(" | ")));
    }
    s
}
