//! Work per step: how much a rank was asked to do, as opposed to how long it took.
//!
//! Sources, best first (each figure says which one it came from, see [`WorkSource`]):
//!
//! - **SGLang's forward annotation** `step[EXTEND bs=B toks=T]` / `step[DECODE bs=B]`: B
//!   sequences and T tokens (a decode step processes one token per sequence, so T = B).
//! - **vLLM's per-step annotation** (v1 `gpu_worker.annotate_profile`, around each engine
//!   step's `execute_model` while the torch profiler runs): current vLLM writes
//!   `execute_context_N(T)_generation_M(U)` — N requests still in their prompt (new or chunked
//!   prefill) with T tokens scheduled, M generating with U tokens: N + M sequences, T + U
//!   tokens — or, with `detailed_trace_annotation`,
//!   `execute_S_context_N(sqT…)_generation_M(sqU…)` (S = T + U; `sq` is the scheduled tokens);
//!   older vLLM `execute_new_N_cached_M`: N new + M cached requests = N + M sequences, no
//!   token count. (Its other ranges, `gpu_model_runner: forward` etc., carry no batch size.)
//! - **`record_shapes` input dims of GEMMs**: the `Input Dims` of the CPU GEMM ops
//!   ([`GEMM_OPS`]: `aten::mm`, `aten::addmm`, `aten::linear`, `aten::matmul`, `aten::_scaled_mm`);
//!   the token dimension M is the product of input 0's leading dims (all but the last). A step's
//!   figure is the **most frequent M** among its GEMM ops (ties: the larger): every layer's
//!   dense projections (QKV, O, gate/up, down) see all the step's tokens, while the LM head in a
//!   prefill sees only each sequence's last token, and MoE expert GEMMs see the tokens routed to
//!   one expert — the mode ignores those few, the max would not (a padded or routed GEMM could
//!   exceed the batch), the sum would count nested `linear → matmul → mm` three times. On the
//!   real SGLang CPU fixtures the mode equals `toks=` of every step. `aten::bmm` is left out: its
//!   batch dimension is heads or experts, not tokens.
//! - **NCCL message sizes** `In msg nelems` (args of communication kernels and of
//!   `record_param_comms`), summed per step: the step's communication volume. A TP all-reduce
//!   moves tokens × hidden elements, so the volume is proportional to the tokens. CPU-side
//!   `record_param_comms` win over the kernels' copies (never both); a kernel counts in the step
//!   that launched it.
//! - **Kernel launches** per step (GPU traces; CPU ops in CPU-only traces): always there, but a
//!   launch count measures the program, not the batch — a decode step of 8 or of 48 sequences
//!   launches the same kernels. It tells *more kernels* apart from *same program*, not load.
//!
//! Here the figures are read from the trace (the annotations' batches, a GEMM's tokens); each is
//! given to the step whose window holds it by [`super::steps`] (an annotation to the step whose
//! window holds its start; several in one step add up; CPU-side annotations win over their
//! `gpu_user_annotation` copies). Which figure the attribution compares is
//! `explain::measure`'s choice.

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
    /// vLLM `execute_new_N_cached_M` (sequences only).
    Vllm,
    /// vLLM `execute_context_N(T)_generation_M(U)` (sequences and tokens).
    VllmTokens,
    /// `record_shapes`: the token dimension of the step's GEMMs.
    Shapes,
    /// `In msg nelems` of the step's collectives.
    Nelems,
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
            WorkSource::VllmTokens => {
                "tokens (vLLM execute_context_N(T)_generation_M(U) annotation)"
            }
            WorkSource::Shapes => "tokens (record_shapes: GEMM input dims)",
            WorkSource::Nelems => "message elements (NCCL In msg nelems, ∝ tokens)",
            WorkSource::Launches => "kernel launches (no batch annotation)",
        }
    }
}

/// Reads the batch from an annotation name: SGLang's `step[EXTEND bs=1 toks=8]`,
/// `step[DECODE bs=8]`, or vLLM's `execute_context_1(8)_generation_3(3)` (and its detailed
/// form) or `execute_new_2_cached_14`.
pub(crate) fn parse(name: &str) -> Option<(WorkSource, Batch)> {
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
    if let Some(rest) = name.strip_prefix("execute_new_") {
        let (new, cached) = rest.split_once("_cached_")?;
        let seqs = new
            .parse::<u64>()
            .ok()?
            .checked_add(cached.parse::<u64>().ok()?)?;
        return Some((WorkSource::Vllm, Batch { seqs, tokens: None }));
    }
    let rest = name.strip_prefix("execute_")?;
    // The detailed form's total in front: `S_context_…`.
    let rest = match rest.split_once("_context_") {
        Some((s, r)) if !s.is_empty() && s.bytes().all(|c| c.is_ascii_digit()) => r,
        _ => rest.strip_prefix("context_")?,
    };
    let (ctx, gen) = rest.split_once(")_generation_")?;
    let (nc, tc) = vllm_phase(ctx)?;
    let (ng, tg) = vllm_phase(gen.strip_suffix(')')?)?;
    let batch = Batch {
        seqs: nc.checked_add(ng)?,
        tokens: Some(tc.checked_add(tg)?),
    };
    Some((WorkSource::VllmTokens, batch))
}

