//! Ranks in groups, for views that stay readable at 1,024 ranks: aggregates per DP replica,
//! TP / PP / EP rank and node ([`Dim`]), the distribution of each rank figure (min / p50 / p90 /
//! max), the top outlier ranks, and the parallel grid (DP rows × TP·PP columns) the HTML
//! heatmaps are laid out on. Computed from the rank summaries, class totals and the step table
//! after the other cross-rank stages; the report only renders it.
//!
//! *Work* is the verdict's: the rank's non-communication busy time summed over the step
//! table's steps (its whole-profile compute time without steps). Percentiles interpolate
//! linearly between the two nearest ranks (`p·(n−1)`, numpy's default), so p50 is the median.
//! Outliers are measured as the verdict measures a rank: its work against the mean of its peers
//! (its replica's other ranks, [`StepTable::peers_of`]), not against the median of all ranks —
//! replicas carry different loads by design, and a slow rank in a light replica would hide
//! behind the heavy replicas' healthy ranks.
//!
//! **Node**: traces carry no host name, so a node is what the file locations say — the file's
//! directory when the ranks come from two or more directories (one per node, as gathered from
//! a cluster), else the file-name prefix before the rank fields (SGLang's
//! `{instance}-{profile_id}-TP-…`, vLLM's `{instance}_dp…`: one serving instance per node)
//! when two or more prefixes differ; otherwise there is no node dimension.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::steps::{excess_among, StepTable};
use crate::analyze::collect::busy::RankSummary;
use crate::analyze::collect::rank::RankResult;
use crate::analyze::rankset;
use crate::trace::{Ns, RankId};

/// A dimension ranks are grouped by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Dim {
    Dp,
    Tp,
    Pp,
    Ep,
    Node,
}

impl Dim {
    pub const ALL: [Dim; 5] = [Dim::Dp, Dim::Tp, Dim::Pp, Dim::Ep, Dim::Node];
    pub fn as_str(self) -> &'static str {
        match self {
            Dim::Dp => "dp",
            Dim::Tp => "tp",
            Dim::Pp => "pp",
            Dim::Ep => "ep",
            Dim::Node => "node",
        }
    }
    /// What one group is called: `DP replica`, `TP rank`, …
    pub fn noun(self) -> &'static str {
        match self {
            Dim::Dp => "DP replica",
            Dim::Tp => "TP rank",
            Dim::Pp => "PP stage",
            Dim::Ep => "EP group",
            Dim::Node => "node",
        }
    }
    fn of(self, id: &RankId) -> Option<u32> {
        match self {
            Dim::Dp => id.dp,
            Dim::Tp => id.tp,
            Dim::Pp => id.pp,
            Dim::Ep => id.ep,
            Dim::Node => None,
        }
    }
}

/// min / p50 / p90 / max and mean of one figure over a set.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub struct Dist {
    pub n: usize,
    pub min: f64,
    pub p50: f64,
    pub p90: f64,
    pub max: f64,
    pub mean: f64,
}

/// The `p` quantile (0–1) of `v`, linear between the nearest ranks; 0 when empty.
pub(crate) fn quantile(sorted: &[f64], p: f64) -> f64 {
    match sorted.len() {
        0 => 0.0,
        n => {
            let pos = p * (n - 1) as f64;
            let lo = pos.floor() as usize;
            let hi = (lo + 1).min(n - 1);
            sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
        }
    }
}

impl Dist {
    pub fn of(v: impl IntoIterator<Item = f64>) -> Dist {
        let mut s: Vec<f64> = v.into_iter().collect();
        s.sort_by(f64::total_cmp);
        let n = s.len();
        Dist {
            n,
            min: s.first().copied().unwrap_or(0.0),
            p50: quantile(&s, 0.5),
            p90: quantile(&s, 0.9),
            max: s.last().copied().unwrap_or(0.0),
            mean: if n > 0 {
                s.iter().sum::<f64>() / n as f64
            } else {
                0.0
            },
        }
    }
}

/// One group's aggregates (ns unless said).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Group {
    /// `DP07`, `TP3`, `PP1`, `EP12`, or the node's directory / prefix.
    pub name: String,
    /// Member ranks, compactly ([`rankset::compact`]).
    pub members: String,
    pub ranks: usize,
    /// Work of its ranks.
    pub work: Dist,
    pub busy_mean_ns: f64,
    pub exposed_comm_mean_ns: f64,
    pub util_mean_pct: f64,
    pub kernels_mean: f64,
    /// Mean class totals of its ranks, in the class table's order.
    pub class_mean_ns: Vec<f64>,
    /// Its busiest rank (most work).
    pub slowest: String,
    /// Mean work over the median of the groups' mean work, minus one, percent.
    pub vs_median_pct: f64,
}

