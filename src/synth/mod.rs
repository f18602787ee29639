//! `rankprof synth`: deterministic, realistic Kineto traces of a distributed LLM server, one file
//! per rank, named as SGLang or vLLM name them — for fixtures, tests and benchmarks.
//!
//! The parts: [`layout`] places ranks (TP × DP × PP, EP) and names files; [`model`] says what a
//! rank does in a step (its kernels and collectives); [`sim`] times every rank's step in lock
//! step — collectives end at the same instant on all members, so a slow rank makes the others
//! wait inside NCCL; [`emit`] streams each rank's events to gzip, atomically. Ranks are written
//! in parallel, one step at a time, so memory stays at one step per rank whatever the size.
//!
//! Planted imbalances ([`SynthOptions`]): a slow rank or class ([`Slow`]; `comm`: its
//! collectives transfer slower), more work ([`Heavy`]), extra kernels ([`Extra`]), hot experts;
//! and waiting that is no kernel's fault: a host stall before a collective and a late step start
//! ([`Delay`]), a slow link of one DP replica ([`SlowLink`]). With `cpu_only` the same run is
//! written as a CPU-only (gloo) run writes it ([`cpu`]), every plant with the same meaning.
//!
//! Same [`SynthOptions`] (seed included) ⇒ byte-identical files: every random draw comes from a
//! [`rng::Rng`] keyed by what it is for (rank, step, collective), never by thread timing.
//!
//! ```no_run
//! use rankprof::synth::{write_set, SynthOptions};
//! let cfg = SynthOptions { tp: 4, steps: 10, ..SynthOptions::default() };
//! for f in write_set(&cfg, std::path::Path::new("/tmp/synth")).unwrap() {
//!     println!("{} {} events", f.path.display(), f.events);
//! }
//! ```

// not API: for tests
#[doc(hidden)]
pub mod catalog;
pub(crate) mod cpu;
pub(crate) mod emit;
pub(crate) mod inflate;
pub(crate) mod layout;
pub(crate) mod model;
pub(crate) mod rng;
pub(crate) mod sim;
pub(crate) mod train;

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use rayon::prelude::*;

use catalog::Class;
use emit::{RankInfo, TraceWriter};
pub use layout::Vendor;
use layout::{FileNaming, Layout, RankPos, Stage};
use rng::{mix, Rng};
use sim::RankState;

/// Kineto's usual `baseTimeNanoseconds`: whole seconds, far before the events.
pub const DEFAULT_BASE_NS: i64 = 1_790_857_026_000_000_000;
/// Most ranks one set may have.
pub const MAX_RANKS: u64 = 1024;
/// Where the first profiler starts, relative to the base (≈ 50 days, as in real traces).
pub const START_NS: i64 = 4_355_656_645_227_235;

/// The planted imbalance.
#[derive(Clone, Debug, PartialEq)]
pub struct Slow {
    /// Global rank.
    pub rank: u32,
    pub factor: f64,
    /// First step (counted from 0 in each file) from which the rank is slow.
    pub from_step: u32,
    /// Only this class; `None`: every compute class (not comm, not memory).
    pub class: Option<Class>,
}

/// A planted uneven load: one rank gets `factor` × the sequences and tokens of its replica's
/// batch every step (its step annotation says so, and its kernels take as long as that work
/// takes), as a skewed router or DP-attention scheduler would give it.
#[derive(Clone, Debug, PartialEq)]
pub struct Heavy {
    /// Global rank.
    pub rank: u32,
    pub factor: f64,
}

/// Planted extra kernels: one rank launches `per_layer` more small elementwise kernels per
/// layer than its peers for the same batch (a different code path, an unfused op).
#[derive(Clone, Debug, PartialEq)]
pub struct Extra {
    /// Global rank.
    pub rank: u32,
    pub per_layer: u32,
}

