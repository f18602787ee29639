//! Whether rank files are one run: the ranks of one run record at the same time (they
//! communicate), so ranks whose activity lies apart in time, with a gap in which no rank
//! recorded anything, are files of different runs put in one folder — never one profile.
//! `analyze` asks it of each rank's active window (its first op to its last), `merge` of each
//! rank's first and last event, both on the common clock.
//!
//! Sorted by start, a rank that starts more than [`MIN_GAP`] after every earlier rank ended
//! begins another run. Ranks without a window say nothing.

use super::Ns;

/// The least gap, with no rank recording, that splits ranks into runs: 1 s. One run's ranks
/// overlap (their collectives meet); files of separate captures lie seconds to days apart.
const MIN_GAP: i64 = 1_000_000_000;

/// Ranks active together, and when.
struct Run<'a> {
    labels: Vec<&'a str>,
    /// The first rank's file name.
    file: &'a str,
    from: i64,
    to: i64,
}

/// The runs among ranks `(label, active window)` (one when they overlap), in time order.
fn runs<'a>(ranks: impl Iterator<Item = Active<'a>>) -> Vec<Run<'a>> {
    let mut active: Vec<(&str, &str, i64, i64)> = ranks
        .filter_map(|(label, file, w)| w.map(|(a, b)| (label, file, a.get(), b.get())))
        .collect();
    active.sort_by_key(|a| (a.2, a.3));
    let mut out: Vec<Run> = Vec::new();
    for (label, file, from, to) in active {
        match out.last_mut() {
            Some(run) if from.saturating_sub(run.to) <= MIN_GAP => {
                run.labels.push(label);
                run.to = run.to.max(to);
            }
            _ => out.push(Run {
                labels: vec![label],
                file,
                from,
                to,
            }),
        }
    }
    out
}

/// A rank's label, file name and active window.
pub(crate) type Active<'a> = (&'a str, &'a str, Option<(Ns, Ns)>);

/// `Some(why)` when `ranks` are not one run: each run's ranks (as `compact` writes a list of
/// labels), when they recorded, and the gap between them, with what to do instead.
pub(crate) fn apart<'a>(
    ranks: impl Iterator<Item = Active<'a>>,
    profile: &str,
    compact: &dyn Fn(&[&str]) -> String,
) -> Option<String> {
    let runs = runs(ranks);
    if runs.len() < 2 {
        return None;
    }
    let lines: Vec<String> = runs
        .iter()
        .enumerate()
        .map(|(i, run)| {
            let gap = match i {
                0 => String::new(),
                _ => format!(", {} after the one before", long(run.from - runs[i - 1].to)),
            };
            let from = match run.labels.len() {
                1 => run.file.to_string(),
                n => format!("{n} files: {}, …", run.file),
            };
            format!(
                "{} ({from}) recorded for {}{gap}",
                compact(&run.labels),
                long(run.to - run.from)
            )
        })
        .collect();
    Some(format!(
        "the files of profile {profile} are not one run: their ranks recorded at {} separate \
         times, with no rank recording in between:\n  {}\nthe ranks of one run record together; \
         put each run's files in a folder of its own (or give one run's files as arguments). \
         If they are one run, their clocks disagree by more than the gap",
        runs.len(),
        lines.join("\n  ")
    ))
}

/// A duration in the largest unit that keeps it readable: `840 ms`, `12.5 s`, `3.2 h`, `41 days`.
fn long(ns: i64) -> String {
    let s = Ns::new(ns).as_ms() / 1000.0;
    if s < 0.01 {
        format!("{:.2} ms", s * 1000.0)
    } else if s < 1.0 {
        format!("{:.0} ms", s * 1000.0)
    } else if s < 120.0 {
        format!("{s:.1} s")
    } else if s < 7200.0 {
        format!("{:.1} min", s / 60.0)
    } else if s < 172_800.0 {
        format!("{:.1} h", s / 3600.0)
    } else {
        format!("{:.0} days", s / 86_400.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rank(label: &str, active: Option<(i64, i64)>) -> Active<'_> {
        (
            label,
            "f.json",
            active.map(|(a, b)| (Ns::new(a), Ns::new(b))),
        )
    }

    #[test]
    fn overlapping_ranks_are_one_run_and_apart_ones_are_not() {
        let s = 1_000_000_000;
        let one = [
            rank("R0", Some((0, 10 * s))),
            rank("R1", Some((2 * s, 5 * s))),
            rank("R2", None),
            // Starts 0.5 s after the last end: within the least gap.
            rank("R3", Some((10 * s + s / 2, 11 * s))),
        ];
        assert!(apart(one.into_iter(), "p", &|l: &[&str]| l.join(",")).is_none());
        let two = [
            rank("R0", Some((0, 10 * s))),
            rank("R1", Some((86_400 * s * 3, 86_400 * s * 3 + 2 * s))),
        ];
        let why = apart(two.into_iter(), "p", &|l: &[&str]| l.join(",")).expect("apart");
        assert!(why.contains("2 separate times"), "{why}");
        assert!(why.contains("R0 (f.json) recorded for 10.0 s"), "{why}");
        assert!(
            why.contains("R1 (f.json) recorded for 2.0 s, 3 days after"),
            "{why}"
        );
    }
}
