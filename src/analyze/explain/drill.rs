//! One rank against its peers (`--rank LABEL|INDEX`): the whole profile is analyzed, and this
//! drill-down says where the named rank differs most from the median of its peers — the ranks
//! the verdict compares it with ([`StepTable::peers_of`]: the other ranks of its replica) — by
//! kernel class, kernel, step and collective, each with the rank's figure, the peers' median and
//! their ratio, plus the verdict's lines about the rank and a one-line summary.
//!
//! Rows are ordered by how far the rank is from the median in time (|rank − median|), so the
//! figure that explains most of a gap comes first; a ratio is left out (`None`) where the
//! median is 0. The rank is *in line* when its work and every class holding at least 1 % of its
//! time are within the threshold of the peers' median, and no verdict line names it.

use serde::{Deserialize, Serialize};

use super::measure::count;
use crate::analyze::collect::ops::short_name;
use crate::analyze::collect::rank::RankResult;
use crate::analyze::rankset;
use crate::analyze::reduce::collectives::{CollectiveReport, RankRow};
use crate::analyze::reduce::steps::StepTable;
use crate::analyze::stats::median;

/// One figure of the rank against its peers' median.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DrillRow {
    /// A class, a kernel's full name, a step, or a collective figure.
    pub name: String,
    /// The name as the tables show it (a kernel's short name).
    pub short: String,
    /// The kernel's class (kernel and collective rows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class: Option<String>,
    /// The rank's figure: ns, or a count for `unit` = `count`.
    pub rank: f64,
    /// The peers' median of the same figure.
    pub peers_median: f64,
    /// `rank / peers_median`; `None` when the median is 0.
    pub ratio: Option<f64>,
    /// `ns` or `count`.
    pub unit: String,
}

impl DrillRow {
    fn new(name: String, class: Option<String>, rank: f64, peers: &[f64], unit: &str) -> Self {
        let m = median(peers);
        DrillRow {
            short: name.clone(),
            name,
            class,
            rank,
            peers_median: m,
            ratio: (m > 0.0).then(|| rank / m),
            unit: unit.to_string(),
        }
    }

    /// How far from the median, in the figure's unit.
    pub fn gap(&self) -> f64 {
        self.rank - self.peers_median
    }
}

/// The drill-down of one rank.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Drill {
    pub rank: String,
    pub index: usize,
    /// Its peers, compactly, and how many.
    pub peers: String,
    pub peer_count: usize,
    /// Work (non-communication time inside the steps, as the verdict counts it).
    pub work: DrillRow,
    /// Kernel classes, largest |gap| first.
    pub classes: Vec<DrillRow>,
    /// Kernels by name (up to `--top-n`), largest |gap| first.
    pub kernels: Vec<DrillRow>,
    /// Steps' work (up to `--top-n`), largest |gap| first.
    pub steps: Vec<DrillRow>,
    /// Collective kernels by name, the wait for the last arrival and the times it arrived last.
    pub collectives: Vec<DrillRow>,
    /// The verdict's lines that name the rank.
    pub verdict: Vec<String>,
    pub in_line: bool,
    /// One sentence: in line with its peers, or where it differs most.
    pub summary: String,
}

/// What the drill-down reads.
pub(crate) struct Input<'a> {
    pub(crate) results: &'a [RankResult],
    pub(crate) class_names: &'a [String],
    pub(crate) comm_class: usize,
    /// Work per rank as the verdict counts it.
    pub(crate) work_ns: &'a [i64],
    pub(crate) steps: &'a StepTable,
    pub(crate) collectives: &'a CollectiveReport,
    pub(crate) verdict_lines: &'a [String],
    pub(crate) threshold: f64,
    pub(crate) top_n: usize,
}

fn by_gap(v: &mut [DrillRow]) {
    v.sort_by(|a, b| {
        b.gap()
            .abs()
            .total_cmp(&a.gap().abs())
            .then(a.name.cmp(&b.name))
    });
}

/// Does `line` name `label` as a whole word (not `TP01` inside `TP01-DP01`)?
fn names(line: &str, label: &str) -> bool {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
    line.match_indices(label).any(|(i, _)| {
        let before = line[..i].chars().next_back();
        let after = line[i + label.len()..].chars().next();
        !before.is_some_and(word) && !after.is_some_and(word)
    })
}