/// A planted host-side delay on one rank, from `from_step` on (`--host-delay-rank`,
/// `--late-start-rank`).
#[derive(Clone, Debug, PartialEq)]
pub struct Delay {
    /// Global rank.
    pub rank: u32,
    /// How long the rank's CPU is held up, in ns (> 0).
    pub delay_ns: i64,
    /// First step (counted from 0 in each file) with the delay.
    pub from_step: u32,
}

/// A planted slow link: every collective of one DP replica's groups transfers `factor` × as
/// long from `from_step` on, the same longer collective on every member.
#[derive(Clone, Debug, PartialEq)]
pub struct SlowLink {
    /// DP replica.
    pub replica: u32,
    pub factor: f64,
    pub from_step: u32,
}

/// A planted memory load on one rank (`--plant-memory RANK:BYTES`, `--plant-leak
/// RANK:BYTES`): `bytes` more live through every step, or `bytes` more kept after every step.
#[derive(Clone, Debug, PartialEq)]
pub struct MemoryPlant {
    /// Global rank.
    pub rank: u32,
    /// Bytes (> 0).
    pub bytes: i64,
}

impl MemoryPlant {
    /// `RANK:BYTES`, as the flags take it.
    pub fn parse(s: &str) -> Result<Self> {
        let (rank, bytes) = s
            .split_once(':')
            .with_context(|| format!("{s}: expected RANK:BYTES (e.g. 3:2147483648)"))?;
        let rank = rank
            .trim()
            .parse()
            .with_context(|| format!("{s}: the rank is not a number"))?;
        let bytes: i64 = bytes
            .trim()
            .parse()
            .with_context(|| format!("{s}: the bytes are not a whole number"))?;
        if bytes <= 0 {
            bail!("{s}: the bytes must be above 0");
        }
        Ok(MemoryPlant { rank, bytes })
    }
}

