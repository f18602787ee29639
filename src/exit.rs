//! The exit codes every command shares (documented in README.md and in each `--help`).
//!
//! A leaf: libraries return typed results; `commands` turns them into these codes.

/// Everything worked; for `compare`, no regression.
pub const OK: i32 = 0;
/// The job ran but found a failure: a regression (`compare`), a worker that failed (`capture`),
/// `merge --strict` refusing damaged input.
pub const FAILED: i32 = 1;
/// Bad usage or unreadable input: nothing useful was produced.
pub const USAGE: i32 = 2;
/// Output written, but some input was damaged: merged/analyzed as far as it could be read.
pub const PARTIAL: i32 = 3;

/// Combines two outcomes: failed (1) wins over partial (3), which wins over ok (0).
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
3 partial: output written, but some input was damaged.";
