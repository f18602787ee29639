//! Helpers shared by the attribution tests: a small synthetic set, the verdict's first line,
//! and the independent checker tests/check_attribution.py.

use std::path::{Path, PathBuf};

use rankprof::analyze::Analysis;
use rankprof::synth::{write_set, Slow, SynthOptions};
use serde_json::Value;

/// A rank `factor`× slower on every class from `from_step` on.
pub fn slow(rank: u32, factor: f64, from_step: u32) -> Option<Slow> {
    Some(Slow {
        rank,
        factor,
        from_step,
        class: None,
    })
}

/// The rank files of the one profile in `dir`, in rank order.
pub fn files_in(dir: &Path) -> Vec<PathBuf> {
    let d = rankprof::trace::discover(dir, false).unwrap();
    assert_eq!(d.groups.len(), 1, "{}", dir.display());
    d.groups[0].files.iter().map(|f| f.path.clone()).collect()
}

/// Writes `cfg` with 8 steps of 2 layers into `dir`; its rank files.
pub fn synth(dir: &Path, cfg: SynthOptions) -> Vec<PathBuf> {
    write_set(
        &SynthOptions {
            steps: 8,
            layers: 2,
            ..cfg
        },
        dir,
    )
    .expect("synth");
    files_in(dir)
}

/// The verdict's first line.
pub fn first(a: &Analysis) -> &str {
    a.verdict.lines.first().map(String::as_str).unwrap_or("")
}

/// The first line names `who` (a rank label or replica) and `cause`.
pub fn assert_first(a: &Analysis, who: &str, cause: &str) {
    let l = first(a);
    assert!(
        l.starts_with(&format!("Imbalanced, {cause}: ")) && l.contains(who),
        "want {who} / {cause}: {:#?}",
        a.verdict.lines
    );
    assert_eq!(a.verdict.cause.as_deref(), Some(cause));
    assert!(!a.verdict.balanced);
}

/// tests/check_attribution.py's JSON for `files`.
pub fn checker(files: &[PathBuf]) -> Value {
    super::python_json("tests/check_attribution.py", &[], files)
}
