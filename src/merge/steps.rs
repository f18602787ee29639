//! Each rank's steps (`ProfilerStep#N`, SGLang's `step[...]` annotations) for `--steps A:B`
//! and `--align first-step`: collected while a rank is read ([`Steps`]), the scan pass that
//! only collects them ([`scan`]), and the `--steps` window settled on the fly while the write
//! pass runs ([`SpecWindow`]).
//!
//! **`--steps A:B` in one read per rank.** A rank's window (the span of its steps A to B-1) is
//! only certain at the end of its file: a step annotation may sit anywhere (Kineto does not
//! write events in `ts` order), and an event is written when it is read. The write pass
//! therefore holds back the events it reads, already formatted, until it has seen every step
//! the window needs (each number A..B-1, or B forward annotations); it then decides them and
//! every later event against the window found so far, and records what it decided. The
//! buffer is bounded ([`PENDING_CAP`]): when it fills first, what it holds is decided against
//! the window as known then, and holding goes on. At the end every decision is checked
//! against the final window, exactly and cheaply: every kept event must overlap it (the least
//! end and the greatest start of the kept events), every dropped one must miss it (the
//! greatest end of those dropped as too early, the least start of those dropped as too late).
//! Events still held back at the end are decided against the final window itself. Only a rank
//! whose decisions do not hold (a step that grew after its window was settled, an event
//! covering the window decided when the buffer filled) is read a second time, with its window
//! known. The output is the same byte for byte as with the window known in advance.
//!
//! **`--align first-step` keeps a scan pass.** Every rank's shift is `T - first`, where `first`
//! is its own first step start and `T` the earliest first step start of all ranks on the
//! common base (itself known only from `baseTimeNanoseconds`, which Kineto writes after the
//! events): no rank's `ts` can be written before every rank has been read to its end. Writing
//! them unshifted and patching them afterwards would need the uncompressed output kept (disk
//! as large as the JSON) and deflated a second time; reading the compressed input twice is
//! cheaper. So with first-step, [`scan`] reads every rank first (it also gives the `--steps`
//! windows) and the write pass then knows every shift and window.
//!
//! **The scan pass reads only the steps** ([`Nested::SkimOnly`] with
//! [`crate::trace::read::steps::STEP_EVENTS`]): every other event is skimmed a block at a time
//! after its leading `ph`, `cat` and `name`, not decoded (#14: most of a rank's events are flows,
//! runtime calls and CPU ops). A skim never refuses what `Validate` accepts, and every event
//! is still counted; what a skim does not check (a malformed token inside an event it skims,
//! or between the brackets of an `args`) stops the validating write pass there as damage,
//! while the skim reads on. So the events the write pass sees are always the first of those
//! the scan saw, and the two saw the same events exactly when they counted as many. After the
//! first write pass every rank whose count differs is scanned again, validating, and its
//! steps replaced ([`super::pass::Ranks::recheck_scans`]); its shift and `--steps` window are
//! then planned from the same events the write pass read, and the rank is written again if
//! they changed. The scan's earliest `ts` is that of the steps it read: it only feeds the
//! first guess of a rank's clock (a base lost with a cut file); the shifts the merge keeps are
//! planned again from the write pass's own earliest `ts`, and a rank whose shift then differs
//! is written again.

use std::io;

use crate::trace::read::steps::{step_mark, StepMark};
use crate::trace::{read_trace_with, Event, Nested, Ns, RankFile, ReadReport};

/// A rank's step annotations: `(ProfilerStep number or None, start, end)` in its own `ts`.
#[derive(Clone, Debug, Default)]
pub(crate) struct Steps {
    pub(crate) list: Vec<(Option<u64>, Ns, Ns)>,
}

impl Steps {
    /// Records `ev` if it is a step annotation; returns it as recorded.
    pub(crate) fn add(&mut self, ev: &Event<'_>) -> Option<(Option<u64>, Ns, Ns)> {
        let (mark, ts) = (step_mark(ev)?, ev.ts?);
        let n = match mark {
            StepMark::Profiler(n) => n,
            StepMark::Forward => None,
        };
        let s = (n, ts, ts + ev.dur.unwrap_or(Ns::ZERO));
        self.list.push(s);
        Some(s)
    }

