//! What one rank does in one step: the batch of the step (shared by the ranks of a DP replica,
//! different across replicas) and the rank's program — the ordered list of CPU calls and the GPU
//! work each one launches, with nominal durations before jitter and planted slowdowns.
//!
//! A step is the forward pass of a decoder-only model: input copy, embedding (first PP stage) or
//! receive from the previous stage, then per layer `norm → QKV GEMM → rotary → attention →
//! O-proj GEMM → all-reduce → norm → MLP (dense, or MoE when EP > 1) → all-reduce`, then LM head
//! and sampling (last stage) or send to the next stage, then a copy back and a stream sync.

use super::catalog::{self as cat, Call, Class, KSpec};
use super::layout::{Layout, RankPos, Stage, Vendor};
use super::rng::Rng;

/// Hidden size of the synthetic model (elements per token in an all-reduce).
pub(crate) const HIDDEN: u64 = 4096;

/// The batch of one step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StepKind {
    Extend { bs: u32, toks: u32 },
    Decode { bs: u32 },
}

impl StepKind {
    /// Tokens the step processes.
    pub(crate) fn tokens(self) -> u64 {
        match self {
            StepKind::Extend { toks, .. } => u64::from(toks),
            StepKind::Decode { bs } => u64::from(bs),
        }
    }

    pub(crate) fn bs(self) -> u64 {
        match self {
            StepKind::Extend { bs, .. } | StepKind::Decode { bs } => u64::from(bs),
        }
    }

    /// The same kind of step with `factor` × the sequences and tokens (at least one each).
    pub(crate) fn scaled(self, factor: f64) -> StepKind {
        let k = |x: u32| ((f64::from(x) * factor).round() as u32).max(1);
        match self {
            StepKind::Extend { bs, toks } => StepKind::Extend {
                bs: k(bs),
                toks: k(toks).max(k(bs)),
            },
            StepKind::Decode { bs } => StepKind::Decode { bs: k(bs) },
        }
    }

    /// vLLM's per-step range (`gpu_worker.annotate_profile`) as current vLLM writes it: a
    /// prefill's requests are in their context phase with all their tokens scheduled, a decode
    /// step's are generating one token each: `execute_context_4(512)_generation_0(0)`,
    /// `execute_context_0(0)_generation_8(8)`.
    pub(crate) fn vllm_annotation(self) -> String {
        match self {
            StepKind::Extend { bs, toks } => {
                format!("execute_context_{bs}({toks})_generation_0(0)")
            }
            StepKind::Decode { bs } => format!("execute_context_0(0)_generation_{bs}({bs})"),
        }
    }

    /// SGLang's forward annotation: `step[DECODE bs=8]`, `step[EXTEND bs=4 toks=512]`.
    pub(crate) fn annotation(self) -> String {
        match self {
            StepKind::Extend { bs, toks } => format!("step[EXTEND bs={bs} toks={toks}]"),
            StepKind::Decode { bs } => format!("step[DECODE bs={bs}]"),
        }
    }
}

/// The batch of step `index` in DP replica `d`. Without a stage, about one step in six (and
/// always the first) is a prefill.
pub(crate) fn step_kind(
    seed: u64,
    stage: Option<Stage>,
    profile: u32,
    d: u32,
    index: u32,
) -> StepKind {
    let mut rng = Rng::keyed(
        seed,
        &[0x57E9, u64::from(profile), u64::from(d), u64::from(index)],
    );
    let extend = match stage {
        Some(Stage::Extend) => true,
        Some(Stage::Decode) => false,
        None => index == 0 || rng.unit() < 0.17,
    };
    if extend {
        let bs = rng.range(1, 8) as u32;
        let per = rng.range(4, 32) as u32 * 16;
        StepKind::Extend { bs, toks: bs * per }
    } else {
        StepKind::Decode {
            bs: rng.range(8, 48) as u32,
        }
    }
}

