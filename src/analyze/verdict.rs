//! The verdict on top of the report: balanced or not, the slowest rank, the kernel classes that
//! explain most of its gap, the onset, and the collective straggler.
//!
//! Ranks are compared on *work*: the union of their non-communication GPU ops (CPU ops in
//! CPU-only traces). Communication is left out because in a synchronous job the fast ranks
//! spend the slow rank's extra time waiting inside collectives. The slowest rank is the one
//! with the most work; it is *imbalanced* when its work exceeds the mean of the others by more
//! than the threshold, or when the step table shows an onset. The gap is split by class: for
//! each non-communication class, the slow rank's time minus the others' mean (over the steps
//! from the onset on when there is one, else over the whole profile); the classes listed are the
//! largest positive contributions, up to 80 % of the positive total (at most three).

use serde::{Deserialize, Serialize};

use super::busy::RankSummary;
use super::collectives::CollectiveReport;
use super::steps::{Onset, StepTable};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ClassShare {
    pub class: String,
    /// Slow rank minus the others' mean.
    pub gap_ns: i64,
    /// Share of the positive gap, percent.
    pub share_pct: f64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Verdict {
    pub ranks: usize,
    pub balanced: bool,
    pub threshold_pct: f64,
    /// What was compared: `gpu work` or `cpu work`.
    pub metric: String,
    pub slowest: Option<String>,
    pub slowest_index: Option<usize>,
    pub slowest_work_ns: i64,
    pub others_mean_work_ns: f64,
    /// Slowest work over the others' mean, minus one, percent.
    pub excess_pct: f64,
    /// Classes that explain the gap, largest first.
    pub classes: Vec<ClassShare>,
    pub onset: Option<Onset>,
    pub straggler: Option<String>,
    pub straggler_pct: f64,
    /// The verdict in sentences.
    pub lines: Vec<String>,
}

/// Inputs per rank: work, class totals (whole profile) and class totals per step.
pub struct Input<'a> {
    pub summaries: &'a [RankSummary],
    pub class_names: &'a [String],
    pub comm_class: usize,
    /// `class_ns[rank][class]` over the whole profile.
    pub class_ns: &'a [Vec<i64>],
    /// `step_class_ns[rank][row][class]` aligned with the step table's rows.
    pub step_class_ns: &'a [Vec<Vec<i64>>],
    pub steps: &'a StepTable,
    pub collectives: &'a CollectiveReport,
    pub threshold: f64,
}

