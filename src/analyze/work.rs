//! Work per step: how much a rank was asked to do, as opposed to how long it took.
//!
//! Sources, best first (each figure says which one it came from, see [`WorkSource`]):
//!
//! - **SGLang's forward annotation** `step[EXTEND bs=B toks=T]` / `step[DECODE bs=B]`: B
//!   sequences and T tokens (a decode step processes one token per sequence, so T = B).
//! - **vLLM's per-step annotation** `execute_new_N_cached_M` (v1 `gpu_worker.annotate_profile`,
//!   written while the torch profiler runs): N new + M cached requests = N + M sequences; the
//!   token count is not in the name. (Its other ranges, `gpu_model_runner: forward` etc., carry
//!   no batch size.)
//! - **Kernel launches** per step (GPU traces; CPU ops in CPU-only traces): always there, but a
//!   launch count measures the program, not the batch — a decode step of 8 or of 48 sequences
//!   launches the same kernels. It tells *more kernels* apart from *same program*, not load.
//!
//! An annotation belongs to the step whose window holds its start (a `ProfilerStep#N` holding a
//! `step[…]`, or the `step[…]` itself when it is the step marker); several in one step add up.
//! CPU-side annotations win over their `gpu_user_annotation` copies.

use serde::{Deserialize, Serialize};

/// The batch an annotation names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Batch {
    /// Sequences (requests) in the step.
    pub seqs: u64,
    /// Tokens, when the annotation says (SGLang).
    pub tokens: Option<u64>,
}

/// Where a step's work figures came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum WorkSource {
    /// SGLang `step[… bs= toks=]`.
    Sglang,
    /// vLLM `execute_new_N_cached_M`.
    Vllm,
    /// No batch annotation: launches only.
    #[default]
    Launches,
}

impl WorkSource {
    /// How a report names the source of the work figure.
    pub fn describe(self) -> &'static str {
        match self {
            WorkSource::Sglang => "tokens (SGLang step annotation)",
            WorkSource::Vllm => "sequences (vLLM execute_new_N_cached_M annotation)",
            WorkSource::Launches => "kernel launches (no batch annotation)",
        }
    }
}

/// Reads the batch from an annotation name: SGLang's `step[EXTEND bs=1 toks=8]`,
/// `step[DECODE bs=8]`, or vLLM's `execute_new_2_cached_14`.
pub fn parse(name: &str) -> Option<(WorkSource, Batch)> {
    if let Some(inner) = name.strip_prefix("step[").and_then(|s| s.strip_suffix(']')) {
        let mut words = inner.split_ascii_whitespace();
        let phase = words.next()?;
        let (mut bs, mut toks) = (None, None);
        for w in words {
            if let Some(v) = w.strip_prefix("bs=") {
                bs = v.parse::<u64>().ok();
            } else if let Some(v) = w.strip_prefix("toks=") {
                toks = v.parse::<u64>().ok();
            }
        }
        let bs = bs?;
        let tokens = match (phase, toks) {
            (_, Some(t)) => Some(t),
            ("DECODE", None) => Some(bs),
            _ => None,
        };
        return Some((WorkSource::Sglang, Batch { seqs: bs, tokens }));
    }
    let rest = name.strip_prefix("execute_new_")?;
    let (new, cached) = rest.split_once("_cached_")?;
    let seqs = new.parse::<u64>().ok()? + cached.parse::<u64>().ok()?;
    Some((WorkSource::Vllm, Batch { seqs, tokens: None }))
}

/// A batch annotation as found in a trace (file time of its start).
#[derive(Debug, Clone, Copy)]
pub struct WorkMark {
    pub start: i64,
    pub on_gpu: bool,
    pub source: WorkSource,
    pub batch: Batch,
}

/// The work of one step of one rank.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub struct StepWork {
    /// Sequences, from the batch annotation(s) of the step.
    pub seqs: Option<u64>,
    /// Tokens, from the batch annotation(s) of the step (SGLang only).
    pub tokens: Option<u64>,
    /// Kernel launches (GPU traces) or CPU ops (CPU-only traces) of the step.
    pub launches: u64,
    pub source: WorkSource,
}

impl StepWork {
    /// Adds one annotation's batch to the step.
    pub fn add(&mut self, source: WorkSource, b: Batch) {
        self.source = source;
        self.seqs = Some(self.seqs.unwrap_or(0) + b.seqs);
        self.tokens = match (self.tokens, b.tokens) {
            (None, Some(t)) if self.seqs == Some(b.seqs) => Some(t),
            (Some(a), Some(t)) => Some(a + t),
            _ => None,
        };
    }
}

/// Gives each step (`windows`, as [`super::steps::window_of`] sees them) the batches of the
/// annotations that start in it. CPU-side annotations win over GPU-side copies.
pub fn assign(marks: &[WorkMark], windows: &[super::steps::Mark], work: &mut [StepWork]) {
    let any_cpu = marks.iter().any(|m| !m.on_gpu);
    for m in marks.iter().filter(|m| !any_cpu || !m.on_gpu) {
        if let Some(i) = super::steps::window_of(windows, m.start) {
            if let Some(w) = work.get_mut(i) {
                w.add(m.source, m.batch);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn annotations_parse() {
        let b = |seqs, tokens| Batch { seqs, tokens };
        assert_eq!(
            parse("step[EXTEND bs=1 toks=8]"),
            Some((WorkSource::Sglang, b(1, Some(8))))
        );
        assert_eq!(
            parse("step[DECODE bs=12]"),
            Some((WorkSource::Sglang, b(12, Some(12))))
        );
        assert_eq!(
            parse("execute_new_2_cached_14"),
            Some((WorkSource::Vllm, b(16, None)))
        );
        for bad in [
            "step[EXTEND toks=8]",
            "step[DECODE bs=x]",
            "ProfilerStep#3",
            "execute_new_a_cached_1",
            "gpu_model_runner: forward",
        ] {
            assert_eq!(parse(bad), None, "{bad}");
        }
        // An extend step without toks= has sequences, no tokens.
        assert_eq!(
            parse("step[EXTEND bs=3]"),
            Some((WorkSource::Sglang, b(3, None)))
        );
    }

    #[test]
    fn batches_add_up_in_their_step() {
        let w = |start| super::super::steps::Mark {
            start,
            dur: 100,
            name: String::new(),
            number: None,
            on_gpu: false,
        };
        let windows = vec![w(0), w(100)];
        let m = |start, on_gpu, seqs, tokens| WorkMark {
            start,
            on_gpu,
            source: WorkSource::Sglang,
            batch: Batch { seqs, tokens },
        };
        let marks = vec![
            m(10, false, 2, Some(20)),
            m(50, false, 1, Some(5)),
            m(120, false, 4, Some(4)),
            m(10, true, 99, Some(99)),
        ];
        let mut work = vec![StepWork::default(); 2];
        assign(&marks, &windows, &mut work);
        assert_eq!((work[0].seqs, work[0].tokens), (Some(3), Some(25)));
        assert_eq!((work[1].seqs, work[1].tokens), (Some(4), Some(4)));
    }
}