/// What a CPU call puts on the GPU.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Gpu {
    Kernel(&'static KSpec),
    Memcpy {
        name: &'static str,
        bytes: u64,
    },
    Memset {
        bytes: u64,
    },
    Coll(Coll),
    /// A collective on the side (prefetch) stream ([`overlap_prefetch`]): the compute stream
    /// goes on, and waits for it only at a [`Gpu::WaitSide`].
    SideColl(Coll),
    /// A copy on the side stream before its collective (FSDP's all-gather copy-in).
    SideCopy {
        bytes: u64,
    },
    /// `cudaStreamWaitEvent`: the compute stream waits for the side stream's last collective.
    WaitSide,
    /// Nothing: the call waits for the GPU (`cudaStreamSynchronize`).
    Sync,
    /// No CUDA call at all: host work of [`Op::cpu_ns`] exactly (a planted host stall).
    Host,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CollKind {
    AllReduce,
    AllGather,
    Send,
    Recv,
}

/// A collective (or point-to-point) NCCL kernel.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Coll {
    pub(crate) kind: CollKind,
    pub(crate) spec: &'static KSpec,
    /// Index of its process group in [`Layout::groups`].
    pub(crate) pg: usize,
    /// Replica-local rank of the other side (send/recv only).
    pub(crate) peer: u32,
    pub(crate) nelems: u64,
}

/// One CPU call and its GPU work.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Op {
    pub(crate) gpu: Gpu,
    /// The outer `cpu_op`.
    pub(crate) cpu: &'static str,
    /// A nested `cpu_op` that makes the CUDA call (e.g. `aten::mm` inside `aten::linear`).
    pub(crate) inner: Option<&'static str>,
    pub(crate) call: Call,
    /// Nominal GPU duration (kernels, copies) in ns; collectives use [`transfer_ns`].
    pub(crate) gpu_ns: i64,
    /// Nominal duration of the outer CPU op in ns.
    pub(crate) cpu_ns: i64,
    /// The token dimension M of a GEMM (its input 0 is `[M, HIDDEN]` with `--record-shapes`);
    /// 0 for other ops.
    pub(crate) rows: u64,
}

impl Op {
    /// The class of the GPU work, if any.
    pub(crate) fn class(&self) -> Option<Class> {
        match self.gpu {
            Gpu::Kernel(k) => Some(k.class),
            Gpu::Coll(_) | Gpu::SideColl(_) => Some(Class::Comm),
            Gpu::Memcpy { .. } | Gpu::Memset { .. } | Gpu::SideCopy { .. } => Some(Class::Memory),
            Gpu::Sync | Gpu::Host | Gpu::WaitSide => None,
        }
    }
}

pub(super) fn kernel(spec: &'static KSpec, cpu: &'static str, gpu_ns: i64, cpu_ns: i64) -> Op {
    let call = if spec.name == cat::MOE_FUSED.name {
        cat::LAUNCH_DRIVER
    } else {
        cat::LAUNCH
    };
    Op {
        gpu: Gpu::Kernel(spec),
        cpu,
        inner: None,
        call,
        gpu_ns,
        cpu_ns,
        rows: 0,
    }
}

pub(super) fn linear(spec: &'static KSpec, gpu_ns: i64, rows: i64) -> Op {
    Op {
        inner: Some("aten::mm"),
        rows: rows.max(0) as u64,
        ..kernel(spec, "aten::linear", gpu_ns, 12_000)
    }
}

/// `c10d::allreduce_` of `nelems` over process group `pg` (LL for small messages, LL128 else).
pub(super) fn all_reduce(pg: usize, nelems: u64) -> Op {
    Op {
        gpu: Gpu::Coll(Coll {
            kind: CollKind::AllReduce,
            spec: if nelems <= 64 * 1024 {
                &cat::NCCL_AR_LL
            } else {
                &cat::NCCL_AR_LL128
            },
            pg,
            peer: 0,
            nelems,
        }),
        cpu: "c10d::allreduce_",
        inner: Some("record_param_comms"),
        call: cat::LAUNCH_EXC,
        gpu_ns: 0,
        cpu_ns: 18_000,
        rows: 0,
    }
}

