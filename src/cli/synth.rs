//! The synthetic-trace commands' definitions (clap): `synth` (deterministic traces with every
//! planted cause the analysis names), `inflate` (a set made large by repetition) and `demo`.

use std::path::PathBuf;

use clap::Args;

use crate::synth::Vendor;

#[derive(Args, Debug, Clone)]
pub struct SynthArgs {
    /// Output directory.
    #[arg(long, short = 'o')]
    pub out: PathBuf,
    /// File names as SGLang or vLLM write them.
    #[arg(long, value_enum, default_value_t = Vendor::Sglang)]
    pub naming: Vendor,
    #[arg(long, default_value_t = 2)]
    pub tp: u32,
    #[arg(long, default_value_t = 1)]
    pub dp: u32,
    #[arg(long, default_value_t = 1)]
    pub pp: u32,
    #[arg(long, default_value_t = 1)]
    pub ep: u32,
    /// SGLang DP attention (--enable-dp-attention): the --dp groups of --tp ranks are one
    /// SGLang TP group of dp × tp ranks (files `…-TP-{dp×tp index}-DP-{d}-EP-{e}`, one torch
    /// world); --ep must divide dp × tp. E.g. --dp 64 --tp 16 --ep 64 --dp-attention: 1,024
    /// ranks as SGLang --tp 1024 --dp 64 --ep 64 --enable-dp-attention writes them.
    #[arg(long = "dp-attention")]
    pub dp_attention: bool,
    /// Profiler steps per rank.
    #[arg(long, default_value_t = 8)]
    pub steps: u32,
    /// Transformer layers per step (scales the kernels per step).
    #[arg(long, default_value_t = 4)]
    pub layers: u32,
    /// Make each rank about this many MB of uncompressed JSON (overrides --steps).
    #[arg(long = "target-mb")]
    pub target_mb: Option<u64>,
    /// Profile id in the file names.
    #[arg(long = "profile-id", default_value = "synth")]
    pub profile_id: String,
    /// Rank made slower (global rank index).
    #[arg(long = "slow-rank")]
    pub slow_rank: Option<u32>,
    /// With --slow-rank and --pp 2 or more: every rank of its pipeline stage is that much slower
    /// (each DP replica's and TP rank's), the stage itself the cause.
    #[arg(long = "slow-stage", requires = "slow_rank")]
    pub slow_stage: bool,
    /// How much slower the slow rank's kernels are (the --slow-link replica's transfers).
    #[arg(long, default_value_t = 1.3)]
    pub factor: f64,
    /// First step with the plant (--slow-rank, --slow-link, --host-delay-rank, --late-start-rank).
    #[arg(long = "from-step", default_value_t = 0)]
    pub from_step: u32,
    /// Only kernels of this class get slower (gemm, attention, norm, elementwise, moe, memory;
    /// comm: the slow rank's collectives transfer slower); default all compute classes.
    #[arg(long = "slow-class")]
    pub slow_class: Option<String>,
    /// Rank given more work (global rank index): its batches have --work-factor × the
    /// sequences and tokens (step annotations and kernel times follow), as a skewed router's.
    #[arg(long = "heavy-rank")]
    pub heavy_rank: Option<u32>,
    /// How much more work the heavy rank gets.
    #[arg(long = "work-factor", default_value_t = 1.5)]
    pub work_factor: f64,
    /// Rank whose host stalls once per step (global rank index): before its second collective
    /// it syncs with its GPU (cudaStreamSynchronize) and spends --delay-us in a CPU op
    /// (aten::item), so its GPU idles that long and its peers wait for it inside NCCL.
    #[arg(long = "host-delay-rank")]
    pub host_delay_rank: Option<u32>,
    /// Rank whose CPU begins every step --delay-us late (global rank index): a data-loader
    /// annotation before its ProfilerStep#N; its peers wait at the step's first collective.
    #[arg(long = "late-start-rank")]
    pub late_start_rank: Option<u32>,
    /// A training step instead of a serving one: each step runs N micro-batches forward and
    /// backward through the --pp stages on Megatron's 1F1B schedule (warm-up forwards, one
    /// forward one backward, the remaining backwards), activations and gradients sent by
    /// c10d::send / c10d::recv_, and ends with the gradient-norm all-reduce over the pipeline,
    /// the optimizer and loss.item(). E.g. --tp 1 --pp 4 --microbatches 8 --slow-rank 2.
    #[arg(
        long = "microbatches",
        value_name = "N",
        default_value_t = 0,
        hide_default_value = true
    )]
    pub microbatches: u32,
    /// FSDP-style prefetch on a side stream: after each layer's last all-reduce every rank
    /// copies the next layer's shard in and all-gathers it over its TP group on its own CUDA
    /// stream (cudaEventRecord after the launch); the compute stream goes on with the next
    /// layer and waits for it (cudaStreamWaitEvent) only before that layer's output
    /// projection. Needs --tp 2 or more.
    #[arg(long = "overlap-comm")]
    pub overlap_comm: bool,
    /// Rank that arrives --delay-us late at every prefetch all-gather (--overlap-comm): its
    /// side-stream copy-in takes that much longer; its compute stream is not held up. The
    /// others' all-gathers end that much later: hidden while they still end before the
    /// output projection needs them, the rest is step time.
    #[arg(long = "overlap-late-rank")]
    pub overlap_late_rank: Option<u32>,
    /// How long the --host-delay-rank / --late-start-rank / --overlap-late-rank rank is held
    /// up, in µs.
    #[arg(long = "delay-us", default_value_t = 2000)]
    pub delay_us: u64,
    /// Write the traces as a CPU-only (gloo) run writes them, modelled on real SGLang CPU
    /// traces: no GPU; what were kernels are CPU ops (`aten::linear`, `aten::mm`, …) taking
    /// that work's time on the main thread; each collective is a `c10d::` op there (gloo's
    /// `gloo:*` on its `pt_gloo_runloop` thread) that holds the thread until every member has
    /// arrived, so early ranks wait inside it; `distributedInfo` says backend gloo. Every plant
    /// keeps its meaning: --slow-rank slows its CPU ops, --extra-kernels adds CPU ops, a
    /// --host-delay-rank gap is time its thread records no op, --slow-link lengthens the
    /// replica's c10d transfers.
    #[arg(long = "cpu-only")]
    pub cpu_only: bool,
    /// DP replica whose collectives all transfer --factor × as long (one slow link in its
    /// NCCL ring: every member sees the same longer collective), from --from-step on.
    #[arg(long = "slow-link")]
    pub slow_link: Option<u32>,
    /// Rank that launches extra kernels for the same batch (global rank index).
    #[arg(long = "extra-kernels")]
    pub extra_kernels: Option<u32>,
    /// Extra elementwise kernels per layer on the --extra-kernels rank.
    #[arg(long = "extra-per-layer", default_value_t = 8)]
    pub extra_per_layer: u32,
    /// Rank with hot experts (EP > 1; global rank index): --work-factor × the routed tokens
    /// and expert-GEMM time, the same batch and dispatch/combine as its EP peers.
    #[arg(long = "hot-expert-rank")]
    pub hot_expert_rank: Option<u32>,
    /// Write Kineto's [memory] events (profile_memory=True) on every rank: each step
    /// allocates activations and a workspace on the rank's device (the CPU with --cpu-only).
    #[arg(long = "profile-memory")]
    pub profile_memory: bool,
    /// A rank that holds BYTES more from each step's first op to its last (RANK:BYTES, e.g.
    /// 3:2147483648 for 2 GiB); implies --profile-memory.
    #[arg(long = "plant-memory", value_name = "RANK:BYTES")]
    pub plant_memory: Option<String>,
    /// A rank that leaks: it keeps BYTES more at the end of every step (RANK:BYTES); implies
    /// --profile-memory.
    #[arg(long = "plant-leak", value_name = "RANK:BYTES")]
    pub plant_leak: Option<String>,
    /// record_shapes: write `Input Dims` on the CPU GEMM ops (token dimension first).
    #[arg(long = "record-shapes")]
    pub record_shapes: bool,
    /// Leave out the batch annotations (`step[...]` / `execute_context_...`); ProfilerStep#N stays.
    #[arg(long = "no-annotations")]
    pub no_annotations: bool,
    /// Every DP replica runs the same batches (default: each replica draws its own).
    #[arg(long = "same-batches")]
    pub same_batches: bool,
    /// Step-to-step noise in %: each rank's kernels in a step are all scaled by one factor
    /// uniform in ±PCT, drawn per rank and step (noisy steps, for A/A tests of `compare`).
    #[arg(long = "step-noise", value_name = "PCT", default_value_t = 0.0)]
    pub step_noise: f64,
    /// Seed of the --step-noise draws alone (default: --seed): same --seed, other noise seeds
    /// give the same batches and kernels with other noise (an A/A pair).
    #[arg(long = "noise-seed", value_name = "N")]
    pub noise_seed: Option<u64>,
    /// Random seed (same seed, same bytes).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Write plain JSON instead of gzip.
    #[arg(long)]
    pub plain: bool,
    /// gzip level (0-9).
    #[arg(long, default_value_t = 1)]
    pub level: u32,
    /// File-name prefix (SGLang `{instance}-{id}-TP-…`, vLLM `{instance}_dp0_…`).
    #[arg(long)]
    pub instance: Option<String>,
    /// SGLang profile_by_stage: one EXTEND and one DECODE file per rank.
    #[arg(long = "by-stage")]
    pub by_stage: bool,
    /// The common baseTimeNanoseconds (default 1790857026000000000).
    #[arg(long = "base-time-ns")]
    pub base_time_ns: Option<i64>,
    /// Rank r's file gets baseTimeNanoseconds + r*N and its ts shifted by -r*N ns
    /// (absolute times unchanged).
    #[arg(
        long = "base-skew-ns",
        default_value_t = 0,
        allow_negative_numbers = true
    )]
    pub base_skew_ns: i64,
    /// Write displayTimeUnit/baseTimeNanoseconds before traceEvents (current Kineto) instead of
    /// after it (Kineto until 2024).
    #[arg(long = "base-first")]
    pub base_first: bool,
}

#[derive(Args, Debug, Clone)]
pub struct InflateArgs {
    /// Trace files (.json.gz or .json).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Worker threads (default: all cores).
    #[arg(long, short = 'j')]
    pub jobs: Option<usize>,
    /// Also compress the bytes again at this gzip level (0-9), output discarded: the floor
    /// for `merge`, which reads and writes.
    #[arg(long, value_parser = clap::value_parser!(u32).range(0..=9))]
    pub deflate: Option<u32>,
}

#[derive(Args, Debug, Clone)]
pub struct DemoArgs {
    /// Fixtures directory (default: the bundled fixtures/).
    #[arg(long)]
    pub fixtures: Option<PathBuf>,
    /// Where merged outputs go (default: a temporary directory).
    #[arg(long)]
    pub out: Option<PathBuf>,
}
