//! The gate: which rows of a [`Comparison`] fail, and the verdict.
//!
//! A time row (overall, rank, class, class on a rank) fails when it grew by more than
//! `--max-regression` percent, or has time where the baseline had none; rows whose baseline
//! and current are both below `--min-time-us` are not judged; a time per token is a rate, not a
//! time: it is judged unless the work it divides is below `--min-time-us`. A kernel found only in CURRENT
//! fails when it took at least `--min-time-us` in all (unless `--allow-new-kernels`, or the
//! baseline summary folded kernels so it may have been there). The imbalance fails when the
//! current slowest-over-mean work exceeds `--max-imbalance`, the slowdown when the current
//! side's re-simulated slowdown (the what-if's S) exceeds `--max-slowdown`. Kernel rows found on both sides
//! are shown, not judged: their class is.
//!
//! The gate also words its worst regression ([`lead`]): a rank's own class time first (the
//! largest growth), then a rank's work, a class over all ranks, an overall figure, a new
//! kernel, the imbalance; communication that grew on a rank whose own work did not is that
//! rank waiting for a slower one, told last.

use super::diff::{Comparison, Decision, Failure, Row, RowStat, Status};
use super::memory::MemoryChange;
use crate::analyze::classes::COMM;
use crate::trace::Ns;

/// Human form of a time: `834.6 µs`, `12.35 ms`, `1.234 s`.
pub(crate) fn fmt_ns(ns: impl Into<i64>) -> String {
    let ns: i64 = ns.into();
    let a = ns.unsigned_abs() as f64;
    let sign = if ns < 0 { "-" } else { "" };
    if a >= 1e9 {
        format!("{sign}{:.3} s", a / 1e9)
    } else if a >= 1e6 {
        format!("{sign}{:.2} ms", a / 1e6)
    } else {
        format!("{sign}{:.1} µs", a / 1e3)
    }
}

/// `+12.0 %`, `-0.4 %`, `new` (baseline 0).
pub(crate) fn fmt_pct(p: Option<f64>) -> String {
    match p {
        Some(v) => format!("{v:+.1} %"),
        None => "new".into(),
    }
}

/// `+23.1 % [+19.8, +26.0] (95 %)`: a tested row's change with its interval.
pub(crate) fn fmt_interval(st: &RowStat) -> String {
    format!(
        "{:+.1} % [{:+.1}, {:+.1}] ({} %){}",
        st.change_pct,
        st.ci_low_pct,
        st.ci_high_pct,
        st.confidence_pct,
        if st.vs_peers { " vs its peers" } else { "" }
    )
}

/// A band in words: `5 %`, or `7.2 % (noise floor)` when the learned floor sets it.
pub(crate) fn fmt_band(st: &RowStat) -> String {
    if st.floor_from_ranks && st.band_pct == st.noise_floor_pct {
        format!("{:.1} % (the ranks' spread)", st.band_pct)
    } else if st.noise_floor_pct > 0.0 && st.band_pct == st.noise_floor_pct {
        format!("{:.1} % (noise floor)", st.band_pct)
    } else {
        format!("{} %", st.band_pct)
    }
}

/// Judges a row: below `--min-time-us`, by its statistical test when it has one, else by the
/// fixed threshold. True when it regressed.
fn judge(r: &mut Row, max_pct: f64, min_ns: Ns) -> bool {
    r.status = if r.below_min(min_ns) {
        Status::BelowMinTime
    } else if r.drift {
        Status::Inconclusive
    } else if let Some(st) = &r.stat {
        match st.decision {
            Decision::Regression => Status::Regression,
            Decision::NoChange => Status::Ok,
            Decision::Inconclusive => Status::Inconclusive,
        }
    } else {
        match r.delta_pct {
            Some(p) if p > r.fixed_band_pct(max_pct) => Status::Regression,
            None if r.current_ns > Ns::ZERO => Status::Regression,
            _ => Status::Ok,
        }
    };
    r.status == Status::Regression
}

