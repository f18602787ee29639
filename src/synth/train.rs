//! A training step through a pipeline (`synth --microbatches N`): Megatron's 1F1B schedule
//! without interleaving (`forward_backward_pipelining_without_interleaving`). Stage `p` of
//! `pp` runs `min(pp - p - 1, N)` warm-up forwards, then alternates one forward and one
//! backward, then drains the remaining backwards. Activations go forward and gradients back
//! by `c10d::send` / `c10d::recv_` on the pipeline group; where Megatron pairs a send with a
//! receive from the same neighbour (`send_forward_recv_backward`,
//! `send_backward_recv_forward`), the lower stage sends first and the higher receives first,
//! so that blocking point-to-point transfers never wait on each other in a cycle. The step
//! ends with the gradient-norm all-reduce over the pipeline group, the optimizer and
//! `loss.item()`: every stage ends its step together, as training pipelines do.

use super::catalog as cat;
use super::layout::{Layout, RankPos, Vendor};
use super::model::{self, CollKind, Gpu, Op, StepKind, HIDDEN};

/// One entry of a stage's schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Receive micro-batch `m`'s activations from the stage before.
    RecvForward(u32),
    Forward(u32),
    /// Send micro-batch `m`'s activations to the stage after.
    SendForward(u32),
    /// Receive micro-batch `m`'s gradients from the stage after.
    RecvBackward(u32),
    Backward(u32),
    /// Send micro-batch `m`'s gradients to the stage before.
    SendBackward(u32),
}

/// Stage `p`'s 1F1B schedule over `m` micro-batches, as Megatron runs it.
pub(crate) fn schedule(pp: u32, p: u32, m: u32) -> Vec<Phase> {
    use Phase::*;
    let (first, last) = (p == 0, p + 1 == pp);
    let warmup = (pp - p - 1).min(m);
    let steady = m - warmup;
    let mut out = Vec::with_capacity(6 * m as usize);
    for i in 0..warmup {
        if !first {
            out.push(RecvForward(i));
        }
        out.push(Forward(i));
        if !last {
            out.push(SendForward(i));
        }
    }
    if steady > 0 && !first {
        out.push(RecvForward(warmup));
    }
    for i in 0..steady {
        let (f, b) = (warmup + i, i);
        out.push(Forward(f));
        if !last {
            // send_forward_recv_backward: this stage is the lower one, it sends first.
            out.extend([SendForward(f), RecvBackward(b)]);
        }
        out.push(Backward(b));
        if first {
            continue;
        }
        if i + 1 < steady {
            // send_backward_recv_forward: this stage is the higher one, it receives first.
            out.extend([RecvForward(f + 1), SendBackward(b)]);
        } else {
            out.push(SendBackward(b));
        }
    }
    for b in steady..m {
        if !last {
            out.push(RecvBackward(b));
        }
        out.push(Backward(b));
        if !first {
            out.push(SendBackward(b));
        }
    }
    out
}

/// The micro-batch every training step runs: 4 sequences of 512 tokens.
pub(crate) const MICRO_BATCH: StepKind = StepKind::Extend { bs: 4, toks: 2048 };

/// Rank `pos`'s program for one training step of `m` micro-batches of `kind` (a heavier rank's
/// micro-batches are larger): its stage's schedule, each phase written out as kernels.
pub(crate) fn program(
    naming: Vendor,
    layers: u32,
    layout: &Layout,
    pos: &RankPos,
    kind: StepKind,
    m: u32,
    extra_per_layer: u32,
) -> Vec<Op> {
    let body = Bodies::new(naming, layers, layout, pos, kind, extra_per_layer);
    let nelems = kind.tokens() * HIDDEN;
    let p2p = |k: CollKind, peer: u32| model::p2p(layout, pos, k, peer, nelems);
    let mut ops = vec![model::input_copy(kind)];
    for phase in schedule(layout.pp, pos.p, m) {
        match phase {
            Phase::RecvForward(_) => ops.push(p2p(CollKind::Recv, pos.p - 1)),
            Phase::SendForward(_) => ops.push(p2p(CollKind::Send, pos.p + 1)),
            Phase::RecvBackward(_) => ops.push(p2p(CollKind::Recv, pos.p + 1)),
            Phase::SendBackward(_) => ops.push(p2p(CollKind::Send, pos.p - 1)),
            Phase::Forward(_) => ops.extend_from_slice(&body.forward),
            Phase::Backward(_) => ops.extend_from_slice(&body.backward),
        }
    }
    ops.extend(step_end(layout, pos));
    ops
}