/// Everything that decides the output bytes.
#[derive(Clone, Debug)]
pub struct SynthOptions {
    pub naming: Vendor,
    pub tp: u32,
    pub dp: u32,
    pub pp: u32,
    pub ep: u32,
    /// SGLang DP attention (`--enable-dp-attention`): the `dp` groups of `tp` ranks are one
    /// SGLang TP group of `dp × tp` ranks (attention TP `tp`), EP over all of them; PP 1.
    pub dp_attention: bool,
    /// Steps per file (ignored with `target_bytes`).
    pub steps: u32,
    pub layers: u32,
    /// Keep adding steps until every file holds this many uncompressed JSON bytes.
    pub target_bytes: Option<u64>,
    pub profile_id: String,
    /// Prefix of the file names (SGLang `{instance}-…`, vLLM `{instance}_…`).
    pub instance: Option<String>,
    pub slow: Option<Slow>,
    /// With `slow`: every rank of the slow rank's pipeline stage is slow (each DP replica's,
    /// each TP rank's), the stage itself the cause (`--slow-stage`).
    pub slow_stage: bool,
    /// Planted uneven load (more work on one rank).
    pub heavy: Option<Heavy>,
    /// Planted extra kernels on one rank.
    pub extra: Option<Extra>,
    /// Planted hot experts (EP > 1): `factor` × the routed tokens, so that much more expert-GEMM
    /// time, on one rank; its batch and everything else stay as its peers'.
    pub hot_expert: Option<Heavy>,
    /// Planted host stall: in every step the rank syncs with its GPU (`cudaStreamSynchronize`)
    /// and spends `delay_ns` in a CPU op (`aten::item`) before launching its second collective,
    /// so it arrives there last by about that much.
    pub host_delay: Option<Delay>,
    /// Planted late start: the rank's CPU begins every step `delay_ns` late (in a data-loader
    /// annotation before its `ProfilerStep#N`), so it arrives last at the step's first collective.
    pub late_start: Option<Delay>,
    /// Planted slow link of one DP replica.
    pub slow_link: Option<SlowLink>,
    /// Training through the pipeline (`--microbatches N`, [`train`]): every step runs `N`
    /// micro-batches forward and backward on Megatron's 1F1B schedule, and ends with the
    /// gradient-norm all-reduce, the optimizer and `loss.item()`; no batch annotations. 0: a
    /// serving step (one forward).
    pub microbatches: u32,
    /// FSDP-style prefetch (`--overlap-comm`, [`model::overlap_prefetch`]): one all-gather
    /// per layer on a side stream, overlapping the next layer's compute, which waits for it
    /// (`cudaStreamWaitEvent`) only before its output projection.
    pub overlap_comm: bool,
    /// Planted late prefetch (`--overlap-late-rank`): the rank's side-stream copy-in before
    /// each all-gather takes `delay_ns` longer, so it arrives that late at every prefetch;
    /// its compute stream is not held up. Hidden while the all-gather still ends before the
    /// consumer needs it.
    pub overlap_delay: Option<Delay>,
    /// Kineto `[memory]` events on every rank (`profile_memory=True`); the memory plants
    /// imply it.
    pub profile_memory: bool,
    /// Planted heavier rank: `bytes` more live from each step's first op to its last.
    pub more_memory: Option<MemoryPlant>,
    /// Planted leak: the rank keeps `bytes` more at the end of every step.
    pub leak: Option<MemoryPlant>,
    /// A CPU-only (gloo) run ([`cpu`]): no GPU; the work is the CPU ops' own time, the
    /// collectives are `c10d::` ops that hold every member's thread until the last arrives.
    pub cpu_only: bool,
    /// `record_shapes`: `Input Dims` on the CPU GEMM ops (`aten::linear`, `aten::mm`) and the
    /// MoE expert ops, token dimension first.
    pub record_shapes: bool,
    /// Write the batch annotations (`step[…]` / `execute_context_…`); off: `ProfilerStep#N` only.
    pub annotations: bool,
    /// Every DP replica runs the same batches (a perfectly balanced router); default: each
    /// replica draws its own.
    pub same_batches: bool,
    pub seed: u64,
    /// Step-to-step noise: every kernel of a rank's step is scaled by one factor uniform in
    /// `[1 - step_noise, 1 + step_noise]`, drawn per rank and step (0: none, the same bytes as
    /// before the option existed).
    pub step_noise: f64,
    /// The seed of the step noise alone (`None`: `seed`): two sets with the same `seed` and
    /// other noise seeds run the same batches and kernels, and differ only in that noise.
    pub noise_seed: Option<u64>,
    pub plain: bool,
    /// gzip level 0–9.
    pub level: u32,
    /// SGLang `profile_by_stage`: an EXTEND and a DECODE file per rank.
    pub by_stage: bool,
    /// The common `baseTimeNanoseconds`.
    pub base_ns: i64,
    /// Rank r's file gets base `base_ns + r * skew` and `ts` shifted by `-r * skew`.
    pub base_skew_ns: i64,
    /// Write `displayTimeUnit`/`baseTimeNanoseconds` before `traceEvents` (current Kineto)
    /// instead of after (Kineto up to 2024, the default).
    pub base_first: bool,
}

impl Default for SynthOptions {
    fn default() -> Self {
        SynthOptions {
            naming: Vendor::Sglang,
            tp: 2,
            dp: 1,
            pp: 1,
            ep: 1,
            dp_attention: false,
            steps: 8,
            layers: 4,
            target_bytes: None,
            profile_id: "synth".into(),
            instance: None,
            slow: None,
            slow_stage: false,
            heavy: None,
            extra: None,
            hot_expert: None,
            host_delay: None,
            late_start: None,
            slow_link: None,
            microbatches: 0,
            overlap_comm: false,
            overlap_delay: None,
            profile_memory: false,
            more_memory: None,
            leak: None,
            cpu_only: false,
            record_shapes: false,
            annotations: true,
            same_batches: false,
            seed: 1,
            step_noise: 0.0,
            noise_seed: None,
            plain: false,
            level: 1,
            by_stage: false,
            base_ns: DEFAULT_BASE_NS,
            base_skew_ns: 0,
            base_first: false,
        }
    }
}

