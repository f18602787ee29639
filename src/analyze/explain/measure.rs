//! Which work figure the attribution compares ([`Measure`]): the best one that every step of
//! every rank has, among the figures of [`crate::analyze::collect::work`] (tokens or sequences
//! from batch annotations, tokens from GEMM shapes, message elements, launches), and how a
//! report names its unit ([`Measure::unit`], [`plural`]).

use crate::analyze::collect::work::{StepWork, WorkSource};

/// The work figure the attribution compares: the best one every step of every rank has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Measure {
    /// Tokens from the batch annotations.
    Tokens,
    /// Sequences from the batch annotations.
    Seqs,
    /// Tokens from the GEMMs' input dims.
    ShapeTokens,
    /// Elements of the step's collectives.
    Nelems,
    /// No work figure: launches only.
    Launches,
}

impl Measure {
    /// Best first: annotations, shapes, message sizes, launches.
    pub(crate) const ORDER: [Measure; 5] = [
        Measure::Tokens,
        Measure::Seqs,
        Measure::ShapeTokens,
        Measure::Nelems,
        Measure::Launches,
    ];

    /// The step's work in this measure (`None` for launches: they are no work figure).
    pub(crate) fn value(self, w: &StepWork) -> Option<u64> {
        match self {
            Measure::Tokens => w.tokens,
            Measure::Seqs => w.seqs,
            Measure::ShapeTokens => w.shape_tokens,
            Measure::Nelems => w.nelems,
            Measure::Launches => None,
        }
    }

    /// The unit a report names: `token`, `sequence`, `message element`, `launch` (in the
    /// plural: [`plural`]).
    pub(crate) fn unit(self) -> &'static str {
        match self {
            Measure::Tokens | Measure::ShapeTokens => "token",
            Measure::Seqs => "sequence",
            Measure::Nelems => "message element",
            Measure::Launches => "launch",
        }
    }

    /// The first measure (in [`Measure::ORDER`]) that every step has; `annotation` is the
    /// source of the steps' batch annotations, to name it.
    pub(crate) fn pick<'a>(
        steps: impl Iterator<Item = Option<&'a StepWork>> + Clone,
        annotation: WorkSource,
    ) -> (Measure, WorkSource) {
        for m in Measure::ORDER {
            if m == Measure::Launches {
                break;
            }
            let mut it = steps.clone().peekable();
            if it.peek().is_some() && it.all(|w| w.and_then(|w| m.value(w)).is_some()) {
                let src = match m {
                    Measure::Tokens | Measure::Seqs => annotation,
                    Measure::ShapeTokens => WorkSource::Shapes,
                    _ => WorkSource::Nelems,
                };
                return (m, src);
            }
        }
        (Measure::Launches, WorkSource::Launches)
    }
}

/// `n` and its noun, plural unless one: `1 rank`, `2 ranks`, `0 steps`.
pub(crate) fn count(n: impl std::fmt::Display, one: &str) -> String {
    let s = n.to_string();
    if s == "1" {
        format!("1 {one}")
    } else {
        format!("{s} {}", plural(one))
    }
}

/// A unit's plural (`launch` → `launches`, `token` → `tokens`).
pub(crate) fn plural(unit: &str) -> String {
    if unit.ends_with("ch") || unit.ends_with('s') {
        format!("{unit}es")
    } else {
        format!("{unit}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_singular_for_one() {
        assert_eq!(count(1, "rank"), "1 rank");
        assert_eq!(count(0usize, "step"), "0 steps");
        assert_eq!(count(2u32, "collective"), "2 collectives");
        assert_eq!(count(1, "CPU op"), "1 CPU op");
    }

    #[test]
    fn every_unit_has_its_plural() {
        let all = [
            Measure::Tokens,
            Measure::ShapeTokens,
            Measure::Seqs,
            Measure::Nelems,
            Measure::Launches,
        ];
        let plurals: Vec<String> = all.iter().map(|m| plural(m.unit())).collect();
        assert_eq!(
            plurals,
            [
                "tokens",
                "tokens",
                "sequences",
                "message elements",
                "launches"
            ]
        );
    }
}