/// `1.00 ms → 1.12 ms per step (+12.0 % > 5 %)`, or `(new)` where the baseline had none; a
/// tested row: `(+12.0 % [+9.1, +14.8] (95 %) > 5 %, p 1.2e-5)`.
fn change(r: &Row, per_step: bool, max_pct: f64) -> String {
    if let Some(st) = &r.stat {
        return format!(
            "{} → {}{} ({} > {}, adjusted p {:.2e})",
            fmt_ns(r.baseline_ns),
            fmt_ns(r.current_ns),
            if per_step { " per step" } else { "" },
            fmt_interval(st),
            fmt_band(st),
            st.p_adjusted
        );
    }
    format!(
        "{} → {}{} ({})",
        fmt_ns(r.baseline_ns),
        fmt_ns(r.current_ns),
        if per_step { " per step" } else { "" },
        match (r.delta_pct, r.noise_floor_pct) {
            (Some(_), Some(f)) if f > max_pct => {
                format!("{} > {f:.1} % (noise floor)", fmt_pct(r.delta_pct))
            }
            (Some(_), _) => format!("{} > {max_pct} %", fmt_pct(r.delta_pct)),
            (None, _) => "new".into(),
        }
    )
}

/// What a row is, in a failure's or an inconclusive row's words.
fn what(kind: &str, r: &Row) -> String {
    let (rank, class) = (
        r.rank.as_deref().unwrap_or("?"),
        r.class.as_deref().unwrap_or("?"),
    );
    match kind {
        "rank" => format!("rank {}: work (time outside communication)", r.name),
        "class" => format!("class {} (all ranks)", r.name),
        "rank-class" => format!("class {class} on rank {rank}"),
        _ => r.name.clone(),
    }
}

/// The rows the gate cannot decide, worded: those one baseline cannot tell from drift first,
/// then those leaning to a regression, then the widest.
fn inconclusive(c: &Comparison) -> Vec<Failure> {
    let families = [
        ("overall", &c.overall),
        ("rank", &c.ranks),
        ("class", &c.classes),
        ("rank-class", &c.rank_classes),
    ];
    let mut rows: Vec<(&str, &Row)> = families
        .iter()
        .flat_map(|(k, rows)| rows.iter().map(move |r| (*k, r)))
        .filter(|(_, r)| r.status == Status::Inconclusive && (r.drift || r.stat.is_some()))
        .collect();
    // Tested rows before those without samples, the highest interval first.
    let top = |r: &Row| {
        r.stat
            .as_ref()
            .map_or(f64::NEG_INFINITY, |st| st.ci_high_pct)
    };
    rows.sort_by(|(_, a), (_, b)| {
        b.drift
            .cmp(&a.drift)
            .then(row_leans(b).cmp(&row_leans(a)))
            .then(top(b).total_cmp(&top(a)))
    });
    let max_pct = c.thresholds.max_regression_pct;
    rows.into_iter()
        .map(|(kind, r)| Failure {
            kind: kind.into(),
            rank: r.rank.clone(),
            class: r.class.clone(),
            waiting: false,
            message: undecided(kind, r, max_pct),
        })
        .collect()
}

/// An undecided row in words: held for drift (with its change and band), or the steps that
/// would likely decide it.
fn undecided(kind: &str, r: &Row, max_pct: f64) -> String {
    match (&r.stat, r.drift) {
        (Some(st), true) => format!(
            "{}: {} above a {} band, but {}",
            what(kind, r),
            fmt_interval(st),
            fmt_band(st),
            super::drift::WHY
        ),
        (None, _) => format!(
            "{}: {} ({} → {}) above a {} % band, but {}",
            what(kind, r),
            fmt_pct(r.delta_pct),
            fmt_ns(r.baseline_ns),
            fmt_ns(r.current_ns),
            r.fixed_band_pct(max_pct),
            super::drift::WHY
        ),
        (Some(st), false) => format!(
            "{}: {} against a {} band: capture ≥ {} steps per side to decide (have {})",
            what(kind, r),
            fmt_interval(st),
            fmt_band(st),
            steps_text(st.steps_needed),
            st.current_steps
        ),
    }
}