impl SynthOptions {
    /// Whether the planted slowness (`slow`) is on `pos`: its rank, or with `slow_stage`
    /// any rank of that rank's pipeline stage.
    pub(crate) fn slow_on(&self, layout: &Layout, pos: &RankPos) -> bool {
        self.slow.as_ref().is_some_and(|s| {
            s.rank == pos.rank || (self.slow_stage && layout.pos(s.rank).p == pos.p)
        })
    }

    /// Rejects layouts and plants the generator cannot honour: the layout, each plant, the
    /// clock.
    pub fn validate(&self) -> Result<()> {
        let world = self.validate_layout()?;
        self.validate_rank_plants(world)?;
        self.validate_delays(world)?;
        self.validate_slow_link()?;
        self.validate_overlap(world)?;
        self.validate_training()?;
        self.validate_memory(world)?;
        self.validate_times(world)
    }

    /// The parallel layout, steps, level and noise; the world size.
    fn validate_layout(&self) -> Result<u64> {
        if !(0.0..1.0).contains(&self.step_noise) {
            bail!("--step-noise must be at least 0 and below 100 %");
        }
        for (name, v) in [
            ("tp", self.tp),
            ("dp", self.dp),
            ("pp", self.pp),
            ("ep", self.ep),
        ] {
            if v == 0 {
                bail!("--{name} must be at least 1");
            }
        }
        if self.dp_attention {
            if self.naming != Vendor::Sglang {
                bail!("--dp-attention is SGLang's --enable-dp-attention: --naming sglang");
            }
            if self.pp > 1 {
                bail!("--dp-attention is generated with --pp 1 only");
            }
            let all = u64::from(self.tp) * u64::from(self.dp);
            if !all.is_multiple_of(u64::from(self.ep)) {
                bail!(
                    "--ep {} must divide --dp × --tp = {all} (with DP attention EP spans every rank)",
                    self.ep
                );
            }
        } else if !self.tp.is_multiple_of(self.ep) {
            bail!(
                "--ep {} must divide --tp {} (EP splits each TP group; with --dp-attention it splits --dp × --tp)",
                self.ep,
                self.tp
            );
        }
        let world = u64::from(self.tp) * u64::from(self.dp) * u64::from(self.pp);
        if world > MAX_RANKS {
            bail!("{world} ranks: at most {MAX_RANKS} (one open file and ~0.5 MB of buffers each)");
        }
        if self.layers < self.pp {
            bail!("--layers {} must be at least --pp {}", self.layers, self.pp);
        }
        if self.steps == 0 && self.target_bytes.is_none() {
            bail!("--steps must be at least 1");
        }
        if self.level > 9 {
            bail!("--level must be 0-9");
        }
        if self.by_stage && self.naming == Vendor::Vllm {
            bail!("--by-stage is SGLang's profile_by_stage; vLLM has no such files");
        }
        Ok(world)
    }

    /// The plants on one rank (slow, heavy, extra kernels, hot experts).
    fn validate_rank_plants(&self, world: u64) -> Result<()> {
        if let Some(s) = &self.slow {
            if u64::from(s.rank) >= world {
                bail!(
                    "--slow-rank {} is not a rank of a {world}-rank layout",
                    s.rank
                );
            }
            if !(s.factor.is_finite() && s.factor > 0.0) {
                bail!("--factor must be a positive number");
            }
        }
        if self.slow_stage && (self.slow.is_none() || self.pp < 2) {
            bail!("--slow-stage slows --slow-rank's pipeline stage: it needs --slow-rank and --pp 2 or more");
        }
        if let Some(h) = &self.heavy {
            if u64::from(h.rank) >= world {
                bail!(
                    "--heavy-rank {} is not a rank of a {world}-rank layout",
                    h.rank
                );
            }
            if !(h.factor.is_finite() && h.factor > 0.0 && h.factor <= 64.0) {
                bail!("--work-factor must be a number in (0, 64]");
            }
        }
        if let Some(e) = &self.extra {
            if u64::from(e.rank) >= world {
                bail!(
                    "--extra-kernels {} is not a rank of a {world}-rank layout",
                    e.rank
                );
            }
            if e.per_layer == 0 || e.per_layer > 64 {
                bail!("--extra-per-layer must be 1-64");
            }
        }
        if let Some(h) = &self.hot_expert {
            if self.ep < 2 {
                bail!("--hot-expert-rank needs --ep 2 or more (experts spread over EP ranks)");
            }
            if u64::from(h.rank) >= world {
                bail!(
                    "--hot-expert-rank {} is not a rank of a {world}-rank layout",
                    h.rank
                );
            }
            if !(h.factor.is_finite() && h.factor > 0.0 && h.factor <= 64.0) {
                bail!("--work-factor must be a number in (0, 64]");
            }
        }
        Ok(())
    }