    /// Once the rank is read: with both kinds present, ProfilerStep#N define the steps; sorted
    /// by start.
    pub(crate) fn finish(&mut self) {
        if self.list.iter().any(|s| s.0.is_some()) {
            self.list.retain(|s| s.0.is_some());
        }
        self.list.sort_by_key(|s| s.1);
    }

    pub(crate) fn first_step(&self) -> Option<Ns> {
        self.list.first().map(|s| s.1)
    }

    /// The time span of steps `[a, b)`: by ProfilerStep number when the rank has them, else by
    /// the order of its SGLang step annotations. Call [`Steps::finish`] first.
    pub(crate) fn window_of_steps(&self, a: u64, b: u64) -> Option<(Ns, Ns)> {
        let numbered = self.list.iter().any(|s| s.0.is_some());
        let chosen: Vec<_> = self
            .list
            .iter()
            .filter(|s| s.0.is_some() == numbered)
            .enumerate()
            .filter(|(i, s)| {
                let n = if numbered {
                    s.0.unwrap_or(0)
                } else {
                    *i as u64
                };
                (a..b).contains(&n)
            })
            .map(|(_, s)| (s.1, s.2))
            .collect();
        let lo = chosen.iter().map(|s| s.0).min()?;
        let hi = chosen.iter().map(|s| s.1).max()?;
        Some((lo, hi))
    }
}

/// What the scan pass learns of a rank (for `--align first-step`).
#[derive(Clone, Debug, Default)]
pub(crate) struct ScanInfo {
    pub(crate) report: Option<ReadReport>,
    /// The earliest `ts` of the events read (with [`crate::trace::read::steps::STEP_EVENTS`], of
    /// the steps).
    pub(crate) min_ts: Option<Ns>,
    pub(crate) steps: Steps,
}

/// Reads a rank once to find its steps (and its header), the events and nested values read
/// as `nested` says (see the module doc for why the scan pass reads only the steps).
pub(crate) fn scan(file: &RankFile, nested: Nested) -> io::Result<ScanInfo> {
    let mut info = ScanInfo::default();
    let report = read_trace_with(&file.path, nested, |ev| {
        if let Some(ts) = ev.ts {
            info.min_ts = Some(info.min_ts.map_or(ts, |m| m.min(ts)));
        }
        info.steps.add(ev);
    })?;
    info.steps.finish();
    info.report = Some(report);
    Ok(info)
}

/// Bytes of formatted events a rank holds back while its `--steps` window is still open.
pub(crate) const PENDING_CAP: usize = 4 << 20;

/// The `--steps A:B` window of a rank being written, found as its steps are read, and what
/// was decided with it (see the module doc).
#[derive(Debug)]
pub(crate) struct SpecWindow {
    a: u64,
    b: u64,
    /// The `--window` part, in the rank's units (intersected with the steps' span).
    outer: Option<(Ns, Ns)>,
    /// In-range ProfilerStep numbers seen (bit `n - a`), and how many distinct.
    seen: Vec<bool>,
    distinct: u64,
    numbered: Option<(Ns, Ns)>,
    any_numbered: bool,
    forward_count: u64,
    forward: Option<(Ns, Ns)>,
    /// Whether decisions are still held back (the window is not settled yet).
    pub(crate) holding: bool,
    /// Over the events decided before the end: least end and greatest start of those kept,
    /// greatest end of those dropped as too early, least start of those dropped as too late.
    kept_min_end: Option<Ns>,
    kept_max_ts: Option<Ns>,
    early_max_end: Option<Ns>,
    late_min_ts: Option<Ns>,
}

/// A window that nothing overlaps: every event is dropped as too early.
const NOTHING: (Ns, Ns) = (Ns::new(i64::MAX), Ns::new(i64::MIN));