/// An undecided row that makes the comparison inconclusive: held for drift, or its estimate
/// above the band.
fn row_leans(r: &Row) -> bool {
    r.drift || r.stat.as_ref().is_some_and(leans)
}

/// An undecided row whose estimate is above its band: a regression the steps cannot confirm.
fn leans(st: &RowStat) -> bool {
    st.change_pct > st.band_pct
}

fn steps_text(n: Option<usize>) -> String {
    match n {
        Some(n) if n >= super::decide::MAX_STEPS_NEEDED => {
            format!("more than {}", super::decide::MAX_STEPS_NEEDED)
        }
        Some(n) => n.to_string(),
        None => "?".into(),
    }
}

/// How the rows were judged, in words, and a note when some fell back to the fixed threshold.
fn rule(c: &Comparison, tested: usize) -> (String, Option<String>) {
    let min = c.thresholds.min_time_ns;
    let fixed: Vec<&str> = c
        .time_rows()
        .filter(|r| r.stat.is_none() && !r.below_min(min) && r.status != Status::BelowMinTime)
        .map(|r| r.name.as_str())
        .collect();
    let m = c.thresholds.max_regression_pct;
    if !c.thresholds.statistical {
        return (
            format!(
                "fixed threshold: a time fails when it grew by more than {m} % (--gate stats tests the per-step samples instead)"
            ),
            None,
        );
    }
    if tested == 0 {
        let why = if c.basis == super::diff::Basis::Totals {
            "whole-profile totals have no per-step samples"
        } else {
            "a side keeps no per-step samples (a summary saved by an older rankprof: re-save it \
             with analyze --save-summary for the statistical gate)"
        };
        return (
            format!("fixed threshold: a time fails when it grew by more than {m} % ({why})"),
            Some(format!(
                "judged by the fixed --max-regression threshold, as before: {why}"
            )),
        );
    }
    let mut s = format!(
        "statistical: {tested} rows tested, one family; a row regresses when its one-sided \
         Mann-Whitney p, Holm-adjusted, is below {} and its {} % Hodges-Lehmann interval lies above \
         max({m} %, noise floor); no change when the interval's top is within that; else inconclusive",
        super::decide::ALPHA,
        super::decide::CONFIDENCE * 100.0
    );
    let floored = !c.more_baselines.is_empty();
    let against = if floored {
        "the fixed threshold or, when larger, the baselines' noise floor"
    } else {
        "the fixed threshold"
    };
    let note = (!fixed.is_empty()).then(|| {
        s.push_str(&format!(
            "; {} rows without samples by {against}",
            fixed.len()
        ));
        format!(
            "rows without per-step samples, judged by {against}: {}",
            fixed.join(", ")
        )
    });
    (s, note)
}

fn noise(c: &Comparison) -> String {
    match c.more_baselines.len() {
        0 => "one baseline: the step-to-step spread (in each interval); run-to-run drift is not \
              learned, so a regression in times (the job's rows, a rank's communication, rows \
              without samples) while no rank regressed against its peers is inconclusive, and a \
              rank's row over its peers is held to how far the ranks' levels spread in the \
              baseline (3 ranks or more): give several baselines (--baseline a b c) to learn the drift"
            .into(),
        n => format!(
            "{} baselines: each row's noise floor is how far one more run may land above their \
             mean by chance (the one-sided 95 % t prediction bound of their medians: run-to-run \
             spread)",
            n + 1
        ),
    }
}