/// All groups of one dimension, in group order.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DimGroups {
    pub dim: Dim,
    /// For `node`: `directory` or `file-name prefix`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_from: Option<String>,
    pub groups: Vec<Group>,
    /// The groups' mean work.
    pub mean_work: Dist,
}

/// A rank far from its peers (the ranks the verdict compares it with).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Outlier {
    pub rank: String,
    pub index: usize,
    pub work_ns: Ns,
    /// Work over its peers' mean, minus one, percent (what the outliers are ordered by).
    #[serde(default)]
    pub vs_peers_pct: f64,
    /// Work over the median rank's, minus one, percent.
    pub vs_median_pct: f64,
    pub busy_ns: Ns,
    pub exposed_comm_ns: Ns,
    pub util_pct: f64,
}

/// The parallel grid: `cells[row][col]` is a rank index (rows: DP replicas; columns: PP stage ×
/// TP rank, TP fastest), `None` where no rank has that position.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Grid {
    pub rows: Vec<String>,
    pub cols: Vec<String>,
    pub cells: Vec<Vec<Option<usize>>>,
}

/// The grouped views of an analysis.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Groups {
    /// Work per rank (in rank order), as the distributions and outliers count it.
    pub work_ns: Vec<i64>,
    /// Work, busy, exposed communication, utilization and kernels over all ranks.
    pub work: Dist,
    pub busy: Dist,
    pub exposed_comm: Dist,
    pub util_pct: Dist,
    pub kernels: Dist,
    /// Each class's per-rank totals, in the class table's order.
    pub classes: Vec<Dist>,
    /// Each rank's work over its peers' mean, minus one, percent (rank order): the verdict's
    /// measure — a rank against the other ranks of its replica, never another replica's.
    #[serde(default)]
    pub vs_peers_pct: Vec<f64>,
    /// Who a rank's peers are, in words: `its replica's other ranks` or `the other ranks`.
    #[serde(default)]
    pub peers: String,
    /// The ranks furthest from their peers' mean work (either way), furthest first; the rank
    /// furthest above its peers (the verdict's slowest) always first, the rank the verdict
    /// names first (when a rank) second.
    pub outliers: Vec<Outlier>,
    /// Every dimension with two or more groups.
    pub dims: Vec<DimGroups>,
    /// The grid, when every rank has a DP and a TP position and they are unique.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grid: Option<Grid>,
}

impl Groups {
    /// The groups of one dimension, if the ranks have two or more of it.
    pub fn dim(&self, d: Dim) -> Option<&DimGroups> {
        self.dims.iter().find(|g| g.dim == d)
    }
}

/// Outlier ranks kept (in JSON too; the terminal shows fewer).
pub(crate) const OUTLIERS: usize = 20;

/// `v[r]` over the mean of `v` on `peers`, minus one, percent; 0 without peers or when their
/// mean is 0 (never infinite).
fn vs_peers(v: &[i64], r: usize, peers: &[usize]) -> f64 {
    let x = excess_among(v, r, peers);
    if x.is_finite() {
        100.0 * x
    } else {
        0.0
    }
}