/// The kernels of one micro-batch's forward and backward on this stage.
struct Bodies {
    forward: Vec<Op>,
    backward: Vec<Op>,
}

impl Bodies {
    fn new(
        naming: Vendor,
        layers: u32,
        layout: &Layout,
        pos: &RankPos,
        kind: StepKind,
        extra_per_layer: u32,
    ) -> Self {
        let f = model::flavour(naming);
        let n = kind.tokens() as i64;
        let tp = (layout.tp > 1)
            .then(|| model::all_reduce(layout.tp_group(pos), kind.tokens() * HIDDEN));
        let (first, last) = (pos.p == 0, pos.p + 1 == layout.pp);
        let mut forward = Vec::new();
        let mut backward = Vec::new();
        if first {
            forward.push(model::kernel(
                &cat::ELEM_EMBED,
                "aten::embedding",
                2_000 + 2 * n,
                12_000,
            ));
        }
        for l in model::stage_layers(layers, layout.pp, pos.p) {
            let norm = if l == 0 { f.norm_first } else { f.norm_add };
            let mut layer = vec![model::kernel(norm, f.cpu_norm, 3_000 + 4 * n, 7_000)];
            for _ in 0..extra_per_layer {
                layer.push(model::kernel(
                    &cat::ELEM_ROTARY,
                    "aten::add",
                    6_000 + 6 * n,
                    6_000,
                ));
            }
            layer.extend([
                model::linear(&cat::GEMM_QKV, 20_000 + 40 * n, n),
                model::kernel(&cat::ELEM_ROTARY, "aten::add", 2_500 + 3 * n, 6_000),
                model::kernel(f.attn_prefill, f.cpu_attn, 20_000 + 60 * n, 14_000),
                model::linear(&cat::GEMM_OPROJ, 12_000 + 25 * n, n),
            ]);
            layer.extend(tp);
            layer.extend([
                model::kernel(f.norm_add, f.cpu_norm, 3_000 + 4 * n, 7_000),
                model::linear(&cat::GEMM_UP, 45_000 + 80 * n, n),
                model::kernel(f.act, f.cpu_act, 3_000 + 8 * n, 6_000),
                model::linear(&cat::GEMM_DOWN, 25_000 + 45 * n, n),
            ]);
            layer.extend(tp);
            backward.splice(0..0, layer.iter().rev().flat_map(backward_of));
            forward.extend(layer);
        }
        if last {
            let head = [
                model::kernel(f.norm_add, f.cpu_norm, 3_000 + 4 * n, 7_000),
                model::linear(&cat::GEMM_LM_HEAD, 30_000 + 60 * n, n),
                model::kernel(
                    &cat::ELEM_ARGMAX,
                    "aten::cross_entropy_loss",
                    4_000 + 2 * n,
                    10_000,
                ),
            ];
            backward.splice(0..0, head.iter().rev().flat_map(backward_of));
            forward.extend(head);
        }
        if first {
            backward.push(model::kernel(
                &cat::ELEM_EMBED,
                "autograd::engine::evaluate_function: EmbeddingBackward0",
                4_000 + 4 * n,
                14_000,
            ));
        }
        Bodies { forward, backward }
    }
}