impl SpecWindow {
    pub(crate) fn new(a: u64, b: u64, outer: Option<(Ns, Ns)>) -> Self {
        let span = (b - a).min(1 << 16) as usize;
        SpecWindow {
            a,
            b,
            outer,
            seen: vec![false; span],
            distinct: 0,
            numbered: None,
            any_numbered: false,
            forward_count: 0,
            forward: None,
            holding: true,
            kept_min_end: None,
            kept_max_ts: None,
            early_max_end: None,
            late_min_ts: None,
        }
    }

    /// Takes a step annotation into the window (in read order).
    pub(crate) fn add_step(&mut self, (n, lo, hi): (Option<u64>, Ns, Ns)) {
        let grow = |w: &mut Option<(Ns, Ns)>| {
            *w = Some(w.map_or((lo, hi), |(a, b)| (a.min(lo), b.max(hi))));
        };
        match n {
            Some(n) => {
                self.any_numbered = true;
                if (self.a..self.b).contains(&n) {
                    grow(&mut self.numbered);
                    if let Some(s) = self.seen.get_mut((n - self.a) as usize) {
                        if !*s {
                            *s = true;
                            self.distinct += 1;
                        }
                    }
                }
            }
            None => {
                if (self.a..self.b).contains(&self.forward_count) {
                    grow(&mut self.forward);
                }
                self.forward_count += 1;
            }
        }
        if self.any_numbered {
            if self.distinct == self.seen.len() as u64 {
                self.holding = false;
            }
        } else if self.forward_count >= self.b {
            self.holding = false;
        }
    }

    /// The window as far as the steps read so far tell (`None`: keep everything).
    fn current(&self) -> Option<(Ns, Ns)> {
        let steps = if self.any_numbered {
            self.numbered
        } else {
            self.forward
        };
        // No step found yet: speculate that the window lies ahead (drop as too early).
        intersect(Some(steps.unwrap_or(NOTHING)), self.outer)
    }

    /// Decides an event spanning `ts..end` with the window as known now, and records it.
    pub(crate) fn decide(&mut self, ts: Ns, end: Ns) -> bool {
        let Some((lo, hi)) = self.current() else {
            return true;
        };
        let min = |m: &mut Option<Ns>, v: Ns| *m = Some(m.map_or(v, |x| x.min(v)));
        let max = |m: &mut Option<Ns>, v: Ns| *m = Some(m.map_or(v, |x| x.max(v)));
        if end < lo {
            max(&mut self.early_max_end, end);
            false
        } else if ts > hi {
            min(&mut self.late_min_ts, ts);
            false
        } else {
            min(&mut self.kept_min_end, end);
            max(&mut self.kept_max_ts, ts);
            true
        }
    }

    /// Whether every decision [`SpecWindow::decide`] made stands under `fin`, the final
    /// window (`None`: everything is kept).
    pub(crate) fn holds(&self, fin: Option<(Ns, Ns)>) -> bool {
        match fin {
            None => self.early_max_end.is_none() && self.late_min_ts.is_none(),
            Some((lo, hi)) => {
                self.kept_min_end.is_none_or(|e| e >= lo)
                    && self.kept_max_ts.is_none_or(|t| t <= hi)
                    && self.early_max_end.is_none_or(|e| e < lo)
                    && self.late_min_ts.is_none_or(|t| t > hi)
            }
        }
    }

    /// The final window, from the rank's finished steps.
    pub(crate) fn final_window(&self, steps: &Steps) -> Option<(Ns, Ns)> {
        intersect(steps.window_of_steps(self.a, self.b), self.outer)
    }
}

/// The `--steps` window cut to the `--window` one (either may be absent).
pub(crate) fn intersect(steps: Option<(Ns, Ns)>, outer: Option<(Ns, Ns)>) -> Option<(Ns, Ns)> {
    match (steps, outer) {
        (Some((a, b)), Some((lo, hi))) => Some((a.max(lo), b.min(hi))),
        (s, o) => s.or(o),
    }
}

/// Whether an event spanning `ts..end` overlaps `window` (`None`: no window, kept).
pub(crate) fn overlaps(window: Option<(Ns, Ns)>, ts: Ns, end: Ns) -> bool {
    window.is_none_or(|(lo, hi)| !(end < lo || ts > hi))
}
