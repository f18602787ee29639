//! Step markers: PyTorch's `ProfilerStep#N` and SGLang's forward annotations
//! (`step[EXTEND bs=1 toks=8]`, `step[DECODE bs=1]`), both CPU-side complete events.

use super::event::Event;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StepMark {
    /// `ProfilerStep#N`, with its N.
    Profiler(u64),
    /// An SGLang `step[...]` forward annotation.
    Forward,
}

/// The step marker an event is, if any. GPU-side copies (`gpu_user_annotation`) are not markers.
pub fn step_mark(ev: &Event<'_>) -> Option<StepMark> {
    if ev.ph != b'X' || ev.cat.eq_str("gpu_user_annotation") {
        return None;
    }
    let name = ev.name.raw();
    if let Some(n) = name.strip_prefix("ProfilerStep#") {
        return n.parse().ok().map(StepMark::Profiler);
    }
    if name.starts_with("step[") {
        return Some(StepMark::Forward);
    }
    None
}
