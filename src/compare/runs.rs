//! Whether the two sides of a comparison are two runs of one job ([`different_runs`]): the
//! same GPU, the same ranks under the same naming, the same event source and step markers. What
//! differs is said before any failure ([`super::diff`]), since a comparison of unrelated runs
//! fails everywhere for that reason alone.

use std::collections::BTreeSet;

use crate::analyze::summary::Summary;

/// Why `base` and `cur` look like different runs rather than two runs of one job: another GPU,
/// another number of ranks, rank labels of another naming (none shared: matched by position)
/// or only some shared, another event source, other step markers. `matched`: the ranks paired.
pub(crate) fn different_runs(base: &Summary, cur: &Summary, matched: usize) -> Vec<String> {
    let mut why = Vec::new();
    let gpus =
        |s: &Summary| -> BTreeSet<String> { s.profile.devices.iter().flatten().cloned().collect() };
    let (gb, gc) = (gpus(base), gpus(cur));
    let list = |g: &BTreeSet<String>| g.iter().cloned().collect::<Vec<_>>().join(", ");
    if !gb.is_empty() && !gc.is_empty() && gb != gc {
        why.push(format!("other GPU ({} → {})", list(&gb), list(&gc)));
    }
    let labels =
        |s: &Summary| -> Vec<String> { s.ranks.iter().map(|r| r.figures.rank.clone()).collect() };
    let (lb, lc) = (labels(base), labels(cur));
    let shared = lb.iter().filter(|l| lc.contains(l)).count();
    let compact = crate::analyze::rankset::compact::<String>;
    if lb.len() != lc.len() {
        why.push(format!(
            "other ranks ({} {} → {} {})",
            lb.len(),
            if lb.len() == 1 { "rank" } else { "ranks" },
            lc.len(),
            if lc.len() == 1 { "rank" } else { "ranks" }
        ));
    } else if shared == 0 && lb.len() > 1 {
        why.push(format!(
            "other rank naming ({} → {}; matched by position)",
            compact(&lb),
            compact(&lc)
        ));
    } else if shared < lb.len() && lb.len() > 1 {
        why.push(format!(
            "other ranks (only {matched} of {} on both sides)",
            lb.len()
        ));
    }
    if base.profile.source != cur.profile.source {
        why.push(format!(
            "other events ({} → {})",
            base.profile.source, cur.profile.source
        ));
    }
    let (sb, sc) = (&base.profile.step_source, &cur.profile.step_source);
    if sb != sc && !sb.is_empty() && !sc.is_empty() {
        why.push(format!("other step markers ({sb} → {sc})"));
    }
    why
}