/// A send to (or receive from) pipeline stage `peer_p`, the same TP rank there, over the
/// rank's pipeline group.
pub(super) fn p2p(layout: &Layout, pos: &RankPos, kind: CollKind, peer_p: u32, nelems: u64) -> Op {
    Op {
        gpu: Gpu::Coll(Coll {
            kind,
            spec: &cat::NCCL_SENDRECV,
            pg: layout.pp_group(pos.t),
            peer: peer_p * layout.tp + pos.t,
            nelems,
        }),
        cpu: if kind == CollKind::Send {
            "c10d::send"
        } else {
            "c10d::recv_"
        },
        inner: Some("record_param_comms"),
        call: cat::LAUNCH_EXC,
        gpu_ns: 0,
        cpu_ns: 16_000,
        rows: 0,
    }
}

/// Nominal time of a collective's data transfer, once every member has arrived.
pub(crate) fn transfer_ns(c: &Coll) -> i64 {
    let bytes = (c.nelems * 2) as i64;
    match c.kind {
        CollKind::AllReduce | CollKind::AllGather => 9_000 + bytes / 100,
        CollKind::Send | CollKind::Recv => 6_000 + bytes / 50,
    }
}

/// Per-framework names of the kernels and CPU ops that differ.
pub(super) struct Flavour {
    pub(super) attn_decode: &'static KSpec,
    pub(super) attn_prefill: &'static KSpec,
    pub(super) norm_first: &'static KSpec,
    pub(super) norm_add: &'static KSpec,
    pub(super) act: &'static KSpec,
    pub(super) cpu_norm: &'static str,
    pub(super) cpu_attn: &'static str,
    pub(super) cpu_act: &'static str,
}

pub(super) fn flavour(naming: Vendor) -> Flavour {
    match naming {
        Vendor::Sglang => Flavour {
            attn_decode: &cat::ATTN_DECODE_FI,
            attn_prefill: &cat::ATTN_PREFILL_FI,
            norm_first: &cat::NORM_RMS,
            norm_add: &cat::NORM_ADD_RMS,
            act: &cat::ELEM_ACT_FI,
            cpu_norm: "sgl_kernel::fused_add_rmsnorm",
            cpu_attn: "flashinfer::batch_attention_run",
            cpu_act: "sgl_kernel::silu_and_mul",
        },
        Vendor::Vllm => Flavour {
            attn_decode: &cat::ATTN_DECODE_FA,
            attn_prefill: &cat::ATTN_PREFILL_FA,
            norm_first: &cat::NORM_VLLM,
            norm_add: &cat::NORM_VLLM,
            act: &cat::ELEM_ACT_VLLM,
            cpu_norm: "_C::fused_add_rms_norm",
            cpu_attn: "vllm::unified_attention_with_output",
            cpu_act: "_C::silu_and_mul",
        },
    }
}

/// Layers of pipeline stage `p`: an even split of `layers` (earlier stages get the remainder).
pub(crate) fn stage_layers(layers: u32, pp: u32, p: u32) -> std::ops::Range<u32> {
    let lo = p * layers / pp;
    let hi = (p + 1) * layers / pp;
    lo..hi
}

/// The program of one rank for one step, as the real model runs it: the input, then each of
/// its stage's layers ([`layer`]), then the LM head ([`head`]) or the send to the next stage.
/// `moe_factor`: the tokens routed to this rank's experts over an even share (1: balanced; a
/// hot-expert rank more).
pub(crate) fn program(
    naming: Vendor,
    layers: u32,
    layout: &Layout,
    pos: &RankPos,
    kind: StepKind,
    extra_per_layer: u32,
    moe_factor: f64,
) -> Vec<Op> {
    let f = flavour(naming);
    let n = kind.tokens() as i64;
    let bs = kind.bs() as i64;
    let nelems = kind.tokens() * HIDDEN;
    let p2p = |kind: CollKind, peer_p: u32| p2p(layout, pos, kind, peer_p, nelems);

    let mut ops = Vec::with_capacity(16 + 14 * layers as usize);
    ops.push(input_copy(kind));
    ops.push(Op {
        gpu: Gpu::Memset {
            bytes: (bs as u64) * 4,
        },
        cpu: "aten::zero_",
        inner: Some("aten::fill_"),
        call: cat::MEMSET,
        gpu_ns: 1_400,
        cpu_ns: 9_000,
        rows: 0,
    });
    if pos.p == 0 {
        ops.push(kernel(
            &cat::ELEM_EMBED,
            "aten::embedding",
            2_000 + 2 * n,
            12_000,
        ));
    } else {
        ops.push(p2p(CollKind::Recv, pos.p - 1));
    }
    let shape = Layer {
        f: &f,
        n,
        prefill: matches!(kind, StepKind::Extend { .. }),
        allreduce: (layout.tp > 1).then(|| all_reduce(layout.tp_group(pos), nelems)),
        ep: layout.ep,
        extra_per_layer,
        moe_factor,
    };
    for l in stage_layers(layers, layout.pp, pos.p) {
        shape.push(&mut ops, l == 0);
    }
    if pos.p + 1 == layout.pp {
        head(&mut ops, &f, bs);
    } else {
        ops.push(p2p(CollKind::Send, pos.p + 1));
    }
    ops.push(item_sync());
    ops
}

