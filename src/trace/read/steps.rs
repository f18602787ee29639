//! Step markers: PyTorch's `ProfilerStep#N` and the serving engines' forward annotations, all
//! CPU-side complete events: SGLang's `step[EXTEND bs=1 toks=8]`, `step[DECODE bs=1]`, and
//! vLLM's, one around each engine step's `execute_model` (`gpu_worker.annotate_profile`):
//! `execute_context_N(T)_generation_M(U)` (current), with `detailed_trace_annotation`
//! `execute_S_context_N(sqT…)_generation_M(sqU…)`, and older vLLM's `execute_new_N_cached_M`.

use super::event::Event;
use super::want::Want;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StepMark {
    /// `ProfilerStep#N`, with its N (`None` when N is not a number).
    Profiler(Option<u64>),
    /// A forward annotation: SGLang's `step[...]`, vLLM's `execute_…`.
    Forward,
}

/// The step marker an event is, if any. GPU-side copies (`gpu_user_annotation`) are not markers.
pub(crate) fn step_mark(ev: &Event<'_>) -> Option<StepMark> {
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
pub(crate) fn mark_of_name(name: &str) -> Option<StepMark> {
    if let Some(n) = name.strip_prefix(PROFILER_STEP) {
        return Some(StepMark::Profiler(n.parse().ok()));
    }
    (name.starts_with("step[") || is_vllm_step(name.as_bytes())).then_some(StepMark::Forward)
}

/// Whether `name` is one of vLLM's per-step annotations (the module doc's three forms): the
/// shape only, digits where the counts go; `analyze::work` reads the counts.
pub(crate) fn is_vllm_step(name: &[u8]) -> bool {
    let Some(rest) = name.strip_prefix(b"execute_") else {
        return false;
    };
    if let Some(r) = rest.strip_prefix(b"new_") {
        let r = after_digits(r).and_then(|r| r.strip_prefix(b"_cached_"));
        return r.and_then(after_digits) == Some(b"");
    }
    // `S_context_…` (detailed) or `context_…`.
    let rest = after_digits(rest)
        .and_then(|r| r.strip_prefix(b"_"))
        .unwrap_or(rest);
    let Some(r) = rest.strip_prefix(b"context_").and_then(after_digits) else {
        return false;
    };
    r.starts_with(b"(") && r.windows(13).any(|w| w == b")_generation_")
}

/// `s` after its leading ASCII digits, when it has at least one.
fn after_digits(s: &[u8]) -> Option<&[u8]> {
    let n = s.iter().take_while(|c| c.is_ascii_digit()).count();
    (n > 0).then(|| &s[n..])
}

/// Whether a raw name (as written, maybe not yet checked as UTF-8) is a `ProfilerStep#…`
/// ([`mark_of_name`]'s `StepMark::Profiler`).
pub(crate) fn is_profiler_step(name: &[u8]) -> bool {
    name.starts_with(PROFILER_STEP.as_bytes())
}

/// Whether a complete event of this raw category and name may be a step marker: true for
/// every event [`step_mark`] takes (and for a few it then turns down, e.g. `ProfilerStep#x`
/// or a category written with an escape). [`STEP_EVENTS`]' name test.
pub(crate) fn may_be_step(cat: &[u8], name: &[u8], _devices: bool) -> bool {
    cat != b"gpu_user_annotation"
        && (is_profiler_step(name) || name.starts_with(b"step[") || is_vllm_step(name))
}

/// The events a reader that only needs the steps reads ([`super::reader::Nested::SkimOnly`];
/// merge's `--align first-step` scan): complete events of any category that [`may_be_step`] takes.
/// The others are skimmed after their leading `ph`, `cat` and `name` (a flow event after its
/// `ph`), not decoded, and still counted in [`super::damage::ReadReport::events`].
pub(crate) const STEP_EVENTS: Want = Want {
    ph: b"X",
    complete_cats: &[],
    named_cats: &[],
    every_cat_named: true,
    names: may_be_step,
    trust_devices: false,
    name_prefixes: &[],
    needs: crate::trace::read::want::no_needs,
};

#[cfg(test)]
mod tests {
    use std::io::Cursor;
    use std::path::Path;

    use super::super::reader::{read_from_with, Nested};
    use super::*;

    /// Reading through [`STEP_EVENTS`] hands over every event [`step_mark`] takes, in the same
    /// order and with the same `ts`, as a reader of every event finds them, and counts as many
    /// events: over categories, names near the markers, escapes, key orders the peek cannot
    /// read, nested `args`, and a window small enough that events straddle refills.
    #[test]
    fn the_step_events_are_every_step_a_full_read_finds() {
        const CATS: [&str; 7] = [
            "cpu_op",
            "user_annotation",
            "gpu_user_annotation",
            "python_function",
            "kernel",
            "gpu\\u005fuser_annotation",
            "user\\u005fannotation",
        ];
        const NAMES: [&str; 14] = [
            "execute_context_1(8)_generation_3(3)",
            "execute_new_2_cached_0",
            "execute_context_x(8)_generation_3(3)",
            "execute_model",
            "ProfilerStep#3",
            "ProfilerStep#x",
            "ProfilerStep#",
            "step[EXTEND bs=1 toks=8]",
            "step[DECODE bs=1]",
            "steps",
            "Profiler\\u0053tep#4",
            "\\u0073tep[x]",
            "aten::mm",
            "step",
        ];
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        let mut next = move |n: usize| (crate::testrng::xorshift(&mut x) % n as u64) as usize;
        let mut doc = String::from("{\"traceEvents\": [");
        // Complete events without a `dur` are rejected by the decoder: the others are counted.
        // The step read skims the rejected ones that its peek turns down, and counts them (a
        // skim checks no field): so merge's scan then counts more than its validating write
        // pass, and that rank is scanned again, validating (`merge::pass`).
        let (mut counted, mut skimmed_rejects) = (0, 0);
        for k in 0..3_000 {
            let ph = ["X", "X", "X", "X", "f", "i", "M"][next(7)];
            let (cat, name) = (CATS[next(CATS.len())], NAMES[next(NAMES.len())]);
            let args = [r#"{"a": [1, {"b": "}]"}]}"#, "{}", r#"{"s": "q\"x"}"#][next(3)];
            let ts = 1_000 + next(100_000);
            let layout = next(5);
            let ev = match layout {
                0 => format!(
                    r#"{{"name": "{name}", "ph": "{ph}", "cat": "{cat}", "ts": {ts}, "dur": 1}}"#
                ),
                1 => format!(r#"{{"ph": "{ph}", "name": "{name}", "ts": {ts}, "dur": 2}}"#),
                2 => format!(r#"{{"ph": "{ph}", "cat": "{cat}", "name": "{name}", "ts": {ts}}}"#),
                _ => format!(
                    r#"{{"ph": "{ph}", "cat": "{cat}", "name": "{name}", "ts": {ts}, "dur": 5, "args": {args}}}"#
                ),
            };
            let rejected = layout == 2 && ph == "X";
            counted += usize::from(!rejected);
            // The peek reads only plain strings: an escape sends the event to the decoder.
            let peeked = !cat.contains('\\') && !name.contains('\\');
            let turned_down = !may_be_step(cat.as_bytes(), name.as_bytes(), false);
            skimmed_rejects += usize::from(rejected && peeked && turned_down);
            doc += if k == 0 { "\n" } else { ",\n" };
            doc += &ev;
        }
        doc += "]}";
        for window in [97, super::super::window::CHUNK] {
            let read = |nested: Nested| {
                let mut steps = Vec::new();
                let src = Box::new(Cursor::new(doc.clone().into_bytes()));
                let r = read_from_with(Path::new("t"), src, false, window, nested, |ev| {
                    if let Some(m) = step_mark(ev) {
                        steps.push((m, ev.ts));
                    }
                });
                assert!(r.damage.is_none(), "{:?}", r.damage);
                (steps, r.events)
            };
            let all = read(Nested::Skim);
            let only = read(Nested::SkimOnly(STEP_EVENTS));
            assert_eq!(all.0, only.0, "window {window}");
            assert_eq!(only.1, (counted + skimmed_rejects) as u64);
            // Both kinds of marker come up, so a test that kept nothing would fail.
            assert!(all
                .0
                .iter()
                .any(|s| matches!(s.0, StepMark::Profiler(Some(3)))));
            assert!(all.0.iter().any(|s| s.0 == StepMark::Forward));
            assert_eq!(all.1, counted as u64);
            assert!(skimmed_rejects > 100, "{skimmed_rejects}");
        }
    }

    /// vLLM's three forms, as `gpu_worker.annotate_profile` writes them, and near misses.
    #[test]
    fn vllm_step_annotations() {
        for yes in [
            "execute_context_1(8)_generation_3(3)",
            "execute_context_0(0)_generation_12(12)",
            "execute_20_context_1(sq8sk8sqsq64sqsk64)_generation_12(sq12sk900sqsq12sqsk900)",
            "execute_new_2_cached_14",
        ] {
            assert!(is_vllm_step(yes.as_bytes()), "{yes}");
            assert_eq!(mark_of_name(yes), Some(StepMark::Forward), "{yes}");
        }
        for no in [
            "execute_model",
            "execute_context_",
            "execute_context_1(8)",
            "execute_context_(8)_generation_3(3)",
            "execute_new_2_cached_",
            "execute_new_2_cached_3x",
            "execute_new__cached_3",
            "gpu_model_runner: forward",
            "xexecute_context_1(8)_generation_3(3)",
        ] {
            assert!(!is_vllm_step(no.as_bytes()), "{no}");
            assert_eq!(mark_of_name(no), None, "{no}");
        }
    }
}
