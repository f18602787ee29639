//! The gate: which rows of a [`Comparison`] fail, and the verdict.
//!
//! A time row (overall, rank, class, class on a rank) fails when it grew by more than
//! `--max-regression` percent, or has time where the baseline had none; rows whose baseline
//! and current are both below `--min-time-us` are not judged. A kernel found only in CURRENT
//! fails when it took at least `--min-time-us` in all (unless `--allow-new-kernels`, or the
//! baseline summary folded kernels so it may have been there). The imbalance fails when the
//! current slowest-over-mean work exceeds `--max-imbalance`. Kernel rows found on both sides
//! are shown, not judged: their class is.

use super::diff::{Comparison, Failure, Row, Status};
use crate::analyze::classes::COMM;

/// Human form of a time: `834.6 µs`, `12.35 ms`, `1.234 s`.
pub fn fmt_ns(ns: i64) -> String {
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
pub fn fmt_pct(p: Option<f64>) -> String {
    match p {
        Some(v) => format!("{v:+.1} %"),
        None => "new".into(),
    }
}

fn judge(r: &mut Row, max_pct: f64, min_ns: i64) -> bool {
    r.status = if r.baseline_ns < min_ns && r.current_ns < min_ns {
        Status::BelowMinTime
    } else {
        match r.delta_pct {
            Some(p) if p > max_pct => Status::Regression,
            None if r.current_ns > 0 => Status::Regression,
            _ => Status::Ok,
        }
    };
    r.status == Status::Regression
}

/// `1.00 ms → 1.12 ms per step (+12.0 % > 5 %)`, or `(new)` where the baseline had none.
fn change(r: &Row, per_step: bool, max_pct: f64) -> String {
    format!(
        "{} → {}{} ({})",
        fmt_ns(r.baseline_ns),
        fmt_ns(r.current_ns),
        if per_step { " per step" } else { "" },
        match r.delta_pct {
            Some(_) => format!("{} > {max_pct} %", fmt_pct(r.delta_pct)),
            None => "new".into(),
        }
    )
}

/// Judges every row and sets `failures` and `passed`.
pub fn apply(c: &mut Comparison) {
    let t = c.thresholds.clone();
    let per_step = c.basis == super::diff::Basis::Steps;
    let m = t.max_regression_pct;
    let mut failures = Vec::new();

    if let Some(max) = t.max_imbalance {
        if c.imbalance.ranks >= 2 && c.imbalance.current > max {
            c.imbalance.fails = true;
            failures.push(Failure {
                kind: "imbalance".into(),
                rank: c.imbalance.current_slowest.clone(),
                class: None,
                waiting: false,
                message: format!(
                    "imbalance {:.3} > {max} (slowest rank {} over the mean of per-rank work; baseline {:.3})",
                    c.imbalance.current,
                    c.imbalance.current_slowest.as_deref().unwrap_or("?"),
                    c.imbalance.baseline
                ),
            });
        }
    }
    for r in &mut c.overall {
        if judge(r, t.max_regression_pct, t.min_time_ns) {
            failures.push(Failure {
                kind: "overall".into(),
                rank: None,
                class: None,
                waiting: false,
                message: format!("{}: {}", r.name, change(r, false, m)),
            });
        }
    }
    let mut slow_ranks = Vec::new();
    for r in &mut c.ranks {
        if judge(r, t.max_regression_pct, t.min_time_ns) {
            slow_ranks.push(r.name.clone());
            failures.push(Failure {
                kind: "rank".into(),
                rank: r.rank.clone(),
                class: None,
                waiting: false,
                message: format!(
                    "rank {}: work (time outside communication) {}",
                    r.name,
                    change(r, per_step, m)
                ),
            });
        }
    }
    for r in &mut c.classes {
        if judge(r, t.max_regression_pct, t.min_time_ns) {
            failures.push(Failure {
                kind: "class".into(),
                rank: None,
                class: r.class.clone(),
                waiting: false,
                message: format!("class {} (all ranks): {}", r.name, change(r, per_step, m)),
            });
        }
    }
    for r in &mut c.rank_classes {
        if judge(r, t.max_regression_pct, t.min_time_ns) {
            let rank = r.rank.clone().unwrap_or_default();
            let class = r.class.clone().unwrap_or_default();
            let waiting = class == COMM && !slow_ranks.contains(&rank);
            failures.push(Failure {
                kind: "rank-class".into(),
                rank: r.rank.clone(),
                class: r.class.clone(),
                waiting,
                message: format!(
                    "class {class} on rank {rank}: {}{}",
                    change(r, per_step, m),
                    if waiting {
                        "; communication time includes waiting for slower ranks"
                    } else {
                        ""
                    }
                ),
            });
        }
    }
    if t.new_kernels_fail {
        for k in &mut c.appeared {
            if k.certain && k.total_ns > 0 && k.total_ns >= t.min_time_ns {
                k.fails = true;
                failures.push(Failure {
                    kind: "new-kernel".into(),
                    rank: None,
                    class: Some(k.class.clone()),
                    waiting: false,
                    message: format!(
                        "new kernel ({}, {} in {} calls, not in the baseline{}): {}",
                        k.class,
                        fmt_ns(k.total_ns),
                        k.count,
                        if c.normalized {
                            ""
                        } else {
                            "; renamed? try --normalize"
                        },
                        k.name
                    ),
                });
            }
        }
    }
    c.passed = failures.is_empty();
    c.failures = failures;
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
            baseline_ns: b,
            current_ns: c,
            delta_ns: c - b,
            delta_pct: super::super::diff::pct(b, c),
            status: Status::Ok,
        }
    }

    #[test]
    fn rows_fail_above_the_threshold_only() {
        let mut r = row(1_000_000, 1_050_000);
        assert!(!judge(&mut r, 5.0, 0), "exactly +5 % passes");
        let mut r = row(1_000_000, 1_050_001);
        assert!(judge(&mut r, 5.0, 0));
        let mut r = row(1_000_000, 500_000);
        assert!(!judge(&mut r, 5.0, 0), "faster passes");
        let mut r = row(0, 10);
        assert!(judge(&mut r, 5.0, 0), "time from nothing fails");
        let mut r = row(0, 10);
        assert!(!judge(&mut r, 5.0, 11));
        assert_eq!(r.status, Status::BelowMinTime);
        let mut r = row(5, 10_000);
        assert!(
            judge(&mut r, 5.0, 20),
            "one side above --min-time-us is judged"
        );
    }
}