/// What one decoder layer's kernels depend on in a step.
struct Layer<'a> {
    f: &'a Flavour,
    /// Tokens in the step.
    n: i64,
    prefill: bool,
    /// The tensor-parallel all-reduce after attention and after the MLP (none without TP).
    allreduce: Option<Op>,
    ep: u32,
    extra_per_layer: u32,
    moe_factor: f64,
}

impl Layer<'_> {
    /// One layer's ops (`first`: the model's first layer, whose norm has no residual add).
    fn push(&self, ops: &mut Vec<Op>, first: bool) {
        let (f, n) = (self.f, self.n);
        let norm = if first { f.norm_first } else { f.norm_add };
        ops.push(kernel(norm, f.cpu_norm, 3_000 + 4 * n, 7_000));
        for _ in 0..self.extra_per_layer {
            ops.push(kernel(&cat::ELEM_ROTARY, "aten::add", 6_000 + 6 * n, 6_000));
        }
        ops.push(linear(&cat::GEMM_QKV, 20_000 + 40 * n, n));
        ops.push(kernel(&cat::ELEM_ROTARY, "aten::add", 2_500 + 3 * n, 6_000));
        if self.prefill {
            ops.push(kernel(f.attn_prefill, f.cpu_attn, 20_000 + 60 * n, 14_000));
        } else {
            ops.push(kernel(f.attn_decode, f.cpu_attn, 12_000 + 900 * n, 14_000));
        }
        ops.push(linear(&cat::GEMM_OPROJ, 12_000 + 25 * n, n));
        ops.extend(self.allreduce);
        ops.push(kernel(f.norm_add, f.cpu_norm, 3_000 + 4 * n, 7_000));
        if self.ep > 1 {
            self.moe(ops);
        } else {
            ops.push(linear(&cat::GEMM_UP, 45_000 + 80 * n, n));
            ops.push(kernel(f.act, f.cpu_act, 3_000 + 8 * n, 6_000));
            ops.push(linear(&cat::GEMM_DOWN, 25_000 + 45 * n, n));
        }
        ops.extend(self.allreduce);
    }

    /// The expert-parallel MLP: route, dispatch, the experts' GEMMs, combine. The tokens
    /// routed to this rank's experts: a hot-expert rank gets `moe_factor` × them, and its
    /// expert GEMMs take `moe_factor` × as long (compute-bound on the routed tokens).
    fn moe(&self, ops: &mut Vec<Op>) {
        let (f, n) = (self.f, self.n);
        let even = n / i64::from(self.ep) + 1;
        let per_ep = (even as f64 * self.moe_factor).round() as i64;
        let hot = |ns: i64| (ns as f64 * self.moe_factor).round() as i64;
        ops.push(linear(&cat::GEMM_ROUTER, 3_000 + 5 * n, n));
        ops.push(kernel(
            &cat::MOE_TOPK,
            "sgl_kernel::topk_softmax",
            3_000 + 2 * n,
            10_000,
        ));
        ops.push(kernel(
            &cat::MOE_ALIGN,
            "sgl_kernel::moe_align_block_size",
            5_000,
            11_000,
        ));
        ops.push(kernel(
            &cat::EP_DISPATCH,
            "deep_ep::dispatch",
            8_000 + 6 * n,
            12_000,
        ));
        ops.push(Op {
            rows: per_ep as u64,
            ..kernel(
                &cat::MOE_FUSED,
                "fused_moe_kernel",
                hot(50_000 + 90 * even),
                16_000,
            )
        });
        ops.push(kernel(f.act, f.cpu_act, 3_000 + 8 * per_ep, 6_000));
        ops.push(Op {
            rows: per_ep as u64,
            ..kernel(
                &cat::MOE_FUSED,
                "fused_moe_kernel",
                hot(30_000 + 50 * even),
                16_000,
            )
        });
        ops.push(kernel(
            &cat::EP_COMBINE,
            "deep_ep::combine",
            8_000 + 6 * n,
            12_000,
        ));
    }
}