/// Builds the grouped views. A rank is measured against its peers
/// ([`StepTable::peers_of`]), as the verdict measures it. `lead`: the rank the verdict names
/// first, when it names a rank (a late starter, say, whose work is even): listed second among
/// the outliers, after the rank furthest above its peers.
pub(crate) fn build(
    results: &[RankResult],
    summaries: &[RankSummary],
    steps: &StepTable,
    lead: Option<usize>,
) -> Groups {
    let n = results.len();
    let work: Vec<i64> = if steps.rows.is_empty() {
        summaries
            .iter()
            .map(|s| s.figures.compute_ns.get())
            .collect()
    } else {
        (0..n)
            .map(|r| {
                steps
                    .rows
                    .iter()
                    .map(|row| row.work_ns[r])
                    .sum::<Ns>()
                    .get()
            })
            .collect()
    };
    let f = |g: &dyn Fn(usize) -> f64| Dist::of((0..n).map(g));
    let nclass = results.first().map_or(0, |r| r.class_ns.len());
    let mut g = Groups {
        work: f(&|r| work[r] as f64),
        busy: f(&|r| summaries[r].figures.busy_ns.get() as f64),
        exposed_comm: f(&|r| summaries[r].figures.exposed_comm_ns.get() as f64),
        util_pct: f(&|r| summaries[r].figures.utilization_pct),
        kernels: f(&|r| summaries[r].figures.kernels as f64),
        classes: (0..nclass)
            .map(|c| f(&|r| results[r].class_ns.get(c).copied().unwrap_or(0) as f64))
            .collect(),
        ..Default::default()
    };
    let med = g.work.p50;
    let vs = |x: f64| {
        if med > 0.0 {
            100.0 * (x / med - 1.0)
        } else {
            0.0
        }
    };
    let dev: Vec<f64> = (0..n)
        .map(|r| vs_peers(&work, r, &steps.peers_of(r, n)))
        .collect();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| dev[b].abs().total_cmp(&dev[a].abs()).then(a.cmp(&b)));
    // The rank furthest above its peers (the verdict's slowest: the first of equals) leads.
    let top = (0..n).max_by(|&a, &b| dev[a].total_cmp(&dev[b]).then(b.cmp(&a)));
    for pin in [lead.filter(|&l| l < n), top].into_iter().flatten() {
        order.retain(|&r| r != pin);
        order.insert(0, pin);
    }
    g.peers = if steps.peers_by_replica() {
        "its replica's other ranks"
    } else {
        "the other ranks"
    }
    .to_string();
    g.outliers = order
        .iter()
        .take(OUTLIERS)
        .map(|&r| Outlier {
            rank: summaries[r].figures.rank.clone(),
            index: r,
            work_ns: Ns::new(work[r]),
            vs_peers_pct: dev[r],
            vs_median_pct: vs(work[r] as f64),
            busy_ns: summaries[r].figures.busy_ns,
            exposed_comm_ns: summaries[r].figures.exposed_comm_ns,
            util_pct: summaries[r].figures.utilization_pct,
        })
        .collect();
    for d in Dim::ALL {
        let (keys, from) = keys(results, d);
        let Some(keys) = keys else { continue };
        let mut by: BTreeMap<(u32, String), Vec<usize>> = BTreeMap::new();
        for (r, k) in keys.into_iter().enumerate() {
            by.entry(k).or_default().push(r);
        }
        if by.len() < 2 {
            continue;
        }
        g.dims
            .push(dim_groups(d, from, by, results, summaries, &work));
    }
    g.grid = grid(results);
    g.work_ns = work;
    g.vs_peers_pct = dev;
    g
}

/// Each rank's group key in `d` (a number for sorting, a name), or `None` when some rank has
/// no position in `d`.
#[allow(clippy::type_complexity)]
fn keys(results: &[RankResult], d: Dim) -> (Option<Vec<(u32, String)>>, Option<String>) {
    if d != Dim::Node {
        let prefix = &d.as_str().to_uppercase();
        let width = if d == Dim::Dp { 2 } else { 1 };
        let k = results
            .iter()
            .map(|r| d.of(&r.id).map(|v| (v, format!("{prefix}{v:0width$}"))))
            .collect();
        return (k, None);
    }
    let dirs: Vec<String> = results
        .iter()
        .map(|r| {
            r.path
                .parent()
                .map(|p| p.display().to_string())
                .unwrap_or_default()
        })
        .collect();
    let distinct = |v: &[String]| v.iter().collect::<std::collections::BTreeSet<_>>().len();
    if distinct(&dirs) >= 2 {
        return (Some(numbered(dirs)), Some("directory".into()));
    }
    let prefixes: Vec<String> = results.iter().map(|r| name_prefix(&r.path)).collect();
    if distinct(&prefixes) >= 2 && prefixes.iter().all(|p| !p.is_empty()) {
        return (Some(numbered(prefixes)), Some("file-name prefix".into()));
    }
    (None, None)
}

/// Names keyed in order of first appearance.
fn numbered(names: Vec<String>) -> Vec<(u32, String)> {
    let mut seen: Vec<String> = Vec::new();
    names
        .into_iter()
        .map(|n| {
            let i = seen.iter().position(|s| *s == n).unwrap_or_else(|| {
                seen.push(n.clone());
                seen.len() - 1
            });
            (i as u32, n)
        })
        .collect()
}

/// The file-name text before the rank fields: before `-TP-` (SGLang), `_dp<d>_` / `-rank-`
/// (vLLM); empty when none is found.
fn name_prefix(path: &Path) -> String {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    for pat in ["-TP-", "-rank-"] {
        if let Some(i) = name.find(pat) {
            return name[..i].to_string();
        }
    }
    match name.find("_dp") {
        Some(i) => name[..i].to_string(),
        None => String::new(),
    }
}