    /// The host delay and the late start: a rank of the layout with collectives to wait at.
    fn validate_delays(&self, world: u64) -> Result<()> {
        for (flag, d) in [
            ("--host-delay-rank", &self.host_delay),
            ("--late-start-rank", &self.late_start),
        ] {
            let Some(d) = d else { continue };
            if u64::from(d.rank) >= world {
                bail!("{flag} {} is not a rank of a {world}-rank layout", d.rank);
            }
            if d.delay_ns <= 0 {
                bail!("{flag} needs --delay-us above 0 (how long the rank's CPU is held up)");
            }
            let layout = self.layout();
            let colls = sim::collectives_per_step(self, &layout, d.rank);
            let need = if flag == "--host-delay-rank" { 2 } else { 1 };
            if colls < need {
                bail!(
                    "{flag} {}: the rank has {colls} collective(s) per step, the plant needs {need} \
                     (use --tp 2 or more, so that its peers wait for it)",
                    d.rank
                );
            }
        }
        Ok(())
    }

    /// The side-stream prefetch: TP all-reduces to place it between, a GPU, layers to
    /// prefetch; its late rank in the layout.
    fn validate_overlap(&self, world: u64) -> Result<()> {
        if self.overlap_delay.is_some() && !self.overlap_comm {
            bail!("--overlap-late-rank needs --overlap-comm (the prefetch it delays)");
        }
        if !self.overlap_comm {
            return Ok(());
        }
        if self.cpu_only {
            bail!("--overlap-comm is a GPU run's side stream: not with --cpu-only");
        }
        if self.tp < 2 || self.layers < 2 {
            bail!("--overlap-comm needs --tp 2 or more and --layers 2 or more (it prefetches the next layer over the TP group)");
        }
        if let Some(d) = &self.overlap_delay {
            if u64::from(d.rank) >= world {
                bail!(
                    "--overlap-late-rank {} is not a rank of a {world}-rank layout",
                    d.rank
                );
            }
            if d.delay_ns <= 0 {
                bail!("--overlap-late-rank needs --delay-us above 0");
            }
        }
        Ok(())
    }

    /// Training (`--microbatches`): a dense model, one file a rank, the default stream.
    fn validate_training(&self) -> Result<()> {
        if self.microbatches == 0 {
            return Ok(());
        }
        if self.microbatches > 4096 {
            bail!("--microbatches {}: at most 4096", self.microbatches);
        }
        for (on, flag) in [
            (self.by_stage, "--by-stage"),
            (self.overlap_comm, "--overlap-comm"),
            (self.dp_attention, "--dp-attention"),
            (self.ep > 1, "--ep above 1"),
            (self.hot_expert.is_some(), "--hot-expert-rank"),
        ] {
            if on {
                bail!("--microbatches (a training step) is generated for a dense model without {flag}");
            }
        }
        if self.heavy.is_some() {
            bail!("--heavy-rank: in a training pipeline every stage runs the same micro-batches; plant a heavier stage with --extra-kernels or --slow-rank");
        }
        Ok(())
    }

