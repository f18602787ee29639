//! Sets of ranks or replicas named compactly: `DP00–DP14, DP16–DP127` rather than 127 names,
//! so that verdict lines and notes stay one line at 1,024 ranks.
//!
//! Labels that differ in one number only (`DP07`, `TP3-DP77`) are folded into runs of
//! consecutive numbers; anything else is named by its first and last few members and a count.

/// At most this many names are listed one by one.
const LIST: usize = 6;
/// At most this many runs are shown; more and the set is summarized by a count.
const RUNS: usize = 4;

/// A label split into its text and number parts: `TP3-DP77` → `["TP", "3", "-DP", "77"]`.
fn parts(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut digit = None;
    for (i, c) in s.char_indices() {
        let d = c.is_ascii_digit();
        if digit.is_some_and(|x| x != d) {
            out.push(&s[start..i]);
            start = i;
        }
        digit = Some(d);
    }
    if start < s.len() {
        out.push(&s[start..]);
    }
    out
}

/// The one number part in which all labels differ (all other parts equal), if any.
fn varying(split: &[Vec<&str>]) -> Option<usize> {
    let first = split.first()?;
    if split.iter().any(|s| s.len() != first.len()) {
        return None;
    }
    let mut at = None;
    for (k, p) in first.iter().enumerate() {
        if split.iter().all(|s| s[k] == *p) {
            continue;
        }
        if at.is_some()
            || !split
                .iter()
                .all(|s| s[k].bytes().all(|b| b.is_ascii_digit()))
        {
            return None;
        }
        at = Some(k);
    }
    at
}

/// Names a set of labels compactly (order kept for a plain list; runs sorted by number).
pub(crate) fn compact<S: AsRef<str>>(names: &[S]) -> String {
    let names: Vec<&str> = names.iter().map(|s| s.as_ref()).collect();
    if names.len() <= LIST {
        return names.join(", ");
    }
    let split: Vec<Vec<&str>> = names.iter().map(|s| parts(s)).collect();
    if let Some(k) = varying(&split) {
        let mut nums: Vec<(u64, usize)> = split
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s[k].parse().ok().map(|v| (v, i)))
            .collect();
        if nums.len() == names.len() {
            nums.sort();
            let mut runs: Vec<(usize, usize)> = Vec::new();
            for (w, &(v, _)) in nums.iter().enumerate() {
                match runs.last_mut() {
                    Some(r) if nums[r.1].0 + 1 == v => r.1 = w,
                    _ => runs.push((w, w)),
                }
            }
            if runs.len() <= RUNS {
                let label = |w: usize| names[nums[w].1];
                return runs
                    .iter()
                    .map(|&(a, b)| match b - a {
                        0 => label(a).to_string(),
                        1 => format!("{}, {}", label(a), label(b)),
                        _ => format!("{}–{}", label(a), label(b)),
                    })
                    .collect::<Vec<_>>()
                    .join(", ");
            }
        }
    }
    format!(
        "{} of them ({}, {}, …, {})",
        names.len(),
        names[0],
        names[1],
        names[names.len() - 1]
    )
}

/// `the median of X` for one to a few peers, `the median of the other N (…)` for many.
pub(crate) fn median_of<S: AsRef<str>>(peers: &[S]) -> String {
    match peers.len() {
        1 => peers[0].as_ref().to_string(),
        n if n <= LIST => format!("the median of {}", compact(peers)),
        n => format!("the median of the other {n} ({})", compact(peers)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_of_replicas_and_ranks() {
        let dp: Vec<String> = (0..128)
            .filter(|&d| d != 15)
            .map(|d| format!("DP{d:02}"))
            .collect();
        assert_eq!(compact(&dp), "DP00–DP14, DP16–DP127");
        let tp: Vec<String> = [0, 1, 2, 4, 5, 6, 7]
            .iter()
            .map(|t| format!("TP{t}-DP77"))
            .collect();
        assert_eq!(compact(&tp), "TP0-DP77–TP2-DP77, TP4-DP77–TP7-DP77");
        assert_eq!(compact(&["a", "b"]), "a, b");
        let odd: Vec<String> = (0..40).map(|d| format!("DP{:02}", 2 * d)).collect();
        assert_eq!(compact(&odd), "40 of them (DP00, DP02, …, DP78)");
        assert!(median_of(&dp).starts_with("the median of the other 127 (DP00–DP14"));
    }
}