/// The last stage's end of a step: final norm, LM head, argmax, and the tokens copied back.
fn head(ops: &mut Vec<Op>, f: &Flavour, bs: i64) {
    ops.push(kernel(f.norm_add, f.cpu_norm, 2_500 + 4 * bs, 9_000));
    ops.push(linear(&cat::GEMM_LM_HEAD, 30_000 + 600 * bs, bs));
    ops.push(kernel(
        &cat::ELEM_ARGMAX,
        "aten::argmax",
        4_000 + 20 * bs,
        10_000,
    ));
    ops.push(Op {
        gpu: Gpu::Memcpy {
            name: cat::MEMCPY_DTOH,
            bytes: (bs as u64) * 8,
        },
        cpu: "aten::to",
        inner: Some("aten::copy_"),
        call: cat::MEMCPY,
        gpu_ns: 1_900,
        cpu_ns: 15_000,
        rows: 0,
    });
}

/// The step's input copied to the GPU.
pub(super) fn input_copy(kind: StepKind) -> Op {
    Op {
        gpu: Gpu::Memcpy {
            name: cat::MEMCPY_HTOD,
            bytes: kind.tokens() * 8,
        },
        cpu: "aten::copy_",
        inner: None,
        call: cat::MEMCPY,
        gpu_ns: 1_800 + kind.tokens() as i64,
        cpu_ns: 14_000,
        rows: 0,
    }
}

/// `.item()` of the step's result: `cudaStreamSynchronize`, which returns once the GPU has
/// drained.
pub(super) fn item_sync() -> Op {
    Op {
        gpu: Gpu::Sync,
        cpu: "aten::item",
        inner: None,
        call: cat::SYNC,
        gpu_ns: 0,
        cpu_ns: 6_000,
        rows: 0,
    }
}

/// Elements each side-stream all-gather moves (`--overlap-comm`): a layer's shard, about
/// 13 µs of transfer.
pub(crate) const PREFETCH_NELEMS: u64 = 1 << 18;

/// Nominal time of the side stream's copy-in before each all-gather, ns.
pub(crate) const COPY_IN_NS: i64 = 2_500;

/// `--overlap-comm`: FSDP-style prefetch on a side stream. After each layer's last all-reduce
/// (every layer but the last), the rank copies the next layer's shard in and launches an
/// all-gather of its TP group on the side stream (`c10d::_allgather_base_`, its end recorded
/// by `cudaEventRecord`); the compute stream goes on with the next layer and waits for it
/// (`cudaStreamWaitEvent`) only before that layer's output projection, the op that uses it.
/// `pg`: the TP group. A program without all-reduces is returned as it is.
pub(crate) fn overlap_prefetch(ops: Vec<Op>, pg: usize) -> Vec<Op> {
    let layers = ops.iter().filter(|o| is_oproj(o)).count();
    let mut out = Vec::with_capacity(ops.len() + 3 * layers);
    let (mut reduces, mut fetched, mut pending) = (0usize, 0usize, false);
    for op in ops {
        if is_oproj(&op) && pending {
            out.push(Op {
                gpu: Gpu::WaitSide,
                cpu: "FSDP::pre_forward",
                inner: None,
                call: cat::STREAM_WAIT_EVENT,
                gpu_ns: 0,
                cpu_ns: 5_000,
                rows: 0,
            });
            pending = false;
        }
        let reduce = matches!(op.gpu, Gpu::Coll(c) if c.kind == CollKind::AllReduce);
        out.push(op);
        if !reduce {
            continue;
        }
        reduces += 1;
        if reduces % 2 == 0 && fetched + 1 < layers {
            fetched += 1;
            pending = true;
            out.extend(prefetch(pg));
        }
    }
    out
}