    /// The slow link: a replica with collectives.
    fn validate_slow_link(&self) -> Result<()> {
        if let Some(l) = &self.slow_link {
            if l.replica >= self.dp {
                bail!(
                    "--slow-link {} is not a DP replica of --dp {} (replicas 0-{})",
                    l.replica,
                    self.dp,
                    self.dp - 1
                );
            }
            if self.tp * self.pp < 2 {
                bail!("--slow-link needs collectives: --tp 2 or more (or --pp 2 or more)");
            }
            if !(l.factor.is_finite() && l.factor > 0.0) {
                bail!("--factor must be a positive number");
            }
        }
        Ok(())
    }

    /// The memory plants: a rank of the layout, a size that fits.
    fn validate_memory(&self, world: u64) -> Result<()> {
        for (flag, p) in [
            ("--plant-memory", &self.more_memory),
            ("--plant-leak", &self.leak),
        ] {
            let Some(p) = p else { continue };
            if u64::from(p.rank) >= world {
                bail!("{flag} {}: not a rank of a {world}-rank layout", p.rank);
            }
            if !(1..=1 << 50).contains(&p.bytes) {
                bail!("{flag}: the bytes must be in 1..=2^50");
            }
        }
        Ok(())
    }

    /// Whether the ranks write `[memory]` events.
    fn memory_events(&self) -> bool {
        self.profile_memory || self.more_memory.is_some() || self.leak.is_some()
    }

    /// Rank `r`'s memory, when the ranks write `[memory]` events.
    fn mem_plan(&self, r: u32, device: u32) -> Option<emit::memory::MemPlan> {
        let on =
            |p: &Option<MemoryPlant>| p.as_ref().filter(|p| p.rank == r).map_or(0, |p| p.bytes);
        self.memory_events().then(|| {
            emit::memory::MemPlan::new(
                self.cpu_only,
                device,
                on(&self.more_memory),
                on(&self.leak),
                (self.seed, u64::from(r)),
            )
        })
    }

    /// Every file's base and every absolute time fit in an i64 of nanoseconds.
    fn validate_times(&self, world: u64) -> Result<()> {
        let skew = i128::from(self.base_skew_ns) * i128::from(world as u32);
        if skew.abs() >= i128::from(START_NS) / 2 {
            bail!(
                "--base-skew-ns {} is too large for {world} ranks",
                self.base_skew_ns
            );
        }
        // Every file's base and every absolute time must fit in an i64 of nanoseconds.
        let latest = i128::from(self.base_ns) + skew.abs() + 2 * i128::from(START_NS);
        if self.base_ns < 0 || latest > i128::from(i64::MAX) {
            bail!("--base-time-ns {} is out of range", self.base_ns);
        }
        Ok(())
    }

    fn layout(&self) -> Layout {
        if self.dp_attention {
            Layout::with_dp_attention(self.tp, self.dp, self.ep)
        } else {
            Layout::new(self.tp, self.dp, self.pp, self.ep)
        }
    }
}

/// One file written.
#[derive(Clone, Debug)]
pub struct Written {
    pub path: PathBuf,
    /// Global rank.
    pub rank: u32,
    pub stage: Option<Stage>,
    pub steps: u32,
    pub events: u64,
    /// Uncompressed JSON bytes.
    pub json_bytes: u64,
    /// Bytes on disk.
    pub file_bytes: u64,
}

/// Writes one trace per rank (per stage with `by_stage`) into `out_dir`, in rank order.
pub fn write_set(cfg: &SynthOptions, out_dir: &Path) -> Result<Vec<Written>> {
    cfg.validate()?;
    fs::create_dir_all(out_dir).with_context(|| format!("creating {}", out_dir.display()))?;
    let layout = cfg.layout();
    let groups = layout.groups().len();
    let mut states: Vec<RankState> = (0..layout.world())
        .map(|r| {
            let mut rng = Rng::keyed(cfg.seed, &[0x57A7, u64::from(r)]);
            // Processes start their profilers a little apart; the first collective lines them up.
            let start = START_NS + rng.range(0, 200_000) as i64;
            RankState::new(start, groups, 1_000 + rng.range(0, 5_000))
        })
        .collect();
    let mut out = Vec::new();
    let stages: Vec<Option<Stage>> = if cfg.by_stage {
        vec![Some(Stage::Extend), Some(Stage::Decode)]
    } else {
        vec![None]
    };
    for (profile, stage) in stages.into_iter().enumerate() {
        out.extend(write_profile(
            cfg,
            &layout,
            stage,
            profile as u32,
            out_dir,
            &mut states,
        )?);
        // The next profile is started a while later.
        let later = states
            .iter()
            .map(|s| s.cpu_t.max(s.gpu_t))
            .max()
            .unwrap_or(0)
            + 50_000_000;
        for s in &mut states {
            s.cpu_t = later;
            s.gpu_t = later;
        }
    }
    Ok(out)
}