/// One phase of vLLM's annotation without its closing parenthesis: `N(T` or, detailed,
/// `N(sqTskKsqsqQsqskP`: (requests, scheduled tokens).
fn vllm_phase(s: &str) -> Option<(u64, u64)> {
    let (n, inner) = s.split_once('(')?;
    let n = n.parse::<u64>().ok()?;
    let t = match inner.strip_prefix("sq") {
        Some(d) => &d[..d.find(|c: char| !c.is_ascii_digit()).unwrap_or(d.len())],
        None => inner,
    };
    Some((n, t.parse::<u64>().ok()?))
}

/// A batch annotation as found in a trace (file time of its start).
#[derive(Debug, Clone, Copy)]
pub(crate) struct WorkMark {
    pub(crate) start: i64,
    /// Its duration: an annotation inside another of the same step is the same iteration
    /// ([`super::steps::assign`] counts its batch once).
    pub(crate) dur: i64,
    pub(crate) on_gpu: bool,
    pub(crate) source: WorkSource,
    pub(crate) batch: Batch,
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
    /// Tokens from the GEMMs' `Input Dims` (`record_shapes`), see the module doc.
    #[serde(default)]
    pub shape_tokens: Option<u64>,
    /// Sum of `In msg nelems` of the step's collectives.
    #[serde(default)]
    pub nelems: Option<u64>,
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

/// CPU ops whose `Input Dims` give the token dimension (see the module doc).
pub(crate) const GEMM_OPS: [&str; 5] = [
    "aten::mm",
    "aten::addmm",
    "aten::linear",
    "aten::matmul",
    "aten::_scaled_mm",
];

/// The token dimension of a GEMM from its `Input Dims` (`[[8, 64], [96, 64], []]`): the product
/// of input 0's dims but the last; `None` when input 0 is not a matrix or more.
pub(crate) fn gemm_tokens(dims: &str) -> Option<u64> {
    let inner = dims.trim_start().strip_prefix('[')?.trim_start();
    let first = inner.strip_prefix('[')?;
    let first = &first[..first.find(']')?];
    let d: Vec<u64> = first
        .split(',')
        .map(|x| x.trim().parse::<u64>().ok())
        .collect::<Option<_>>()?;
    if d.len() < 2 {
        return None;
    }
    d[..d.len() - 1]
        .iter()
        .try_fold(1u64, |a, &x| a.checked_mul(x))
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
        // Current vLLM: 1 request in prefill with 8 tokens, 3 decoding with 3.
        assert_eq!(
            parse("execute_context_1(8)_generation_3(3)"),
            Some((WorkSource::VllmTokens, b(4, Some(11))))
        );
        assert_eq!(
            parse("execute_context_0(0)_generation_12(12)"),
            Some((WorkSource::VllmTokens, b(12, Some(12))))
        );
        // detailed_trace_annotation: the scheduled tokens follow `sq`.
        assert_eq!(
            parse("execute_20_context_1(sq8sk8sqsq64sqsk64)_generation_12(sq12sk900sqsq12sqsk900)"),
            Some((WorkSource::VllmTokens, b(13, Some(20))))
        );
        for bad in [
            "step[EXTEND toks=8]",
            "step[DECODE bs=x]",
            "ProfilerStep#3",
            "execute_new_a_cached_1",
            "gpu_model_runner: forward",
            "execute_model",
            "execute_context_1(8)",
            "execute_context_1(8)_generation_3(3",
            "execute_context_1(x)_generation_3(3)",
            "execute_x_context_1(8)_generation_3(3)",
            "execute_context_99999999999999999999(8)_generation_3(3)",
        ] {
            assert_eq!(parse(bad), None, "{bad}");
        }
        // An extend step without toks= has sequences, no tokens.
        assert_eq!(
            parse("step[EXTEND bs=3]"),
            Some((WorkSource::Sglang, b(3, None)))
        );
    }
}