/// Judges every row and sets `failures`, `passed`, `decision`, `inconclusive` and the rule.
pub(crate) fn apply(c: &mut Comparison) {
    let tested = if c.basis == super::diff::Basis::Steps && c.thresholds.statistical {
        super::decide::run(c)
    } else {
        0
    };
    if tested > 0 {
        super::drift::hold(c);
    }
    judge_rows(c);
    let (rule, note) = rule(c, tested);
    c.rule = rule;
    c.notes.extend(note);
    c.noise = noise(c);
    c.inconclusive = inconclusive(c);
    c.decision = if !c.passed {
        Decision::Regression
    } else if c
        .time_rows()
        .filter(|r| r.status == Status::Inconclusive)
        .any(row_leans)
    {
        Decision::Inconclusive
    } else {
        Decision::NoChange
    };
}

/// Judges every row and sets `failures` and `passed`: the imbalance, the overall rows, the
/// ranks' work, the classes, each class on each rank (a rank whose own time did not grow but
/// its communication did is waiting) and the new kernels.
fn judge_rows(c: &mut Comparison) {
    let t = c.thresholds.clone();
    let per_step = c.basis == super::diff::Basis::Steps;
    let m = t.max_regression_pct;
    let mut failures: Vec<Failure> = imbalance_failure(c).into_iter().collect();
    failures.extend(slowdown_failure(c));
    for r in &mut c.overall {
        if judge(r, m, t.min_time_ns) {
            failures.push(failure(
                "overall",
                None,
                None,
                format!("{}: {}", r.name, change(r, false, m)),
            ));
        }
    }
    let mut slow_ranks: Vec<String> = Vec::new();
    for r in &mut c.ranks {
        if judge(r, m, t.min_time_ns) {
            slow_ranks.push(r.name.clone());
            let msg = format!(
                "rank {}: work (time outside communication) {}",
                r.name,
                change(r, per_step, m)
            );
            failures.push(failure("rank", r.rank.clone(), None, msg));
        }
    }
    for r in &mut c.classes {
        if judge(r, m, t.min_time_ns) {
            let msg = format!("class {} (all ranks): {}", r.name, change(r, per_step, m));
            failures.push(failure("class", None, r.class.clone(), msg));
        }
    }
    for r in &mut c.rank_classes {
        judge(r, m, t.min_time_ns);
    }
    failures.extend(rank_class_failures(c, slow_ranks, per_step));
    failures.extend(memory_failures(&mut c.memory, m));
    if t.new_kernels_fail {
        failures.extend(new_kernel_failures(c));
    }
    c.passed = failures.is_empty();
    c.failures = failures;
    c.lead = lead(c);
}

/// A failure that is no rank's waiting.
fn failure(kind: &str, rank: Option<String>, class: Option<String>, message: String) -> Failure {
    Failure {
        kind: kind.into(),
        rank,
        class,
        waiting: false,
        message,
    }
}

/// The imbalance's failure, when `--max-imbalance` is set and exceeded.
fn imbalance_failure(c: &mut Comparison) -> Option<Failure> {
    let max = c.thresholds.max_imbalance?;
    if c.imbalance.ranks < 2 || c.imbalance.current <= max {
        return None;
    }
    c.imbalance.fails = true;
    let msg = format!(
        "imbalance {:.3} > {max} (slowest rank {} over the mean of per-rank work; baseline {:.3})",
        c.imbalance.current,
        c.imbalance.current_slowest.as_deref().unwrap_or("?"),
        c.imbalance.baseline
    );
    Some(failure(
        "imbalance",
        c.imbalance.current_slowest.clone(),
        None,
        msg,
    ))
}