fn write_profile(
    cfg: &SynthOptions,
    layout: &Layout,
    stage: Option<Stage>,
    profile: u32,
    out_dir: &Path,
    states: &mut [RankState],
) -> Result<Vec<Written>> {
    let naming = FileNaming {
        naming: cfg.naming,
        profile_id: &cfg.profile_id,
        instance: cfg.instance.as_deref(),
        vllm_ns: (cfg.base_ns as u128) + (START_NS as u128) + 4_000_000_000,
        plain: cfg.plain,
    };
    let mut writers = Vec::with_capacity(states.len());
    for r in 0..layout.world() {
        let pos = layout.pos(r);
        let path = out_dir.join(layout.file_name(&naming, &pos, stage));
        let skew = cfg.base_skew_ns * i64::from(r);
        let mut rng = Rng::keyed(cfg.seed, &[0x7A3E, u64::from(r), u64::from(profile)]);
        let tmpname: String = (0..8)
            .map(|_| b"abcdefghijklmnopqrstuvwxyz0123456789_"[rng.range(0, 36) as usize] as char)
            .collect();
        let info = RankInfo {
            pid: 12_000 + mix(cfg.seed) % 4_000 + u64::from(r) * 173,
            device: layout.device(&pos),
            process_name: layout.process_name(cfg.naming, &pos),
            distributed_info: layout.distributed_info(&pos, cfg.cpu_only),
            base_ns: cfg.base_ns + skew,
            shift_ns: skew,
            trace_name: format!("/tmp/tmp{tmpname}.json"),
            base_first: cfg.base_first,
            record_shapes: cfg.record_shapes,
            annotations: cfg.annotations && cfg.microbatches == 0,
            vllm: cfg.naming == Vendor::Vllm,
            cpu_only: cfg.cpu_only,
            side_stream: cfg.overlap_comm,
            memory: cfg.mem_plan(r, layout.device(&pos)),
        };
        writers.push(TraceWriter::create(&path, cfg.plain, cfg.level, info)?);
    }
    let start = states.iter().map(|s| s.cpu_t).min().unwrap_or(START_NS) - 300_000;
    writers
        .par_iter_mut()
        .try_for_each(|w| w.begin(start, layout))?;
    let mut index = 0u32;
    loop {
        let steps = sim::simulate_step(cfg, layout, stage, profile, index, states)?;
        writers
            .par_iter_mut()
            .zip(steps.par_iter())
            .try_for_each(|(w, s)| w.step(s, layout))?;
        index += 1;
        let done = match cfg.target_bytes {
            Some(t) => writers.iter().all(|w| w.json_bytes() >= t),
            None => index >= cfg.steps,
        };
        if done {
            break;
        }
        if index == u32::MAX {
            bail!("synth: step limit reached before the target size");
        }
    }
    let finished: Vec<Result<emit::Finished>> =
        writers.into_par_iter().map(TraceWriter::finish).collect();
    let mut out = Vec::with_capacity(finished.len());
    for (r, f) in finished.into_iter().enumerate() {
        let f = f?;
        out.push(Written {
            path: f.path,
            rank: r as u32,
            stage,
            steps: index,
            events: f.events,
            json_bytes: f.json_bytes,
            file_bytes: f.file_bytes,
        });
    }
    Ok(out)
}