fn is_oproj(op: &Op) -> bool {
    matches!(op.gpu, Gpu::Kernel(k) if std::ptr::eq(k, &cat::GEMM_OPROJ))
}

/// The copy-in and the all-gather of one prefetch, on the side stream.
fn prefetch(pg: usize) -> [Op; 2] {
    [
        Op {
            gpu: Gpu::SideCopy {
                bytes: PREFETCH_NELEMS * 2,
            },
            cpu: "FSDP::all_gather_copy_in",
            inner: None,
            call: cat::MEMCPY,
            gpu_ns: COPY_IN_NS,
            cpu_ns: 9_000,
            rows: 0,
        },
        Op {
            gpu: Gpu::SideColl(Coll {
                kind: CollKind::AllGather,
                spec: &cat::NCCL_AG,
                pg,
                peer: 0,
                nelems: PREFETCH_NELEMS,
            }),
            cpu: "c10d::_allgather_base_",
            inner: Some("record_param_comms"),
            call: cat::LAUNCH_EXC,
            gpu_ns: 0,
            cpu_ns: 16_000,
            rows: 0,
        },
    ]
}

/// A planted host stall of `delay_ns`: `.cpu()` of a GPU tensor (`aten::to` → `aten::_to_copy`,
/// whose `cudaStreamSynchronize` returns once the GPU has drained), then `delay_ns` of host work
/// in `aten::item` → `aten::_local_scalar_dense` with no CUDA call. Inserted before a collective,
/// it leaves the GPU idle for about `delay_ns` before that collective.
pub(crate) fn host_stall(delay_ns: i64) -> [Op; 2] {
    [
        Op {
            gpu: Gpu::Sync,
            cpu: "aten::to",
            inner: Some("aten::_to_copy"),
            call: cat::SYNC,
            gpu_ns: 0,
            cpu_ns: 6_000,
            rows: 0,
        },
        Op {
            gpu: Gpu::Host,
            cpu: "aten::item",
            inner: Some("aten::_local_scalar_dense"),
            call: cat::SYNC,
            gpu_ns: 0,
            cpu_ns: delay_ns,
            rows: 0,
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stages_split_the_layers_without_gaps() {
        for (layers, pp) in [(4, 1), (4, 2), (5, 2), (7, 3)] {
            let mut next = 0;
            for p in 0..pp {
                let r = stage_layers(layers, pp, p);
                assert_eq!(r.start, next);
                assert!(!r.is_empty());
                next = r.end;
            }
            assert_eq!(next, layers);
        }
    }

    #[test]
    fn a_step_has_two_allreduces_per_layer_with_tp() {
        let l = Layout::new(2, 1, 1, 1);
        let ops = program(
            Vendor::Sglang,
            3,
            &l,
            &l.pos(0),
            StepKind::Decode { bs: 8 },
            0,
            1.0,
        );
        let ar = ops.iter().filter(|o| matches!(o.gpu, Gpu::Coll(_))).count();
        assert_eq!(ar, 6);
        let single = Layout::new(1, 1, 1, 1);
        let ops = program(
            Vendor::Sglang,
            3,
            &single,
            &single.pos(0),
            StepKind::Decode { bs: 8 },
            0,
            1.0,
        );
        assert!(!ops.iter().any(|o| matches!(o.gpu, Gpu::Coll(_))));
    }

    #[test]
    fn annotation_names() {
        assert_eq!(StepKind::Decode { bs: 8 }.annotation(), "step[DECODE bs=8]");
        assert_eq!(
            StepKind::Extend { bs: 4, toks: 512 }.annotation(),
            "step[EXTEND bs=4 toks=512]"
        );
        assert!(step_kind(1, Some(Stage::Decode), 0, 0, 0).tokens() >= 8);
        assert!(matches!(
            step_kind(1, None, 0, 0, 0),
            StepKind::Extend { .. }
        ));
    }
}
