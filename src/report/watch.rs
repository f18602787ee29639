//! The live view of `watch` on a terminal: one compact table per poll (worker × DP rank:
//! status, running, waiting, KV tokens, token usage, throughput, and a sparkline of the last
//! minute of one metric), the imbalance of every metric across ranks, each trigger's state and
//! the captures. Plain text, one line per row, cut to the terminal's width, so
//! the `watch` command can redraw it in place by moving the cursor up as many lines.

use std::fmt::Write as _;

use crate::load::loads::Metric;
use crate::load::timeline::{utc, Ring};
use crate::trace::Ns;
use crate::watch::poll::Status;
use crate::watch::{ViewState, WatchOutcome};

/// The sparkline levels, lowest first.
const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

/// Most cells in a sparkline (older samples are folded, keeping each cell's largest).
pub(crate) const SPARK_CELLS: usize = 40;

/// A sparkline of `ring` scaled to `top` (the largest value across ranks, so ranks compare):
/// one cell per sample, or per group of samples when there are more than `cells`; a blank for
/// no value.
pub(crate) fn sparkline(ring: &Ring, top: f64, cells: usize) -> String {
    let v: Vec<Option<f64>> = ring.values().collect();
    if v.is_empty() || cells == 0 {
        return String::new();
    }
    let per = v.len().div_ceil(cells);
    v.chunks(per)
        .map(|c| {
            let m = c.iter().flatten().copied().fold(f64::NAN, f64::max);
            if m.is_nan() {
                ' '
            } else if top <= 0.0 {
                BARS[0]
            } else {
                let i = ((m / top) * (BARS.len() - 1) as f64).round();
                BARS[(i.max(0.0) as usize).min(BARS.len() - 1)]
            }
        })
        .collect()
}

fn cell(v: Option<f64>, m: Metric) -> String {
    match (v, m) {
        (None, _) => "-".into(),
        (Some(x), Metric::TokenUsage) => format!("{:.1}%", 100.0 * x),
        (Some(x), Metric::Throughput) => format!("{x:.1}"),
        (Some(x), _) if x.fract() == 0.0 => format!("{x:.0}"),
        (Some(x), _) => format!("{x:.1}"),
    }
}

fn host(url: &str) -> &str {
    url.split("://").nth(1).unwrap_or(url)
}

fn clip(line: &str, width: usize) -> String {
    if line.chars().count() <= width {
        line.to_string()
    } else {
        let mut s: String = line.chars().take(width.saturating_sub(1)).collect();
        s.push('…');
        s
    }
}

fn secs(ns: i64) -> String {
    format!("{:.1} s", ns as f64 / 1e9)
}

