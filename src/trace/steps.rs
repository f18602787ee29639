//! Step markers: PyTorch's `ProfilerStep#N` and SGLang's forward annotations
//! (`step[EXTEND bs=1 toks=8]`, `step[DECODE bs=1]`), both CPU-side complete events.

use super::event::Event;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StepMark {
    /// `ProfilerStep#N`, with its N (`None` when N is not a number).
    Profiler(Option<u64>),
    /// An SGLang `step[...]` forward annotation.
    Forward,
}

/// The step marker an event is, if any. GPU-side copies (`gpu_user_annotation`) are not markers.
pub fn step_mark(ev: &Event<'_>) -> Option<StepMark> {
    if ev.ph != b'X' || ev.cat.eq_str("gpu_user_annotation") {
        return None;
    }
    match mark_of_name(ev.name.raw())? {
        // A `ProfilerStep#` without a number is no step of the profiler's.
        StepMark::Profiler(None) => None,
        mark => Some(mark),
    }
}

/// The prefix of PyTorch's step annotations, `ProfilerStep#N`.
const PROFILER_STEP: &str = "ProfilerStep#";

/// Reads a step marker from an annotation name alone: the one place that knows the marker names.
pub fn mark_of_name(name: &str) -> Option<StepMark> {
    if let Some(n) = name.strip_prefix(PROFILER_STEP) {
        return Some(StepMark::Profiler(n.parse().ok()));
    }
    name.starts_with("step[").then_some(StepMark::Forward)
}

/// Whether a raw name (as written, maybe not yet checked as UTF-8) is a `ProfilerStep#…`
/// ([`mark_of_name`]'s `StepMark::Profiler`).
pub fn is_profiler_step(name: &[u8]) -> bool {
    name.starts_with(PROFILER_STEP.as_bytes())
}