/// The slowdown's failure, when `--max-slowdown` is set and the current side's re-simulated
/// slowdown exceeds it; a current side without a trusted what-if is not judged, and a note
/// says so.
fn slowdown_failure(c: &mut Comparison) -> Option<Failure> {
    let max = c.thresholds.max_slowdown?;
    let Some(cur) = c.slowdown.current.clone() else {
        c.notes.push(format!(
            "--max-slowdown {max}: not judged, the current side has no re-simulated slowdown (no matched collectives, or its replay misses the recording by more than {} %)",
            crate::analyze::reduce::path::whatif::TRUSTED_ERROR_PCT
        ));
        return None;
    };
    if cur.slowdown <= max {
        return None;
    }
    c.slowdown.fails = true;
    let who = match (&cur.worst_rank, cur.worst_rank_saved_per_step_ns) {
        (Some(r), Some(x)) => format!("; {r} typical gives back {} a step", fmt_ns(x.get())),
        _ => String::new(),
    };
    let msg = format!(
        "slowdown {:.2}× > {max} (re-simulated: the step over the step with every rank typical, {} a step lost{who}; baseline {})",
        cur.slowdown,
        fmt_ns(cur.lost_per_step_ns.get()),
        fmt_slowdown(c.slowdown.slowdowns().0)
    );
    Some(failure("slowdown", cur.worst_rank, None, msg))
}

/// A side's slowdown in words: `1.23×`, or `none` (no trusted what-if).
fn fmt_slowdown(s: Option<f64>) -> String {
    s.map_or_else(|| "none".to_string(), |s| format!("{s:.2}×"))
}

/// The failures of the class-on-rank rows (already judged). `slow_ranks`: the ranks whose work
/// regressed; a rank with a regressed class other than communication joins them, and the
/// communication that grew on any other rank is that rank waiting for them.
fn rank_class_failures(
    c: &Comparison,
    mut slow_ranks: Vec<String>,
    per_step: bool,
) -> Vec<Failure> {
    let m = c.thresholds.max_regression_pct;
    let regressed = || {
        c.rank_classes
            .iter()
            .filter(|r| r.status == Status::Regression)
    };
    for r in regressed() {
        let rank = r.rank.clone().unwrap_or_default();
        if r.class.as_deref() != Some(COMM) && !slow_ranks.contains(&rank) {
            slow_ranks.push(rank);
        }
    }
    let waited_for = if slow_ranks.is_empty() {
        "slower ranks".to_string()
    } else {
        slow_ranks.join(", ")
    };
    regressed()
        .map(|r| {
            let rank = r.rank.clone().unwrap_or_default();
            let class = r.class.clone().unwrap_or_default();
            let waiting = class == COMM && !slow_ranks.contains(&rank);
            let message = if waiting {
                format!(
                    "rank {rank} waits longer in collectives (for {waited_for}): class {class} {}",
                    change(r, per_step, m)
                )
            } else {
                format!("class {class} on rank {rank}: {}", change(r, per_step, m))
            };
            Failure {
                kind: "rank-class".into(),
                rank: r.rank.clone(),
                class: r.class.clone(),
                waiting,
                message,
            }
        })
        .collect()
}

/// The kernels found only in CURRENT that took at least `--min-time-us` (each marked failing).
fn new_kernel_failures(c: &mut Comparison) -> Vec<Failure> {
    let min = c.thresholds.min_time_ns;
    let hint = if c.normalized {
        ""
    } else {
        "; renamed? try --normalize"
    };
    let mut out = Vec::new();
    for k in &mut c.appeared {
        if k.certain && k.total_ns > Ns::ZERO && k.total_ns >= min {
            k.fails = true;
            let msg = format!(
                "new kernel ({}, {} in {} calls, not in the baseline{hint}): {}",
                k.class,
                fmt_ns(k.total_ns),
                k.count,
                k.name
            );
            out.push(failure("new-kernel", None, Some(k.class.clone()), msg));
        }
    }
    out
}

/// `+12.0 % (1.00 ms → 1.12 ms)`, or `new (0.0 µs → 12.0 µs)`; a tested row with its
/// interval: `+12.0 % [+9.1, +14.8] (95 %) (1.00 ms → 1.12 ms)`.
fn growth(r: &Row) -> String {
    let pct = match (&r.stat, r.delta_pct) {
        (Some(st), _) => fmt_interval(st),
        (None, Some(_)) => fmt_pct(r.delta_pct),
        (None, None) => "new".into(),
    };
    format!(
        "{pct} ({} → {})",
        fmt_ns(r.baseline_ns),
        fmt_ns(r.current_ns)
    )
}