/// The drill-down of rank `r`: its peers, then its rows (work, classes, kernels and
/// collectives, steps), the verdict's lines about it and a one-line summary.
pub(crate) fn drill(inp: &Input<'_>, r: usize) -> Drill {
    let peers = drill_peers(inp, r);
    let me = &inp.results[r];
    let of = |f: &dyn Fn(usize) -> f64| -> Vec<f64> { peers.iter().map(|&p| f(p)).collect() };
    let work = DrillRow::new(
        "work".into(),
        None,
        inp.work_ns[r] as f64,
        &of(&|p| inp.work_ns[p] as f64),
        "ns",
    );
    let comm = inp.class_names.get(inp.comm_class).cloned();
    let classes = class_rows(inp, r, &peers, comm.as_ref());
    let (kernels, mut collectives) = kernel_rows(inp, r, &peers, comm.as_ref());
    collectives.extend(wait_rows(inp, r, &peers));
    let steps = step_rows(inp, r, &peers);
    // Lines about the rank (`rank TP01 …`), not those naming it among the peers of another.
    let subject = format!("rank {}", me.label);
    let verdict: Vec<String> = inp
        .verdict_lines
        .iter()
        .filter(|l| names(l, &subject))
        .cloned()
        .collect();
    let (in_line, summary) = summary(inp, r, &peers, &work, &classes, comm.as_ref(), &verdict);
    Drill {
        rank: me.label.clone(),
        index: r,
        peers: rankset::compact(
            &peers
                .iter()
                .map(|&p| inp.results[p].label.as_str())
                .collect::<Vec<_>>(),
        ),
        peer_count: peers.len(),
        work,
        classes,
        kernels,
        steps,
        collectives,
        verdict,
        in_line,
        summary,
    }
}

/// The ranks `r` is drilled against: its peers ([`StepTable::peers_of`]); a replica of one
/// rank, with no peer in its replica, against the others.
fn drill_peers(inp: &Input<'_>, r: usize) -> Vec<usize> {
    let n = inp.results.len();
    match inp.steps.peers_of(r, n) {
        p if p.is_empty() && n > 1 => (0..n).filter(|&i| i != r).collect(),
        p => p,
    }
}

/// One row per kernel class either side has, the largest gap first, communication last (its
/// time is mostly waiting: the slow rank's peers wait for it; the collectives rows tell it).
fn class_rows(inp: &Input<'_>, r: usize, peers: &[usize], comm: Option<&String>) -> Vec<DrillRow> {
    let class_at = |p: usize, c: usize| inp.results[p].class_ns.get(c).copied().unwrap_or(0) as f64;
    let mut classes: Vec<DrillRow> = (0..inp.class_names.len())
        .map(|c| {
            let theirs: Vec<f64> = peers.iter().map(|&p| class_at(p, c)).collect();
            DrillRow::new(
                inp.class_names[c].clone(),
                None,
                class_at(r, c),
                &theirs,
                "ns",
            )
        })
        .filter(|d| d.rank > 0.0 || d.peers_median > 0.0)
        .collect();
    by_gap(&mut classes);
    classes.sort_by_key(|c| Some(&c.name) == comm);
    classes
}

/// Every kernel name on the rank or a peer (a peer without it counts 0), the largest gap
/// first: (compute kernels, collective kernels), each cut to `top_n`.
fn kernel_rows(
    inp: &Input<'_>,
    r: usize,
    peers: &[usize],
    comm: Option<&String>,
) -> (Vec<DrillRow>, Vec<DrillRow>) {
    let mut names_seen: Vec<(&str, u8)> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for i in std::iter::once(r).chain(peers.iter().copied()) {
        for o in &inp.results[i].ops {
            if seen.insert(o.name.as_str()) {
                names_seen.push((o.name.as_str(), o.agg.class));
            }
        }
    }
    let totals: Vec<std::collections::HashMap<&str, i64>> = inp
        .results
        .iter()
        .map(|x| {
            x.ops
                .iter()
                .map(|o| (o.name.as_str(), o.agg.total))
                .collect()
        })
        .collect();
    let total = |p: usize, name: &str| totals[p].get(name).copied().unwrap_or(0) as f64;
    let mut kernels: Vec<DrillRow> = names_seen
        .iter()
        .map(|&(name, c)| {
            let theirs: Vec<f64> = peers.iter().map(|&p| total(p, name)).collect();
            let mut k = DrillRow::new(
                name.to_string(),
                inp.class_names.get(c as usize).cloned(),
                total(r, name),
                &theirs,
                "ns",
            );
            k.short = short_name(&k.name);
            k
        })
        .collect();
    by_gap(&mut kernels);
    let (mut collectives, mut kernels): (Vec<DrillRow>, Vec<DrillRow>) = kernels
        .into_iter()
        .partition(|k| k.class.is_some() && k.class.as_ref() == comm);
    collectives.truncate(inp.top_n);
    kernels.truncate(inp.top_n);
    (kernels, collectives)
}

