//! How a run ended, and the exit codes every command shares (documented in README.md and in
//! each `--help`).
//!
//! A leaf: libraries return an [`Outcome`] in their results (never a number they chose);
//! `commands` turns outcomes into these codes, and combines codes with the one rule, [`worst`].

use serde::{Serialize, Serializer};

/// Everything worked; for `compare`, no regression.
pub const OK: i32 = 0;
/// The job ran but found a failure: a regression (`compare`), a worker that failed (`capture`),
/// `merge --strict` refusing damaged input.
pub const FAILED: i32 = 1;
/// Bad usage or unreadable input: nothing useful was produced.
pub const USAGE: i32 = 2;
/// Output written, but some input was damaged: merged/analyzed as far as it could be read.
pub const PARTIAL: i32 = 3;
/// `compare` only: no regression, but some rows the steps cannot decide (`--inconclusive`
/// turns it into 0 or 1).
pub const INCONCLUSIVE: i32 = 4;

/// How a library's run ended, worst last: a result records it, `commands` turns it into an
/// exit code ([`Outcome::code`]). Serialized as that code (the `exit_code` of JSON records).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum Outcome {
    /// Everything worked.
    #[default]
    Ok,
    /// Output made, but some input was damaged.
    Partial,
    /// The job ran but something failed.
    Failed,
}

impl Outcome {
    /// The worse of two outcomes: failed over partial over ok.
    pub fn worst(self, other: Outcome) -> Outcome {
        self.max(other)
    }

    /// The exit code of this outcome.
    pub fn code(self) -> i32 {
        match self {
            Outcome::Ok => OK,
            Outcome::Partial => PARTIAL,
            Outcome::Failed => FAILED,
        }
    }
}

impl Serialize for Outcome {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_i32(self.code())
    }
}

/// Combines two exit codes: failed (1) wins over partial (3), which wins over ok (0).
pub fn worst(a: i32, b: i32) -> i32 {
    if a == FAILED || b == FAILED {
        FAILED
    } else {
        a.max(b)
    }
}

/// The exit-code table for `--help` (`after_help`).
pub const HELP: &str =
    "Exit codes: 0 ok (compare: no regression); 1 a failure found (compare: regression; \
capture: a worker failed; merge --strict: damaged input, nothing written); 2 usage or input error; \
3 partial: output written, but some input was damaged; 4 compare: inconclusive (no \
regression, but more steps are needed to decide; --inconclusive pass|fail maps it to 0 or 1).";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failed_beats_partial_beats_ok() {
        assert_eq!(Outcome::Partial.worst(Outcome::Failed), Outcome::Failed);
        assert_eq!(Outcome::Failed.worst(Outcome::Partial), Outcome::Failed);
        assert_eq!(Outcome::Ok.worst(Outcome::Partial), Outcome::Partial);
        assert_eq!(worst(PARTIAL, FAILED), FAILED);
        assert_eq!(worst(FAILED, PARTIAL), FAILED);
        assert_eq!(worst(OK, PARTIAL), PARTIAL);
        assert_eq!(serde_json::to_string(&Outcome::Partial).unwrap(), "3");
    }
}