/// The worst regression of a judged comparison in plain words, `None` when it passed: the
/// failing row of the first family that has one (a rank's own class time, a rank's work, a
/// class over all ranks, an overall figure, a new kernel, the imbalance, a rank waiting in
/// collectives), the one that grew most in time within it.
pub(crate) fn lead(c: &Comparison) -> Option<String> {
    if c.passed {
        return None;
    }
    let per = if c.basis == super::diff::Basis::Steps {
        " per step"
    } else {
        ""
    };
    let waiting = |r: &Row| {
        c.failures
            .iter()
            .any(|f| f.waiting && f.rank == r.rank && f.class == r.class)
    };
    let worst = |rows: &mut dyn Iterator<Item = &Row>| -> Option<Row> {
        rows.filter(|r| r.status == Status::Regression)
            .max_by(|a, b| a.delta_ns.cmp(&b.delta_ns).then(b.name.cmp(&a.name)))
            .cloned()
    };
    let waits_anywhere = c.failures.iter().any(|f| f.waiting);
    if let Some(r) = worst(&mut c.rank_classes.iter().filter(|r| !waiting(r))) {
        let (rank, class) = (
            r.rank.as_deref().unwrap_or("?"),
            r.class.as_deref().unwrap_or("?"),
        );
        return Some(format!("{rank}'s {class} time{per} {}", growth(&r)));
    }
    if let Some(r) = worst(&mut c.ranks.iter()) {
        return Some(format!("{}'s work{per} {}", r.name, growth(&r)));
    }
    let own = |r: &&Row| !(waits_anywhere && r.class.as_deref() == Some(COMM));
    if let Some(r) = worst(&mut c.classes.iter().filter(own)) {
        return Some(format!(
            "{} time{per} over all ranks {}",
            r.name,
            growth(&r)
        ));
    }
    if let Some(r) = worst(&mut c.overall.iter()) {
        return Some(format!("{} {}", r.name, growth(&r)));
    }
    if let Some(k) = c.appeared.iter().find(|k| k.fails) {
        return Some(format!(
            "a new {} kernel takes {} ({})",
            k.class,
            fmt_ns(k.total_ns),
            crate::analyze::collect::ops::short_name(&k.name)
        ));
    }
    if c.imbalance.fails {
        return Some(format!(
            "imbalance {:.3} (slowest rank {}; baseline {:.3})",
            c.imbalance.current,
            c.imbalance.current_slowest.as_deref().unwrap_or("?"),
            c.imbalance.baseline
        ));
    }
    if let Some(cur) = c.slowdown.current.as_ref().filter(|_| c.slowdown.fails) {
        return Some(format!(
            "slowdown {} re-simulated ({}; baseline {})",
            fmt_slowdown(Some(cur.slowdown)),
            cur.worst_rank.as_deref().map_or_else(
                || "no one rank".to_string(),
                |r| format!("{r} gives back the most")
            ),
            fmt_slowdown(c.slowdown.slowdowns().0)
        ));
    }
    if let Some(r) = worst(&mut c.rank_classes.iter().chain(&c.classes)) {
        return Some(format!(
            "{} waits longer in collectives: {COMM} time{per} {}",
            r.rank.as_deref().unwrap_or("every rank"),
            growth(&r)
        ));
    }
    None
}