/// The view of one poll, every line at most `width` characters.
pub(crate) fn render(s: &ViewState<'_>, width: usize) -> String {
    let p = s.poll;
    let mut lines: Vec<String> = Vec::new();
    let ranks: usize = p.workers.iter().map(|w| w.ranks.len()).sum();
    let down = p.workers.iter().filter(|w| w.status != Status::Ok).count();
    lines.push(format!(
        "rankprof watch · poll {} · {} · every {} s · {} workers, {} DP ranks{}",
        p.seq,
        utc(p.t_ns.get()),
        s.interval,
        p.workers.len(),
        ranks,
        if down > 0 {
            format!(" · {down} not answering")
        } else {
            String::new()
        }
    ));
    let spark_title = format!("{}, last {:.0} s", s.spark.name(), s.spark_window);
    lines.push(format!(
        "{:<22} {:>3} {:<7} {:>7} {:>7} {:>9} {:>7} {:>9}  {spark_title}",
        "worker", "dp", "status", "running", "waiting", "tokens", "usage", "tok/s"
    ));
    let top = s
        .history
        .rings
        .values()
        .flat_map(|r| r.values().flatten())
        .fold(0.0f64, f64::max);
    for (i, w) in p.workers.iter().enumerate() {
        if w.status != Status::Ok || w.ranks.is_empty() {
            lines.push(format!(
                "{:<22} {:>3} {:<7} {}",
                clip(host(&w.url), 22),
                "-",
                w.status.word(),
                w.error.as_deref().unwrap_or("")
            ));
            continue;
        }
        for r in &w.ranks {
            let spark = s
                .history
                .rings
                .get(&(i, r.dp))
                .map(|ring| sparkline(ring, top, SPARK_CELLS))
                .unwrap_or_default();
            lines.push(format!(
                "{:<22} {:>3} {:<7} {:>7} {:>7} {:>9} {:>7} {:>9}  {spark}",
                clip(host(&w.url), 22),
                r.dp,
                "ok",
                cell(r.running, Metric::Running),
                cell(r.waiting, Metric::Waiting),
                cell(r.tokens, Metric::Tokens),
                cell(r.token_usage, Metric::TokenUsage),
                cell(r.throughput, Metric::Throughput),
            ));
        }
    }
    let mut imb = String::from("max/mean (spread):");
    let short = ["running", "waiting", "tokens", "usage", "tok/s"];
    for (m, name) in Metric::ALL.into_iter().zip(short) {
        if let Some(x) = p.imbalance.get(m.name()) {
            let spread = cell(Some(x.spread), m);
            let _ = write!(imb, " {name} {:.2} ({spread}) ·", x.max_over_mean);
        }
    }
    lines.push(imb.trim_end_matches(" ·").to_string());
    for a in s.triggers {
        let now = a
            .last
            .map_or_else(|| "no value".to_string(), |v| format!("{v:.2}"));
        let state = match a.holding_ns(p.t_ns.get()) {
            Some(h) if a.trigger.hold_ns > Ns::ZERO => {
                format!("holding {} of {}", secs(h), secs(a.trigger.hold_ns.get()))
            }
            Some(_) => "met".into(),
            None => "not met".into(),
        };
        lines.push(format!("trigger {}: now {now}, {state}", a.trigger));
    }
    let captures = match (s.capturing, s.cooldown_left) {
        (Some(n), _) => format!("capture {n} running (polls go on into the timeline)"),
        (None, Some(left)) => format!("cooldown: {left:.0} s before a trigger may fire again"),
        (None, None) if s.captures >= s.max_captures && !s.triggers.is_empty() => {
            "all captures done".into()
        }
        (None, None) if s.triggers.is_empty() => "no trigger: watching only".into(),
        (None, None) => "waiting for a trigger".into(),
    };
    lines.push(format!(
        "captures {} of {} · {captures}",
        s.captures, s.max_captures
    ));
    let mut out = String::new();
    for l in lines {
        out.push_str(&clip(&l, width.max(20)));
        out.push('\n');
    }
    out
}

/// What a watch did, for stderr once it ends: polls, captures, the workers that did not
/// answer, the notes.
pub(crate) fn summary(o: &WatchOutcome) -> String {
    let mut s = format!(
        "watch ended ({}): {} polls, {} captures{}\n",
        o.end_reason,
        o.polls,
        o.captures.len(),
        o.timeline
            .as_ref()
            .map(|t| format!(", timeline {}", t.display()))
            .unwrap_or_default()
    );
    for w in &o.workers {
        let missed = w.dead + w.timeout + w.error;
        if missed > 0 {
            s.push_str(&format!(
                "  {}: no load in {missed} of {} polls (dead {}, timeout {}, error {}); last: {}\n",
                w.url,
                w.ok + missed,
                w.dead,
                w.timeout,
                w.error,
                w.last_error.as_deref().unwrap_or("-")
            ));
        }
    }
    for n in &o.notes {
        s.push_str(&format!("note: {n}\n"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sparkline_scales_and_folds() {
        let mut r = Ring::new(i64::MAX, 1000);
        for i in 0..8 {
            r.push(i, Some(i as f64));
        }
        assert_eq!(sparkline(&r, 7.0, 40), "▁▂▃▄▅▆▇█");
        assert_eq!(sparkline(&r, 14.0, 40), "▁▂▂▃▃▄▄▅");
        // 8 samples in 4 cells: each cell the larger of two
        assert_eq!(sparkline(&r, 7.0, 4), "▂▄▆█");
        r.push(9, None);
        assert!(sparkline(&r, 7.0, 40).ends_with(' '));
        assert_eq!(sparkline(&Ring::new(1, 1), 1.0, 40), "");
    }

    #[test]
    fn clip_counts_characters() {
        assert_eq!(clip("▁▂▃▄▅", 3), "▁▂…");
        assert_eq!(clip("abc", 3), "abc");
    }
}
