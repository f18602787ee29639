//! Filters that keep a merged trace small enough for Perfetto (the browser tab runs out of memory
//! around 2 GB): ranks, a time window, steps, categories, GPU-only. Metadata events (`ph: "M"`)
//! are always kept, so every kept track keeps its name.

use anyhow::{bail, Context, Result};

use crate::trace::{Event, Ns};

/// Categories of GPU-side events (Kineto's current and older names).
pub(crate) const GPU_CATS: &[&str] = &[
    "kernel",
    "gpu_memcpy",
    "gpu_memset",
    "gpu_user_annotation",
    "Kernel",
    "Memcpy",
    "Memset",
];

/// Event filter for one rank. `window` is in the rank's own `ts` units.
#[derive(Clone, Debug, Default)]
pub(crate) struct Filter {
    pub(crate) drop_cat: Vec<String>,
    pub(crate) gpu_only: bool,
    pub(crate) window: Option<(Ns, Ns)>,
}

impl Filter {
    pub(crate) fn is_noop(&self) -> bool {
        self.drop_cat.is_empty() && !self.gpu_only && self.window.is_none()
    }

    /// What the filters say of an event short of the time window: kept or dropped whatever
    /// the window, or up to the window, the event spanning `ts..end`.
    pub(crate) fn classify(&self, ev: &Event<'_>) -> Verdict {
        if ev.ph == b'M' {
            return Verdict::Keep;
        }
        if self.gpu_only && !GPU_CATS.iter().any(|c| ev.cat.eq_str(c)) {
            return Verdict::Drop;
        }
        if !self.drop_cat.is_empty() && self.drop_cat.iter().any(|c| ev.cat.eq_str(c)) {
            return Verdict::Drop;
        }
        match ev.ts {
            Some(ts) => Verdict::Window(ts, ts + ev.dur.unwrap_or(Ns::ZERO)),
            None => Verdict::Keep,
        }
    }
}

/// [`Filter::classify`]'s answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    Keep,
    Drop,
    /// Kept if `ts..end` overlaps the time window.
    Window(Ns, Ns),
}

/// Parses `0,3-5` into sorted, distinct indices.
pub(crate) fn parse_ranks(spec: &str) -> Result<Vec<usize>> {
    let mut out = Vec::new();
    for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let bad = || format!("--ranks: '{part}' is not N or A-B");
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (usize, usize) = (
                    a.trim().parse().with_context(bad)?,
                    b.trim().parse().with_context(bad)?,
                );
                if a > b {
                    bail!("--ranks: '{part}' is an empty range");
                }
                out.extend(a..=b);
            }
            None => out.push(part.parse().with_context(bad)?),
        }
    }
    out.sort_unstable();
    out.dedup();
    if out.is_empty() {
        bail!("--ranks: no rank given");
    }
    Ok(out)
}

/// Parses `START_US:END_US` (µs, fractions allowed).
pub(crate) fn parse_window(spec: &str) -> Result<(Ns, Ns)> {
    let (a, b) = spec
        .split_once(':')
        .with_context(|| format!("--window: '{spec}' is not START_US:END_US"))?;
    let p = |s: &str| {
        Ns::parse_us(s.trim().as_bytes())
            .with_context(|| format!("--window: '{s}' is not a number of µs"))
    };
    let (lo, hi) = (p(a)?, p(b)?);
    if lo > hi {
        bail!("--window: start {a} is after end {b}");
    }
    Ok((lo, hi))
}

/// Parses `A:B`: steps A up to but not including B.
pub(crate) fn parse_steps(spec: &str) -> Result<(u64, u64)> {
    let (a, b) = spec
        .split_once(':')
        .with_context(|| format!("--steps: '{spec}' is not A:B"))?;
    let p = |s: &str| {
        s.trim()
            .parse::<u64>()
            .with_context(|| format!("--steps: '{s}' is not a step number"))
    };
    let (a, b) = (p(a)?, p(b)?);
    if a >= b {
        bail!("--steps: {a}:{b} holds no step (B is exclusive)");
    }
    Ok((a, b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_specs() {
        assert_eq!(parse_ranks("0,3-5, 4").unwrap(), [0, 3, 4, 5]);
        assert!(parse_ranks("5-3").is_err());
        assert!(parse_ranks("x").is_err());
        assert_eq!(
            parse_window("10:20.5").unwrap(),
            (Ns::new(10_000), Ns::new(20_500))
        );
        assert!(parse_window("20:10").is_err());
        assert_eq!(parse_steps("2:5").unwrap(), (2, 5));
        assert!(parse_steps("5:5").is_err());
    }
}