/// What autograd runs for one forward op: a GEMM's input and weight gradients (two GEMMs), an
/// attention's backward at 2.5× its forward, other kernels at their forward's time; a TP
/// all-reduce of the forward is the backward's all-reduce of the input gradients.
fn backward_of(op: &Op) -> Vec<Op> {
    match op.gpu {
        Gpu::Kernel(_) if op.inner == Some("aten::mm") => {
            let grad = Op {
                cpu: "autograd::engine::evaluate_function: MmBackward0",
                ..*op
            };
            vec![grad, grad]
        }
        Gpu::Kernel(k) if k.class == cat::Class::Attention => vec![Op {
            cpu: "autograd::engine::evaluate_function: FlashAttnFuncBackward",
            gpu_ns: op.gpu_ns * 5 / 2,
            ..*op
        }],
        Gpu::Kernel(_) => vec![Op {
            cpu: "autograd::engine::evaluate_function: AddBackward0",
            inner: None,
            ..*op
        }],
        Gpu::Coll(_) => vec![*op],
        _ => Vec::new(),
    }
}

/// After the last backward: the gradient-norm all-reduce over the pipeline group (one float a
/// stage), the optimizer, and `loss.item()`, which waits for the GPU.
fn step_end(layout: &Layout, pos: &RankPos) -> Vec<Op> {
    let mut ops = Vec::with_capacity(3);
    if layout.pp > 1 {
        ops.push(model::all_reduce(layout.pp_group(pos.t), 1));
    }
    ops.push(model::kernel(
        &cat::ELEM_ROTARY,
        "Optimizer.step#AdamW.step",
        60_000,
        40_000,
    ));
    ops.push(model::item_sync());
    ops
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every send has its receive on the neighbour, in the same order per direction, and the
    /// blocking transfers complete: a tiny rendezvous run where each stage stops at a transfer
    /// until its peer reaches the matching one.
    #[test]
    fn the_schedule_pairs_and_never_deadlocks() {
        for pp in 1..=5u32 {
            for m in 1..=9u32 {
                let s: Vec<Vec<Phase>> = (0..pp).map(|p| schedule(pp, p, m)).collect();
                for (p, ph) in s.iter().enumerate() {
                    let f = ph.iter().filter(|x| matches!(x, Phase::Forward(_))).count();
                    let b = ph
                        .iter()
                        .filter(|x| matches!(x, Phase::Backward(_)))
                        .count();
                    assert_eq!((f, b), (m as usize, m as usize), "pp {pp} stage {p} m {m}");
                }
                let mut pc = vec![0usize; pp as usize];
                loop {
                    let mut moved = false;
                    for p in 0..pp as usize {
                        while let Some(&x) = s[p].get(pc[p]) {
                            let want = match x {
                                Phase::SendForward(i) => Some((p + 1, Phase::RecvForward(i))),
                                Phase::RecvForward(i) => Some((p - 1, Phase::SendForward(i))),
                                Phase::SendBackward(i) => Some((p - 1, Phase::RecvBackward(i))),
                                Phase::RecvBackward(i) => Some((p + 1, Phase::SendBackward(i))),
                                _ => None,
                            };
                            match want {
                                None => pc[p] += 1,
                                Some((q, y)) if s[q].get(pc[q]) == Some(&y) => {
                                    pc[p] += 1;
                                    pc[q] += 1;
                                }
                                Some(_) => break,
                            }
                            moved = true;
                        }
                    }
                    if (0..pp as usize).all(|p| pc[p] == s[p].len()) {
                        break;
                    }
                    assert!(moved, "pp {pp} m {m}: stuck at {pc:?}");
                }
            }
        }
    }

    /// Stage 0 of 4 warms up with three forwards; the last stage alternates from the start.
    #[test]
    fn warmup_is_the_stages_after_this_one() {
        use Phase::*;
        assert_eq!(
            &schedule(4, 0, 8)[..5],
            &[
                Forward(0),
                SendForward(0),
                Forward(1),
                SendForward(1),
                Forward(2)
            ]
        );
        assert_eq!(
            &schedule(4, 3, 8)[..5],
            &[
                RecvForward(0),
                Forward(0),
                Backward(0),
                RecvForward(1),
                SendBackward(0)
            ]
        );
    }
}
