//! Whether the ranks read are one run ([`crate::trace::runs`]), by each rank's active window
//! ([`RankResult::active`], its first op to its last, on the common clock).

use super::collect::rank::RankResult;
use super::rankset;
use crate::trace::runs::apart;

/// `Some(why)` when `ranks` are not one run: each run's ranks, when they recorded, and the
/// gap between them, with what to do instead.
pub(crate) fn not_one_run(ranks: &[RankResult], profile: &str) -> Option<String> {
    apart(
        ranks
            .iter()
            .map(|r| (r.label.as_str(), file_name(r), r.active)),
        profile,
        &|labels: &[&str]| rankset::compact(labels),
    )
}

fn file_name(r: &RankResult) -> &str {
    r.path.file_name().and_then(|n| n.to_str()).unwrap_or("")
}