/// Marks the memory rows ([`super::memory`]) whose peak grew by more than `max_pct` and returns their failures.
fn memory_failures(rows: &mut [MemoryChange], max_pct: f64) -> Vec<Failure> {
    rows.iter_mut()
        .filter_map(|r| {
            let pct = r.change_pct?;
            r.fails = pct > max_pct;
            r.fails.then(|| Failure {
                kind: "memory".into(),
                rank: Some(r.rank.clone()),
                class: None,
                waiting: false,
                message: format!(
                    "rank {}: peak allocated memory on {} {:+.1} % ({} → {} bytes)",
                    r.rank,
                    r.device,
                    pct,
                    r.baseline_peak_allocated_bytes,
                    r.current_peak_allocated_bytes
                ),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_and_percentages_read_well() {
        assert_eq!(fmt_ns(834_567), "834.6 µs");
        assert_eq!(fmt_ns(12_345_678), "12.35 ms");
        assert_eq!(fmt_ns(1_234_567_890), "1.235 s");
        assert_eq!(fmt_ns(-2_500), "-2.5 µs");
        assert_eq!(fmt_pct(Some(12.04)), "+12.0 %");
        assert_eq!(fmt_pct(Some(-0.44)), "-0.4 %");
        assert_eq!(fmt_pct(None), "new");
    }

    fn row(b: i64, c: i64) -> Row {
        Row {
            name: "x".into(),
            rank: None,
            class: None,
            baseline_ns: Ns::new(b),
            current_ns: Ns::new(c),
            delta_ns: Ns::new(c - b),
            delta_pct: super::super::diff::pct(b, c),
            status: Status::Ok,
            floor_ns: None,
            samples: None,
            key: None,
            stat: None,
            noise_floor_pct: None,
            drift: false,
        }
    }

    #[test]
    fn a_row_without_samples_is_held_to_the_baselines_noise_floor_when_larger() {
        let mut r = Row {
            noise_floor_pct: Some(10.0),
            ..row(1000, 1075)
        };
        assert!(
            !judge(&mut r, 5.0, Ns::new(0)),
            "+7.5 % is within a 10 % floor"
        );
        let mut r = Row {
            noise_floor_pct: Some(10.0),
            ..row(1000, 1120)
        };
        assert!(judge(&mut r, 5.0, Ns::new(0)));
        assert!(change(&r, false, 5.0).contains("+12.0 % > 10.0 % (noise floor)"));
        let mut r = Row {
            noise_floor_pct: Some(2.0),
            ..row(1000, 1060)
        };
        assert!(
            judge(&mut r, 5.0, Ns::new(0)),
            "a floor below --max-regression does not lower it"
        );
    }

    #[test]
    fn rows_fail_above_the_threshold_only() {
        let mut r = row(1_000_000, 1_050_000);
        assert!(!judge(&mut r, 5.0, Ns::new(0)), "exactly +5 % passes");
        let mut r = row(1_000_000, 1_050_001);
        assert!(judge(&mut r, 5.0, Ns::new(0)));
        let mut r = row(1_000_000, 500_000);
        assert!(!judge(&mut r, 5.0, Ns::new(0)), "faster passes");
        let mut r = row(0, 10);
        assert!(judge(&mut r, 5.0, Ns::new(0)), "time from nothing fails");
        let mut r = row(0, 10);
        assert!(!judge(&mut r, 5.0, Ns::new(11)));
        assert_eq!(r.status, Status::BelowMinTime);
        let mut r = row(5, 10_000);
        assert!(
            judge(&mut r, 5.0, Ns::new(20)),
            "one side above --min-time-us is judged"
        );
        // A rate (time per token, 2.6 µs → 3.0 µs) is held by the work it divides.
        let mut r = Row {
            floor_ns: Some((400_000, 450_000)),
            ..row(2_600, 3_000)
        };
        assert!(judge(&mut r, 5.0, Ns::new(50_000)), "time per token judged");
        let mut r = Row {
            floor_ns: Some((40_000, 45_000)),
            ..row(2_600, 3_000)
        };
        assert!(!judge(&mut r, 5.0, Ns::new(50_000)));
        assert_eq!(r.status, Status::BelowMinTime);
    }
}