fn dim_groups(
    d: Dim,
    from: Option<String>,
    by: BTreeMap<(u32, String), Vec<usize>>,
    results: &[RankResult],
    summaries: &[RankSummary],
    work: &[i64],
) -> DimGroups {
    let mean = |m: &[usize], f: &dyn Fn(usize) -> f64| {
        m.iter().map(|&r| f(r)).sum::<f64>() / m.len().max(1) as f64
    };
    let nclass = results.first().map_or(0, |r| r.class_ns.len());
    let mut groups: Vec<Group> = by
        .into_iter()
        .map(|((_, name), m)| {
            // `TP00–TP07` for replica DP15's `TP00-DP15` … `TP07-DP15`: its own name dropped.
            let labels: Vec<String> = m
                .iter()
                .map(|&r| {
                    let l = &summaries[r].figures.rank;
                    let short = l
                        .replace(&format!("-{name}"), "")
                        .replace(&format!("{name}-"), "");
                    if short.is_empty() {
                        l.clone()
                    } else {
                        short
                    }
                })
                .collect();
            let slow = m
                .iter()
                .copied()
                .max_by(|&a, &b| work[a].cmp(&work[b]).then(b.cmp(&a)))
                .unwrap_or(0);
            Group {
                name,
                members: rankset::compact(&labels),
                ranks: m.len(),
                work: Dist::of(m.iter().map(|&r| work[r] as f64)),
                busy_mean_ns: mean(&m, &|r| summaries[r].figures.busy_ns.get() as f64),
                exposed_comm_mean_ns: mean(&m, &|r| {
                    summaries[r].figures.exposed_comm_ns.get() as f64
                }),
                util_mean_pct: mean(&m, &|r| summaries[r].figures.utilization_pct),
                kernels_mean: mean(&m, &|r| summaries[r].figures.kernels as f64),
                class_mean_ns: (0..nclass)
                    .map(|c| {
                        mean(&m, &|r| {
                            results[r].class_ns.get(c).copied().unwrap_or(0) as f64
                        })
                    })
                    .collect(),
                slowest: summaries[slow].figures.rank.clone(),
                vs_median_pct: 0.0,
            }
        })
        .collect();
    let mean_work = Dist::of(groups.iter().map(|g| g.work.mean));
    for g in &mut groups {
        g.vs_median_pct = if mean_work.p50 > 0.0 {
            100.0 * (g.work.mean / mean_work.p50 - 1.0)
        } else {
            0.0
        };
    }
    DimGroups {
        dim: d,
        node_from: from,
        groups,
        mean_work,
    }
}

/// DP rows × (PP, TP) columns, when every rank has a DP and a TP position, uniquely.
fn grid(results: &[RankResult]) -> Option<Grid> {
    let mut rows: BTreeMap<u32, usize> = BTreeMap::new();
    let mut cols: BTreeMap<(u32, u32), usize> = BTreeMap::new();
    for r in results {
        rows.insert(r.id.dp?, 0);
        cols.insert((r.id.pp.unwrap_or(0), r.id.tp?), 0);
    }
    if rows.len() < 2 {
        return None;
    }
    for (i, v) in rows.values_mut().enumerate() {
        *v = i;
    }
    for (i, v) in cols.values_mut().enumerate() {
        *v = i;
    }
    let mut cells = vec![vec![None; cols.len()]; rows.len()];
    for (i, r) in results.iter().enumerate() {
        let (d, t) = (r.id.dp?, r.id.tp?);
        let cell = &mut cells[rows[&d]][cols[&(r.id.pp.unwrap_or(0), t)]];
        if cell.is_some() {
            return None;
        }
        *cell = Some(i);
    }
    let pp = cols.keys().any(|k| k.0 > 0);
    Some(Grid {
        rows: rows.keys().map(|d| format!("DP{d:02}")).collect(),
        cols: cols
            .keys()
            .map(|(p, t)| {
                if pp {
                    format!("PP{p}-TP{t}")
                } else {
                    format!("TP{t}")
                }
            })
            .collect(),
        cells,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_interpolate_like_numpy() {
        let d = Dist::of([1.0, 2.0, 3.0, 4.0, 10.0]);
        assert_eq!((d.min, d.p50, d.max), (1.0, 3.0, 10.0));
        assert!((d.p90 - 7.6).abs() < 1e-9);
        assert_eq!(Dist::of([5.0, 1.0]).p50, 3.0);
        assert_eq!(Dist::of([]).n, 0);
    }

    #[test]
    fn node_prefixes_of_sglang_and_vllm_names() {
        assert_eq!(
            name_prefix(Path::new("/x/nodeA-1234-TP-0-DP-3.trace.json.gz")),
            "nodeA-1234"
        );
        assert_eq!(
            name_prefix(Path::new(
                "n1_dp0_pp0_tp1_dcp0_ep0_rank1.5.pt.trace.json.gz"
            )),
            "n1"
        );
        assert_eq!(
            name_prefix(Path::new("dp0_pp0_tp1_dcp0_ep0_rank1.5.pt.trace.json")),
            ""
        );
    }
}