// Long on purpose: the verdict's rules in the order the headline states them; each rule is a
// short block.
pub fn judge(inp: &Input<'_>) -> Verdict {
    let n = inp.summaries.len();
    let mut v = Verdict {
        ranks: n,
        balanced: true,
        threshold_pct: 100.0 * inp.threshold,
        metric: if inp.summaries.iter().all(|s| s.source == "cpu") {
            "cpu work"
        } else {
            "gpu work"
        }
        .to_string(),
        onset: inp.steps.onset.clone(),
        straggler: inp.collectives.straggler.clone(),
        straggler_pct: inp.collectives.straggler_pct,
        ..Default::default()
    };
    if n < 2 {
        v.lines
            .push(format!("{n} rank: nothing to compare across ranks."));
        return v;
    }
    let work: Vec<i64> = inp.summaries.iter().map(|s| s.compute_ns).collect();
    let Some(slow) = super::kernels::argmax(&work) else {
        return v;
    };
    let others = (work.iter().sum::<i64>() - work[slow]) as f64 / (n - 1) as f64;
    v.slowest = Some(inp.summaries[slow].rank.clone());
    v.slowest_index = Some(slow);
    v.slowest_work_ns = work[slow];
    v.others_mean_work_ns = others;
    v.excess_pct = if others > 0.0 {
        100.0 * (work[slow] as f64 / others - 1.0)
    } else {
        0.0
    };
    v.balanced = v.excess_pct <= 100.0 * inp.threshold && v.onset.is_none();

    // The rank the gap is explained for: the onset's rank when there is one.
    let who = v.onset.as_ref().map_or(slow, |o| o.rank_index);
    let per_class: Vec<Vec<i64>> = match &v.onset {
        Some(o) => inp
            .step_class_ns
            .iter()
            .map(|rows| {
                let mut sum = vec![0i64; inp.class_names.len()];
                for row in rows.iter().skip(o.step_index) {
                    for (s, x) in sum.iter_mut().zip(row) {
                        *s += x;
                    }
                }
                sum
            })
            .collect(),
        None => inp.class_ns.to_vec(),
    };
    let mut gaps: Vec<(usize, f64)> = (0..inp.class_names.len())
        .filter(|&c| c != inp.comm_class)
        .map(|c| {
            let mine = per_class[who].get(c).copied().unwrap_or(0) as f64;
            let rest: f64 = (0..n)
                .filter(|&r| r != who)
                .map(|r| per_class[r].get(c).copied().unwrap_or(0) as f64)
                .sum::<f64>()
                / (n - 1) as f64;
            (c, mine - rest)
        })
        .filter(|&(_, g)| g > 0.0)
        .collect();
    gaps.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    let positive: f64 = gaps.iter().map(|g| g.1).sum();
    let mut covered = 0.0;
    for &(c, g) in &gaps {
        if v.classes.len() == 3 || (positive > 0.0 && covered >= 0.8 * positive) {
            break;
        }
        covered += g;
        v.classes.push(ClassShare {
            class: inp.class_names[c].clone(),
            gap_ns: g.round() as i64,
            share_pct: if positive > 0.0 {
                100.0 * g / positive
            } else {
                0.0
            },
        });
    }

    let ms = |x: f64| x / 1e6;
    if v.balanced {
        v.lines.push(format!(
            "Balanced: the busiest rank ({}) has {:.1} % more {} than the others' mean ({:.2} ms vs {:.2} ms), within the {:.0} % threshold.",
            inp.summaries[slow].rank, v.excess_pct, v.metric, ms(work[slow] as f64), ms(others), v.threshold_pct
        ));
    } else if who != slow {
        // The rank that became slower is not the one with the most work over the whole profile.
        v.lines.push(format!(
            "Imbalanced: rank {} became slower (see the onset); over the whole profile rank {} has the most {}, {:.1} % above the others' mean ({:.2} ms vs {:.2} ms).",
            inp.summaries[who].rank, inp.summaries[slow].rank, v.metric, v.excess_pct, ms(work[slow] as f64), ms(others)
        ));
    } else {
        v.lines.push(format!(
            "Imbalanced: rank {} is the slowest, with {:.1} % more {} than the others' mean ({:.2} ms vs {:.2} ms).",
            inp.summaries[slow].rank, v.excess_pct, v.metric, ms(work[slow] as f64), ms(others)
        ));
    }
    if !v.balanced && !v.classes.is_empty() {
        let parts: Vec<String> = v
            .classes
            .iter()
            .map(|c| {
                format!(
                    "{} {:.0} % (+{:.2} ms)",
                    c.class,
                    c.share_pct,
                    ms(c.gap_ns as f64)
                )
            })
            .collect();
        v.lines.push(format!(
            "The gap of rank {} is mostly {}{}.",
            inp.summaries[who].rank,
            parts.join(", "),
            if v.onset.is_some() {
                " (steps from the onset on)"
            } else {
                ""
            }
        ));
    }
    match &v.onset {
        Some(o) => v.lines.push(format!("Onset: {}.", o.sentence())),
        None if !inp.steps.rows.is_empty() => v.lines.push(format!(
            "No onset: no rank stays more than {:.0} % above the others from some step to the end.",
            v.threshold_pct
        )),
        None => {}
    }
    if let Some(s) = &v.straggler {
        v.lines.push(format!(
            "Collectives: rank {s} arrived last at {:.0} % of the {} matched collectives.",
            v.straggler_pct, inp.collectives.matched
        ));
    }
    v
}