/// The rank's wait for the last arrival and its last arrivals, against its peers'.
fn wait_rows(inp: &Input<'_>, r: usize, peers: &[usize]) -> Vec<DrillRow> {
    let row = |label: &str| inp.collectives.ranks.iter().find(|x| x.rank == label);
    let Some(mine) = row(&inp.results[r].label) else {
        return Vec::new();
    };
    let peer_rows: Vec<_> = peers
        .iter()
        .filter_map(|&p| row(&inp.results[p].label))
        .collect();
    let theirs = |f: &dyn Fn(&&RankRow) -> f64| peer_rows.iter().map(f).collect::<Vec<f64>>();
    vec![
        DrillRow::new(
            "wait for the last arrival".into(),
            None,
            mine.wait_ns.get() as f64,
            &theirs(&|x| x.wait_ns.get() as f64),
            "ns",
        ),
        DrillRow::new(
            format!("arrived last (of {} matched)", mine.matched),
            None,
            mine.arrived_last as f64,
            &theirs(&|x| x.arrived_last as f64),
            "count",
        ),
    ]
}

/// The steps where the rank's work differs most from its peers', `top_n` of them.
fn step_rows(inp: &Input<'_>, r: usize, peers: &[usize]) -> Vec<DrillRow> {
    let mut steps: Vec<DrillRow> = inp
        .steps
        .rows
        .iter()
        .map(|s| {
            let theirs: Vec<f64> = peers.iter().map(|&p| s.work_ns[p].get() as f64).collect();
            DrillRow::new(
                s.step.clone(),
                None,
                s.work_ns[r].get() as f64,
                &theirs,
                "ns",
            )
        })
        .collect();
    by_gap(&mut steps);
    steps.truncate(inp.top_n);
    steps
}

/// Whether the rank is in line with its peers (work and every sizeable class within the
/// threshold, no verdict line about it), and the sentence that says so or where it differs.
fn summary(
    inp: &Input<'_>,
    r: usize,
    peers: &[usize],
    work: &DrillRow,
    classes: &[DrillRow],
    comm: Option<&String>,
    verdict: &[String],
) -> (bool, String) {
    let label = &inp.results[r].label;
    let off = |d: &DrillRow| d.ratio.is_some_and(|x| (x - 1.0).abs() > inp.threshold);
    let busy: f64 = classes.iter().map(|c| c.rank).sum();
    let worst = classes
        .iter()
        .filter(|c| c.rank >= 0.01 * busy && Some(&c.name) != comm)
        .find(|c| off(c));
    let in_line = !peers.is_empty() && !off(work) && worst.is_none() && verdict.is_empty();
    let peer_words = if inp.steps.peers_by_replica() {
        format!("the {} of its replica", count(peers.len(), "other rank"))
    } else {
        format!("the {}", count(peers.len(), "other rank"))
    };
    let x = |d: &DrillRow| d.ratio.map_or("—".to_string(), |v| format!("{v:.2}×"));
    let line = if peers.is_empty() {
        format!("{label}: no other rank to compare with.")
    } else if in_line {
        format!(
            "{label} is in line with its peers ({peer_words}): work {} their median, every kernel \
             class within {:.0} %.",
            x(work),
            100.0 * inp.threshold
        )
    } else {
        let top = worst.or_else(|| classes.first());
        let most = top.map_or(String::new(), |c| {
            format!(
                "; it differs most in {}: {} their median ({:+.2} ms)",
                c.name,
                x(c),
                c.gap() / 1e6
            )
        });
        format!(
            "{label} differs from its peers ({peer_words}): work {} their median{most}.",
            x(work)
        )
    };
    (in_line, line)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_label_is_named_as_a_whole_word() {
        assert!(names("rank TP01 is slow", "TP01"));
        assert!(names("(TP01, TP02)", "TP01"));
        assert!(!names("rank TP01-DP01 is slow", "TP01"));
        assert!(!names("rank TP010", "TP01"));
        assert!(names("rank TP05-DP04: the same", "TP05-DP04"));
    }

    #[test]
    fn ratios_never_divide_by_zero() {
        let d = DrillRow::new("x".into(), None, 5.0, &[0.0, 0.0], "ns");
        assert_eq!(d.ratio, None);
        let d = DrillRow::new("x".into(), None, 6.0, &[2.0, 4.0, 3.0], "ns");
        assert_eq!(d.ratio, Some(2.0));
        assert_eq!(d.gap(), 3.0);
    }
}
